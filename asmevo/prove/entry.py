"""A refutation from a launch's first state: the region's difference followed from the
kernel's entry, where no state before the region is left to the solver's choice.

A region's own refutation starts from any state at its entry; where its difference is
only in lanes EXEC leaves out, the facts the code before it establishes may be what
keeps it unseen (or what makes it no difference at all: an edit that relies on them is
sound). So the question is asked again of the code a wave runs from its first
instruction (:func:`entry_window`): the chain of blocks from the entry block, each with
one successor (every wave of the workgroup runs it, whatever its data), the region's
block up to the region, the region, and the rest of its block up to its first
``s_barrier`` (memory and LDS there are what the other waves see) or its end. The entry
state is the one a launch makes (:func:`launch_state`): EXEC and the work-item ids of
the first wave of a workgroup of the launch's block shape (the caller's: without it
there is no question), the kernarg pointer and
the kernarg dwords the descriptor preloads; the rest (the segment's contents, the
workgroup ids, memory, LDS, the registers the dispatch does not set) is any launch's.

A barrier the chain crosses before the cut is a no-op for the question where no
instruction before it stores (every wave runs the same instructions up to it, so no
other wave has changed memory or LDS there); otherwise there is no question. The
refutation is the window's (:func:`asmevo.prove.equiv.prove_window`: the solver's model
replayed on the emulator), checked once more to start from a launch's state.
"""
from __future__ import annotations

from dataclasses import replace

from asmevo.targets.amdgpu import processors as P
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.cfg import build_cfg
from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.prove import harness
from asmevo.prove.equiv import prove_window
from asmevo.prove.machine import BV62, EXEC, Context
from asmevo.prove.obligation import Result, Window
from asmevo.prove.regions import Region
from asmevo.prove.term import bv
from asmevo.prove.z3env import z3

ENTRY_LIMIT = 600        # instructions a window from the entry may have at most
# registers the dispatch sets that the question does not model (a window reading one
# has no question): flat_scratch and xnack_mask
HARDWARE_SET = R.span(102, 105)
WHERE = "from a launch's first state, along the kernel's path to the region"


def _chain(fn, target: int) -> list[tuple[int, int]] | None:
    """The blocks (instruction ranges) a wave runs from the entry before the block that
    starts at instruction ``target``, each with one successor; None where the path forks
    or ends first."""
    cfg = build_cfg(fn)
    out, bi, seen = [], 0, set()
    while cfg.n and cfg.blocks[bi].start != target:
        if bi in seen or len(cfg.succs[bi]) != 1:
            return None
        seen.add(bi)
        out.append((cfg.blocks[bi].start, cfg.blocks[bi].end))
        bi = cfg.succs[bi][0]
    return out if cfg.n else None


def _straight(fn, spans) -> list[str]:
    return [fn.instructions[k].text for lo, hi in spans for k in range(lo, hi)
            if not fn.instructions[k].ends_block]


def _without_barriers(texts: list[str]) -> list[str] | None:
    """``texts`` without the barriers they cross, where nothing stores before the last
    one (else None): the workgroup's memory and LDS are unchanged there."""
    last = max((k for k, t in enumerate(texts) if t.split(None, 1)[0] == "s_barrier"),
               default=-1)
    if last >= 0 and any(effects(t).mem_store or effects(t).unknown for t in texts[:last]):
        return None
    return [t for t in texts if t.split(None, 1)[0] != "s_barrier"]


def entry_window(fa, fb, reg: Region) -> tuple[Window, str] | None:
    """K0's and the candidate's code from the kernel's first instruction through the
    region to the cut (module doc), and what is compared there; None where the path to
    the region forks, the two differ outside the region, or a barrier cannot be crossed."""
    (a0, a_end), (b0, b_end) = reg.block_a, reg.block_b
    chain_a, chain_b = _chain(fa, a0), _chain(fb, b0)
    if chain_a is None or chain_b is None:
        return None
    cut = next((j for j in range(reg.a[1], a_end)
                if fa.instructions[j].text.split(None, 1)[0] == "s_barrier"), a_end)
    tail = cut - reg.a[1]
    pre_a, pre_b = _straight(fa, chain_a + [(a0, reg.a[0])]), \
        _straight(fb, chain_b + [(b0, reg.b[0])])
    post_a = _straight(fa, [(reg.a[1], cut)])
    if pre_a != pre_b or post_a != _straight(fb, [(reg.b[1], reg.b[1] + tail)]):
        return None
    region_a, region_b = _straight(fa, [reg.a]), _straight(fb, [reg.b])
    if any(t.split(None, 1)[0] == "s_barrier" for t in region_a + region_b):
        return None
    k0, cand = _without_barriers(pre_a + region_a + post_a), \
        _without_barriers(pre_b + region_b + post_a)
    if k0 is None or cand is None or len(k0) > ENTRY_LIMIT:
        return None
    if cut < a_end:             # at the barrier: what the other waves see
        return Window(k0, cand, 0, 0), f"up to the barrier at #{cut}"
    lanes, every = reg.after_block
    term = fa.instructions[a_end] if a_end < len(fa.instructions) else None
    if term is not None and term.ends_block:
        lanes |= effects(term.text).reads & ~R.VECTOR_MASK
    # a vector register maybe live only outside EXEC's lanes is not compared
    return Window(k0, cand, lanes | (every & ~R.VECTOR_MASK), 0), "to the end of its block"


