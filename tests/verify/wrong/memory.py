"""Classes wrong only where memory is shared: overlapping buffers, workgroups run
in another order, lanes of a wave storing to one address, special values in one
layout.

* ``alias``: what an operator assuming no aliasing builds (the spec declares no
  ``noalias``, the code object no ``.is_restrict``): two stores to different
  buffers swapped (a scheduler moving a store past another), or the project's
  ``pipeline`` operator with its alias refusal taken out (the next iteration's loads
  issued before this iteration's store). Witness: the buffers laid over each other
  at some byte offset where K0 gives one result in every workgroup order.
* ``workgroup_order``: on an elementwise kernel, an extra store before the real one,
  by every odd workgroup, of a wrong value into its even partner's slot (wg - 1):
  in lockstep the partner's real store lands after it, run one at a time in
  ascending order the partner's result is clobbered.
* ``same_address_lanes``: after the real store, a second one where lanes 2k and 2k+1
  both store to lane 2k+1's address (DPP ``quad_perm:[1,1,3,3]`` on the address),
  each its own value. The emulator's last lane wins, so the bytes are K0's; on
  hardware which lane wins is unspecified. The witness of this class is that store
  itself: the candidate's run lists lanes of one wave writing different values to
  one address, K0's none (``LaunchResult.lane_conflicts``).
* ``special_layout``: the stored value replaced by 0 where it and the previous
  lane's (DPP ``row_shr:1``) are both NaN: right for every input but one where two
  neighbouring elements are NaN.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import random

import numpy as np

from asmevo.edits import Edit
from tests.verify.wrong.base import (Kernel, Probe, Wrong, free_sgpr, free_vgprs, stores,
                                     workgroup_id_sgprs)
from tests.verify.wrong.witness import member_probes, small_probe


def padded(k: Kernel, start: int, end: int, lines: list[str]) -> Edit | None:
    """The edit with the wait states its new lines need (the operators' own padding)."""
    from asmevo.operators.rules.common import SealError, pad_hazards
    try:
        lines = pad_hazards(k.program, k.fn.name, start, end, list(lines))
    except SealError:
        return None
    return Edit(k.fn.name, start, end, tuple(lines))


# -- same-address lanes ---------------------------------------------------------------------

def preferred_stores(fn, widths=("dword", "dwordx2", "dwordx4", "dwordx3", "short", "byte"),
                     limit: int = 4):
    """Up to ``limit`` stores, whole dwords first, the last of each width first (a
    kernel's final output store)."""
    sts = stores(fn)
    return sorted((s for s in sts if s.width in widths),
                  key=lambda s: (widths.index(s.width), -s.index))[:limit]


def same_address_lanes(fn, spec, kernel: Kernel, **_) -> Wrong | None:
    from tests.verify.wrong.sizes import pick
    variants = []
    probes = (small_probe(lanes=True),) + tuple(
        dataclasses.replace(p, lanes=True) for p in member_probes(kernel, limit=2))
    for st in preferred_stores(fn):
        addr = st.address_registers
        fresh = free_vgprs(fn, len(addr), align=2)
        new = f"v[{fresh[0]}:{fresh[1]}]" if len(addr) == 2 else f"v{fresh[0]}"
        lines = [st.text] + [f"v_mov_b32_e32 v{f}, v{a}" for f, a in zip(fresh, addr)]
        lines += [f"v_mov_b32_dpp v{f}, v{a} quad_perm:[1,1,3,3] row_mask:0xf bank_mask:0xf"
                  for f, a in zip(fresh, addr)]
        lines.append(st.with_(vaddr=new))
        e = padded(kernel, st.index, st.index + 1, lines)
        if e is not None:
            variants.append(Wrong("same_address_lanes", (e,),
                                  f"#{st.index}: a second {st.width} store, lanes 2k and 2k+1 "
                                  f"to lane 2k+1's address", "launches", probes=probes))
    return pick(kernel, variants)


# -- workgroup order ------------------------------------------------------------------------

def elements_per_workgroup(spec) -> int | None:
    """For a one-dimensional elementwise launch (one output of ``count`` elements over
    ``grid[0]`` workgroups), the elements each workgroup owns: the power of two the
    count per workgroup rounds up to (None for other launches)."""
    if spec.grid[1] != 1 or spec.grid[2] != 1 or spec.grid[0] < 2 or len(spec.outputs) != 1:
        return None
    if spec.block[1] != 1 or spec.block[2] != 1:
        return None
    per = -(-spec.outputs[0].count // spec.grid[0])
    e = 1 << (per - 1).bit_length()
    if not e // 2 < per <= e or spec.outputs[0].count <= (spec.grid[0] - 1) * e:
        return None
    return e


def workgroup_order(fn, spec, kernel: Kernel, **_) -> Wrong | None:
    from asmevo.launch.dtypes import bits_dtype
    per = elements_per_workgroup(spec)
    ids = workgroup_id_sgprs(kernel.kd)
    sts = [s for s in stores(fn) if s.width.startswith("dword")]
    if per is None or 0 not in ids or not sts:
        return None
    st = sts[-1]
    esize = np.dtype(bits_dtype(spec.outputs[0].dtype)).itemsize
    delta = per * esize
    f = free_sgpr(fn)
    if f is None:
        return None
    c = f + 1 + (f + 1) % 2                 # an aligned pair for the carry
    data = st.data_registers
    addr = st.address_registers
    fresh = free_vgprs(fn, 4 + len(data), align=2)   # tuples even-aligned (gfx90a+)
    p, t, w = fresh[0], fresh[2], fresh[4:]
    wreg = f"v[{w[0]}:{w[-1]}]" if len(w) > 1 else f"v{w[0]}"
    lines = [f"v_and_b32_e64 v{t}, s{f}, 1", f"v_mul_u32_u24_e32 v{t}, 0x{delta:x}, v{t}"]
    cc = f"s[{c}:{c + 1}]"
    if len(addr) == 2:
        lo, hi = f"v{addr[0]}", f"v{addr[1]}"
    else:                                   # saddr + 32-bit offset: a 64-bit address first
        sbase = [int(x) for x in st.saddr[2:-1].split(":")]
        lines += [f"v_mov_b32_e32 v{p + 1}, s{sbase[1]}",
                  f"v_add_co_u32_e64 v{p}, {cc}, s{sbase[0]}, v{addr[0]}",
                  f"v_addc_co_u32_e64 v{p + 1}, {cc}, v{p + 1}, 0, {cc}"]
        lo, hi = f"v{p}", f"v{p + 1}"
    lines += [f"v_sub_co_u32_e64 v{p}, {cc}, {lo}, v{t}",
              f"v_subbrev_co_u32_e64 v{p + 1}, {cc}, 0, {hi}, {cc}"]
    paddr = f"v[{p}:{p + 1}]"
    lines += [f"v_not_b32_e32 v{x}, v{d}" for x, d in zip(w, data)]
    extra = f"global_store_{st.width} {paddr}, {wreg}, off{st.tail}"
    lines += [extra, st.text]
    save = Edit(fn.name, 0, 0, (f"s_mov_b32 s{f}, s{ids[0]}",))
    e = padded(kernel, st.index, st.index + 1, lines)
    if e is None:
        return None
    probes = (small_probe("workgroups one at a time, ascending", order="ascending"),
              small_probe("workgroups one at a time, descending", order="descending"))
    probes += tuple(dataclasses.replace(q, label=f"{q.label}, ascending", order="ascending")
                    for q in member_probes(kernel, limit=2))
    return Wrong("workgroup_order", (e, save),          # the later window first: the
                                                          # insertion at 0 shifts indices
                 f"#{st.index}: odd workgroups first store ~value into workgroup - 1's slot "
                 f"({delta} bytes back)", "launches", probes=probes)


# -- special-value layout -------------------------------------------------------------------

def special_layout(fn, spec, kernel: Kernel, **_) -> Wrong | None:
    from asmevo.launch.dtypes import is_float
    from tests.verify.wrong.sizes import pick
    if not any(is_float(a.dtype) and a.dtype == "float32" for a in spec.outputs):
        return None
    f = free_sgpr(fn)
    if f is None:
        return None
    c = f + (f % 2)
    n, r = free_vgprs(fn, 2)
    variants = []
    for st in preferred_stores(fn, widths=("dword",)):
        d = st.vdata
        lines = [f"v_mov_b32_e32 v{n}, 0",
                 f"v_mov_b32_dpp v{n}, {d} row_shr:1 row_mask:0xf bank_mask:0xf",
                 f"v_cmp_u_f32_e64 s[{c}:{c + 1}], v{n}, v{n}",
                 f"v_cndmask_b32_e64 v{r}, 0, {d}, s[{c}:{c + 1}]",
                 f"v_cmp_u_f32_e64 s[{c}:{c + 1}], v{r}, v{r}",
                 f"v_cndmask_b32_e64 v{r}, {d}, 0, s[{c}:{c + 1}]",
                 st.with_(vdata=f"v{r}")]
        e = padded(kernel, st.index, st.index + 1, lines)
        if e is not None:
            variants.append(Wrong("special_layout", (e,), f"#{st.index}: stores 0 where this "
                                  "lane's value and the previous lane's are both NaN",
                                  "launches", probes=nan_pairs(spec)))
    return pick(kernel, variants)


def nan_pairs(spec) -> tuple[Probe, ...]:
    """Inputs with NaN in two neighbouring elements (every 16 elements, at 6 and 7;
    then whole rows of 64 NaN every 256 elements; then every element)."""
    from asmevo.launch.dtypes import is_float
    from asmevo.launch.spec import make_inputs
    out = []
    for label, mask in (("NaN at elements 16j+6 and 16j+7", lambda i: (i % 16 == 6) | (i % 16 == 7)),
                        ("NaN in elements 256j..256j+63", lambda i: i % 256 < 64),
                        ("NaN everywhere", lambda i: np.ones_like(i, bool))):
        vals = make_inputs(spec, 0)
        hit = False
        for a in spec.buffers:
            if a.written or not a.special or not is_float(a.dtype) or a.dtype != "float32":
                continue
            arr = np.array(vals[a.name], np.float32, copy=True)
            arr[mask(np.arange(arr.size))] = np.nan
            vals[a.name] = arr
            hit = True
        if hit:
            out.append(Probe(f"inputs with {label}", values=vals))
    return tuple(out)


# -- alias ----------------------------------------------------------------------------------

ALIAS_SHIFTS = (0, 4, 16, 64)     # bytes the written buffer starts into the other (plus a
                                  # workgroup's and the whole grid's elements: alias_probes)


ALIAS_PAIRS = 3                   # (written buffer, other buffer) pairs a witness lays over


def alias_probes(k: Kernel, shifts=ALIAS_SHIFTS) -> tuple[Probe, ...]:
    """Written buffers laid over other ones (pairs of one element size first, read-only
    bases first; at most :data:`ALIAS_PAIRS`): at the size under check at the
    verifier's own shifts (0 and 16 bytes), and at launches of one workgroup (the
    cheapest member with one, and the same with longer trip counts), where an overlap
    can be in the contract at any shift, also at ``shifts`` and at one, two and four
    workgroups' worth of elements and one grid's (a grid-stride loop's next element)."""
    from asmevo.launch.dtypes import bits_dtype
    spec = k.spec
    bufs = [a for a in spec.buffers if not a.noalias]

    def es(a):
        return np.dtype(bits_dtype(a.dtype)).itemsize
    pairs = sorted(((w, x) for w in bufs if w.written for x in bufs if x.name != w.name),
                   key=lambda p: (es(p[0]) != es(p[1]), p[1].written))[:ALIAS_PAIRS]
    launches = [((), "the size under check", math.prod(spec.grid) == 1)]
    space = k.space
    for p in member_probes(k, limit=24):
        if _one_workgroup(k, p.member) and len(launches) < 2:
            launches.append((p.member, p.label, True))
            # the same one workgroup with longer trip counts: another parameter x4 + 1
            base = dict(p.member)
            for r in space.family.ranges:
                v = 4 * base[r.name] + r.multiple
                more = {**base, r.name: v}
                if r.values or v not in r or not _one_workgroup(k, tuple(more.items())):
                    continue
                if space.family.outside({**space.base, **more}) is None:
                    label = ",".join(f"{n}={x}" for n, x in more.items())
                    launches.append((tuple(more.items()), f"{label} (one workgroup, longer)",
                                     True))
                    break
    out = []
    threads = int(np.prod(spec.block))
    for member, where, single in launches:
        for w, x in pairs:
            if single:
                g = space.grid({**space.base, **dict(member)}) if member else spec.grid
                e = es(w)
                offs = tuple(shifts) + (threads * e, 2 * threads * e, 4 * threads * e,
                                        int(np.prod(g)) * threads * e)
            else:
                offs = (0, 16, int(np.prod(spec.grid if not member else space.grid(
                    {**space.base, **dict(member)}))) * threads * es(w))
            for s in dict.fromkeys(offs):
                out.append(Probe(f"{w.name} laid {s} bytes into {x.name}, {where}",
                                 member, aliases=((w.name, x.name, s),)))
    return tuple(out)


def _one_workgroup(k: Kernel, member: tuple) -> bool:
    g = k.space.grid({**k.space.base, **dict(member)})
    return g is not None and int(np.prod(g)) == 1


def alias(fn, spec, kernel: Kernel, **_) -> Wrong | None:
    if all(a.noalias for a in spec.buffers if a.written):
        return None
    from tests.verify.wrong.sizes import pick
    variants = []
    probes = alias_probes(kernel)
    e = blind_schedule(kernel)
    if e is not None:
        variants.append(Wrong("alias", (e,), f"#{e.start}: {e.note}, as if loads and stores "
                              "through different pointers never alias (a load above a "
                              "store)", "launches", probes=probes))
    for factor in (4, 2, 1):
        e = unsafe_pipeline(kernel, factor)
        if e is not None:
            variants.append(Wrong("alias", (e,), f"#{e.start}: {e.note} without its alias "
                                  "refusal (the next group's loads before this group's "
                                  "stores)", "launches", probes=probes))
    for factor in (2, 4):
        e = blind_unroll(kernel, factor)
        if e is not None:
            variants.append(Wrong("alias", (e,), f"#{e.start}: {e.note}, scheduled as if "
                                  "loads and stores through different pointers never "
                                  "alias", "launches", probes=probes))
    return pick(kernel, variants)


@contextlib.contextmanager
def _stores_alias_nothing():
    """The ``pipeline`` operator as if it never checked that a stage-1 store may alias
    a stage-0 load: stores report no memory space to its clash test."""
    import asmevo.operators.rules.pipeline as P
    real = P.effects

    def blind(t):
        e = real(t)
        return dataclasses.replace(e, spaces=frozenset()) if e.mem_store else e
    P.effects = blind
    try:
        yield
    finally:
        P.effects = real


def unsafe_pipeline(k: Kernel, factor: int, seed: int = 0) -> Edit | None:
    from asmevo.operator import OperatorContext, Rejected, get_operator
    from asmevo.targets.amdgpu.edits import apply_edits
    prog = k.program

    class _Ind:
        edits = ()
    ctx = OperatorContext(k0=prog, kernel=k.spec.kernel, rng=random.Random(seed),
                          program_of=lambda ind: apply_edits(prog, ind.edits))
    with _stores_alias_nothing():
        op = get_operator("pipeline", factors=(factor,))
        e = op.mutate(_Ind(), ctx)
    if isinstance(e, Rejected):
        return None
    if not any(x.startswith(("global_store", "buffer_store")) for x in e.lines):
        return None                 # no store in the pipelined loop: nothing to pass
    return e


@contextlib.contextmanager
def _pointers_never_alias():
    """The schedulers' dependency DAG as if a global load and a global store through
    different address registers never touched the same bytes."""
    import asmevo.targets.amdgpu.analysis.liveness as L
    real = L._independent

    def blind(a, b, between):
        if a.mem == b.mem and a.mem in ("global", "buffer") and a.mem_store != b.mem_store \
                and a.addr != b.addr:
            return True
        return real(a, b, between)
    L._independent = blind
    try:
        yield
    finally:
        L._independent = real


def blind_unroll(k: Kernel, factor: int) -> Edit | None:
    """The project's ``unroll`` with that blind scheduler, where it moves a load above a
    store of an earlier copy (else None: the blind schedule changed nothing)."""
    from tests.verify.wrong.sizes import unrolled
    with _pointers_never_alias():
        e = unrolled(k, factor)
    if e is None:
        return None
    honest = unrolled(k, factor)
    if honest is not None and honest.lines == e.lines:
        return None
    if not any(t.startswith("global_store") for t in e.lines):
        return None
    return e


def blind_schedule(k: Kernel, seed: int = 0) -> Edit | None:
    """A block holding a store and a later load, list-scheduled (the ``schedule``
    operator's scheduler, waits recomputed, sealed) with that blind dependency DAG,
    where the schedule moves a load above a store."""
    from asmevo.targets.amdgpu.analysis.effects import effects
    from asmevo.targets.amdgpu.analysis.problems import target_family
    from asmevo.targets.amdgpu.analysis.waitcnt import recompute_waitcnts, window_states
    from asmevo.operators.rules.common import seal
    from asmevo.operators.rules.schedule import reschedule
    fn = k.fn
    family, _ = target_family(k.program.source.target)
    for blk in fn.blocks():
        texts = [i.text for i in fn.instructions[blk.start:blk.end]]
        effs = [effects(t) for t in texts]
        first_store = next((j for j, e in enumerate(effs) if e.mem_store
                            and e.mem in ("global", "buffer")), None)
        if first_store is None or not any(e.mem_load and e.mem in ("global", "buffer")
                                          for e in effs[first_store:]):
            continue
        with _pointers_never_alias():
            new = reschedule(texts, random.Random(seed), family, 0.0)
        if not _load_passed_store(texts, new):
            continue
        entry, exit_ = window_states(fn, blk.start, blk.end)
        lines = recompute_waitcnts(new, entry, exit_, keep=True)
        e = seal(k.program, fn.name, blk.start, blk.end, lines, operator="schedule",
                 note=f"list-schedule block [{blk.start}:{blk.end}]")
        if isinstance(e, Edit):
            return e
    return None


def _load_passed_store(old: list[str], new: list[str]) -> bool:
    """Whether ``new`` puts some global/buffer load before a store it followed in ``old``."""
    from asmevo.targets.amdgpu.analysis.effects import effects
    pos = {}
    for j, t in enumerate(new):
        pos.setdefault(t, j)
    mem = [(j, effects(t)) for j, t in enumerate(old)]
    for i, a in mem:
        if not (a.mem_store and a.mem in ("global", "buffer")):
            continue
        for j, b in mem[i + 1:]:
            if b.mem_load and b.mem in ("global", "buffer") and \
                    pos.get(old[j], -1) < pos.get(old[i], -1):
                return True
    return False
