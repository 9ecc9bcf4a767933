"""``pipeline``: software pipelining of a counted single-block loop (optionally of a
group of 2, 4 or 8 unrolled iterations): the next group's loads are issued before
this group's compute, into the loop's own registers, while the compute reads copies.

The group body (one iteration, or F copies as :mod:`asmevo.operators.rules.unroll` builds
them) splits into *stage 0* -- every load (global, LDS, scalar) and everything its
address depends on, in this iteration or carried from the last (the loads'
backward slice) -- and *stage 1*, the rest. The loop becomes::

    L:        [F > 1: guard: F iterations to go?  else -> .Lae_R]
              stage 0 of the first group                       (prologue)
    .Lae_H:   copy each stage-0 value stage 1 reads into a fresh register
              guard: the next group runs in full too?  else -> .Lae_E
              stage 0 of the next group; stage 1 of this one (scheduled together)
              s_branch .Lae_H
    .Lae_E:   stage 1 of this group                             (epilogue)
              s_cbranch_sccX .Lae_R     (iterations left over after the last group)
              s_branch .Lae_X
    .Lae_R:   K0's loop, verbatim (the remainder)
    .Lae_X:

Preserves: each stage runs once per iteration on the values it reads in K0 (stage 0
one group early, on its own registers; stage 1 on copies of the stage-0 values it
reads, made before the next group's stage 0 overwrites them), every dependent
operation in K0's order (reductions stay serial), and no memory access K0 does not
make: a stage 0 runs only for a group the guard proved will run in full (the first
group's after the entry guard, the loop being a do-while), so the last iteration's
prefetch is never issued. Refused (with the reason) where that cannot be shown:
stage 1 storing to a space stage 0 loads from (the early load could pass an aliasing
store), a store or atomic in stage 0, stage 1 reading a stage-0 value carried from
the previous iteration or not the last definition of its register, or SCC/VCC/EXEC
values crossing stages, a register both stages write whose reads cross stages (or
whose final value after the loop would change), no load or nothing but loads;
plus everything :mod:`asmevo.operators.rules.unroll` refuses. Waits are recomputed per
block (the steady block leaves no more outstanding than the prologue did), hazards
re-padded, the static gate run.

Why it can be faster: the loads of a group are in flight during the previous group's
compute and loop overhead instead of after it, so with enough compute per group the
memory latency is hidden even at one wave per SIMD.
"""
from __future__ import annotations

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.targets.amdgpu.analysis.liveness import Liveness
from asmevo.targets.amdgpu.analysis.problems import target_family
from asmevo.targets.amdgpu.analysis.waitcnt import Entry, State, state_after, window_states
from asmevo.operator import mutation
from asmevo.operators.rules.loops import (LoopOperator, LoopRefused, RegisterPool, check_body,
                                   fresh_copy, fresh_labels, guard_lines, guard_needs_scratch,
                                   induction, strip, with_waits)
from asmevo.operators.rules.schedule import reschedule
from asmevo.operators.rules.unroll import unrolled_copies
from asmevo.operators.rules.webs import alignment, rewrite, web_bit, webs_of

FACTORS = (1, 2, 4, 8)
# an allowed exit state that covers anything (no wait is needed to leave the block)
ANY = State(vm={-1: Entry(R.ALL, 0, True, -1)}, lds={-1: Entry(R.ALL, 0, True, -1)},
            other={-1: Entry(R.ALL, 0, True, -1)})
_VS = R.VGPR_MASK | ((1 << 102) - 1)          # renamable registers: v0.., s0..s101


def reaching(texts: list[str]) -> list[list[tuple[int, int, bool]]]:
    """For each instruction of a loop body: ``(def index, bits, carried)`` for every
    definition a read of it may see, ``carried`` when it is the previous iteration's."""
    effs = [effects(t) for t in texts]
    n = len(texts)
    out = []
    for k, e in enumerate(effs):
        need, found = e.reads, []
        for carried, order in ((False, range(k - 1, -1, -1)), (True, range(n - 1, k, -1))):
            for j in order:
                if not need:
                    break
                hit = need & effs[j].writes
                if hit:
                    found.append((j, hit, carried))
                    need &= ~effs[j].kills
        out.append(found)
    return out


