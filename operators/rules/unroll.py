"""``unroll``: a counted single-block loop unrolled by 2, 4 or 8, with a remainder path.

The loop block ``L: body; s_cbranch_sccX L`` becomes::

    L:        guard: the next F-1 exit tests all continue?  else -> .Lae_R
              F copies of body, scheduled together (each copy but the last on
              fresh registers; the intermediate exit branches dropped, their
              compares too where nothing reads that SCC)
              s_cbranch_sccX L              (the last copy's own test)
              s_branch .Lae_X
    .Lae_R:   body; s_cbranch_sccX .Lae_R   (K0's loop, verbatim: the remainder)
    .Lae_X:

Preserves: every iteration runs the same instructions on the same values in the
same order of dependent operations (a reduction stays one serial chain; only
independent instructions of neighbouring copies interleave, under the dependency
DAG: register RAW/WAR/WAW and memory order, a store never passing an access it
may alias). The guard (:func:`asmevo.operators.rules.loops.guard_lines`) is only
*sufficient*: where it fails, K0's own loop runs from that state, so no iteration
is added, dropped or reordered and no memory K0 does not touch is touched. Waits are
recomputed from the loop's entry state, leaving no more outstanding than K0's loop
left at its back-branch; hazards are re-padded; the static gate runs.

Refused (with the reason): loops that are not single basic blocks, divergent loops
(EXEC writes), bodies with barriers, messages or other fixed points, exit tests that
are not a constant-step scalar counter against a loop-invariant bound, a guard that
needs a scratch SGPR when none is free.

Why it can be faster: one exit test and one taken branch per F iterations instead
of per iteration, and F iterations' loads in flight at once: the scheduler issues
the copies' loads back to back and the recomputed ``s_waitcnt`` waits for each only
where its value is used, so a latency-bound loop pays the memory latency about
once per group.
"""
from __future__ import annotations

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.targets.amdgpu.analysis.liveness import Liveness
from asmevo.targets.amdgpu.analysis.problems import target_family
from asmevo.targets.amdgpu.analysis.waitcnt import window_states
from asmevo.operator import mutation
from asmevo.operators.rules.loops import (Induction, Loop, LoopOperator, LoopRefused, RegisterPool,
                                   check_body, divergent_induction, fresh_copy, fresh_labels,
                                   guard_lines, guard_needs_scratch, induction, only_writes_scc,
                                   scc_dead_after, strip, vector_guard_lines, with_waits)
from asmevo.operators.rules.schedule import reschedule
from asmevo.operators.rules.strides import fold_strides, join_loads, strides, vectorize

FACTORS = (2, 4, 8)


def compare_position(loop: Loop, ind: Induction) -> int:
    """The exit compare's index in the stripped body (waits and NOPs dropped)."""
    return len(strip(loop.body[:ind.compare]))


def unrolled_copies(loop: Loop, ind: Induction, factor: int, pool: RegisterPool,
                    rename: bool = True, fold: bool = True, live_after: int | None = None) \
        -> list[str]:
    """``factor`` stripped copies of the body, each but the last on fresh registers
    (``rename``), address steps folded into offsets and narrow loads joined
    (``fold``, :mod:`asmevo.operators.rules.strides`; joining needs ``live_after``, the
    registers live after the loop), with the intermediate compares dropped where
    their SCC is dead."""
    body = strip(loop.body)
    copies = [fresh_copy(body, pool) if rename and j < factor - 1 else list(body)
              for j in range(factor)]
    if fold and factor > 1:
        found = strides(body)
        plan = {}
        if live_after is not None:
            copies, plan = vectorize(copies, body, pool, live_after, found)
        parts, done = fold_strides(copies, body, found)
        joined = {u for st in done for u in st.uses}
        parts = join_loads(parts, {k: v for k, v in plan.items() if k[1] in joined})
    else:
        parts = [[[t] for t in c] for c in copies]
    # the exit a copy but the last no longer takes: a scalar loop's compare (dropped
    # where nothing reads its SCC), a divergent loop's EXEC update (a no-op once the
    # guard proved no lane leaves; dropped where its SCC is dead)
    cpos = len(body) - 1 if loop.divergent else compare_position(loop, ind)
    flat: list[str] = []
    cmp_at: list[int] = []
    for copy in parts:
        for k, lines in enumerate(copy):
            if k == cpos:
                cmp_at.append(len(flat))
            flat.extend(lines)
    drop = {k for k in cmp_at[:-1] if scc_dead_after(flat, k) and
            (loop.divergent or only_writes_scc(flat[k]))}
    if loop.divergent and len(drop) != factor - 1:
        raise LoopRefused("a lane-exit update of a copy cannot be dropped (its SCC is read)")
    flat = [t for k, t in enumerate(flat) if k not in drop]
    return fold_counter(flat, ind) if fold and factor > 1 and not loop.divergent else flat


