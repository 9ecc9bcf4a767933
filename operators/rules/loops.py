"""What the loop operators (``unroll``, ``pipeline``) share: counted single-block
loops, their scalar induction variable, trip guards, per-copy register renaming
and the waits of a restructured loop.

A loop here is one basic block ending in ``s_cbranch_scc0/scc1`` to its own label
(the innermost loops clang emits for ``for (k = 0; k < K; ++k)``), whose exit test
compares a scalar counter, stepped by a constant once per iteration, with a
loop-invariant bound (SGPR or constant). Everything else is refused with a reason:
EXEC writes (divergent loops exit by mask), barriers and other fixed points, raw or
PC-relative instructions, counters that are not a single ``s_add``/``s_sub`` of a
constant, bounds written in the loop.

**Guards.** A restructured loop runs a group of iterations without the intermediate
exit tests only after a guard proved, at the group's top, that the next ``m`` exit
tests all say "continue" (:func:`guard_lines`). Guards only have to be *sufficient*:
where one fails the original loop (kept verbatim as the remainder path) runs from
that state, so a conservative guard costs speed, never exactness. With the counter
``c`` at the top, test ``j`` sees ``t_j = c + delta + j*step`` (mod 2^32; ``delta`` is
the step when the update precedes the compare):

- ``t != n`` (step > 0): ``(n - t_0) mod 2^32 > (m-1)*step`` implies no ``t_j`` hits
  ``n`` for ``j < m`` (``j*step`` stays below the distance); step < 0 mirrored;
- ``t < n`` / ``t > n`` (counter moving toward the bound): ``t_{m-1} < n`` computed
  without overflow, by comparing ``c`` with ``n - A`` saturated at the type's end
  (``s_cselect`` on the subtraction's borrow/overflow), so a bound near the end of the
  range fails the guard instead of wrapping; ``<=``/``>=`` only against constants
  (turned into ``<``/``>``).

**Renaming.** A value the body defines and uses within one iteration (a web,
:mod:`asmevo.operators.rules.webs`) carries nothing to the next: each unrolled copy but the
last gets fresh registers for it (:func:`fresh_copy`, :class:`RegisterPool`: free
across the whole loop, below the count that keeps the kernel's waves per SIMD), so
copies can overlap. The last copy keeps the original names, so whatever is live
after the loop holds what K0 leaves there.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from asmevo.edits import GENERATED_LABEL, Edit
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.cfg import build_cfg
from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.targets.amdgpu.analysis.liveness import Liveness
from asmevo.targets.amdgpu.analysis.waitcnt import State, recompute_waitcnts
from asmevo.targets.amdgpu.assembly import vgpr_granule
from asmevo.targets.amdgpu.occupancy import occupancy
from asmevo.targets.amdgpu.processors import processor
from asmevo.targets.amdgpu.errors import Refused
from asmevo.targets.amdgpu.program import Function, Program
from asmevo.operators.rules.common import is_fixed_point, is_nop, is_wait, seal
from asmevo.operators.rules.registers import allocation_limit
from asmevo.operators.rules.webs import alignment, group_span, renamable_groups, rewrite, webs_of

U32 = 1 << 32
_NEGATE = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}
_SWAP = {"eq": "eq", "ne": "ne", "lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}
_INT = re.compile(r"-?(?:0x[0-9a-fA-F]+|\d+)\Z")
_SGPR = re.compile(r"s(\d+)\Z")


class LoopRefused(Refused):
    """Internal: this loop cannot be restructured (the reason says why)."""


# --- finding loops ------------------------------------------------------------------------

@dataclass(frozen=True)
class Loop:
    """A single-block loop: instructions ``[start, end)`` of ``function`` under
    ``label``; ``body`` is everything but the final back-branch ``branch``."""

    function: str
    label: str
    start: int
    end: int
    body: tuple[str, ...]
    branch: str

    @property
    def continue_on(self) -> int:
        """1 when the back-branch is taken on SCC = 1 (``s_cbranch_scc1``), else 0."""
        return 1 if self.branch.split(None, 1)[0] == "s_cbranch_scc1" else 0

    @property
    def divergent(self) -> bool:
        """A loop that runs while any lane is active (``s_cbranch_execnz``)."""
        return self.branch.split(None, 1)[0] == "s_cbranch_execnz"


def single_block_loops(fn: Function, cfg=None) -> list[Loop]:
    """Every reachable block that ends in ``s_cbranch_scc0/1`` or ``s_cbranch_execnz``
    to its own label."""
    cfg = cfg or build_cfg(fn)
    out = []
    for bi, b in enumerate(cfg.blocks):
        if not cfg.reachable[bi] or b.label is None or b.end - b.start < 2:
            continue
        last = fn.instructions[b.end - 1]
        if last.mnemonic in ("s_cbranch_scc0", "s_cbranch_scc1", "s_cbranch_execnz") and \
                last.branch_target == b.label:
            out.append(Loop(fn.name, b.label, b.start, b.end,
                            tuple(i.text for i in fn.instructions[b.start:b.end - 1]),
                            last.text))
    return out


def check_body(fn: Function, loop: Loop) -> None:
    """LoopRefused unless every body instruction may be copied and reordered:
    no fixed point (barrier, EXEC write, message, priority, unknown...), no raw or
    PC-relative instruction, and no SCC carried into an iteration (the guards at
    the top of an iteration overwrite SCC)."""
    for t in loop.body:
        e = effects(t)
        if e.reads & R.SCC_MASK:
            raise LoopRefused(f"the body reads the SCC of the previous iteration ({t})")
        if e.kills & R.SCC_MASK:
            break
    body = fn.instructions[loop.start:loop.end - 1]
    for k, ins in enumerate(body):
        if loop.divergent and k == len(body) - 1 and ins.mnemonic == "s_andn2_b64":
            continue                       # the lane-exit update divergent_induction checks
        if ins.raw:
            raise LoopRefused(f"raw instruction in the loop ({ins.text[:40]})")
        if ins.mnemonic.startswith(("s_getpc", "s_setpc", "s_swappc")):
            raise LoopRefused(f"PC-relative code in the loop ({ins.mnemonic})")
        if is_fixed_point(ins.text):
            e = effects(ins.text)
            what = "writes EXEC (a divergent loop)" if e.writes & R.EXEC_MASK else \
                f"holds {ins.mnemonic}"
            raise LoopRefused(f"the loop body {what}")


# --- the induction variable ------------------------------------------------------------

@dataclass(frozen=True)
class Induction:
    """The exit test of a counted loop, normalized to "continue while
    ``counter + delta + j*step  op  bound``" (32-bit, ``signed`` compare)."""

    counter: str
    step: int
    delta: int
    op: str                      # ne | lt | le | gt | ge
    signed: bool
    bound: str                   # an SGPR or an integer constant (32-bit pattern)
    compare: int                 # body index of the exit compare
    update: int                  # body index of the counter update

    @property
    def bound_value(self) -> int | None:
        return int(self.bound, 0) % U32 if _INT.match(self.bound) else None


