"""Is a reordered / re-timed kernel still the same program? In-place rules after CuAsmRL.

:func:`check` compares K0's instruction sequence with an edited one (a
permutation inside one region plus control-field changes) and returns every
reason it is not provably safe; an empty list means legal. The rules:

* Nothing crosses a label or a fence (branch, ``EXIT``, ``BAR``, ``DEPBAR``,
  memory barriers, warpgroup/tensor-core async machinery, atomics, clocks); an
  instruction a relocation names never shifts.
* Two instructions swap only if no register (R, UR, P, UP, widths included)
  one writes is read or written by the other; memory instructions keep their
  order when either is a store and their spaces may alias.
* Scoreboards: two instructions that set or wait on a common scoreboard keep
  their order; a late reader (memory, variable latency) without a read
  scoreboard never passes one with a read scoreboard that reads a register it
  reads (that scoreboard covers both: operands are read in order); an instruction never moves above a wait that guards any register
  it touches (the union, kernel-wide, of what setters of that scoreboard
  write, or read for read scoreboards), and never moves a wait below such an
  instruction.
* In-order completion: a variable-latency instruction without a write
  scoreboard keeps its order with every instruction that sets a scoreboard or
  is itself variable-latency (its reader waits on a later one's scoreboard).
* Fixed latency: every dependent pair whose producer is not scoreboarded keeps
  ``new distance >= min(old distance, need)`` in issue cycles (sum of stall
  counts), ``need`` = :data:`FIXED_LATENCY` for ALU work and
  :data:`UNKNOWN_LATENCY` otherwise; so does every upward-exposed read against
  the block start, and every result the block leaves behind (a register it
  writes last, or one a variable-latency instruction still reads) against the
  block end, where the next block's readers begin. A predicate read as a guard
  (``@P0``), or by a memory instruction or a branch, needs :data:`PREDICATE_LATENCY`.
* A memory instruction issues at least :data:`BARRIER_SETTLE` cycles after a barrier.
* Scoreboard set-up: an instruction that waits on a scoreboard issues at least
  :data:`SCOREBOARD_SETUP` cycles after the instruction that sets it (ptxas
  never schedules less: 0 of 725 setter/waiter pairs in the sm_90 corpus).
* Only the stall count, the yield bit and (cleared) reuse flags may change;
  scoreboard fields never do. Reuse flags are cleared wherever an
  instruction's successor changed.
"""
from __future__ import annotations

from dataclasses import dataclass

from asmevo.memo import Memo
from asmevo.targets.nvidia.cubin import WORD_BYTES
from asmevo.targets.nvidia.program import Instruction, KernelCode
from asmevo.targets.nvidia.sass import NO_BAR, valid_timing

FIXED_LATENCY = 12      # cycles; ptxas never schedules an ALU consumer under 6 on sm_90
UNKNOWN_LATENCY = 40    # cycles; HMMA, unknown opcodes, unscoreboarded memory reads
SCOREBOARD_SETUP = 2    # cycles from setting a scoreboard to an instruction that waits on it
# A predicate written by ALU work and read as an instruction's guard (`@P0`, read
# late), or by a memory instruction or a branch: ptxas never leaves less than 13
# cycles (first guard readers in the 14 sm_90 kernels: 46 of 279 memory and 89 of 185
# ALU ones sit at exactly 13, none below; a predicate read as an *operand* of ALU
# work, e.g. FSEL's, goes down to 2). Seen on the H200: `@P5 STG` moved to 12 cycles
# after `ISETP P5` dropped its stores; `@!P3 FMUL` at 12 cycles after `FSETP P3`
# (a stall 2 -> 1 re-time in tri_decode_attention) computed wrong values.
PREDICATE_LATENCY = 13
# A barrier (BAR.SYNC) to the next memory instruction: ptxas never leaves less than 6
# cycles (13 LDS, 4 STS and 23 LDG first accesses sit at exactly 6 in the corpus).
# Seen on the H200: `LDS R8` moved to 1 cycle after `BAR.SYNC` in tri_decode_attention
# read stale shared memory (99.7% of outputs wrong at size large); the same move with
# the barrier's stall raised to 6 was bit-equal, at 3 it was not.
BARRIER_SETTLE = 6
_LATE_PREDICATE_READERS = frozenset({"BRA", "EXIT", "BRX", "JMP", "JMX", "CALL", "RET", "BSSY",
                                     "BSYNC", "WARPSYNC"})