def fold_counter(flat: list[str], ind: Induction) -> list[str]:
    """``flat`` with the copies' counter steps made one step of F x step at the last
    one, where nothing reads the counter between them and their SCC (overflow) is
    dead: the counter ends with the same 32-bit value."""
    cmask = R.operand_mask(ind.counter)
    ups = [k for k, t in enumerate(flat) if effects(t).writes & cmask]
    if len(ups) < 2 or any(effects(flat[k]).reads & cmask for k in range(ups[0] + 1, ups[-1])
                           if k not in ups):
        return flat
    if not all(scc_dead_after(flat, k) for k in ups):
        return flat
    total = (len(ups) * ind.step) % (1 << 32)
    total = total - (1 << 32) if total >= 1 << 31 else total
    if total == 0:
        return flat
    step = total if -16 <= total <= 64 else hex(total % (1 << 32))
    last = f"s_add_i32 {ind.counter}, {ind.counter}, {step}"
    return [last if k == ups[-1] else t for k, t in enumerate(flat) if k not in ups[:-1]]


def unroll_lines(fn, program, loop: Loop, factor: int, rng, *, noise: float = 0.1,
                 grow: bool = False) -> list[str]:
    """The new text of the loop block (see the module doc); LoopRefused otherwise."""
    check_body(fn, loop)
    pool = RegisterPool(fn, program, loop, grow=grow)
    rem, done = fresh_labels(program, f"unroll:{fn.name}:{loop.start}:{factor}:"
                                      f"{'|'.join(loop.body)}", 2)
    if loop.divergent:
        ind, _ = divergent_induction(loop)
        scratch, pair = pool.scratch(), pool.pair()
        if scratch is None or pair is None:
            raise LoopRefused("the lane guard needs free SGPRs and none are")
        guard = vector_guard_lines(ind, factor - 1, rem, scratch, pair)
    else:
        ind = induction(loop)
        scratch = pool.scratch() if guard_needs_scratch(ind, factor - 1) else None
        guard = guard_lines(ind, factor - 1, rem, scratch)
    family, _ = target_family(program.source.target)
    live_after = Liveness(fn).after(loop.end - 1)
    group = reschedule(unrolled_copies(loop, ind, factor, pool, live_after=live_after),
                       rng, family, noise)
    entry, exit_ = window_states(fn, loop.start, loop.end)
    main = with_waits(group + [loop.branch], entry, exit_)
    branch_op = loop.branch.split(None, 1)[0]
    return (guard + main + [f"s_branch {done}", f"{rem}:"] + list(loop.body)
            + [f"{branch_op} {rem}", f"{done}:"])


@mutation("unroll", targets=("amdgpu",))
class Unroll(LoopOperator):
    """Unroll one hot counted loop by 2, 4 or 8 with a remainder path (module doc)."""

    FACTORS = FACTORS
    verb = "unroll"

    def rewrite(self, fn, program, loop, factor, rng):
        return unroll_lines(fn, program, loop, factor, rng, noise=self.noise, grow=self.grow)