def _int(text: str) -> int | None:
    text = text.strip()
    return int(text, 0) if _INT.match(text) else None


def _sreg(text: str) -> str | None:
    return text if _SGPR.match(text.strip()) and int(text.strip()[1:]) < 102 else None


def _step(text: str, counter: str) -> int | None:
    """The constant ``text`` adds to ``counter`` (``s_add``/``s_sub``/``s_addk``), else None."""
    e = effects(text)
    m, ops = e.mnemonic, [o.strip() for o in e.operands]
    if m in ("s_add_i32", "s_add_u32") and len(ops) == 3 and ops[0] == counter:
        k = _int(ops[2]) if ops[1] == counter else _int(ops[1]) if ops[2] == counter else None
    elif m in ("s_sub_i32", "s_sub_u32") and len(ops) == 3 and ops[:2] == [counter, counter]:
        k = _int(ops[2])
        k = -k if k is not None else None
    elif m == "s_addk_i32" and len(ops) == 2 and ops[0] == counter:
        k = _int(ops[1])
        k = (k & 0xFFFF) - ((k & 0x8000) << 1) if k is not None else None
    else:
        return None
    if k is None:
        return None
    k %= U32
    k = k - U32 if k >= 1 << 31 else k
    return k or None


def induction(loop: Loop) -> Induction:
    """The loop's exit test as an :class:`Induction`; LoopRefused otherwise."""
    body = loop.body
    writers_scc = [k for k, t in enumerate(body) if effects(t).writes & R.SCC_MASK]
    if not writers_scc:
        raise LoopRefused("nothing in the body sets the SCC the back-branch tests")
    c = writers_scc[-1]
    e = effects(body[c])
    m = re.fullmatch(r"s_cmpk?_(eq|lg|lt|le|gt|ge)_(i32|u32)", e.mnemonic)
    if m is None or len(e.operands) != 2:
        raise LoopRefused(f"the exit test is not a 32-bit scalar compare ({body[c]})")
    op = "ne" if m.group(1) == "lg" else m.group(1)
    signed = m.group(2) == "i32"
    a, b = (o.strip() for o in e.operands)
    written = 0
    for t in body:
        written |= effects(t).writes
    def invariant(x: str) -> bool:
        if _int(x) is not None:
            return True
        return _sreg(x) is not None and not written & R.operand_mask(x)
    if _sreg(a) and written & R.operand_mask(a) and invariant(b):
        counter, bound = a, b
    elif _sreg(b) and written & R.operand_mask(b) and invariant(a):
        counter, bound, op = b, a, _SWAP[op]
    else:
        raise LoopRefused(f"the exit test {body[c]!r} does not compare a counter written "
                          "in the loop with a loop-invariant SGPR or constant")
    if e.mnemonic.startswith("s_cmpk_") and _int(bound) is not None:
        k = _int(bound) & 0xFFFF
        bound = str(k - ((k & 0x8000) << 1) if signed else k)
    cmask = R.operand_mask(counter)
    ups = [k for k, t in enumerate(body) if effects(t).writes & cmask]
    step = _step(body[ups[0]], counter) if len(ups) == 1 else None
    if step is None:
        raise LoopRefused(f"counter {counter} is not stepped once by a constant "
                          f"({len(ups)} writers)")
    if not loop.continue_on:
        op = _NEGATE[op]
    if op == "eq":
        raise LoopRefused("the loop continues only while the counter equals its bound")
    if op in ("lt", "le") and step < 0 or op in ("gt", "ge") and step > 0:
        raise LoopRefused(f"the counter steps away from its bound ({op}, step {step})")
    bv = _int(bound)
    if bv is not None:
        bound = str(bv % U32)
    delta = step if ups[0] < c else 0
    return Induction(counter, step, delta, op, signed, bound, c, ups[0])