_SLOW = frozenset({"HMMA", "IMMA", "DMMA"})
# Variable-latency instructions (ptxas gives them scoreboards on sm_90). One of
# these *without* a write scoreboard relies on in-order completion: its reader
# waits on the scoreboard of a later instruction of the same pipe (seen on the
# H200: moving `LDS R11` below three scoreboarded SHFLs broke decode attention).
VARIABLE = frozenset({"S2R", "S2UR", "LDC", "LDG", "LDS", "LDSM", "LD", "LDL", "MUFU", "SHFL",
                      "I2F", "F2I", "F2F", "I2I", "FRND", "FENCE", "POPC", "FLO", "BREV"})


def proxy_ordered(ins: Instruction) -> bool:
    """A variable-latency result no scoreboard of its own guards."""
    return (ins.base in VARIABLE or not ins.ops.known) and bool(ins.ops.writes) \
        and ins.control.wbar == NO_BAR


@dataclass(frozen=True)
class Guards:
    """Per scoreboard (0..5), kernel-wide: ``touched``, every register an instruction
    that sets it may still touch (writes for a write scoreboard, reads for a read
    scoreboard); ``after_wait``, every register the kernel writes if any instruction
    waits on it (a wait orders everything after it -- in its block, the next ones, the
    next trip round a loop -- after the scoreboard's release; kernel-wide rather than
    block-local costs 5 of 7,821 legal moves in the sm_90 corpus)."""

    touched: dict[int, frozenset[str]]
    after_wait: dict[int, frozenset[str]]


def guarded(code: KernelCode) -> Guards:
    """The kernel's :class:`Guards`. Edits never change scoreboard fields, so they
    are K0's; computed once per kernel."""
    key = (code.kernel.name, code.kernel.code)
    hit = _GUARDS.get(key)
    if hit is not None:
        return hit
    touched: dict[int, set[str]] = {b: set() for b in range(6)}
    waited: set[int] = set()
    written: set[str] = set()
    for ins in code.instructions:
        c = ins.control
        if c.wbar != NO_BAR:
            touched[c.wbar] |= ins.ops.writes
        if c.rbar != NO_BAR:
            touched[c.rbar] |= ins.ops.reads
        waited |= set(c.waits)
        written |= ins.ops.writes
    res = Guards({b: frozenset(r) for b, r in touched.items()},
                 {b: frozenset(written if b in waited else ()) for b in range(6)})
    return _GUARDS.put(key, res)


_GUARDS: Memo[Guards] = Memo("nvidia.legality.guards", 257)


def _late_reader(ins: Instruction) -> bool:
    """Reads its source registers after issue (memory and other variable-latency work)."""
    return ins.ops.mem is not None or ins.base in VARIABLE or not ins.ops.known


def _may_alias(a, b) -> bool:
    if a is None or b is None or "const" in (a.space, b.space):
        return False
    if "store" not in (a.kind, b.kind):
        return False
    return a.space == b.space or "generic" in (a.space, b.space)


def conflict(a: Instruction, b: Instruction, guards: Guards) -> str | None:
    """Why ``a`` (earlier in K0) and ``b`` may not trade places; None if they may."""
    if a.ops.fence or b.ops.fence:
        return f"fence {(a if a.ops.fence else b).base}"
    regs = (a.ops.writes & (b.ops.reads | b.ops.writes)) | (b.ops.writes & a.ops.reads)
    if regs:
        return f"register dependency on {','.join(sorted(regs))}"
    if _may_alias(a.ops.mem, b.ops.mem):
        return "memory order (a store and an access that may alias)"
    ca, cb = a.control, b.control
    for x, y in ((a, b), (b, a)):
        if proxy_ordered(x) and (y.control.sets or y.base in VARIABLE):
            return (f"{x.base} has no scoreboard of its own and completes in order with "
                    f"{y.base}")
    # In-order operand reads: ptxas puts a read scoreboard only on the last of several
    # late readers (its release implies theirs, whatever registers they read). An
    # earlier reader without one may not pass it when anything ordered after a wait
    # on that scoreboard overwrites what it reads (seen on the H200: `LDG R10 [R4] {R0}`
    # moved above `LDG R9 [R4]`, then `HFMA2 R4` waiting on R0 overwrote R4 before LDG R9
    # read it; `STS [R67+UR4] {R1}` moved above `@!P5 STG [R42.64]`, and `PRMT R43`,
    # two instructions after a wait on R1, overwrote the store's address first).
    if cb.rbar != NO_BAR and ca.rbar == NO_BAR and _late_reader(a):
        shared = a.ops.reads & guards.after_wait[cb.rbar]
        if shared:
            return (f"{b.base}'s read scoreboard SB{cb.rbar} also covers {a.base}'s earlier "
                    f"read of {','.join(sorted(shared))}")
    common = (ca.sets | ca.waits) & (cb.sets | cb.waits)
    if common:
        return f"shared scoreboard SB{min(common)}"
    for sb in ca.waits:
        touched = (b.ops.reads | b.ops.writes) & guards.touched[sb]
        if touched:
            return f"would leave the wait on SB{sb} that guards {','.join(sorted(touched))}"
    return None


