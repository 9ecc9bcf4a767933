"""Bit-for-bit comparison of emulator outputs with the x86 reference, and the
documented exclusions (``exclusions.toml``) that turn a difference into "excluded".

Only differences the x86 result cannot decide are excluded, each by a named
rule the TOML file gives a reason for. The one rule applied at comparison time
is ``nan-bits``: both sides produced a NaN and the emulator's NaN is one LLVM
may produce (any sign, quiet bit either way, payload zero or one of a NaN the
program was given). Everything else about compiler semantics is avoided when
programs are generated (the TOML's ``applies = "generator"`` entries say where).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from asmevo.targets.amdgpu.registers import register_ranges
from experiments.emufuzz.ir import Program, ty

EXCLUSIONS = Path(__file__).resolve().parent / "exclusions.toml"
_PAYLOAD = {16: 9, 32: 22, 64: 51}          # fraction bits below the quiet bit
_FRAC = {16: 10, 32: 23, 64: 52}
_EXP = {16: 5, 32: 8, 64: 11}


@dataclass(frozen=True)
class Exclusion:
    id: str
    applies: str        # compare | code | generator | render
    reason: str
    where: str = ""


@lru_cache(maxsize=None)
def exclusions(path: Path = EXCLUSIONS) -> dict[str, Exclusion]:
    """The documented list; a compare rule without a matcher here is an error."""
    doc = tomllib.loads(path.read_text())
    out = {}
    for i, e in enumerate(doc.get("exclusion", [])):
        for key in ("id", "applies", "reason"):
            if not isinstance(e.get(key), str) or not e[key].strip():
                raise ValueError(f"{path}: exclusion {i} needs a non-empty {key!r}")
        if e["applies"] not in ("compare", "code", "generator", "render"):
            raise ValueError(f"{path}: exclusion {e['id']}: applies must be compare, "
                             "code, generator or render")
        out[e["id"]] = Exclusion(e["id"], e["applies"], e["reason"].strip(), e.get("where", ""))
    compare_ids = {k for k, v in out.items() if v.applies == "compare"}
    if compare_ids != set(_MATCHERS):
        raise ValueError(f"{path}: compare rules {sorted(compare_ids)} but matchers "
                         f"{sorted(_MATCHERS)}")
    code_ids = {k for k, v in out.items() if v.applies == "code"}
    if code_ids != set(_CODE_MATCHERS):
        raise ValueError(f"{path}: code rules {sorted(code_ids)} but matchers "
                         f"{sorted(_CODE_MATCHERS)}")
    return out


@dataclass(frozen=True)
class Difference:
    """One output element that differs: where, and both bit patterns."""

    lane: int
    slot: int
    var: int
    ty: str
    expected: int
    got: int

    def describe(self) -> str:
        w = max(1, ty(self.ty).bits // 4)
        return (f"lane {self.lane} slot {self.slot} (v{self.var}: {self.ty}): expected "
                f"0x{self.expected:0{w}x}, got 0x{self.got:0{w}x}")


@dataclass(frozen=True)
class Verdict:
    outcome: str                    # match | mismatch | excluded
    first: Difference | None = None
    count: int = 0                  # differing elements (not excluded)
    excluded: dict | None = None    # rule id -> elements


def _is_nan(bits: int, width: int) -> bool:
    exp = (bits >> _FRAC[width]) & ((1 << _EXP[width]) - 1)
    return exp == (1 << _EXP[width]) - 1 and bits & ((1 << _FRAC[width]) - 1) != 0


def _payload(bits: int, width: int) -> int:
    """The payload below the quiet bit, aligned to float64's 51 bits."""
    return (bits & ((1 << _PAYLOAD[width]) - 1)) << (51 - _PAYLOAD[width])


def _given_nans(p: Program, buffers: list[np.ndarray]) -> set[int]:
    """Payloads (51-bit aligned, also cut to f16/f32 width) of every NaN the program
    was given: input elements, scalars and constants, read in each float width."""
    raw: list[tuple[int, int]] = []
    for arr in buffers:
        w = arr.dtype.itemsize * 8
        if w in _PAYLOAD:
            raw += [(int(v), w) for v in np.unique(arr)]
    raw += [(bits, ty(t).bits) for t, bits in p.scalars]
    for s in p.body:
        for st in s.walk():
            for e in st.exprs:
                raw += [(x.value, ty(x.ty).bits) for x in e.walk() if x.op == "const"]
    out = {0}
    for bits, w in raw:
        if w in _PAYLOAD and _is_nan(bits, w):
            full = _payload(bits, w)
            for k in (9, 22, 51):
                out.add(full & (((1 << k) - 1) << (51 - k)))
    return out