def load_slice(texts: list[str]) -> set[int]:
    """Stage 0: every load and, transitively, every definition one of them reads
    (in this iteration or carried from the last)."""
    reach = reaching(texts)
    s0 = {k for k, t in enumerate(texts) if effects(t).mem_load}
    if not s0:
        raise LoopRefused("no load to prefetch")
    todo = list(s0)
    while todo:
        k = todo.pop()
        for j, _, _ in reach[k]:
            if j not in s0:
                s0.add(j)
                todo.append(j)
    return s0


def separate(texts: list[str], s0: set[int], pool: RegisterPool) -> list[str]:
    """``texts`` with stage 1's own values (webs it defines) on fresh registers where
    stage 0 writes the same register: the next group's stage 0 then cannot clobber
    them (``v_sub_f32 v9, v9, v6`` on a loaded ``v9`` is the usual case)."""
    w0 = 0
    for k in s0:
        w0 |= effects(texts[k]).writes

    def own(ws, members) -> bool:
        return all(ws.webs[w].start >= 0 and ws.webs[w].start not in s0 for w in members) \
            and any(web_bit(ws.webs[w]) & w0 for w in members)
    return fresh_copy(texts, pool, own, must=True)


def stages(texts: list[str], s0: set[int], counter: int = 0, live_after: int = 0) \
        -> tuple[set[int], list[tuple[int, int]]]:
    """(stage 1, rotated reads ``(reader, bits)``) of a loop body split at ``s0``, or
    LoopRefused (see the module doc for every rule). ``counter``: the induction
    register (the guards read it at the top of a group, so stage 1 must step it);
    ``live_after``: registers live after the loop."""
    effs = [effects(t) for t in texts]
    reach = reaching(texts)
    s1 = set(range(len(texts))) - s0
    if not s1:
        raise LoopRefused("the body is all load slice: nothing to overlap")
    if any(effs[k].mem_store for k in s0):
        raise LoopRefused("a store or atomic feeds the loads' addresses")
    if any(effs[k].writes & counter for k in s0):
        raise LoopRefused("the loop counter feeds the loads' addresses")
    spaces = set().union(*(effs[k].spaces for k in s0))
    clash = [texts[k] for k in s1 if effs[k].mem_store and effs[k].spaces & spaces]
    if clash:
        raise LoopRefused(f"stage 1 stores where stage 0 loads from ({clash[0]})")
    w0 = w1 = 0
    for k in s0:
        w0 |= effs[k].writes
    for k in s1:
        w1 |= effs[k].writes
    later = [0] * (len(texts) + 1)         # bits written at or after each position
    for k in range(len(texts) - 1, -1, -1):
        later[k] = later[k + 1] | effs[k].writes
    rotated = []
    for k in sorted(s1):
        for j, bits, carried in reach[k]:
            if j not in s0:
                continue
            if carried:
                raise LoopRefused(f"{texts[k]!r} reads a loop-carried load-slice value")
            if bits & ~_VS or bits & w1:
                raise LoopRefused(f"{texts[k]!r} reads {R.render(bits)} across stages")
            if later[j + 1] & bits:
                raise LoopRefused(f"{texts[k]!r} reads a load-slice value its register "
                                  "loses later in the iteration")
            rotated.append((k, bits))
    both = w0 & w1
    for k, found in enumerate(reach):
        for j, bits, carried in found:
            if bits & both and (carried or (j in s0) != (k in s0)):
                raise LoopRefused(f"{R.render(bits & both)} is written by both stages and "
                                  f"read across them ({texts[k]!r})")
    final = both & live_after
    last = 0
    for k in range(len(texts) - 1, -1, -1):
        mine = effs[k].writes & final & ~last
        if mine and k in s0:
            raise LoopRefused(f"{R.render(mine)}, live after the loop, is last set by stage 0 "
                              "and also by stage 1")
        last |= mine
    return s1, rotated


