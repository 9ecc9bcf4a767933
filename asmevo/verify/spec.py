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


DTYPES = {"float32", "float16", "float64", "bfloat16", "int8", "uint8", "int16", "uint16",
          "int32", "uint32", "int64", "uint64"}
INITS = {"normal", "uniform", "randint", "zeros", "ones", "arange"}


def np_dtype(name: str) -> np.dtype:
    """numpy dtype for a spec dtype; bfloat16 is carried as raw uint16 bits."""
    return np.dtype(np.uint16) if name == "bfloat16" else np.dtype(name)


def values_f64(dtype: str, arr) -> np.ndarray:
    """A buffer's contents as float64 values: bfloat16 bit carriers are decoded, so a
    reference compares numbers, not bit patterns."""
    a = np.asarray(arr)
    if dtype == "bfloat16":
        return (a.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


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
        return [a for a in self.args if a.kind == "buffer" and a.output]

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


_TOP_KEYS = {"name", "kernel", "code_object", "reference", "description", "code_objects",
             "params", "sizes", "launch", "args", "tolerance"}
_ARG_KEYS = {"name", "kind", "dtype", "count", "value", "init", "output", "offset", "size",
             "mean", "std", "low", "high", "special"}


def _check_keys(table: dict, allowed: set[str], where: str, path: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {', '.join(unknown)}", path=path)


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

    args = []
    for i, a in enumerate(doc.get("args", [])):
        where = f"args[{i}]"
        _check_keys(a, _ARG_KEYS, where, sp)
        kind = a.get("kind")
        if kind not in ("buffer", "scalar", "null") or not isinstance(a.get("name"), str):
            raise SpecError(f"{where}: needs a name and kind buffer|scalar|null", path=sp)
        dtype = a.get("dtype", "int64" if kind == "null" else "int32")
        if dtype not in DTYPES:
            raise SpecError(f"{where}: unknown dtype {dtype!r}", path=sp)
        init = a.get("init", "zeros")
        if init not in INITS:
            raise SpecError(f"{where}: unknown init {init!r}", path=sp)
        count = int(evaluate(a.get("count", 0), params, where=f"{sp}: {where}.count"))
        if kind == "buffer" and count < 1:
            raise SpecError(f"{where}: a buffer needs count >= 1", path=sp)
        args.append(ArgSpec(
            name=a["name"], kind=kind, dtype=dtype, count=count,
            value=evaluate(a.get("value", 0), params, where=f"{sp}: {where}.value"),
            init=init, output=bool(a.get("output", False)), offset=a.get("offset"),
            size=a.get("size"),
            dist={k: a[k] for k in ("mean", "std", "low", "high") if k in a},
            special=bool(a.get("special", True))))
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
    """Deterministic argument values: arrays for buffers (outputs zeroed), numbers for scalars."""
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for a in spec.args:
        if a.kind == "scalar":
            out[a.name] = a.value
        elif a.kind == "null":
            out[a.name] = 0
        else:
            out[a.name] = _fill(a, rng)
    return out


def _fill(a: ArgSpec, rng: np.random.Generator) -> np.ndarray:
    dt = np_dtype(a.dtype)
    n = a.count
    if a.output or a.init == "zeros":
        return np.zeros(n, dt)
    if a.init == "ones":
        return np.ones(n, dt) if a.dtype != "bfloat16" else np.full(n, 0x3F80, dt)
    if a.init == "arange":
        return np.arange(n).astype(dt)
    if a.init == "randint" or dt.kind in "iu":
        info = np.iinfo(dt) if dt.kind in "iu" else None
        lo = a.dist.get("low", max(info.min, -1000) if info else -1000)
        hi = a.dist.get("high", min(info.max, 1000) if info else 1000)
        vals = rng.integers(lo, hi, n, endpoint=False)
        return vals.astype(dt) if dt.kind in "iu" else vals.astype(np.float64).astype(dt)
    if a.init == "uniform":
        vals = rng.uniform(a.dist.get("low", -1.0), a.dist.get("high", 1.0), n)
    else:
        vals = rng.normal(a.dist.get("mean", 0.0), a.dist.get("std", 1.0), n)
    if a.dtype == "bfloat16":
        bits = vals.astype(np.float32).view(np.uint32)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return vals.astype(dt)


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