def _fixed(p: Instruction) -> bool:
    """A fixed-latency producer (ALU work; ULDC, the uniform constant load, is
    fixed-latency on sm_90: ptxas never scoreboards it)."""
    po = p.ops
    return po.known and (po.mem is None or po.base == "ULDC") \
        and po.base not in _SLOW and po.base not in VARIABLE


def _need(p: Instruction, c: Instruction) -> int:
    """Issue cycles ``c`` must trail ``p`` by, when nothing but stalls orders them."""
    po, co, pc = p.ops, c.ops, p.control
    raw_waw = po.writes & (co.reads | co.writes)
    war = po.reads & co.writes
    fixed = _fixed(p)
    need = 0
    if raw_waw and pc.wbar == NO_BAR:
        need = FIXED_LATENCY if fixed else UNKNOWN_LATENCY
        if fixed and _late_predicate_read(po.writes & co.reads, c):
            need = max(need, PREDICATE_LATENCY)
    if war and pc.rbar == NO_BAR and not fixed:
        need = max(need, UNKNOWN_LATENCY)
    if pc.sets & c.control.waits:
        need = max(need, SCOREBOARD_SETUP)
    if p.base == "BAR" and c.ops.mem is not None:
        need = max(need, BARRIER_SETTLE)
    return need


def _predicates(regs) -> bool:
    return any(r[0] == "P" or r.startswith("UP") for r in regs)


def _late_predicate_read(regs, c: Instruction) -> bool:
    """``c`` reads one of the predicates in ``regs`` late: as its guard, or as a memory
    instruction, a branch or an instruction the operand model does not know."""
    preds = {r for r in regs if r[0] == "P" or r.startswith("UP")}
    if not preds:
        return False
    return c.ops.guard in preds or c.ops.mem is not None or c.base in _LATE_PREDICATE_READERS \
        or not c.ops.known


def _need_after(p: Instruction, later_writes: set[str]) -> int:
    """Issue cycles from ``p`` to the end of its block that the next block's first
    instructions may rely on (they are not checked pair by pair)."""
    pc = p.control
    need = SCOREBOARD_SETUP if pc.sets else 0
    left = p.ops.writes - later_writes
    if left and pc.wbar == NO_BAR:
        need = max(need, FIXED_LATENCY if _fixed(p) else UNKNOWN_LATENCY)
        if _fixed(p) and _predicates(left):
            need = max(need, PREDICATE_LATENCY)
    if p.ops.reads and pc.rbar == NO_BAR and _late_reader(p) and not _fixed(p):
        need = max(need, UNKNOWN_LATENCY)
    return need


def _prefix(seq: list[Instruction]) -> list[int]:
    out = [0]
    for ins in seq:
        out.append(out[-1] + ins.control.stall)
    return out


