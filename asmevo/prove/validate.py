"""Translation validation of one candidate against K0 (or of one edit against its parent).

:func:`prove_programs` compares the kernel function of two recovered programs. Where
every difference is straight-line (:mod:`asmevo.prove.regions`), each region is a
window equivalence (:mod:`asmevo.prove.equiv`); a refuted region is tried again in
its whole basic block (the facts an edit relies on are usually established there).
A loop an operator rewrote (:mod:`asmevo.prove.loops`) is proved by its own
obligations, and the straight-line differences around it as regions. The result is a
:class:`Proof`: ``proved``, ``refuted`` (with a counterexample the emulator
reproduced) or ``unknown`` (with the reason), and what kind of change it was.

With several regions, a region is proved from entry states that agree only on what
K0 has live there (the candidate may have left other values in registers K0 does not
read); a refutation is always shown from one entry state for both.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace

from asmevo.emu.run.dispatch import mode_register
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.cfg import build_cfg
from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.targets.amdgpu.analysis.lanes import LaneLiveness, cross_lane
from asmevo.prove.entry import refute_from_entry
from asmevo.prove.equiv import prove_window
from asmevo.prove.obligation import Result, Window
from asmevo.prove.machine import Context
from asmevo.prove.z3env import z3
from asmevo.prove.loops import prove_loops
from asmevo.prove.regions import NotStraight, Region, diff_regions, policy_of, split_at
from asmevo.prove import cexstore
from asmevo.prove import harness
from asmevo.prove.replay import lift, named_registers, replayed


@dataclass
class Proof:
    """What the prover says about a candidate."""

    status: str                  # proved | refuted | unknown
    kind: str                    # identical | straight-line | loop | structural
    reason: str = ""
    seconds: float = 0.0
    regions: list[dict] = field(default_factory=list)
    counterexample: dict | None = None

    @property
    def coverage(self) -> str:
        return "proved" if self.status == "proved" else "tested"

    def to_json(self, seconds: bool = True) -> dict:
        """As plain data; ``seconds=False`` leaves the times out (a verdict's details are
        a function of the candidate: two evaluations of one candidate agree)."""
        rows = self.regions if seconds else [{k: v for k, v in r.items() if k != "seconds"}
                                             for r in self.regions]
        out = {"status": self.status, "kind": self.kind, "reason": self.reason,
               "regions": rows}
        if seconds:
            out["seconds"] = round(self.seconds, 3)
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample
        return out


def context_for(program, kernel: str, *others) -> Context:
    """The prover's context for ``kernel``: MODE at launch, processor, accum_offset, and
    the kernarg segment where its pointer's SGPRs keep the dispatch's value in
    ``program`` and every one of ``others`` (no instruction of any function writes them)."""
    k = program.source.kernel(kernel)
    kd = k.descriptor
    ctx = Context(mode_register(kd), program.source.target.processor, kd.accum_offset)
    ptr = kernarg_pointer(kd)
    if ptr is not None and not any(effects(i.text).writes & R.span(ptr, ptr + 1)
                                   for p in (program, *others) for fn in p.functions
                                   for i in fn.instructions):
        ctx.kernarg = (ptr, kd.kernarg_size)
    return ctx


def kernarg_pointer(kd) -> int | None:
    """The first SGPR of the kernarg segment pointer (user SGPRs in their fixed order)."""
    if not kd.enable_sgpr_kernarg_segment_ptr or not kd.kernarg_size:
        return None
    return (4 * kd.enable_sgpr_private_segment_buffer + 2 * kd.enable_sgpr_dispatch_ptr
            + 2 * kd.enable_sgpr_queue_ptr)


def _kernarg_at(program, kernel: str, fn, start: int) -> tuple[int, int] | None:
    """The kernarg fact at instruction ``start`` of ``fn``: no write of the pointer's
    SGPRs reaches it on any path from the entry (the dispatch's value is still there)."""
    kd = program.source.kernel(kernel).descriptor
    ptr = kernarg_pointer(kd)
    if ptr is None:
        return None
    mask = R.span(ptr, ptr + 1)
    cfg = build_cfg(fn)
    if not cfg.n:
        return None
    target = cfg.block_of[min(start, cfg.n - 1)]
    for w in (i for i in range(cfg.n) if cfg.effects[i].writes & mask):
        bw = cfg.block_of[w]
        if bw == target and w < start:
            return None
        seen, todo = set(), list(cfg.succs[bw])
        while todo:
            x = todo.pop()
            if x == target:
                return None
            if x not in seen:
                seen.add(x)
                todo.extend(cfg.succs[x])
    return ptr, kd.kernarg_size


# instructions that change how the wave runs (not modeled: a function with one is refused)
MODE_SETTERS = ("s_setvskip", "s_set_gpr_idx_on", "s_set_gpr_idx_off", "s_set_gpr_idx_idx",
                "s_set_gpr_idx_mode")


def _mode_changes(program) -> str | None:
    for fn in program.functions:
        for ins in fn.instructions:
            m = ins.mnemonic
            if m.startswith("s_setreg") or m in MODE_SETTERS:
                return f"{fn.name} changes the wave's mode ({ins.text})"
    return None


def _refusal(k0_program, cand_program, kernel: str) -> str | None:
    if len(k0_program.functions) != len(cand_program.functions):
        return "the candidate has other functions"
    for fa, fb in zip(k0_program.functions, cand_program.functions):
        if fa.name != kernel and fa.items != fb.items:
            return f"function {fa.name} changes (only the kernel's are proved)"
    fa, fb = k0_program.function(kernel), cand_program.function(kernel)
    if fa.kernel is not None and fb.kernel is not None and \
            fa.kernel.descriptor != fb.kernel.descriptor:
        return "the kernel descriptor changes"
    return _mode_changes(k0_program) or _mode_changes(cand_program)


def prove_programs(k0_program, cand_program, kernel: str, *, timeout_ms: int = 5000,
                   budget_s: float | None = None, block=None) -> Proof:
    """Prove ``cand_program``'s kernel equivalent to ``k0_program``'s (module doc);
    ``budget_s``: the regions not started within it stay ``unknown``, and so does a
    window whose terms are still being built when it runs out; ``block``: the launch's
    work-items per workgroup (x, y, z), where known (a region whose difference is only
    in lanes EXEC leaves out is then asked from a launch's first state:
    :mod:`asmevo.prove.entry`)."""
    t0 = time.perf_counter()
    why = _refusal(k0_program, cand_program, kernel)
    if why:
        return Proof("unknown", "structural", why, time.perf_counter() - t0)
    fa, fb = k0_program.function(kernel), cand_program.function(kernel)
    ctx = context_for(k0_program, kernel, cand_program)
    kd = k0_program.source.kernel(kernel).descriptor
    if budget_s is not None:            # also inside a window: building terms can run long
        ctx.deadline = t0 + budget_s
    fr = fb                             # the function the regions' indices name
    try:
        regions = diff_regions(fa, fb)
        kind = "straight-line" if len(regions) == 1 else "blocks" if regions else "identical"
        loop_results = []
    except NotStraight as exc:
        try:
            # the regions index the folded candidate (each unrolled loop back in K0's
            # shape): from here on the candidate is that function (fb stays the unfolded)
            fr, regions, loop_results = prove_loops(ctx, fa, fb, timeout_ms=timeout_ms)
            kind = "loop"
        except NotStraight as exc2:
            return Proof("unknown", "structural", f"not straight-line: {exc2 or exc}",
                         time.perf_counter() - t0)
    results = list(loop_results)
    known: dict[int, object] = {}       # SGPR -> what the candidate holds there, K0 not
    key = cexstore.kernel_key(fa)
    stored = cexstore.load(key)         # earlier candidates' counterexamples (input sets)
    for reg in regions:
        if budget_s is not None and time.perf_counter() - t0 > budget_s:
            results.append(({"k0": list(reg.a), "candidate": list(reg.b)},
                            Result("unknown", f"the proof's time budget ({budget_s:.0f} s) "
                                   "is spent")))
            continue
        saved = ctx.kernarg
        if saved is None:
            here = (_kernarg_at(k0_program, kernel, fa, reg.a[0]),
                    _kernarg_at(k0_program, kernel, fr, reg.b[0]))
            if fr is not fb and here[1] is not None:     # and in the unfolded candidate
                at = _unfolded_index(fb, fr, reg.b[0])      # (an unrolled group's writes)
                if at is None or _kernarg_at(k0_program, kernel, fb, at) is None:
                    here = (None, None)
            ctx.kernarg = here[0] if None not in here else None
        row, got = _prove_region(ctx, fa, fr, reg, len(regions) + len(loop_results),
                                 timeout_ms, known, stored,
                                 (kd, block) if fr is fb and block else None)
        if got.status == "refuted" and _dead_in_candidate(fr, reg, row, got):
            got = Result("unknown", f"{got.reason}, only in registers the candidate has dead "
                         "there (K0 reads them where another of its regions differs)",
                         got.seconds, got.obligations)
        results.append((row, got))
        if got.status == "refuted" and got.snapshot is not None and not row.get("stored") \
                and "entry" not in row:     # (a launch's first state: not its block's)
            cexstore.add(key, reg.a[0] if "block" not in row else reg.block_a[0],
                         got.snapshot, got.counterexample["lane"])
        if got.status == "proved" and got.final is not None:
            known |= carried(fa, fb, reg, got.final[1])
        ctx.kernarg = saved
    return _combine(kind, results, time.perf_counter() - t0)


_SLOAD = re.compile(r"s_load_dword\w* [^,]+, s\[(\d+):\d+\]")


def _pointer_mapped(snap, sliced: Window, wide: Window):
    """``snap`` with the SGPR pairs the block's scalar loads read their address from
    (the kernarg pointer) at the harness's allocation, where the slice does not name
    them: their values are free there, and the block's loads would fault first."""
    sregs, _ = named_registers(sliced.k0 + sliced.cand)
    s = list(snap.s)
    for t in wide.k0:
        m = _SLOAD.match(t)
        if m and not {int(m.group(1)), int(m.group(1)) + 1} & sregs:
            r = int(m.group(1))
            s[r], s[r + 1] = harness.BASE & 0xFFFFFFFF, harness.BASE >> 32
    return replace(snap, s=s) if s != snap.s else snap


def _dead_in_candidate(fr, reg: Region, row: dict, got: Result) -> bool:
    """Whether every difference of a refutation is in a register the candidate has dead
    where it was found (after the region, or before its block's terminator). K0 has it
    live there, so a later read of it in K0 is one the candidate does not make: inside
    another region (a hoisted load no longer reading the kernarg pointer a scalarized
    op then overwrote), whose proof is what decides; here the difference shows nothing."""
    differs = (got.counterexample or {}).get("differs") or {}
    mask = 0
    for name in differs:
        try:
            bit = R.operand_mask(name)
        except (KeyError, ValueError):
            return False
        if not bit:
            return False
        mask |= bit
    if not mask:
        return False
    at = reg.block_b[1] if (row.get("block") or {}).get("status") == "refuted" else reg.b[1]
    lanes, every = split_at(fr, LaneLiveness(fr), at)
    return not mask & (lanes | every)


def _unfolded_index(fb, folded, k: int) -> int | None:
    """Instruction ``k`` of ``folded`` (``fb`` with an unrolled loop folded back) in
    ``fb``: the same before the loop, shifted by the group's length from it on (the
    remainder and what follows); None where that is not so (several loops)."""
    a, b = fb.instructions, folded.instructions
    lo = next((i for i, (x, y) in enumerate(zip(a, b)) if x.text != y.text), len(b))
    if k < lo:
        return k
    delta = len(a) - len(b)
    if any(a[i + delta].text != b[i].text for i in range(lo + 1, len(b))):
        return None
    return k + delta


def _combine(kind: str, results: list[tuple[dict, Result]], seconds: float) -> Proof:
    rows = [row | r.to_json() for row, r in results]
    refuted = [r for _, r in results if r.status == "refuted"]
    unknown = [r for _, r in results if r.status == "unknown"]
    if refuted:
        return Proof("refuted", kind, refuted[0].reason, seconds, rows,
                     refuted[0].counterexample)
    if unknown:
        return Proof("unknown", kind, unknown[0].reason, seconds, rows)
    return Proof("proved", kind, "every difference proved" if results else "no difference",
                 seconds, rows)


def carried(fa, fb, reg: Region, m) -> dict:
    """What a proved region of the entry block leaves in SGPRs K0 has dead after it and
    no other instruction of the candidate writes, where that is a constant of the
    dispatch (the kernarg segment's dwords: ``kernarg_hoist``'s early loads): the
    candidate holds it there in every later region (the entry block dominates them)."""
    cfg = build_cfg(fa)
    if not cfg.blocks or cfg.preds[0] or reg.a[0] >= cfg.blocks[0].end:
        return {}
    after = reg.live_after[0] | reg.live_after[1]
    out = {}
    for r, val in m.s.items():
        if (after >> r) & 1 or not _dispatch_constant(val, m.ctx.karg):
            continue
        if any((effects(i.text).writes >> r) & 1 for k, i in enumerate(fb.instructions)
               if not reg.b[0] <= k < reg.b[1]):
            continue
        out[r] = val
    return out


def _dispatch_constant(t, karg) -> bool:
    """Whether ``t`` depends on nothing but the kernarg segment's dwords."""
    todo, seen = [t], set()
    while todo:
        x = todo.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        if z3.is_const(x) and not z3.is_bv_value(x) and not x.eq(karg):
            return False
        if z3.is_quantifier(x):
            return False
        todo.extend(x.children())
    return True


def _reads_across(texts: list[str]) -> int:
    """How many of ``texts`` take one lane's value for the wave's (``v_readfirstlane``,
    ``v_readlane``: what ``scalarize`` relies on being uniform). Lane permutes (DPP,
    ``ds_bpermute``) move data; a difference they make is refuted as any other."""
    return sum(1 for t in texts if cross_lane(effects(t)) and
               t.split(None, 1)[0].startswith(("v_readfirstlane", "v_readlane")))


def live_in(texts: list[str], after: tuple[int, int]) -> int:
    """What ``texts`` need at their entry to give what is live ``after`` them: what they
    read before writing it, and what they pass through."""
    live = after[0] | after[1]
    for t in reversed(texts):
        e = effects(t)
        live = e.reads | (live & ~e.kills)
    return live


def _texts(fn, lo: int, hi: int) -> list[str]:
    return [i.text for i in fn.instructions[lo:hi]]


def _prove_region(ctx: Context, fa, fb, reg: Region, count: int, timeout_ms: int,
                  known: dict | None = None, stored=(), launch=None) -> tuple[dict, Result]:
    row = {"k0": list(reg.a), "candidate": list(reg.b)}
    k0, cand = _texts(fa, *reg.a), _texts(fb, *reg.b)
    policy = None if count == 1 else policy_of(reg.live_before, ctx.accum_offset, k0 + cand,
                                               reg.live_after[1], known)
    w = Window(k0, cand, *reg.live_after, policy=policy)
    got = prove_window(ctx, w, timeout_ms=timeout_ms)
    if got.status == "unknown":         # undecided: an earlier refutation's state may show it
        got = _from_stored(ctx, w, reg, stored) or got
        row["stored"] = got.status == "refuted"
    if got.status == "proved":
        return row, got
    if policy is not None and got.status == "unknown" and got.reason.startswith("differs"):
        needs = live_in(w.cand, reg.live_after)
        dead = needs & ~(reg.live_before[0] | reg.live_before[1])
        if any((needs >> r) & 1 for r in known or {}):
            return row, Result("unknown", got.reason + " (the candidate also needs what an "
                               "earlier region left it)", got.seconds, got.obligations)
        if dead:
            return row, Result("unknown", "the candidate needs what K0 has dead here ("
                               f"{R.render(dead)}): its value comes from another region",
                               got.seconds, got.obligations)
        got = prove_window(ctx, Window(w.k0, w.cand, *reg.live_after), timeout_ms=timeout_ms)
    wide = _block_window(fa, fb, reg)
    if wide is None or not (got.status == "refuted" or got.reason.startswith("differs")):
        return row, got
    # the edit may rely on what its block establishes before it (a uniform value, a
    # known bit): the region's counterexample is tried as the block's entry state on
    # the emulator, then the block goes to the solver
    if got.status == "refuted":
        lifted, agreed = lift(ctx, wide, got.snapshot, got.counterexample["lane"])
        if lifted is not None:
            row["block"] = {"status": "refuted", "instructions": len(wide.k0)}
            return row, lifted
        if agreed:      # the block run from that state shows nothing: say so; the
            got = replace(got, reason=got.reason + " (from the region's entry state; its "
                          "block, run from it, agrees)")      # solver may still decide it
    sliced = _slice_window(fa, fb, reg)
    if sliced is not None:
        again = prove_window(ctx, sliced, timeout_ms=timeout_ms)
        row["slice"] = {"status": again.status, "instructions": len(sliced.k0)}
        if again.status == "proved":    # a refutation is the block's to show (what the
            return row, again           # slice leaves out may fault first): its entry
        if again.status == "refuted":   # state is the block's, run there on the emulator
            lifted, _ = replayed(ctx, wide, _pointer_mapped(again.snapshot, sliced, wide),
                                 again.counterexample["lane"],
                                 "its block, from its slice's counterexample")
            if lifted is not None:
                row["block"] = {"status": "refuted", "instructions": len(wide.k0)}
                return row, lifted
    again = prove_window(ctx, wide, timeout_ms=timeout_ms)
    row["block"] = {"status": again.status, "instructions": len(wide.k0)}
    if again.status in ("proved", "refuted"):
        return row, again
    if got.status == "refuted" and _lanes_only(got, reg):
        # unconfirmed by its block, and every difference in a VGPR that K0's lane-aware
        # liveness keeps live for all lanes but not in EXEC's: live maybe only in lanes
        # EXEC leaves out (read across lanes later), which the window compares in every
        # lane; a candidate writing it again in EXEC's lanes before any read is equal, so
        # the difference is not held against it (the launches were equal), unless it
        # shows from a launch's first state (asmevo.prove.entry), or one in EXEC's lanes
        # (memory, LDS, an SGPR) does from the region's entry
        found = _lanes_refuted(ctx, fa, fb, reg, w, wide, launch, timeout_ms)
        if found is not None:
            row[found[0]] = {"status": "refuted"}
            return row, found[1]
        return row, Result("unknown", f"the region {got.reason} from some entry state, only "
                           "in registers live outside EXEC's lanes, which neither its block "
                           f"run from that state nor the solver on its block confirms: "
                           f"{again.reason}", got.seconds + again.seconds, got.obligations)
    if got.status == "refuted" and _reads_across(w.cand) > _reads_across(w.k0):
        return row, Result("unknown", f"the region {got.reason} from some entry state, where "
                           "the candidate reads across lanes and K0 does not (a value it "
                           "takes as uniform, which the prover does not derive); its block is "
                           f"undecided: {again.reason}", got.seconds + again.seconds,
                           got.obligations)
    return row, got


def _lanes_refuted(ctx: Context, fa, fb, reg: Region, w: Window, wide: Window, launch,
                   timeout_ms: int) -> tuple[str, Result] | None:
    """(how, the refutation) of a region whose solver model differed only in lanes EXEC
    leaves out: from a launch's first state (``launch``: the descriptor and block shape,
    :mod:`asmevo.prove.entry`), else with the VGPRs compared in EXEC's lanes only."""
    found = refute_from_entry(ctx, *launch, fa, fb, reg, timeout_ms) if launch else None
    if found is not None:
        return "entry", found
    found = _active_difference(ctx, w, wide, timeout_ms)
    return ("active", found) if found is not None else None


def _active_difference(ctx: Context, w: Window, wide: Window, timeout_ms: int) -> Result | None:
    """The region asked again with its VGPRs compared in EXEC's lanes only, so that a
    model differs in an active lane, memory, LDS or an SGPR (the solver's first model
    may have differed only in lanes EXEC leaves out): its refutation, confirmed in its
    block where the block run from that state shows it, else as the region's (replayed
    on the emulator: what any region refutation its block leaves undecided is), or None."""
    narrow = replace(w, live_lanes=w.live_lanes | w.live_all, live_all=0)
    got = prove_window(ctx, narrow, timeout_ms=timeout_ms)
    if got.status != "refuted":
        return None
    lifted, _ = lift(ctx, wide, got.snapshot, got.counterexample["lane"])
    return lifted or replace(got, reason=f"{got.reason} in EXEC's lanes (from the region's "
                             "entry state; its block undecided)")


def _lanes_only(got: Result, reg: Region) -> bool:
    """Whether every difference of a refutation is in a VGPR K0 keeps live for all lanes
    but not in EXEC's lanes after the region (and there is at least one)."""
    differs = (got.counterexample or {}).get("differs") or {}
    if not differs:
        return False
    for name in differs:
        if not (name.startswith("v") and name[1:].isdigit()):
            return False
        bit = R.operand_mask(name)
        if reg.live_after[0] & bit or not reg.live_after[1] & bit:
            return False
    return True


STORED_TRIED = 4         # remembered counterexamples a region is run from at most


def _from_stored(ctx: Context, w: Window, reg: Region, stored) -> Result | None:
    """The region's refutation from a counterexample an earlier candidate's refutation
    left in its block (:mod:`asmevo.prove.cexstore`), where one shows a difference on
    the emulator; else None. Asked only where the solver decided nothing: a stored
    state need not satisfy the facts a proof of this region may use."""
    lo, hi = reg.block_a
    here = [e for e in stored if lo <= e["at"] < max(hi, lo + 1)][-STORED_TRIED:]
    for e in reversed(here):
        got, _ = replayed(ctx, w, e["snapshot"], e["lane"],
                          "from an earlier candidate's counterexample in this block")
        if got is not None:
            return got
    return None


CONTEXT_LIMIT = 400      # instructions of context a region is tried in at most


def _slice_window(fa, fb, reg: Region) -> Window | None:
    """The region with the instructions of its block before it that what it may end
    differently depends on (a backward slice from the live registers either version
    writes, through the instructions that write what they need; every earlier store
    where memory is read), the same in both versions. The rest of the block cannot
    change what the region computes, or what it leaves alike in both."""
    a0, b0 = reg.block_a[0], reg.block_b[0]
    prefix = _texts(fa, a0, reg.a[0])
    if not prefix or prefix != _texts(fb, b0, reg.b[0]):
        return None
    k0, cand = _texts(fa, *reg.a), _texts(fb, *reg.b)
    written = 0
    for t in k0 + cand:
        written |= effects(t).writes
    differ = (reg.live_after[0] | reg.live_after[1]) & written     # what may end unlike
    needed = live_in(k0, (differ, 0)) | live_in(cand, (differ, 0))
    memory = any(effects(t).mem for t in k0 + cand)
    keep = []
    for t in reversed(prefix):
        e = effects(t)
        if e.is_branch:
            continue
        if e.writes & needed or (memory and (e.mem_store or e.fence)):
            keep.append(t)
            needed = (needed & ~e.kills) | e.reads
            memory = memory or e.mem_load
    if not keep:
        return None
    keep.reverse()
    return Window(keep + k0, keep + cand, *reg.live_after)


def _block_window(fa, fb, reg: Region) -> Window | None:
    """The region's basic block (terminator excluded) and before it the blocks that
    alone lead to it (each the only predecessor of the next, the same code in both
    versions; their branches dropped: they change no state), where that is more."""
    a0, b0 = reg.block_a[0], reg.block_b[0]
    cfg = build_cfg(fa)
    bi = cfg.block_of[a0] if a0 < cfg.n else None
    while bi is not None and len(cfg.preds[bi]) == 1 and cfg.preds[bi][0] != bi:
        p = cfg.blocks[cfg.preds[bi][0]]
        if p.end != a0 or a0 - p.start + (reg.block_a[1] - a0) > CONTEXT_LIMIT or \
                b0 - (a0 - p.start) < 0 or _texts(fa, p.start, a0) != \
                _texts(fb, b0 - (a0 - p.start), b0):
            break
        b0 -= a0 - p.start
        a0, bi = p.start, cfg.preds[bi][0]
    if (a0, reg.block_a[1]) == reg.a and (b0, reg.block_b[1]) == reg.b:
        return None
    lanes, every = reg.after_block
    term = fa.instructions[reg.block_a[1]] if reg.block_a[1] < len(fa.instructions) else None
    if term is not None and term.ends_block:
        lanes |= effects(term.text).reads & ~R.VECTOR_MASK

    def straight(fn, lo, hi):
        return [i.text for i in fn.instructions[lo:hi] if not i.ends_block]
    return Window(straight(fa, a0, reg.block_a[1]), straight(fb, b0, reg.block_b[1]),
                  lanes, every)