def _nan_bits(d: Difference, given: set[int]) -> bool:
    w = ty(d.ty).bits
    return (ty(d.ty).is_float and _is_nan(d.expected, w) and _is_nan(d.got, w)
            and _payload(d.got, w) in given)


_MATCHERS = {"nan-bits": _nan_bits}


def _store_address_in_data(instructions) -> str | None:
    """A VMEM store whose data registers overlap its address registers: the store
    writes (part of) its own address. Generated programs never store a pointer, so
    such code is LLVM's (exclusions.toml llvm-store-address-in-data)."""
    for ins in instructions:
        m = ins.mnemonic
        if not (m.startswith(("global_store", "flat_store", "scratch_store", "buffer_store"))):
            continue
        regs = [r for r in register_ranges(ins.operands) if r.kind in "va"][:2]
        if len(regs) < 2:
            continue
        addr, data = (regs[1], regs[0]) if m.startswith("buffer_") else (regs[0], regs[1])
        if addr.kind == data.kind and addr.first <= data.last and data.first <= addr.last:
            return ins.text
    return None


def _long_branch_clobbers_return_address(instructions) -> str | None:
    """A function that returns through ``s_setpc_b64 s[30:31]`` but overwrites s[30:31]
    with ``s_getpc_b64`` (LLVM's long-branch sequence: getpc, add, addc, setpc) and never
    reads the pair before (no save to a lane, an SGPR or memory): its return goes wherever
    the last long branch pointed (exclusions.toml llvm19-long-branch-return-address). A
    setpc within three instructions of the getpc is the branch itself, not a return."""
    read_first, clobber, since = False, None, None
    for ins in instructions:
        m, ops = ins.mnemonic, ins.operands
        since = None if since is None else since + 1
        if m == "s_getpc_b64" and ops.startswith("s[30:31]"):
            clobber, since = clobber or ins.text, 0
            continue
        if m == "s_setpc_b64" and ops.strip() == "s[30:31]":
            if clobber and not read_first and (since is None or since > 3):
                return clobber
            continue
        first_src = 0 if m.startswith(("v_writelane", "s_store", "scratch_store",
                                       "buffer_store")) else 1
        if clobber is None and any(r.kind == "s" and r.first <= 31 and r.last >= 30
                                   for r in register_ranges(ops)[first_src:]):
            read_first = True
    return None


# Rules about the compiled code rather than one output element: a mismatching (or, for
# code that cannot end, timed-out) run is excluded when its kernel (or a function it
# calls) has the rule's signature.
_CODE_MATCHERS = {"llvm-store-address-in-data": _store_address_in_data,
                  "llvm19-long-branch-return-address": _long_branch_clobbers_return_address}


def code_exclusion(functions) -> tuple[str, str] | None:
    """The first code rule whose signature one of ``functions`` (each a list of
    instructions) shows: (rule id, the instruction that shows it)."""
    exclusions()
    for rule, match in _CODE_MATCHERS.items():
        for instructions in functions:
            hit = match(instructions)
            if hit is not None:
                return rule, hit
    return None


def compare(p: Program, buffers: list[np.ndarray], expected: np.ndarray,
            got: np.ndarray) -> Verdict:
    """Compare the ``out`` buffers (uint64, n * len(outputs) elements)."""
    exclusions()
    diff = np.nonzero(expected != got)[0]
    if diff.size == 0:
        return Verdict("match")
    k = len(p.outputs)
    types = p.var_types()
    given = _given_nans(p, buffers)
    first = None
    count = 0
    excluded: dict[str, int] = {}
    for i in diff.tolist():
        lane, slot = divmod(i, k)
        var = p.outputs[slot]
        d = Difference(lane, slot, var, types[var], int(expected[i]), int(got[i]))
        rule = next((r for r, m in _MATCHERS.items() if m(d, given)), None)
        if rule is not None:
            excluded[rule] = excluded.get(rule, 0) + 1
            continue
        count += 1
        if first is None:
            first = d
    if count:
        return Verdict("mismatch", first, count, excluded or None)
    return Verdict("excluded", None, 0, excluded)