# --- guards -------------------------------------------------------------------------------

def _lit(v: int) -> str:
    """A 32-bit value as an operand: small ones inline, others as hex literals."""
    v %= U32
    s = v - U32 if v >= 1 << 31 else v
    return str(s) if -16 <= s <= 64 else f"0x{v:x}"


def _signed(v: int) -> int:
    v %= U32
    return v - U32 if v >= 1 << 31 else v


def guard_needs_scratch(ind: Induction, tests: int) -> bool:
    """Whether :func:`guard_lines` needs a scratch SGPR for ``tests`` tests."""
    return _const_guard(ind, tests) is None and not (
        ind.op in ("lt", "gt") and ind.delta + (tests - 1) * ind.step == 0)


def _const_guard(ind: Induction, tests: int) -> str | None:
    """A single compare of the counter with a constant that implies the guard, or None."""
    n = ind.bound_value
    if n is None:
        return None
    c, d, dl, K = ind.counter, ind.step, ind.delta, (tests - 1) * abs(ind.step)
    if ind.op == "ne":
        if d > 0:
            lo = (n - dl) % U32 - K
            return f"s_cmp_lt_u32 {c}, {_lit(lo)}" if lo > 0 else None
        hi = (n - dl) % U32 + K
        return f"s_cmp_gt_u32 {c}, {_lit(hi)}" if hi < U32 - 1 else None
    a = dl + (tests - 1) * d                   # t_{m-1} = c + a
    op = {"le": "lt", "ge": "gt"}.get(ind.op, ind.op)
    nn = (_signed(n) if ind.signed else n) + {"le": 1, "ge": -1}.get(ind.op, 0)
    lim = nn - a                               # t_{m-1} op nn  <=>  c op lim (no overflow)
    lo, hi = ((-(1 << 31), (1 << 31) - 1) if ind.signed else (0, U32 - 1))
    if not lo <= lim <= hi:
        return None
    ty = "i32" if ind.signed else "u32"
    return f"s_cmp_{op}_{ty} {c}, {_lit(lim)}"