def rotate(texts: list[str], s1: set[int], rotated, pool: RegisterPool) \
        -> tuple[list[str], list[str]]:
    """(``texts`` with stage 1's rotated reads on fresh registers, the copy moves)."""
    ws = webs_of(texts)
    want: set[int] = set()
    for k, bits in rotated:
        covered = 0
        nd = effects(texts[k]).ndefs
        for o, ids in ws.occ[k].items():
            for w in ids if o >= nd else ():
                web = ws.webs[w]
                bit = 1 << ((R.VGPR_BASE if web.kind == "v" else R.SGPR_BASE) + web.reg)
                if bit & bits:
                    want.add(w)
                    covered |= bit
        if covered != bits:
            raise LoopRefused(f"{texts[k]!r} reads a load-slice value it does not name")
    parent = {w: w for w in want}

    def find(w):
        while parent[w] != w:
            w = parent[w]
        return w
    widest: dict[int, int] = {}
    for k in s1:
        for ids in ws.occ[k].values():
            hit = [w for w in ids if w in want]
            if hit and len(hit) != len(ids):
                raise LoopRefused(f"{texts[k]!r} mixes load-slice and other registers "
                                  "in one operand")
            for w in hit:
                widest[w] = max(widest.get(w, 1), len(ids))
                parent[find(w)] = find(hit[0])
    groups: dict[int, list[int]] = {}
    for w in want:
        groups.setdefault(find(w), []).append(w)
    new_reg: dict[int, int] = {}
    moves: list[str] = []
    for members in groups.values():
        kind = ws.webs[members[0]].kind
        regs = sorted(ws.webs[w].reg for w in members)
        lo, hi = regs[0], regs[-1]
        if regs != list(range(lo, hi + 1)):
            raise LoopRefused("a rotated tuple is not contiguous")
        al = alignment(kind, max(widest[w] for w in members))
        first = pool.take(kind, hi - lo + 1, al, lo % al)
        if first is None:
            raise LoopRefused(f"no free registers to rotate {kind}[{lo}:{hi}]")
        for w in members:
            new_reg[w] = first + ws.webs[w].reg - lo
        op = "v_mov_b32" if kind == "v" else "s_mov_b32"
        moves += [f"{op} {kind}{first + r - lo}, {kind}{r}" for r in regs]
    try:
        return rewrite(ws, new_reg, only=s1), moves
    except ValueError as exc:
        raise LoopRefused(str(exc)) from None


def pipeline_lines(fn, program, loop, factor: int, rng, *, noise: float = 0.1,
                   grow: bool = False) -> list[str]:
    """The new text of the loop block (see the module doc); LoopRefused otherwise."""
    if loop.divergent:
        raise LoopRefused("a divergent loop (lanes leave one by one) is unrolled, not pipelined")
    check_body(fn, loop)
    ind = induction(loop)
    pool = RegisterPool(fn, program, loop, grow=grow)
    group = unrolled_copies(loop, ind, factor, pool) if factor > 1 else strip(loop.body)
    s0 = load_slice(group)
    group = separate(group, s0, pool)
    s1, rot = stages(group, s0, R.operand_mask(ind.counter), Liveness(fn).after(loop.end - 1))
    renamed, moves = rotate(group, s1, rot, pool)
    need = guard_needs_scratch(ind, 2 * factor - 1) or (
        factor > 1 and guard_needs_scratch(ind, factor - 1))
    scratch = pool.scratch() if need else None
    head, epi, rem, done = fresh_labels(
        program, f"pipeline:{fn.name}:{loop.start}:{factor}:{'|'.join(loop.body)}", 4)
    stage0 = [t for k, t in enumerate(renamed) if k in s0]
    stage1 = [t for k, t in enumerate(renamed) if k in s1]
    family, _ = target_family(program.source.target)
    entry, exit_ = window_states(fn, loop.start, loop.end)
    pro = (guard_lines(ind, factor - 1, rem, scratch) if factor > 1 else []) + stage0
    pro = with_waits(pro, entry, ANY)
    y = state_after(pro, entry)
    top = with_waits(moves + guard_lines(ind, 2 * factor - 1, epi, scratch), y, ANY)
    y1 = state_after(top, y)
    steady = with_waits(reschedule(stage0 + stage1, rng, family, noise) + [f"s_branch {head}"],
                        y1, y)
    op = loop.branch.split(None, 1)[0]
    tail = with_waits(stage1 + [f"{op} {rem}"], y1, exit_)
    return (pro + [f"{head}:"] + top + steady + [f"{epi}:"] + tail + [f"s_branch {done}",
            f"{rem}:"] + list(loop.body) + [f"{op} {rem}", f"{done}:"])


@mutation("pipeline", targets=("amdgpu",))
class Pipeline(LoopOperator):
    """Software-pipeline one hot counted loop, one group (1, 2, 4 or 8 iterations)
    ahead (module doc)."""

    FACTORS = FACTORS
    verb = "pipeline"

    def rewrite(self, fn, program, loop, factor, rng):
        return pipeline_lines(fn, program, loop, factor, rng, noise=self.noise, grow=self.grow)
