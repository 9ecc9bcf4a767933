"""A refutation: the solver's model as a concrete wave state, replayed on the emulator.

The model of :func:`asmevo.prove.equiv.prove_window` may rely on a memory layout
the emulator cannot build or on how an uninterpreted function is interpreted. So
the question is asked once more with the harness's layout (one mapped allocation at
:data:`~asmevo.prove.harness.BASE`, nothing read-only, LDS of
:data:`HARNESS_LDS` bytes), the model is read out as a
:class:`~asmevo.prove.harness.Snapshot` (the registers the windows name, every
lane; the dwords their accesses touch), and both windows run on the emulator from
it, under the approximate families' members 0 to 7 in turn. The candidate is
refuted only where they then differ on something live after the window, in memory
or in the fault status.
"""
from __future__ import annotations

import time

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.prove import harness
from asmevo.prove.concrete import harness_mapping
from asmevo.prove.obligation import Result, bits, fault, vreg
from asmevo.prove.machine import EXEC, Context, Machine
from asmevo.prove.term import LANE, bv, each_lane
from asmevo.prove.z3env import check, over_memory, unknown_reason, z3

HARNESS_LDS = 65536
VARIANTS = 8
RETRY_SEED = 7          # z3's random seed for the second try of a timed-out question


def harness_layout(ctx: Context) -> list:
    """(symbol, value) pairs fixing the memory layout to the harness's."""
    return harness_mapping(ctx) + [(ctx.lds_size, bv(HARNESS_LDS, 64))]


def refute(ctx: Context, w, a: Machine, b: Machine, diffs, assume, t0: float,
           timeout_ms: int, first=()) -> Result:
    """Find a replayable model of a difference and replay it (module doc); ``first``:
    the names of the differences the first question's model showed, asked alone before
    all of them together (a register's difference is often instant where the
    disjunction with a 64-lane store is not)."""
    if a.barriers or b.barriers:
        return Result("unknown", "differs for some entry state, across a barrier (the "
                      "emulator cannot replay other waves' stores)",
                      time.perf_counter() - t0, len(diffs))
    layout = harness_layout(ctx)
    fault_diff = [d for name, d in diffs if name == "fault"]
    others = [d for name, d in diffs if name != "fault"]
    shown = [d for name, d in diffs if name != "fault" and name in first]
    # a difference in a value where neither faults (what the edit computes), else in
    # whether they fault
    quiet = z3.And(*[z3.Not(f) for m in (a, b) for f in each_lane(fault(m))])
    # the placeholders' definitions substituted, not asserted (Context.expander)
    expand = ctx.expander([d for _, d in diffs] + assume + [quiet])
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    for c in assume + ctx.facts() + _kernarg_in_harness(ctx):
        s.add(z3.substitute(expand(c), *layout))
    model, why = None, "unsat"
    goals = [[quiet, z3.Or(*shown)]] if shown and len(shown) < len(others) else []
    for goal in (*goals, [quiet, z3.Or(*others)] if others else [], fault_diff):
        if not goal:
            continue
        s.push()
        s.add(z3.substitute(expand(z3.And(*goal) if len(goal) > 1 else goal[0]), *layout))
        got = check(s)
        if got not in (z3.sat, z3.unsat) and not over_memory(s):
            # out of time: once more down another path
            s.set("random_seed", RETRY_SEED)     # (a model is usually quick, where found)
            got = check(s)
        if got == z3.sat:
            model = s.model()
            break
        if got != z3.unsat:
            why = unknown_reason(s)
        s.pop()
    if model is None:
        return Result("unknown", "differs for some entry state, but not for one the emulator "
                      "can lay out" + (f" (solver: {why})" if why != "unsat" else ""),
                      time.perf_counter() - t0, len(diffs))
    snap, vregs = snapshot(ctx, model, w, a, b, expand)
    lane = model.eval(LANE, model_completion=True).as_long()
    got = replay(ctx, w, snap, vregs, lane)
    if got is None:
        return Result("unknown", "a difference the solver found does not reproduce on the "
                      "emulator", time.perf_counter() - t0, len(diffs))
    found, cex = got
    return Result("refuted", f"differs in {', '.join(found[:4])}", time.perf_counter() - t0,
                  len(diffs), cex, snap)