def guard_lines(ind: Induction, tests: int, fail: str, scratch: str | None) -> list[str]:
    """SALU lines that branch to ``fail`` unless the next ``tests`` exit tests (from
    the top of an iteration) all continue; they clobber SCC and ``scratch`` only.
    LoopRefused when the guard needs a scratch SGPR and none is given, or cannot
    be expressed (``<=``/``>=`` against a register bound)."""
    if tests < 1:
        raise ValueError("a guard covers at least one test")
    K = (tests - 1) * abs(ind.step)
    if K >= 1 << 31:
        raise LoopRefused("the guarded distance does not fit 31 bits")
    one = _const_guard(ind, tests)
    if one is not None:
        return [one, f"s_cbranch_scc0 {fail}"]
    c, d, dl = ind.counter, ind.step, ind.delta
    n = ind.bound if ind.bound_value is None else _lit(ind.bound_value)
    a = dl + (tests - 1) * d
    if ind.op in ("lt", "gt") and a == 0:
        return [f"s_cmp_{ind.op}_{'i32' if ind.signed else 'u32'} {c}, {n}",
                f"s_cbranch_scc0 {fail}"]
    if scratch is None:
        raise LoopRefused("the guard needs a scratch SGPR and none is free")
    t = scratch
    if ind.op == "ne":
        lines = [f"s_sub_u32 {t}, {n}, {c}"] if d > 0 else [f"s_sub_u32 {t}, {c}, {n}"]
        if dl:
            lines.append(f"s_add_u32 {t}, {t}, {_lit(-dl if d > 0 else dl)}")
        return lines + [f"s_cmp_gt_u32 {t}, {_lit(K)}", f"s_cbranch_scc0 {fail}"]
    if ind.op in ("le", "ge"):
        raise LoopRefused(f"a {ind.op} exit test against a register bound")
    ty = "i32" if ind.signed else "u32"
    if ind.op == "lt":       # c < n - a, n - a saturated at the type's minimum
        sat = "0x80000000" if ind.signed else "0"
        lines = [f"s_sub_{ty} {t}, {n}, {_lit(a)}", f"s_cselect_b32 {t}, {sat}, {t}"]
    else:                    # c > n - a = n + |a|, saturated at the type's maximum
        sat = "0x7fffffff" if ind.signed else "0xffffffff"
        lines = [f"s_add_{ty} {t}, {n}, {_lit(-a)}", f"s_cselect_b32 {t}, {sat}, {t}"]
    return lines + [f"s_cmp_{ind.op}_{ty} {c}, {t}", f"s_cbranch_scc0 {fail}"]


# --- divergent loops ----------------------------------------------------------------------

