"""Launch specs: how to run one kernel of a code object, and what it should compute.

A spec is a small TOML file beside the kernel's sources (format documented in
``experiments/kernels/README.md``). Sizes are integer expressions over named
parameters, so one spec serves the emulator (``small``) and real GPUs
(``large``). :func:`make_inputs` turns a spec and a seed into the exact bytes
every device receives, which is what makes differential runs comparable.
"""
from __future__ import annotations

import ast
import importlib.util
import math
import operator
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from asmevo.errors import AsmevoError
from asmevo.verify.dtypes import DTYPES, INTEGERS, encode, is_float, np_dtype


class SpecError(AsmevoError):
    """A launch spec that is malformed, names unknown keys, or does not evaluate."""


_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_FUNCS: dict[str, Callable[..., int]] = {"cdiv": lambda a, b: -(-a // b), "min": min, "max": max}


def evaluate(expr: int | float | str, params: dict[str, int], *, where: str = "") -> int | float:
    """Evaluate a size expression: ints, params, + - * // % **, cdiv/min/max."""
    if isinstance(expr, bool):
        raise SpecError(f"{where}: expected a number or expression, got {expr!r}")
    if isinstance(expr, (int, float)):
        return expr
    if not isinstance(expr, str):
        raise SpecError(f"{where}: expected a number or expression, got {expr!r}")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise SpecError(f"{where}: bad expression {expr!r}") from exc

    def ev(node: ast.AST) -> int | float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in params:
                raise SpecError(f"{where}: unknown parameter {node.id!r} in {expr!r}")
            return params[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in _FUNCS and not node.keywords:
            return _FUNCS[node.func.id](*(ev(a) for a in node.args))
        raise SpecError(f"{where}: unsupported expression {expr!r}")

    try:
        return ev(tree)
    except ZeroDivisionError as exc:
        raise SpecError(f"{where}: division by zero in {expr!r}") from exc


INITS = {"normal", "uniform", "randint", "zeros", "ones", "arange"}


@dataclass(frozen=True)
class Domain:
    """The values a scalar argument may take: a list, or a closed range [low, high].

    Verification draws several values from it (see :func:`scalar_values`), so a
    candidate is judged at scalar values other than the spec's one ``value``."""

    values: tuple = ()
    low: int | float | None = None
    high: int | float | None = None

    def __contains__(self, v) -> bool:
        if self.values:
            return v in self.values
        return self.low <= v <= self.high


@dataclass(frozen=True)
class ArgSpec:
    name: str
    kind: str                    # buffer | scalar | null
    dtype: str = "int32"
    count: int = 0               # buffers: elements
    value: int | float = 0       # scalars
    init: str = "zeros"
    output: bool = False
    offset: int | None = None    # kernarg offset when metadata lists no args
    size: int | None = None
    dist: dict = field(default_factory=dict)   # mean/std/low/high
    special: bool = True         # may verification put special values (inf, NaN, int max) here?
    inout: bool = False          # buffers: starts from init, the kernel updates it in place
    domain: Domain | None = None  # scalars: the values verification draws from

    @property
    def written(self) -> bool:
        """A buffer the kernel may write (output or in/out): compared after the launch."""
        return self.output or self.inout

    @property
    def nbytes(self) -> int:
        return self.count * np_dtype(self.dtype).itemsize

    @property
    def byte_size(self) -> int:
        """Bytes this argument occupies in the kernarg segment."""
        if self.size is not None:
            return self.size
        return 8 if self.kind in ("buffer", "null") else np_dtype(self.dtype).itemsize


@dataclass(frozen=True)
class LaunchSpec:
    """One kernel launch at one size, with everything resolved to numbers."""

    name: str
    kernel: str
    code_object: Path
    grid: tuple[int, int, int]       # workgroups per dimension
    block: tuple[int, int, int]      # work-items per workgroup
    args: tuple[ArgSpec, ...]
    dynamic_lds: int = 0
    atol: float = 0.0
    rtol: float = 0.0
    size: str = "default"
    params: dict[str, int] = field(default_factory=dict)
    path: Path | None = None
    reference_name: str = "reference"
    description: str = ""
    code_objects: dict[str, Path] = field(default_factory=dict)

    @property
    def outputs(self) -> list[ArgSpec]:
        """Buffers the kernel writes: outputs and in/out buffers."""
        return [a for a in self.args if a.kind == "buffer" and a.written]

    @property
    def buffers(self) -> list[ArgSpec]:
        return [a for a in self.args if a.kind == "buffer"]

    @property
    def exact(self) -> bool:
        return self.atol == 0 and self.rtol == 0

    @property
    def work_items(self) -> int:
        return math.prod(self.grid) * math.prod(self.block)

    def code_object_for(self, target: str | None) -> Path:
        if target is None or target not in self.code_objects:
            if target is not None and target != "gfx942":
                raise SpecError(f"spec {self.name} has no code object for {target}; "
                                f"it has: gfx942, {', '.join(self.code_objects)}",
                                path=str(self.path))
            return self.code_object
        return self.code_objects[target]

    def reference(self) -> Callable[[dict], dict]:
        """The numpy reference function from ``reference.py`` beside the spec."""
        if self.path is None:
            raise SpecError(f"spec {self.name} has no file, so no reference.py")
        ref = self.path.parent / "reference.py"
        if not ref.exists():
            raise SpecError("no reference.py beside the spec", path=str(self.path))
        modname = f"asmevo_ref_{self.name}"
        mspec = importlib.util.spec_from_file_location(modname, ref)
        assert mspec and mspec.loader
        mod = importlib.util.module_from_spec(mspec)
        mspec.loader.exec_module(mod)
        fn = getattr(mod, self.reference_name, None)
        if not callable(fn):
            raise SpecError(f"reference.py has no function {self.reference_name!r}",
                            path=str(ref))
        return fn

    def expected(self, args: dict) -> dict:
        """What ``reference.py`` says the written buffers hold after a launch on ``args``.

        A reference takes ``(args)`` or ``(args, params)`` (the spec's size
        parameters, for layouts the scalars alone do not give). It may return
        fewer elements than a buffer holds: the rest is not compared."""
        import inspect
        fn = self.reference()
        try:
            nparams = len(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            nparams = 1
        return fn(args, dict(self.params)) if nparams >= 2 else fn(args)


_TOP_KEYS = {"name", "kernel", "code_object", "reference", "description", "code_objects",
             "params", "sizes", "launch", "args", "tolerance"}
_ARG_KEYS = {"name", "kind", "dtype", "count", "value", "init", "output", "offset", "size",
             "mean", "std", "low", "high", "special", "inout", "domain"}


def _check_keys(table: dict, allowed: set[str], where: str, path: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {', '.join(unknown)}", path=path)


def _flag(a: dict, key: str, where: str, path: str) -> bool:
    v = a.get(key, False)
    if not isinstance(v, bool):
        raise SpecError(f"{where}.{key} must be true or false, got {v!r}", path=path)
    return v


def _arg(i: int, a, params: dict[str, int], sp: str) -> ArgSpec:
    """One ``[[args]]`` table, checked key by key."""
    where = f"args[{i}]"
    if not isinstance(a, dict):
        raise SpecError(f"{where} must be a table", path=sp)
    _check_keys(a, _ARG_KEYS, where, sp)
    kind = a.get("kind")
    if kind not in ("buffer", "scalar", "null") or not isinstance(a.get("name"), str):
        raise SpecError(f"{where}: needs a name and kind buffer|scalar|null", path=sp)
    where = f"args[{i}] ({a['name']})"
    dtype = a.get("dtype", "int64" if kind == "null" else "int32")
    if dtype not in DTYPES:
        raise SpecError(f"{where}: unknown dtype {dtype!r}", path=sp)
    init = a.get("init", "zeros")
    if init not in INITS:
        raise SpecError(f"{where}: unknown init {init!r}", path=sp)
    count = int(evaluate(a.get("count", 0), params, where=f"{sp}: {where}.count"))
    if kind == "buffer" and count < 1:
        raise SpecError(f"{where}: a buffer needs count >= 1", path=sp)
    output, inout = _flag(a, "output", where, sp), _flag(a, "inout", where, sp)
    if inout and (kind != "buffer" or output):
        raise SpecError(f"{where}.inout: only a buffer that is not an output can be in/out "
                        "(an output is poisoned before the launch, an in/out buffer starts "
                        "from its init)", path=sp)
    value = evaluate(a.get("value", 0), params, where=f"{sp}: {where}.value")
    domain = None
    if "domain" in a:
        if kind != "scalar":
            raise SpecError(f"{where}.domain: only scalars have a domain", path=sp)
        domain = _domain(a["domain"], dtype, value, params, f"{where}.domain", sp)
    return ArgSpec(
        name=a["name"], kind=kind, dtype=dtype, count=count, value=value, init=init,
        output=output, offset=a.get("offset"), size=a.get("size"),
        dist={k: a[k] for k in ("mean", "std", "low", "high") if k in a},
        special=_flag(a, "special", where, sp) if "special" in a else True,
        inout=inout, domain=domain)


def _domain(raw, dtype: str, value, params: dict[str, int], where: str, sp: str) -> Domain:
    """``[v, ...]`` or ``{low = a, high = b}``; numbers or size expressions, of the
    scalar's type and in its range, and holding the spec's own ``value``."""
    def number(x, key: str):
        v = evaluate(x, params, where=f"{sp}: {where}{key}")
        if dtype in INTEGERS:
            if not isinstance(v, int):
                raise SpecError(f"{where}{key}: {dtype} needs integers, got {v!r}", path=sp)
            info = np.iinfo(np_dtype(dtype))
            if not info.min <= v <= info.max:
                raise SpecError(f"{where}{key}: {v} is outside {dtype} "
                                f"[{info.min}, {info.max}]", path=sp)
        elif not math.isfinite(float(v)):
            raise SpecError(f"{where}{key}: {v!r} is not a finite number", path=sp)
        return v

    if isinstance(raw, list):
        if not raw or len(raw) > 64:
            raise SpecError(f"{where}: a list needs 1 to 64 values", path=sp)
        dom = Domain(values=tuple(number(x, f"[{j}]") for j, x in enumerate(raw)))
    elif isinstance(raw, dict):
        _check_keys(raw, {"low", "high"}, where, sp)
        if "low" not in raw or "high" not in raw:
            raise SpecError(f"{where}: a range needs both low and high", path=sp)
        lo, hi = number(raw["low"], ".low"), number(raw["high"], ".high")
        if lo > hi:
            raise SpecError(f"{where}: low {lo} is above high {hi}", path=sp)
        dom = Domain(low=lo, high=hi)
    else:
        raise SpecError(f"{where}: expected a list of values or {{low = .., high = ..}}, "
                        f"got {raw!r}", path=sp)
    if value not in dom:
        raise SpecError(f"{where}: the argument's value {value!r} is not in its domain",
                        path=sp)
    return dom


def load_spec(path: str | Path, size: str = "default") -> LaunchSpec:
    """Load ``spec.toml`` (or a folder holding one) at the named size."""
    p = Path(path)
    if p.is_dir():
        p = p / "spec.toml"
    sp = str(p)
    try:
        doc = tomllib.loads(p.read_text())
    except OSError as exc:
        raise SpecError(f"cannot read spec ({exc.strerror})", path=sp) from exc
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"invalid TOML ({exc})", path=sp) from exc
    _check_keys(doc, _TOP_KEYS, "spec", sp)
    for key in ("name", "kernel", "code_object"):
        if not isinstance(doc.get(key), str):
            raise SpecError(f"missing or non-string key {key!r}", path=sp)
    params = dict(doc.get("params", {}))
    sizes = doc.get("sizes", {})
    if size != "default":
        if size not in sizes:
            raise SpecError(f"no size {size!r}; it has: default, {', '.join(sizes)}", path=sp)
        params.update(sizes[size])
    for k, v in params.items():
        if not isinstance(v, int) or isinstance(v, bool):
            raise SpecError(f"param {k} must be an integer, got {v!r}", path=sp)
    launch = doc.get("launch", {})
    _check_keys(launch, {"grid", "block", "dynamic_lds"}, "[launch]", sp)

    def dims(key: str) -> tuple[int, int, int]:
        raw = launch.get(key)
        if not isinstance(raw, list) or not 1 <= len(raw) <= 3:
            raise SpecError(f"[launch].{key} must be a list of 1-3 sizes", path=sp)
        vals = [int(evaluate(v, params, where=f"{sp}: launch.{key}")) for v in raw]
        vals += [1] * (3 - len(vals))
        if any(v < 1 for v in vals):
            raise SpecError(f"[launch].{key} has a size below 1: {vals}", path=sp)
        return (vals[0], vals[1], vals[2])

    args = [_arg(i, a, params, sp) for i, a in enumerate(doc.get("args", []))]
    names = [a.name for a in args]
    if len(set(names)) != len(names):
        raise SpecError("argument names repeat", path=sp)
    tol = doc.get("tolerance", {})
    _check_keys(tol, {"atol", "rtol"}, "[tolerance]", sp)
    base = p.parent
    return LaunchSpec(
        name=doc["name"], kernel=doc["kernel"], code_object=(base / doc["code_object"]).resolve(),
        grid=dims("grid"), block=dims("block"), args=tuple(args),
        dynamic_lds=int(evaluate(launch.get("dynamic_lds", 0), params, where="dynamic_lds")),
        atol=float(tol.get("atol", 0.0)), rtol=float(tol.get("rtol", 0.0)), size=size,
        params=params, path=p.resolve(), reference_name=doc.get("reference", "reference"),
        description=doc.get("description", ""),
        code_objects={k: (base / v).resolve() for k, v in doc.get("code_objects", {}).items()})


def make_inputs(spec: LaunchSpec, seed: int = 0) -> dict[str, Any]:
    """Deterministic argument values: arrays for buffers (outputs zeroed), numbers for scalars.

    Seed 0 gives every scalar its spec ``value``; a later seed draws the scalars
    that have a ``domain`` from it (:func:`scalar_values`)."""
    rng = np.random.default_rng(seed)
    scalars = scalar_values(spec, seed)
    out: dict[str, Any] = {}
    for a in spec.args:
        if a.kind == "scalar":
            out[a.name] = scalars[a.name]
        elif a.kind == "null":
            out[a.name] = 0
        else:
            out[a.name] = _fill(a, rng)
    return out


def scalar_values(spec: LaunchSpec, seed: int) -> dict[str, int | float]:
    """The scalar arguments of input set ``seed``: the spec's values for seed 0,
    else one value per domain, drawn so that a few seeds reach its corners.

    A list domain is walked in order, values other than the spec's first. A
    range gives, by seed: 1 a random value with a partial tail (not a multiple
    of 64), 2 its low end, 3 a value just below its high end, then random
    values; the high end is usually the spec's own value (seed 0)."""
    out: dict[str, int | float] = {}
    for i, a in enumerate(spec.args):
        if a.kind != "scalar":
            continue
        d = a.domain
        if seed == 0 or d is None:
            out[a.name] = a.value
            continue
        rng = np.random.default_rng([seed, 7919, i])
        if d.values:
            order = [v for v in d.values if v != a.value] + [v for v in d.values if v == a.value]
            out[a.name] = order[(seed - 1) % len(order)]
        elif a.dtype in INTEGERS:
            out[a.name] = _int_draw(int(d.low), int(d.high), seed, rng)
        else:
            lo, hi = float(d.low), float(d.high)
            out[a.name] = lo if seed == 2 else hi if seed == 3 else float(rng.uniform(lo, hi))
    return out


def _int_draw(lo: int, hi: int, seed: int, rng: np.random.Generator) -> int:
    if seed == 2:
        return lo
    if seed == 3:
        return max(lo, hi - 1 - int(rng.integers(0, min(63, (hi - lo) // 4) + 1)))
    for _ in range(16):
        v = int(rng.integers(lo, hi, endpoint=True))
        if seed != 1 or v % 64 or hi - lo < 64:
            return v
    return v


def _fill(a: ArgSpec, rng: np.random.Generator) -> np.ndarray:
    """An input buffer's initial values, drawn in the element type, not its carrier:
    a bfloat16/fp8 buffer gets the bits of real values, never raw small integers."""
    dt = np_dtype(a.dtype)
    n = a.count
    if a.output or a.init == "zeros":
        return np.zeros(n, dt)
    if a.init == "ones":
        return encode(np.ones(n), a.dtype)
    if a.init == "arange":
        return encode(np.arange(n), a.dtype) if is_float(a.dtype) else np.arange(n).astype(dt)
    if a.init == "randint" or not is_float(a.dtype):
        info = np.iinfo(dt) if not is_float(a.dtype) else None
        lo = a.dist.get("low", max(info.min, -1000) if info else -1000)
        hi = a.dist.get("high", min(info.max, 1000) if info else 1000)
        vals = rng.integers(lo, hi, n, endpoint=False)
        return vals.astype(dt) if info else encode(vals.astype(np.float64), a.dtype)
    if a.init == "uniform":
        vals = rng.uniform(a.dist.get("low", -1.0), a.dist.get("high", 1.0), n)
    else:
        vals = rng.normal(a.dist.get("mean", 0.0), a.dist.get("std", 1.0), n)
    return encode(vals, a.dtype)


def add_launch_arguments(parser, verb: str) -> None:
    """The arguments every command that runs a spec shares (emulate, profile)."""
    parser.add_argument("spec", help="spec.toml (or the folder holding it)")
    parser.add_argument("--code-object", help=f"code object to {verb} instead of the spec's")
    parser.add_argument("--target", help="pick the spec's code object for this target "
                                         "(e.g. gfx90a)")
    parser.add_argument("--size", default="small",
                        help="small | large | default (default: small)")
    parser.add_argument("--seed", type=int, default=0, help="input seed (default 0)")


def launch_from_arguments(args) -> tuple[LaunchSpec, Path]:
    """The spec and the code object path named by :func:`add_launch_arguments`."""
    spec = load_spec(args.spec, args.size)
    path = Path(args.code_object) if args.code_object else spec.code_object_for(args.target)
    if not path.exists():
        raise SpecError(f"code object {path} does not exist", path=str(spec.path))
    return spec, path