def _launch_sgprs(kd) -> tuple[int | None, int, int] | None:
    """(the kernarg pointer's first SGPR or None, the first preloaded kernarg SGPR, how
    many) where the descriptor asks for nothing else the question would have to model
    (dispatch or queue pointer, private segment, workgroup info), else None."""
    if (kd.enable_sgpr_private_segment_buffer or kd.enable_sgpr_dispatch_ptr
            or kd.enable_sgpr_queue_ptr or kd.enable_sgpr_dispatch_id
            or kd.enable_sgpr_flat_scratch_init or kd.enable_sgpr_private_segment_size
            or kd.enable_private_segment or kd.enable_sgpr_workgroup_info):
        return None
    ptr = 0 if kd.enable_sgpr_kernarg_segment_ptr else None
    first = 2 if ptr is not None else 0
    return ptr, first, kd.kernarg_preload_spec_length


def first_wave(kd, processor: str, block) -> tuple[int, dict[int, list[int]]]:
    """EXEC and the work-item id VGPRs of a workgroup's first wave for ``block`` work-items
    per workgroup, as the dispatch sets them (asmevo.emu.run.dispatch)."""
    bx, by, bz = block
    valid = [i < bx * by * bz for i in range(64)]
    ids = [(i % bx, (i // bx) % by, i // (bx * by)) if valid[i] else (0, 0, 0)
           for i in range(64)]
    n = min(kd.enable_vgpr_workitem_id, 2)
    if P.processor(processor).packed_tid:
        vregs = {0: [x | (y << 10 if n >= 1 else 0) | (z << 20 if n >= 2 else 0)
                     for x, y, z in ids]}
    else:
        vregs = {r: [t[r] for t in ids] for r in range(1 + n)}
    return sum(1 << i for i in range(64) if valid[i]), vregs


def launch_state(ctx: Context, kd, processor: str, block) -> list | None:
    """The entry facts of the first wave of a workgroup of ``block`` work-items (module
    doc), over the context's initial symbols; None where the descriptor asks for a
    register they do not cover."""
    got = _launch_sgprs(kd)
    if got is None:
        return None
    _, first, preload = got
    mask, vregs = first_wave(kd, processor, block)
    out = [ctx.sgpr(EXEC) == bv(mask & 0xFFFFFFFF, 32), ctx.sgpr(EXEC + 1) == bv(mask >> 32, 32)]
    for r, vals in vregs.items():
        arr = ctx.vgpr_array(r)
        out += [z3.Select(arr, bv(i, 6)) == bv(x, 32) for i, x in enumerate(vals)]
    if preload:
        if ctx.kernarg is None:
            return None
        off, size = kd.kernarg_preload_spec_offset, (ctx.kernarg[1] + 3) // 4
        out += [ctx.sgpr(first + k) == z3.Select(ctx.karg, bv(off + k, 62))
                for k in range(preload) if off + k < size]
    return out


def _is_launch(snap: harness.Snapshot, kd, processor: str, block) -> bool:
    """Whether ``snap`` holds what :func:`launch_state` asks (the model satisfied it)."""
    mask, vregs = first_wave(kd, processor, block)
    if snap.s[EXEC] | (snap.s[EXEC + 1] << 32) != mask:
        return False
    if any(r in snap.v and snap.v[r] != vals for r, vals in vregs.items()):
        return False
    got = _launch_sgprs(kd)
    if got is None:
        return False
    ptr, first, preload = got
    if preload and ptr is not None:
        base = snap.s[ptr] | (snap.s[ptr + 1] << 32)
        off = kd.kernarg_preload_spec_offset
        return all(snap.s[first + k] == snap.mem.get(base + 4 * (off + k), 0)
                   for k in range(preload) if base + 4 * (off + k) in snap.mem)
    return True


# memory contents tried first: every dword of the launch's memory (its buffers and its
# kernarg segment) one value, which leaves the solver no float to search for (a
# max-reduction over the wave's lanes runs out of time otherwise); then any memory
PROBES = (0, 0xFF800000, 0x7FC00000, 1)
PROBE_MS = 3000


def _ask(ctx: Context, w: Window, facts: list, timeout_ms: int) -> Result | None:
    """The first refutation of ``w`` from the launch's state ``facts`` under each probe
    (:data:`PROBES`), then under none; None where none refutes it (a proof under the
    facts says nothing about other states)."""
    for probe in (*PROBES, None):
        extra = [] if probe is None else [ctx.mem0 == z3.K(BV62, bv(probe, 32))]
        ask = replace(w, assume=[lambda a, b, c=facts + extra: z3.And(*c)])
        got = prove_window(ctx, ask, timeout_ms=timeout_ms if probe is None else
                           min(timeout_ms, PROBE_MS))
        if got.status == "refuted":
            return got
    return None


def refute_from_entry(ctx: Context, kd, block, fa, fb, reg: Region,
                      timeout_ms: int) -> Result | None:
    """The region's refutation from a launch's first state (module doc) with ``block``
    work-items per workgroup (the launch's), or None."""
    got = entry_window(fa, fb, reg)
    if got is None:
        return None
    w, cut = got
    if any(effects(t).reads & HARDWARE_SET for t in w.k0 + w.cand):
        return None
    saved = ctx.kernarg
    ptr = 0 if kd.enable_sgpr_kernarg_segment_ptr and kd.kernarg_size else None
    ctx.kernarg = (ptr, kd.kernarg_size) if ptr is not None else None
    try:
        facts = launch_state(ctx, kd, ctx.processor, block)
        if facts is None:
            return None
        again = _ask(ctx, w, facts, timeout_ms)
    finally:
        ctx.kernarg = saved
    if again is None or not _is_launch(again.snapshot, kd, ctx.processor, block):
        return None
    return Result("refuted", f"{again.reason} ({WHERE}, {cut})", again.seconds,
                  again.obligations, again.counterexample, again.snapshot)