def divergent_induction(loop: Loop) -> tuple[Induction, str]:
    """(the per-lane exit test as an :class:`Induction` on a VGPR counter, the SGPR pair
    that collects finished lanes) of a loop clang emits for ``for (i = tid; i < n;
    i += 256)``::

        v_add_u32 vI, C, vI ; v_cmp_OP vcc, n, vI ; s_or_b64 M, vcc, M
        ...                 ; s_andn2_b64 exec, exec, M ; s_cbranch_execnz L

    A lane leaves when its compare holds; LoopRefused for any other shape."""
    body = loop.body
    last = effects(body[-1]) if body else None
    if last is None or last.mnemonic != "s_andn2_b64" or \
            [o.strip() for o in last.operands[:2]] != ["exec", "exec"]:
        raise LoopRefused("a divergent loop that does not end in s_andn2_b64 exec, exec, M")
    mask = last.operands[2].strip()
    mbits = R.operand_mask(mask)
    if not re.fullmatch(r"s\[\d+:\d+\]", mask):
        raise LoopRefused(f"the finished-lane mask {mask} is not an SGPR pair")
    ups = [k for k, t in enumerate(body) if effects(t).writes & mbits]
    e = effects(body[ups[0]]) if len(ups) == 1 else None
    ops = [o.strip() for o in e.operands] if e else []
    if e is None or e.mnemonic != "s_or_b64" or ops[0] != mask or mask not in ops[1:]:
        raise LoopRefused("the finished-lane mask is not collected by one s_or_b64")
    src = ops[2] if ops[1] == mask else ops[1]
    sbits = R.operand_mask(src)
    cmp = next((k for k in range(ups[0] - 1, -1, -1) if effects(body[k]).writes & sbits), None)
    ce = effects(body[cmp]) if cmp is not None else None
    m = re.fullmatch(r"v_cmp_(eq|ne|lt|le|gt|ge)_(i32|u32)_e(32|64)", ce.mnemonic) if ce else None
    if m is None or [o.strip() for o in ce.operands[:1]] != [src] or len(ce.operands) != 3:
        raise LoopRefused(f"the lanes' exit test is not a 32-bit integer compare into {src}")
    op, signed = m.group(1), m.group(2) == "i32"
    a, b = (o.strip() for o in ce.operands[1:])
    written = 0
    for t in body:
        written |= effects(t).writes

    def invariant(x):
        return _int(x) is not None or _sreg(x) is not None and not written & R.operand_mask(x)

    def vreg(x):
        return re.fullmatch(r"v\d+", x) is not None and written & R.operand_mask(x)
    if vreg(a) and invariant(b):
        counter, bound = a, b
    elif vreg(b) and invariant(a):
        counter, bound, op = b, a, _SWAP[op]
    else:
        raise LoopRefused(f"{body[cmp]!r} does not compare a per-lane counter with a "
                          "loop-invariant SGPR or constant")
    cups = [k for k, t in enumerate(body) if effects(t).writes & R.operand_mask(counter)]
    step = None
    if len(cups) == 1:
        ue = effects(body[cups[0]])
        uo = [o.strip() for o in ue.operands]
        if ue.mnemonic == "v_add_u32_e32" and len(uo) == 3 and uo[0] == counter and \
                counter in uo[1:] and not ue.modifiers:
            k = _int(uo[1] if uo[2] == counter else uo[2])
            if k is not None:
                k %= U32
                step = (k - U32 if k >= 1 << 31 else k) or None
    if step is None:
        raise LoopRefused(f"lane counter {counter} is not stepped once by a constant")
    op = _NEGATE[op]                       # the compare says "leave": continue is its negation
    if op == "eq" or op in ("lt", "le") and step < 0 or op in ("gt", "ge") and step > 0:
        raise LoopRefused(f"the lane counter does not move toward its bound ({op}, {step})")
    bv = _int(bound)
    if bv is not None:
        bound = str(bv % U32)
    delta = step if cups[0] < cmp else 0
    return Induction(counter, step, delta, op, signed, bound, cmp, cups[0]), mask