def replay(ctx: Context, w, snap: harness.Snapshot, vregs, lane: int, runs: list | None = None):
    """Both windows of ``w`` on the emulator from ``snap``, under members 0 to 7 of the
    approximate families: (what differs, the counterexample) at the first member where
    something does, else None. ``runs`` collects each member's two statuses."""
    for variant in range(VARIANTS):
        ra = harness.run(snap, w.k0, vregs=vregs, accum_offset=ctx.accum_offset,
                         processor=ctx.processor, variant=variant)
        rb = harness.run(snap, w.cand, vregs=vregs, accum_offset=ctx.accum_offset,
                         processor=ctx.processor, variant=variant)
        if runs is not None:
            runs.append((ra.status, rb.status))
        if "unsupported" in (ra.status, rb.status):
            continue
        found = compare_runs(ra, rb, w, ctx.accum_offset)
        if found:
            return found, describe(snap, ra, rb, found, lane, w, ctx.accum_offset, variant)
    return None


def _kernarg_in_harness(ctx: Context) -> list:
    """The kernarg segment inside the harness's allocation (where the model knows it)."""
    seg = ctx.kernarg_dwords()
    if seg is None:
        return []
    lo, n = seg
    first, end = harness.BASE >> 2, (harness.BASE + harness.HEAP_BYTES) >> 2
    return [z3.UGE(lo, first), z3.ULE(lo + n, end)]


def lift(ctx: Context, w, snap: harness.Snapshot, lane: int) -> tuple[Result | None, bool]:
    """A region's counterexample as the entry state of the wider window ``w`` (its
    block and the blocks that alone lead to it): (the refutation where K0's and the
    candidate's windows run from it on the emulator differ, else None; whether they ran
    through and agreed: the region's entry state was one the code before it does not
    produce, so the region's difference says nothing)."""
    return replayed(ctx, w, snap, lane, "its block, from the region's counterexample")


def replayed(ctx: Context, w, snap: harness.Snapshot, lane: int,
             where: str) -> tuple[Result | None, bool]:
    """Both windows of ``w`` on the emulator from ``snap`` (``where`` says what the
    state is): (the refutation where they differ, else None; whether they ran through
    and agreed under some member)."""
    t0 = time.perf_counter()
    _, vbits = named_registers(w.k0 + w.cand)
    vregs = sorted(set(snap.v) | {r for r in (vreg(x, ctx.accum_offset) for x in vbits)
                                  if r < harness.NVGPRS})
    runs: list = []
    got = replay(ctx, w, snap, vregs, lane, runs)
    if got is None:
        return None, any(a == b == "ok" for a, b in runs)
    found, cex = got
    return Result("refuted", f"differs in {', '.join(found[:4])} ({where})",
                  time.perf_counter() - t0, 0, cex, snap), False


def named_registers(texts) -> tuple[set[int], set[int]]:
    """(SGPRs, VGPRs) the texts name or touch."""
    mask = 0
    for t in texts:
        e = effects(t)
        mask |= e.reads | e.writes
    return set(bits(mask, 0, 128)), set(bits(mask, R.VGPR_BASE, R.NBITS))


