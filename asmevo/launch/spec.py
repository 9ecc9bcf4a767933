"""Launch specs: how to run one kernel of a code object, and what it should compute.

A spec is a small TOML file beside the kernel's sources (format documented in
``experiments/kernels/README.md``). Sizes are integer expressions over named
parameters, so one spec serves the emulator (``small``) and real GPUs
(``large``). :func:`make_inputs` turns a spec and a seed into the exact bytes
every device receives, which is what makes differential runs comparable.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from asmevo import knobs
from asmevo.errors import has_control_characters
from asmevo.files import read_toml
from asmevo.launch.dtypes import DTYPES, INTEGERS, encode, is_float, np_dtype
from asmevo.launch.errors import SpecError
from asmevo.launch.expr import err as _err, evaluate, short as _short
from asmevo.launch.family import Family, Member, candidates, derived, parse

__all__ = ["SpecError", "evaluate", "ArgSpec", "Domain", "LaunchSpec", "load_spec",
           "make_inputs", "scalar_values", "spec_sizes", "np_dtype"]


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
    kind: str                    # buffer | scalar | null | pad (zero-filled, ``size`` bytes)
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
    noalias: bool = False        # buffers: never overlaps another buffer (C ``__restrict__``)

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
    dynamic_stack: int = 0           # private bytes per lane beyond the descriptor's fixed size
    atol: float = 0.0
    rtol: float = 0.0
    size: str = "default"
    params: dict[str, int] = field(default_factory=dict)
    path: Path | None = None
    reference_name: str = "reference"
    description: str = ""
    code_objects: dict[str, Path] = field(default_factory=dict)
    member: str = ""                 # a launch-family member's label ("" for a named size)

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

    def code_object_for(self, target: str | None, default_target: str | None = None) -> Path:
        """The code object for ``target``: its own under [code_objects], else the spec's
        ``code_object`` for None or ``default_target`` (the processor that one is for)."""
        if target is None or target not in self.code_objects:
            if target is not None and target != default_target:
                have = ([default_target] if default_target else []) + list(self.code_objects)
                raise SpecError(f"spec {self.name} has no code object for {target}; "
                                f"it has: {', '.join(have)}", path=str(self.path))
            return self.code_object
        return self.code_objects[target]

    def reference(self) -> Callable[..., dict]:
        """The reference function of ``reference.py`` beside the spec, checked to load.

        reference.py is code the user trusts; it is imported and called only in a child
        process with a time and memory limit (:mod:`asmevo.launch.reference`), each
        call of the returned function included."""
        from asmevo.launch import reference
        ref = self._reference_file()
        reference.check(ref, self.reference_name, SpecError)
        return reference.Reference(ref, self.reference_name, SpecError)

    def expected(self, args: dict) -> dict:
        """What ``reference.py`` says the written buffers hold after a launch on ``args``
        (run in a child process, like :meth:`reference`).

        A reference takes ``(args)`` or ``(args, params)`` (the spec's size
        parameters, for layouts the scalars alone do not give). It may return
        fewer elements than a buffer holds: the rest is not compared."""
        from asmevo.launch import reference
        return reference.expected(self._reference_file(), self.reference_name, args,
                                  dict(self.params), SpecError)

    def _reference_file(self) -> Path:
        if self.path is None:
            raise SpecError(f"spec {self.name} has no file, so no reference.py")
        ref = self.path.parent / "reference.py"
        if not ref.exists():
            raise SpecError("no reference.py beside the spec", path=str(self.path))
        return ref


# -- validation: every key of every table, checked in one place ---------------------------
# One dict per table of the file: key -> checker(raw value, key's full name) -> value. A
# checker refuses a wrong type or shape with a SpecError naming the key; adding a key to the
# format is one line in its table (and its use when the spec is resolved, below). What
# depends on other keys (sizes over params, a scalar within its dtype, the input limits of
# asmevo.knobs) is checked there.

Check = Callable[[Any, str], Any]
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPEC_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


def _text(v: Any, key: str) -> str:
    if not isinstance(v, str):
        raise _err(key, f"must be a string, got {_short(v)}")
    if has_control_characters(v):
        raise _err(key, f"must not hold control characters, got {_short(v)}")
    return v


def _matching(pattern: re.Pattern, what: str) -> Check:
    def check(v: Any, key: str) -> str:
        if not isinstance(v, str) or not pattern.fullmatch(v):
            raise _err(key, f"must be {what}, got {_short(v)}")
        return v
    return check


def _flag(v: Any, key: str) -> bool:
    if not isinstance(v, bool):
        raise _err(key, f"must be true or false, got {_short(v)}")
    return v


def _real(v: Any, key: str) -> int | float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _err(key, f"must be a finite number, got {_short(v)}")
    return v


def _nonnegative(v: Any, key: str) -> int | float:
    if _real(v, key) < 0:
        raise _err(key, f"must be >= 0, got {v!r}")
    return v


def _expression(v: Any, key: str) -> int | float | str:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise _err(key, f"must be a number or an expression string, got {_short(v)}")
    return v


def _integer(lo: int, hi: int) -> Check:
    def check(v: Any, key: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise _err(key, f"must be an integer, got {_short(v)}")
        if not lo <= v <= hi:
            raise _err(key, f"must be in [{lo}, {hi}], got {v}")
        return v
    return check


def _one_of(choices: set[str], what: str) -> Check:
    def check(v: Any, key: str) -> str:
        if not isinstance(v, str) or v not in choices:
            raise _err(key, f"unknown {what} {_short(v)}; known: {', '.join(sorted(choices))}")
        return v
    return check


def _table_of(check: Check) -> Check:
    def table(v: Any, key: str) -> dict:
        if not isinstance(v, dict):
            raise _err(key, f"must be a table, got {_short(v)}")
        return {k: check(x, f"{key}.{k}") for k, x in v.items()}
    return table


def _table(v: Any, key: str) -> dict:
    return _table_of(lambda x, _: x)(v, key)


def _nonempty(table: dict, key: str) -> dict:
    if not table:
        raise _err(key, "an empty size: give the parameters it sets (an empty table would "
                   "run the default size under this name)")
    return table


def _tables(v: Any, key: str) -> list:
    if not isinstance(v, list) or not all(isinstance(t, dict) for t in v):
        raise _err(key, f"must be an array of tables ([[{key}]]), got {_short(v)}")
    return v


def _dims(v: Any, key: str) -> list:
    if not isinstance(v, list) or not 1 <= len(v) <= 3:
        raise _err(key, f"must be a list of 1-3 sizes, got {_short(v)}")
    return [_expression(x, f"{key}[{i}]") for i, x in enumerate(v)]


_PARAM = _integer(-2 ** 63, 2 ** 63 - 1)
_TOP_KEYS: dict[str, Check] = {
    "name": _matching(_SPEC_NAME, "a name of letters, digits and _.+-"),
    "kernel": _text,
    "code_object": _text,
    "reference": _matching(_NAME, "a Python function name"),
    "description": _text,
    "code_objects": _table_of(_text),
    "params": _table_of(_PARAM),
    "sizes": _table_of(lambda v, key: _nonempty(_table_of(_PARAM)(v, key), key)),
    "launch": _table,
    "args": _tables,
    "tolerance": _table,
    "family": _table,
}
_LAUNCH_KEYS: dict[str, Check] = {
    "grid": _dims,
    "block": _dims,
    "dynamic_lds": _expression,
    "dynamic_stack": _expression,
}
_ARG_KEYS: dict[str, Check] = {
    "name": _matching(_NAME, "a name of letters, digits and _"),
    "kind": _one_of({"buffer", "scalar", "null", "pad"}, "kind"),
    "dtype": _one_of(DTYPES, "dtype"),
    "count": _expression,
    "value": _expression,
    "init": _one_of(INITS, "init"),
    "output": _flag,
    "offset": _integer(0, 65535),          # kernarg bytes
    "size": _integer(1, 256),              # kernarg bytes
    "mean": _real,
    "std": _nonnegative,
    "low": _real,
    "high": _real,
    "special": _flag,
    "inout": _flag,
    "domain": lambda v, key: v,            # a list or a {low, high} table: checked by _domain
    "noalias": _flag,
}
_TOLERANCE_KEYS: dict[str, Check] = {
    "atol": _nonnegative,
    "rtol": _nonnegative,
}


def _check_keys(table: dict, allowed, where: str, path: str | None = None) -> None:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {', '.join(unknown)}", path=path)


def _checked(raw: Any, keys: dict[str, Check], where: str) -> dict:
    """The table ``raw`` with every key known and every value of the right type."""
    if not isinstance(raw, dict):
        raise _err(where, f"must be a table, got {_short(raw)}")
    _check_keys(raw, keys, where or "spec")
    return {k: keys[k](v, f"{where}.{k}" if where else k) for k, v in raw.items()}


def load_spec(path: str | Path, size: str = "default", *,
              member: dict[str, int] | None = None, label: str = "") -> LaunchSpec:
    """Load ``spec.toml`` (or a folder holding one) at the named size; with ``member``,
    at that size with those parameters changed (a launch-family member, ``label``)."""
    p, doc = _read(path)
    try:
        return _resolve(doc, p, size, member, label)
    except SpecError as exc:
        if exc.path:
            raise
        raise SpecError(exc.message, path=str(p)) from None


@dataclass(frozen=True)
class FamilySpace:
    """A spec's launch family as seen from one named size: the family, that size's
    parameters, the other named sizes, and what resolves a member."""

    path: Path
    size: str
    family: Family
    base: dict[str, int]
    named: dict[str, dict[str, int]]
    doc: dict = field(repr=False, compare=False, default_factory=dict)

    def grid(self, params: dict[str, int]) -> tuple[int, int, int] | None:
        """The grid (workgroups per dimension) at ``params`` (over the size under check's),
        from the grid's expressions alone; None where one does not give a positive
        integer. Cheap: the member search asks it thousands of times."""
        full = {**self.base, **params}
        try:
            dims = [evaluate(e, full) for e in self.doc.get("launch", {}).get("grid", [])]
        except SpecError:
            return None
        if not dims or any(isinstance(d, bool) or not isinstance(d, int) or d < 1
                           for d in dims):
            return None
        return tuple(dims + [1] * (3 - len(dims)))

    def resolves(self, params: dict[str, int]) -> bool:
        """Whether the whole spec resolves at ``params``: every expression, every limit."""
        try:
            _resolve(self.doc, self.path, self.size, params, "?")
        except SpecError:
            return False
        return True

    def resolve_base(self) -> LaunchSpec:
        """The size under check itself."""
        return _resolve(self.doc, self.path, self.size)

    def members(self, seed: int) -> list[Member]:
        return candidates(self.family, self.base, seed, self.grid, named=self.named,
                          resolves=self.resolves)

    def resolve(self, m: Member) -> LaunchSpec:
        try:
            return _resolve(self.doc, self.path, self.size, m.params, m.label)
        except SpecError as exc:
            raise SpecError(f"family member {m.label}: {exc.message}",
                            path=str(self.path)) from None


def family_space(path: str | Path, size: str = "default") -> FamilySpace:
    """The launch family of the spec at ``path`` around its size ``size``: the declared
    ``[family]``, else the one its named sizes imply (:func:`asmevo.launch.family.derived`).
    A size under check that lies outside a declared family is an error."""
    p, raw = _read(path)
    try:
        doc = _checked(raw, _TOP_KEYS, "")
        params = dict(doc.get("params", {}))
        sizes = doc.get("sizes", {})
        if size != "default" and size not in sizes:
            raise SpecError(f"no size {size!r}; it has: default, {', '.join(sizes)}")
        base = {**params, **(sizes.get(size, {}) if size != "default" else {})}
        fam = parse(doc["family"], params) if "family" in doc else derived(params, sizes)
        if "family" in doc and (why := fam.outside(base)) is not None:
            raise _err("family", f"size {size} is not a launch of the family: {why}")
        named = {"default": params} | {n: {**params, **t} for n, t in sizes.items()}
        named = {n: v for n, v in named.items() if n != size and v != base}
        return FamilySpace(p, size, fam, base, named, doc)
    except SpecError as exc:
        raise SpecError(exc.message, path=str(p)) from None


def spec_sizes(path: str | Path) -> tuple[str, ...]:
    """The sizes ``spec.toml`` (or a folder holding one) names besides ``default``."""
    p, doc = _read(path)
    try:
        return tuple(_checked(doc, _TOP_KEYS, "").get("sizes", {}))
    except SpecError as exc:
        raise SpecError(exc.message, path=str(p)) from None


def _read(path: str | Path) -> tuple[Path, dict]:
    p = Path(path)
    if p.is_dir():
        p = p / "spec.toml"
    sp = str(p)
    try:
        return p, read_toml(p, error=SpecError, what="spec")
    except ValueError as exc:               # a path with a NUL byte
        raise SpecError(f"cannot read spec ({exc})", path=sp) from exc


def _resolve(raw: dict, p: Path, size: str, member: dict[str, int] | None = None,
             label: str = "") -> LaunchSpec:
    """A checked document at one size (a family member of it: ``member``'s parameters
    over the size's): every expression evaluated and within the limits."""
    doc = _checked(raw, _TOP_KEYS, "")
    for key in ("name", "kernel", "code_object"):
        if key not in doc:
            raise _err(key, "missing (required)")
    params = dict(doc.get("params", {}))
    sizes = doc.get("sizes", {})
    if size != "default":
        if size not in sizes:
            raise SpecError(f"no size {size!r}; it has: default, {', '.join(sizes)}")
        params.update(sizes[size])
    if member:
        params.update(member)
    elif "family" in doc:
        parse(doc["family"], dict(doc.get("params", {})))   # a bad family fails every use
    launch = _checked(doc.get("launch", {}), _LAUNCH_KEYS, "launch")

    def dims(key: str) -> tuple[int, int, int]:
        if key not in launch:
            raise _err(f"launch.{key}", "missing (a list of 1-3 sizes)")
        vals = [_size(v, params, f"launch.{key}[{i}]", 1) for i, v in enumerate(launch[key])]
        vals += [1] * (3 - len(vals))
        return (vals[0], vals[1], vals[2])

    args = tuple(_arg(i, a, params) for i, a in enumerate(doc.get("args", [])))
    names = [a.name for a in args]
    if len(set(names)) != len(names):
        raise SpecError("argument names repeat")
    tol = _checked(doc.get("tolerance", {}), _TOLERANCE_KEYS, "tolerance")
    base = p.parent
    spec = LaunchSpec(
        name=doc["name"], kernel=doc["kernel"],
        code_object=_resolved(base, doc["code_object"], "code_object"),
        grid=dims("grid"), block=dims("block"), args=args,
        dynamic_lds=_size(launch.get("dynamic_lds", 0), params, "launch.dynamic_lds", 0),
        dynamic_stack=_size(launch.get("dynamic_stack", 0), params, "launch.dynamic_stack", 0),
        atol=float(tol.get("atol", 0.0)), rtol=float(tol.get("rtol", 0.0)),
        size=f"{size}[{label}]" if member else size, member=label if member else "",
        params=params, path=p.resolve(), reference_name=doc.get("reference", "reference"),
        description=doc.get("description", ""),
        code_objects={k: _resolved(base, v, f"code_objects.{k}")
                      for k, v in doc.get("code_objects", {}).items()})
    _check_limits(spec)
    return spec


def _resolved(base: Path, rel: str, key: str) -> Path:
    try:
        return (base / rel).resolve()
    except (OSError, RuntimeError, ValueError) as exc:     # a symlink loop, say
        raise _err(key, f"cannot resolve path {_short(rel)} ({exc})") from None


def _size(expr: Any, params: dict[str, int], key: str, lo: int) -> int:
    """An integer expression at least ``lo``."""
    v = evaluate(expr, params, where=key)
    if not isinstance(v, int):
        shown = f"{_short(expr)} = {v!r}" if isinstance(expr, str) else repr(v)
        raise _err(key, f"must be an integer, got {shown}")
    if v < lo:
        raise _err(key, f"must be >= {lo}, got {v}")
    return v


def _arg(i: int, raw: dict, params: dict[str, int]) -> ArgSpec:
    where = f"args[{i}]"
    a = _checked(raw, _ARG_KEYS, where)
    kind = a.get("kind")
    if kind is None or "name" not in a:
        raise _err(where, "needs a name and kind buffer|scalar|null|pad")
    if kind == "pad" and "size" not in a:
        raise _err(where, "a pad needs size >= 1 (its bytes, zero-filled)")
    dtype = a.get("dtype", "int64" if kind == "null" else "int32")
    init = a.get("init", "zeros")
    value = evaluate(a.get("value", 0), params, where=f"{where}.value")
    if kind == "scalar":
        _in_dtype(value, dtype, f"{where}.value")
    dist = {k: a[k] for k in ("mean", "std", "low", "high") if k in a}
    if kind == "buffer":
        _check_dist(dist, dtype, init, where)
    output, inout = a.get("output", False), a.get("inout", False)
    if a.get("noalias") and kind != "buffer":
        raise _err(f"{where}.noalias", "only a buffer can be declared not to alias")
    if inout and (kind != "buffer" or output):
        raise _err(f"{where}.inout", "only a buffer that is not an output can be in/out "
                   "(an output is poisoned before the launch, an in/out buffer starts from "
                   "its init)")
    domain = None
    if "domain" in a:
        if kind != "scalar":
            raise _err(f"{where}.domain", "only scalars have a domain")
        domain = _domain(a["domain"], dtype, value, params, f"{where}.domain")
    return ArgSpec(
        name=a["name"], kind=kind, dtype=dtype,
        count=_size(a.get("count", 0), params, f"{where}.count", 1 if kind == "buffer" else 0),
        value=value, init=init, output=output, offset=a.get("offset"),
        size=a.get("size"), dist=dist, special=a.get("special", True), inout=inout,
        domain=domain, noalias=a.get("noalias", False))


def _domain(raw, dtype: str, value, params: dict[str, int], where: str) -> Domain:
    """``[v, ...]`` or ``{low = a, high = b}``; numbers or size expressions, of the
    scalar's type and in its range, and holding the spec's own ``value``."""
    def number(x, key: str):
        v = evaluate(_expression(x, f"{where}{key}"), params, where=f"{where}{key}")
        _in_dtype(v, dtype, f"{where}{key}")
        return v

    if isinstance(raw, list):
        if not raw or len(raw) > 64:
            raise _err(where, "a list needs 1 to 64 values")
        dom = Domain(values=tuple(number(x, f"[{j}]") for j, x in enumerate(raw)))
    elif isinstance(raw, dict):
        _check_keys(raw, {"low", "high"}, where)
        if "low" not in raw or "high" not in raw:
            raise _err(where, "a range needs both low and high")
        lo, hi = number(raw["low"], ".low"), number(raw["high"], ".high")
        if lo > hi:
            raise _err(where, f"low {lo} is above high {hi}")
        dom = Domain(low=lo, high=hi)
    else:
        raise _err(where, f"expected a list of values or {{low = .., high = ..}}, got "
                   f"{_short(raw)}")
    if value not in dom:
        raise _err(where, f"the argument's value {value!r} is not in its domain")
    return dom


def _in_dtype(v: int | float, dtype: str, key: str) -> None:
    """A scalar's value must be what its dtype holds: an in-range integer, a finite float."""
    dt = np_dtype(dtype) if not is_float(dtype) or dtype in ("float16", "float32", "float64") \
        else np.dtype(np.float32)
    if not is_float(dtype):
        info = np.iinfo(dt)
        if not isinstance(v, int):
            raise _err(key, f"{dtype} needs an integer, got {v!r}")
        if not info.min <= v <= info.max:
            raise _err(key, f"{v} does not fit {dtype} [{info.min}, {info.max}]")
    elif abs(v) > float(np.finfo(dt).max):
        raise _err(key, f"{v!r} does not fit {dtype} (at most {float(np.finfo(dt).max):g})")


def _check_dist(dist: dict, dtype: str, init: str, where: str) -> None:
    """Bounds the input generator accepts: an integer draw is from [low, high), 64-bit."""
    if init != "randint" and is_float(dtype):
        return                      # float draws take any finite bounds (std >= 0 by its key)
    dt = np_dtype(dtype)
    for key in ("low", "high"):
        v = dist.get(key)
        if v is not None and (not isinstance(v, int) or not -2 ** 63 <= v < 2 ** 63):
            raise _err(f"{where}.{key}", f"an integer draw needs a 64-bit integer, got {v!r}")
    info = np.iinfo(dt) if not is_float(dtype) else None
    lo = dist.get("low", max(info.min, -1000) if info else -1000)   # _fill's defaults
    hi = dist.get("high", min(info.max, 1000) if info else 1000)
    if lo >= hi:
        raise _err(f"{where}.high", f"must be above low ({lo}), got {hi}")


def _check_limits(spec: LaunchSpec) -> None:
    """The input limits (asmevo.knobs) a launch must stay within, before anything runs."""
    checks = [(knobs.MAX_DYNAMIC_LDS, spec.dynamic_lds, "launch.dynamic_lds"),
              (knobs.MAX_DYNAMIC_STACK, spec.dynamic_stack, "launch.dynamic_stack"),
              (knobs.MAX_BLOCK, math.prod(spec.block), "launch.block"),
              (knobs.MAX_WORKGROUPS, math.prod(spec.grid), "launch.grid"),
              (knobs.MAX_WORK_ITEMS, spec.work_items, "launch.grid * launch.block")]
    checks += [(knobs.MAX_BLOCK, b, f"launch.block[{i}]") for i, b in enumerate(spec.block)]
    total = 0
    for i, a in enumerate(spec.args):
        if a.kind == "buffer":
            checks.append((knobs.MAX_BUFFER_BYTES, a.nbytes, f"args[{i}].count ({a.dtype})"))
            total += a.nbytes
    checks.append((knobs.MAX_LAUNCH_BYTES, total, "args (all buffers)"))
    for limit, value, key in checks:
        refusal = limit.exceeded(value, key)
        if refusal:
            raise SpecError(refusal)
    for i, (g, b) in enumerate(zip(spec.grid, spec.block)):
        if g * b >= 1 << 32:            # a hardware fact, not a knob: the packet's field
            raise SpecError(f"launch.grid[{i}] * launch.block[{i}]: {g * b:,} work-items do "
                            "not fit a dispatch's 32-bit grid size")


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
        elif a.kind in ("null", "pad"):
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


FILL_CHUNK = 1 << 22     # elements drawn and encoded at a time (float64 scratch: 32 MiB)


def _fill(a: ArgSpec, rng: np.random.Generator, chunk: int = FILL_CHUNK) -> np.ndarray:
    """An input buffer's initial values, drawn in the element type, not its carrier:
    a bfloat16/fp8 buffer gets the bits of real values, never raw small integers.
    A large buffer is drawn ``chunk`` elements at a time, into its carrier array: the
    same values (the generator's stream is consumed in order), without float64 copies of
    the whole buffer (a 512 MiB fp8 buffer would need 4 GiB for each)."""
    dt = np_dtype(a.dtype)
    n = a.count
    if a.output or a.init == "zeros":
        return np.zeros(n, dt)
    if n <= chunk:
        return _fill_part(a, rng, 0, n)
    out = np.empty(n, dt)
    for lo in range(0, n, chunk):
        out[lo:min(n, lo + chunk)] = _fill_part(a, rng, lo, min(n, lo + chunk))
    return out


def _fill_part(a: ArgSpec, rng: np.random.Generator, lo: int, hi: int) -> np.ndarray:
    """Elements ``lo:hi`` of :func:`_fill`'s buffer (drawn after those before ``lo``)."""
    dt = np_dtype(a.dtype)
    n = hi - lo
    if a.init == "ones":
        return encode(np.ones(n), a.dtype)
    if a.init == "arange":
        idx = np.arange(lo, hi)
        return encode(idx, a.dtype) if is_float(a.dtype) else idx.astype(dt)
    if a.init == "randint" or not is_float(a.dtype):
        info = np.iinfo(dt) if not is_float(a.dtype) else None
        low = a.dist.get("low", max(info.min, -1000) if info else -1000)
        high = a.dist.get("high", min(info.max, 1000) if info else 1000)
        vals = rng.integers(low, high, n, endpoint=False)
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
                                         "(a key of its [code_objects])")
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