def vector_guard_lines(ind: Induction, tests: int, fail: str, scratch: str,
                       pair: str) -> list[str]:
    """Lines that branch to ``fail`` unless, for every active lane, the next ``tests``
    exit tests of the lane counter continue (then no lane leaves and EXEC stays as it
    is). A scalar threshold from the bound (saturated where it would wrap), one
    compare of the lanes' counters with it, and ``s_andn2_b64`` with EXEC: SCC = 1 when
    some active lane might leave. Clobbers SCC, ``scratch`` and ``pair``."""
    K = (tests - 1) * abs(ind.step)
    if K >= 1 << 31:
        raise LoopRefused("the guarded distance does not fit 31 bits")
    c, d, dl, t = ind.counter, ind.step, ind.delta, scratch
    n, nv = ind.bound, ind.bound_value
    ty = "i32" if ind.signed else "u32"
    if ind.op == "ne":                     # d > 0: c < n - delta - K;  d < 0: c > n - delta + K
        if d > 0:
            if nv is not None:
                lo = (nv - dl) % U32 - K
                if lo <= 0:
                    raise LoopRefused("the guard can never pass")
                lines = [f"s_mov_b32 {t}, {_lit(lo)}"]
            else:
                lines = [f"s_sub_u32 {t}, {n}, {_lit(dl + K)}", f"s_cselect_b32 {t}, 0, {t}"]
            cmp = f"v_cmp_gt_u32_e64 {pair}, {t}, {c}"
        else:
            if nv is not None:
                hi = (nv - dl) % U32 + K
                if hi >= U32 - 1:
                    raise LoopRefused("the guard can never pass")
                lines = [f"s_mov_b32 {t}, {_lit(hi)}"]
            else:
                lines = [f"s_add_u32 {t}, {n}, {_lit(K - dl)}",
                         f"s_cselect_b32 {t}, 0xffffffff, {t}"]
            cmp = f"v_cmp_lt_u32_e64 {pair}, {t}, {c}"
    else:
        a = dl + (tests - 1) * d
        if ind.op in ("le", "ge"):
            if nv is None:
                raise LoopRefused(f"a {ind.op} exit test against a register bound")
        if nv is not None:
            nn = (_signed(nv) if ind.signed else nv) + {"le": 1, "ge": -1}.get(ind.op, 0)
            lim = nn - a
            lo, hi = ((-(1 << 31), (1 << 31) - 1) if ind.signed else (0, U32 - 1))
            if not lo <= lim <= hi:
                raise LoopRefused("the guard can never pass")
            lines = [f"s_mov_b32 {t}, {_lit(lim)}"]
        elif ind.op == "lt":
            sat = "0x80000000" if ind.signed else "0"
            lines = [f"s_sub_{ty} {t}, {n}, {_lit(a)}", f"s_cselect_b32 {t}, {sat}, {t}"]
        else:
            sat = "0x7fffffff" if ind.signed else "0xffffffff"
            lines = [f"s_add_{ty} {t}, {n}, {_lit(-a)}", f"s_cselect_b32 {t}, {sat}, {t}"]
        strict = {"lt": "gt", "le": "gt", "gt": "lt", "ge": "lt"}[ind.op]
        cmp = f"v_cmp_{strict}_{ty}_e64 {pair}, {t}, {c}"
    return lines + [cmp, f"s_andn2_b64 {pair}, exec, {pair}", f"s_cbranch_scc1 {fail}"]


# --- registers ----------------------------------------------------------------------------

class RegisterPool:
    """Registers free across a loop, below a limit that keeps the kernel's occupancy."""

    def __init__(self, fn: Function, program: Program, loop: Loop, *, grow: bool = False):
        cfg = build_cfg(fn)
        live = Liveness(fn, cfg)
        self.free = {"v": live.free(loop.start, loop.end, "v"),
                     "s": live.free(loop.start, loop.end, "s")}
        self.limit = {"v": vgpr_limit(fn, program, grow=grow),
                      "s": max(allocation_limit(fn, program, "s"), SGPR_SOFT_LIMIT)}
        self.taken: dict[str, set[int]] = {"v": set(), "s": set()}

    def take(self, kind: str, n: int, align: int = 1, phase: int = 0) -> int | None:
        """The first of ``n`` consecutive free registers starting at ``phase`` modulo
        ``align`` (so a group keeps its tuples aligned), or None."""
        base = R.VGPR_BASE if kind == "v" else R.SGPR_BASE
        for s in range(phase % align, self.limit[kind] - n + 1, align):
            regs = range(s, s + n)
            if all(self.free[kind] >> (base + r) & 1 and r not in self.taken[kind]
                   for r in regs):
                self.taken[kind].update(regs)
                return s
        return None

    def scratch(self) -> str | None:
        r = self.take("s", 1)
        return None if r is None else f"s{r}"

    def pair(self) -> str | None:
        r = self.take("s", 2, 2)
        return None if r is None else f"s[{r}:{r + 1}]"