def snapshot(ctx: Context, model, w, a: Machine, b: Machine, expand=None):
    """The model's entry state as a Snapshot, and the VGPRs it sets (``expand``: what
    replaces the placeholders the model was found without)."""
    expand = expand or ctx.expander([addr for m in (a, b) for _, addr, _ in m.accesses])
    ev = lambda t: model.eval(expand(t), model_completion=True)  # noqa: E731
    snap = harness.Snapshot(mode=ctx.mode, lds_size=HARNESS_LDS)
    snap.s = [ev(ctx.sgpr(r)).as_long() for r in range(128)]
    snap.scc = z3.is_true(ev(ctx.scc()))
    _, vbits = named_registers(w.k0 + w.cand)
    vbits |= set(bits(w.live_lanes | w.live_all, R.VGPR_BASE, R.NBITS))
    vregs = sorted(r for r in (vreg(x, ctx.accum_offset) for x in vbits) if r < harness.NVGPRS)
    for r in vregs:
        vals = ev(z3.Concat(*[z3.Select(ctx.vgpr_array(r), bv(i, 6))
                              for i in reversed(range(64))])).as_long()
        snap.v[r] = [(vals >> (32 * i)) & 0xFFFFFFFF for i in range(64)]
    for m in (a, b):
        for space, addr, nbytes in m.accesses:
            lanes = [ev(z3.substitute(addr, (LANE, bv(i, 6)))).as_long() for i in range(64)] \
                if _lane_term(addr) else [ev(addr).as_long()]
            for x in set(lanes):
                for k in range(max(1, (nbytes + 3) // 4)):
                    d = (x & ~3) + 4 * k
                    arr, store = (ctx.mem0, snap.mem) if space == "global" else (ctx.lds0,
                                                                                 snap.lds)
                    store[d] = ev(z3.Select(arr, bv(d >> 2, 62))).as_long()
    return snap, vregs


def _lane_term(t) -> bool:
    from asmevo.prove.term import has_lane
    return has_lane(t)


def compare_runs(ra: harness.Snapshot, rb: harness.Snapshot, w, accum: int) -> list[str]:
    """What differs between K0's and the candidate's concrete runs (the obligations)."""
    if ra.status != rb.status:
        return [f"status ({ra.status} vs {rb.status})"]
    if ra.status == "barrier":
        # both stopped at their first barrier, where what the other waves see is the
        # obligation (Machine.barrier); the run cannot go past it (their stores)
        return [f"{name} at the barrier" for name, x, y in (("memory", ra.mem, rb.mem),
                                                             ("LDS", ra.lds, rb.lds))
                if _dwords(x) != _dwords(y)]
    if ra.status != "ok":
        return []
    out = []
    live = w.live_lanes | w.live_all
    for r in bits(live, 0, 128):
        if ra.s[r] != rb.s[r]:
            out.append(R.names(1 << r)[0])
    if live & R.SCC_MASK and ra.scc != rb.scc:
        out.append("scc")
    ex = ra.s[EXEC] | (ra.s[EXEC + 1] << 32)
    for bit in bits(live, R.VGPR_BASE, R.NBITS):
        r = vreg(bit, accum)
        every = (w.live_all >> bit) & 1
        va, vb = ra.vget(r), rb.vget(r)
        if any(va[i] != vb[i] and (every or (ex >> i) & 1) for i in range(64)):
            out.append(f"v{r}")
    if _dwords(ra.mem) != _dwords(rb.mem):
        out.append("memory")
    if _dwords(ra.lds) != _dwords(rb.lds):
        out.append("LDS")
    return out


def _dwords(d: dict) -> dict:
    return {k: v for k, v in d.items() if v}


def describe(snap, ra, rb, found, lane: int, w, accum: int, variant: int) -> dict:
    """The counterexample as plain data: the entry values the windows read (at the
    lane the solver chose for vector registers), and the outputs that differ."""
    sregs, vbits = named_registers(w.k0 + w.cand)
    regs = {R.names(1 << r)[0]: f"{snap.s[r]:#x}" for r in sorted(sregs) if r < 128}
    regs["exec"] = f"{snap.s[EXEC] | (snap.s[EXEC + 1] << 32):#018x}"
    regs["scc"] = int(snap.scc)
    for bit in sorted(vbits):
        r = vreg(bit, accum)
        if r in snap.v:
            regs[f"v{r}[{lane}]"] = f"{snap.v[r][lane]:#x}"
    outs = {}
    for name in found:
        if name.startswith("v") and name[1:].isdigit():
            r = int(name[1:])
            outs[name] = {"lane": lane, "k0": f"{ra.vget(r)[lane]:#x}",
                          "candidate": f"{rb.vget(r)[lane]:#x}"}
        elif name.startswith(("memory", "LDS")):
            da, db = (ra.mem, rb.mem) if name.startswith("memory") else (ra.lds, rb.lds)
            k = next(k for k in sorted(set(da) | set(db)) if da.get(k, 0) != db.get(k, 0))
            outs[name] = {"address": f"{k:#x}", "k0": f"{da.get(k, 0):#x}",
                          "candidate": f"{db.get(k, 0):#x}"}
        elif name.startswith("status"):
            outs["status"] = {"k0": ra.status, "candidate": rb.status}
        else:
            r = next((x for x in range(128) if R.names(1 << x)[0] == name), None)
            if r is not None:
                outs[name] = {"k0": f"{ra.s[r]:#x}", "candidate": f"{rb.s[r]:#x}"}
            elif name == "scc":
                outs[name] = {"k0": int(ra.scc), "candidate": int(rb.scc)}
    memory = {f"{k:#x}": f"{v:#x}" for k, v in sorted(snap.mem.items())[:16]}
    lds = {f"{k:#x}": f"{v:#x}" for k, v in sorted(snap.lds.items())[:16]}
    return {"replayed": True, "variant": variant, "lane": lane, "entry": regs,
            "memory": memory, "lds": lds, "differs": outs}