def check(old: KernelCode, new: KernelCode) -> list[str]:
    """Every reason ``new`` is not a legal in-place edit of ``old`` (empty: legal)."""
    a, b = old.instructions, new.instructions
    if len(a) != len(b) or sorted(i.origin for i in b) != list(range(len(a))):
        return ["the edit is not a permutation of the kernel's instructions"]
    changed = [k for k in range(len(a)) if a[k].origin != b[k].origin or a[k].word != b[k].word]
    if not changed:
        return []
    reasons: list[str] = []
    by_origin = {i.origin: i for i in a}
    moved = [k for k in changed if a[k].origin != b[k].origin]
    for k in changed:
        o, n = by_origin[b[k].origin], b[k]
        co, cn = o.control, n.control
        if (co.wbar, co.rbar, co.wait) != (cn.wbar, cn.rbar, cn.wait):
            reasons.append(f"{n.text}: scoreboard fields may not change")
        if cn.reuse & ~co.reuse:
            reasons.append(f"{n.text}: reuse flags may only be cleared")
        if (o.word ^ n.word) & ~(0x1FFFFF << 105):
            reasons.append(f"{n.text}: bits outside the control field changed")
        if (cn.stall, cn.yield_bit) != (co.stall, co.yield_bit) and \
                not valid_timing(cn.stall, cn.yield_bit):
            reasons.append(f"{n.text}: stall {cn.stall} with yield bit {cn.yield_bit} does "
                           "not encode (1..11 with the bit set, 1..15 without)")
    if moved:
        lo, hi = min(moved), max(moved)
        blk = old.block_of(lo)
        if hi >= blk.end:
            reasons.append("the edit spans more than one basic block")
        inside = [old.labels[k] for k in range(lo + 1, hi + 1) if k in old.labels]
        if inside:
            reasons.append(f"moves across label {inside[0]}")
        for k in range(lo, hi + 1):
            if a[k].origin * WORD_BYTES in old.kernel.pinned and b[k].origin != a[k].origin:
                reasons.append(f"{a[k].text}: a relocation names it; it may not shift")
        pos = {ins.origin: k for k, ins in enumerate(b)}
        guards = guarded(old)
        seen: set[tuple[int, int]] = set()
        for i in range(lo, hi + 1):
            for j in range(i + 1, hi + 1):
                x, y = a[i], a[j]
                if pos[x.origin] > pos[y.origin] and (i, j) not in seen:
                    seen.add((i, j))
                    why = conflict(x, y, guards)
                    if why:
                        reasons.append(f"{y.text} may not cross {x.text}: {why}")
    if reasons:
        return reasons
    return _distances(old, new, min(changed), max(changed))


def _distances(old: KernelCode, new: KernelCode, lo: int, hi: int) -> list[str]:
    blk = old.block_of(lo)
    a = list(old.instructions[blk.start:blk.end])
    b = list(new.instructions[blk.start:blk.end])
    lo, hi = lo - blk.start, min(hi, blk.end - 1) - blk.start
    pa, pb = _prefix(a), _prefix(b)
    left = lo
    while left > 0 and min(pa[lo] - pa[left], pb[lo] - pb[left]) < UNKNOWN_LATENCY:
        left -= 1
    right = hi + 1
    while right < len(a) and min(pa[right] - pa[hi + 1],
                                 pb[right] - pb[hi + 1]) < UNKNOWN_LATENCY:
        right += 1
    pos_a = {ins.origin: k for k, ins in enumerate(a)}
    pos_b = {ins.origin: k for k, ins in enumerate(b)}
    span = a[left:right]
    reasons = []
    for x in range(len(span)):
        for y in range(x + 1, len(span)):
            p, c = span[x], span[y]
            old_d = pa[pos_a[c.origin]] - pa[pos_a[p.origin]]
            new_d = pb[pos_b[c.origin]] - pb[pos_b[p.origin]]
            if new_d >= old_d or new_d >= UNKNOWN_LATENCY or new_d < 0:
                continue
            need = _need(p, c)
            if need and new_d < min(old_d, need):
                reasons.append(f"{c.text} would issue {new_d} cycles after {p.text} "
                               f"(was {old_d}, needs {need})")
    # reads of what the block inherited, against its start: every instruction from the
    # first change on (a shorter stall moves everything after it earlier too)
    written: set[str] = set()
    for k, ins in enumerate(b):
        if pb[k] >= UNKNOWN_LATENCY:
            break
        exposed = ins.ops.reads - written
        written |= ins.ops.writes
        if k < lo or not exposed:
            continue
        old_d, new_d = pa[pos_a[ins.origin]], pb[k]
        if new_d < min(old_d, UNKNOWN_LATENCY):
            reasons.append(f"{ins.text} would issue {new_d} cycles after its block starts "
                           f"(was {old_d}) and reads {','.join(sorted(exposed)[:3])} from "
                           "before it")
    # what the block leaves behind, against its end (the next block's readers); a block
    # that ends in an unpredicated EXIT has no next block
    last = a[-1]
    if last.base == "EXIT" and not last.text.startswith("@"):
        return reasons
    end_a, end_b = pa[len(a)], pb[len(b)]
    later: set[str] = set()
    for k in range(len(b) - 1, -1, -1):
        ins = b[k]
        new_d = end_b - pb[k]
        if new_d < UNKNOWN_LATENCY:
            old_d = end_a - pa[pos_a[ins.origin]]
            need = _need_after(ins, later)
            if new_d < old_d and need and new_d < min(old_d, need):
                reasons.append(f"{ins.text} would issue {new_d} cycles before its block ends "
                               f"(was {old_d}, needs {need} for what the next block reads)")
        later |= ins.ops.writes
    return reasons