# SGPRs a loop operator may use without an allocation that costs waves: 8 waves per SIMD
# take <= 96 allocated SGPRs (800 per SIMD, granules of 16), VCC/FLAT_SCRATCH/XNACK on top
SGPR_SOFT_LIMIT = 88


def vgpr_limit(fn: Function, program: Program, *, grow: bool = False) -> int:
    """VGPRs ``[0, limit)`` a loop operator may use: as many as keep the kernel's
    waves per SIMD (``grow``: up to 256, whatever the occupancy)."""
    target = program.source.target
    used = fn.register_usage()
    if used.agprs or fn.kernel is None:
        return allocation_limit(fn, program, "v")
    if grow:
        return 256
    occ = occupancy(fn.kernel, target)
    total = processor(target.processor).vgprs
    gran = vgpr_granule(target)
    keep = (total // max(1, occ.waves_per_simd)) // gran * gran
    return max(allocation_limit(fn, program, "v"), min(256, keep))


def fresh_copy(texts: list[str], pool: RegisterPool, select=None, must: bool = False) \
        -> list[str]:
    """``texts`` (stripped) with every renamable web group (:mod:`webs`) on fresh
    registers from ``pool`` (``select(webs, group)``: only the groups it accepts). A
    group the pool cannot place keeps its names (correct, only less overlap), unless
    ``must``: then LoopRefused."""
    ws = webs_of(texts)
    new_reg: dict[int, int] = {}
    for members in renamable_groups(ws):
        if select is not None and not select(ws, members):
            continue
        kind, lo, hi, widest = group_span(ws, members)
        al = alignment(kind, widest)
        first = pool.take(kind, hi - lo + 1, al, lo % al)
        if first is None:
            if must:
                raise LoopRefused(f"no free registers for {kind}[{lo}:{hi}]")
            continue
        for w in members:
            new_reg[w] = first + ws.webs[w].reg - lo
    try:
        return rewrite(ws, new_reg)
    except ValueError as exc:
        raise LoopRefused(str(exc)) from None


# --- labels and waits ---------------------------------------------------------------------

def fresh_labels(program: Program, seed: str, n: int) -> list[str]:
    """``n`` generated labels (``.Lae_<hex>``) no function of ``program`` has, derived
    from ``seed`` so that the same edit of the same program gets the same names."""
    taken = {f.name for f in program.functions}
    for f in program.functions:
        taken.update(f.labels)
    out: list[str] = []
    k = 0
    while len(out) < n:
        name = ".Lae_" + hashlib.sha256(f"{seed}:{k}".encode()).hexdigest()[:10]
        k += 1
        if name not in taken and name not in out:
            assert GENERATED_LABEL.match(name)
            out.append(name)
    return out


def with_waits(lines: list[str], entry: State, exit_: State) -> list[str]:
    """``lines`` (one straight-line block, no waits) with the weakest sufficient waits
    from ``entry``, leaving no more outstanding than ``exit_``."""
    return recompute_waitcnts(lines, entry, exit_)


def strip(texts) -> list[str]:
    """``texts`` without waits and ``s_nop`` (recomputed and re-padded later)."""
    return [t for t in texts if not is_wait(t) and not is_nop(t)]


def scc_dead_after(texts: list[str], k: int) -> bool:
    """Whether the SCC written at ``texts[k]`` is overwritten before anything reads it
    (False at the end of ``texts``)."""
    for t in texts[k + 1:]:
        e = effects(t)
        if e.reads & R.SCC_MASK:
            return False
        if e.kills & R.SCC_MASK:
            return True
    return False


def only_writes_scc(text: str) -> bool:
    e = effects(text)
    return not e.unknown and not e.counters and e.writes == R.SCC_MASK


def hot_loops(context, individual, fn: Function, loops: list[Loop]) -> list[Loop]:
    """``loops`` ranked: those overlapping the individual's hottest windows first (in
    window order), rng ties; loops under a generated label (the remainder paths of
    earlier loop edits, which run fewer iterations than a group) are left out."""
    loops = [lp for lp in loops if GENERATED_LABEL.match(lp.label) is None]
    rank: dict[int, int] = {}
    for k, (name, s, e) in enumerate(context.windows(individual)):
        if name != fn.name:
            continue
        for lp in loops:
            if s < lp.end and lp.start < e:
                rank.setdefault(lp.start, k)
    tie = {lp.start: context.rng.random() for lp in loops}
    return sorted(loops, key=lambda lp: (rank.get(lp.start, 1 << 20), tie[lp.start]))


class LoopOperator:
    """What ``unroll`` and ``pipeline`` share: try the hottest loops, each at the factors
    in an rng order, until one rewrite passes :func:`~asmevo.operators.rules.common.seal`;
    else reject with the first reasons. Subclasses give ``FACTORS``, ``verb`` and
    :meth:`rewrite` (the loop block's new lines, or LoopRefused)."""

    FACTORS: tuple[int, ...] = ()
    verb = ""

    def __init__(self, factors: tuple[int, ...] | None = None, tries: int = 4,
                 noise: float = 0.1, grow: bool = False):
        factors = tuple(int(f) for f in (self.FACTORS if factors is None else factors))
        if not factors or any(f not in self.FACTORS for f in factors):
            raise ValueError(f"factors must be a non-empty subset of {self.FACTORS}")
        if tries < 1 or noise < 0:
            raise ValueError("tries must be >= 1 and noise >= 0")
        self.factors, self.tries, self.noise, self.grow = factors, tries, noise, bool(grow)
        self._seals: dict[str, object] = {}

    def rewrite(self, fn, program, loop: Loop, factor: int, rng) -> list[str]:
        raise NotImplementedError

    def mutate(self, individual, context):
        program = context.program(individual)
        fn = program.function(context.kernel)
        loops = hot_loops(context, individual, fn, single_block_loops(fn))
        if not loops:
            return context.reject("no single-block loop (a block branching back to itself "
                                  "on SCC or EXEC)")
        reasons: list[str] = []
        for loop in loops[:self.tries]:
            factors = list(self.factors)
            context.rng.shuffle(factors)
            for factor in factors:
                try:
                    lines = self.rewrite(fn, program, loop, factor, context.rng)
                except LoopRefused as exc:
                    reasons.append(f"{loop.label} x{factor}: {exc}")
                    continue
                result = self._sealed(program, fn, loop, factor, lines)
                if isinstance(result, Edit):
                    return result
                reasons.append(f"{loop.label} x{factor}: {result}")
        return context.reject("; ".join(reasons[:3]))

    def _sealed(self, program, fn, loop: Loop, factor: int, lines: list[str]):
        """:func:`seal`, remembered per (function text, loop, lines): a search asks for the
        same rewrite of the same parent many times, and the hazard padding and static
        gate are what cost."""
        text = "\n".join(getattr(i, "text", None) or f"{i.name}:" for i in fn.items)
        key = hashlib.sha256("\0".join([text, str(loop.start), str(factor)] + lines)
                             .encode()).hexdigest()
        hit = self._seals.get(key)
        if hit is None:
            hit = seal(program, fn.name, loop.start, loop.end, lines, operator=self.name,
                       note=f"{self.verb} {loop.label} [{loop.start}:{loop.end}] x{factor}")
            if len(self._seals) > 256:
                self._seals.clear()
            self._seals[key] = hit
        return hit
