"""Manual wait states (s_nop padding) for gfx90a, the gfx940 family and gfx950.

The hardware does not interlock these producer/consumer pairs; the compiler
(LLVM's GCNHazardRecognizer, post-RA) pads them with ``s_nop``, and an edit
that moves or deletes code can silently break that. Each rule below names its
source. Numbers come from LLVM's GCNHazardRecognizer.cpp (the recognizer that
padded every corpus kernel), cross-checked against ``llc -run-pass=
post-RA-hazard-rec`` of LLVM 19 on hand-written MIR for gfx90a and gfx942, and
against the CDNA3 ISA guide section "Manually Inserted Wait States (NOPs)".
gfx950 (which LLVM 19 does not know) follows LLVM 22's recognizer, checked
with ``llc -run-pass=post-RA-hazard-rec`` of LLVM 22 on MIR for every rule
that differs from gfx942: XDL results of 4/8/16 passes need one wait state
more (RAW, WAW, SrcA/B, overlapped SrcC), f64 16x16 DGEMM results need 19
(VALU/SrcA/B) and 17 (SrcC of a non-XDL MFMA), ``v_permlane16/32_swap``
wait for VALU writes of their operands (2) and for ``v_cmpx`` (4), and the
dst-sel forwarding rule also covers fp8/fp4 byte-select conversions and a
consumer that only overwrites the register.

Counting follows LLVM: ``s_nop N`` provides N+1 wait states, any other
instruction one. For a consumer the search walks backwards along every path
(fallthrough and branch predecessors) until the rule's window is exhausted;
on each path the *closest* matching producer decides, and the worst path is
reported.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from asmevo.targets.amdgpu import processors as P
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.cfg import CFG, build_cfg, shape
from asmevo.targets.amdgpu.analysis.effects import Effects
from asmevo.memo import MISS, IdentityMemo, Memo
from asmevo.targets.amdgpu.analysis.problems import Problem, at_addresses, target_family
from asmevo.targets.amdgpu.program import Function

GHR = "LLVM GCNHazardRecognizer"
GFX940 = (P.CDNA3, P.CDNA4)     # families with the gfx940 rules (gfx950 adds its own)
_PERMLANE = ("v_permlane16_swap_", "v_permlane32_swap_")
_EXCHANGE = ("v_swap_b",) + _PERMLANE


@dataclass(frozen=True)
class Check:
    """One producer search for one consumer: ``match`` returns the wait states
    needed after a producer (None: not a producer for this check)."""

    rule: str
    limit: int
    match: Callable[[Effects], int | None]


def wait_states(e: Effects) -> int:
    if e.klass == "NOP" and e.mnemonic == "s_nop":
        try:
            return (int(e.operands[0], 0) & 0xF) + 1
        except (IndexError, ValueError):
            return 1
    return 1


# --- MFMA tables (GCNHazardRecognizer checkMAIHazards90A / checkMAIVALUHazards) ---

def _f64_4x4(e: Effects) -> bool:
    return e.dgemm and e.mfma_shape[0] == 4


def _xdl_extra(p: Effects, fam: str) -> int:
    """gfx950's extra wait state after an XDL result of more than 2 passes."""
    return 1 if fam == P.CDNA4 and p.passes(fam) != 2 else 0


def mfma_read_need(p: Effects, fam: str, mem: bool) -> int:
    """MFMA writes a VGPR, then a VALU (``mem``: VMEM/LDS) reads it."""
    n = p.passes(fam)
    if p.dgemm:
        return (9 if mem else 6) if n == 4 else (18 if mem else 19 if fam == P.CDNA4 else 11)
    if fam in GFX940:
        return n + 3 + _xdl_extra(p, fam) if p.xdl(fam) else n + 2
    return {2: 5, 8: 11}.get(n, 19)


def mfma_waw_need(p: Effects, fam: str) -> int:
    """MFMA writes a VGPR, then a VALU/VMEM/LDS overwrites it."""
    n = p.passes(fam)
    if p.dgemm:
        return 6 if n == 4 else 11
    if fam in GFX940:
        return n + 3 + _xdl_extra(p, fam) if p.xdl(fam) else n + 2
    return {2: 5, 8: 11}.get(n, 19)


def mfma_war_need(p: Effects, fam: str) -> int:
    """MFMA reads a VGPR as SrcC, then a VALU/VMEM/LDS overwrites it."""
    return {2: 1, 4: 3, 8: 7}.get(p.passes(fam), 15)


def mfma_srcc_need(p: Effects, c: Effects, fam: str, full: bool) -> int:
    """MFMA ``p`` writes what MFMA ``c`` reads as SrcC (``full``: the same range)."""
    if fam == P.CDNA2 and p.dgemm and not c.dgemm:
        return 0
    if full:
        if _f64_4x4(p) and _f64_4x4(c):
            return 4
        return 2 if fam in GFX940 and p.passes(fam) == 2 else 0
    if p.dgemm:
        if c.xdl(fam):
            return 0
        return 4 if _f64_4x4(p) else 17 if fam == P.CDNA4 else 9
    n = p.passes(fam)
    if fam in GFX940:
        if c.xdl(fam) and not p.xdl(fam):
            return 0
        if not p.xdl(fam):
            return n
        # gfx950: +1 before an XDL reader, +1 before others only after 4+ passes
        return n + 1 + (fam == P.CDNA4 if c.xdl(fam) else _xdl_extra(p, fam))
    return {2: 2, 8: 8}.get(n, 16) + (1 if c.dgemm else 0)


def mfma_srcab_need(p: Effects, fam: str) -> int:
    """MFMA ``p`` writes what an MFMA reads as SrcA/SrcB."""
    if p.dgemm:
        return 6 if _f64_4x4(p) else 19 if fam == P.CDNA4 else 11
    n = p.passes(fam)
    if fam in GFX940:
        return n + 3 + _xdl_extra(p, fam) if p.xdl(fam) else n + 2
    return {2: 5, 8: 11}.get(n, 19)


# --- the checks a consumer triggers -----------------------------------------------

@dataclass(frozen=True)
class Producers:
    """What the function's producers write, per rule family: a consumer only
    searches for producers that exist (keeps a 700-line kernel in a few ms)."""

    valu_sgpr: int = 0        # SGPRs (incl. VCC, EXEC) written by VALU
    salu_m0: bool = False
    trans: int = 0
    dst_sel: int = 0
    mfma_dst: int = 0
    mfma_srcc: int = 0
    dot_dst: int = 0
    store_data: int = 0       # data of VMEM stores wider than 64 bits
    dgemm: bool = False
    setreg: bool = False


def summarize(effs) -> Producers:
    """What the producers among ``effs`` write (:class:`Producers`)."""
    vs = tr = ds = md = mc = dd = sd = 0
    m0 = dg = sr = False
    remembered = _PRODUCES.get  # _produces' lookup first: this loop runs over every line
    for e in effs:
        part = remembered(e, None, MISS)
        if part is MISS:
            part = _produces(e)
        if part is None:
            continue
        if part is _UNKNOWN:
            return _EVERYTHING
        pvs, pm0, ptr, pds, pmd, pmc, pdd, psd, pdg, psr = part
        vs |= pvs
        m0 = m0 or pm0
        tr |= ptr
        ds |= pds
        md |= pmd
        mc |= pmc
        dd |= pdd
        sd |= psd
        dg = dg or pdg
        sr = sr or psr
    return Producers(vs, m0, tr, ds, md, mc, dd, sd, dg, sr)


_EVERYTHING = Producers(R.ALL, True, R.ALL, R.ALL, R.ALL, R.ALL, R.ALL, R.ALL, True, True)
_UNKNOWN = ()                   # _produces of an unknown instruction: it may be anything
_MEMO_SIZE = 65536
# per Effects object (effects() hands out one object per text), its share
_PRODUCES: IdentityMemo[tuple | None] = IdentityMemo(_MEMO_SIZE, "amdgpu.hazards.produces")


def _produces(e: Effects) -> tuple | None:
    """One instruction's share of :class:`Producers` (its fields in order; ``None``: it
    produces nothing a rule looks for; :data:`_UNKNOWN`: anything), remembered per
    Effects object: a function's summary is then a fold over its lines, not a fresh
    look at each line's effects."""
    part = _PRODUCES.get(e, None, MISS)
    if part is not MISS:
        return part
    if e.unknown:
        part = _UNKNOWN
    else:
        vs = tr = ds = md = mc = dd = sd = 0
        m0 = dg = sr = False
        if e.is_valu:
            vs = e.writes & R.SGPR_MASK
            if e.trans:
                tr = _first_def(e)
            if e.dst_sel or e.byte_sel:
                ds = _first_def(e)
            if e.mfma:
                md = _first_def(e)
                mc = e.srcs[2]
                dg = e.dgemm
            if e.dot:
                dd = _first_def(e)
        elif e.is_salu:
            m0 = bool(e.writes & R.M0_MASK)
            sr = e.mnemonic.startswith("s_setreg_")
        if e.is_vmem and e.mem_store and e.data_bits > 64:
            sd = e.data
        part = (vs, m0, tr, ds, md, mc, dd, sd, dg, sr)
        if not any(part):
            part = None
    return _PRODUCES.put(e, part)


def _first_def(e: Effects) -> int:
    return e.op_masks[0] if e.ndefs and e.op_masks else 0


def consumer_checks(c: Effects, fam: str, have: Producers | None = None) -> list[Check]:
    """Every producer search instruction ``c`` needs on ``fam`` (only for producer
    kinds that ``have`` says exist; default: all)."""
    if c.unknown:
        return []
    if c.mnemonic.startswith(_EXCHANGE):
        # both operands are read as well as written: searches look at them as uses too
        c = replace(c, op_masks=c.op_masks + c.defs)
    have = have or Producers(R.ALL, True, R.ALL, R.ALL, R.ALL, R.ALL, R.ALL, R.ALL, True, True)
    out: list[Check] = []
    uses = c.uses
    use_all = c.use_mask
    gfx940 = fam in GFX940
    m = c.mnemonic

    if c.is_vmem:
        # VALU writes SGPR -> VMEM reads it: 5 (checkVMEMHazards; ISA guide).
        s = c.reads & R.SGPR_MASK & have.valu_sgpr
        if s:
            out.append(Check("valu-sgpr-vmem", 5,
                             lambda e, s=s: 5 if e.is_valu and e.writes & s else None))
    if c.dpp:
        # any write of a VGPR, then DPP reads it: 2; VALU writes EXEC, then DPP: 5
        v = use_all & R.VGPR_MASK
        out.append(Check("vgpr-dpp", 2, lambda e, v=v: 2 if e.writes & v and e.klass != "NOP"
                         and not e.unknown else None))
        out.append(Check("valu-exec-dpp", 5,
                         lambda e: 5 if e.is_valu and e.writes & R.EXEC_MASK else None))
    if m.startswith("v_div_fmas_"):
        out.append(Check("valu-vcc-div-fmas", 4,
                         lambda e: 4 if e.is_valu and e.writes & R.VCC_MASK else None))
    if m.startswith(("v_readlane_", "v_writelane_")) and len(uses) > 1 \
            and uses[1] & R.SGPR_MASK:
        lane = uses[1]
        out.append(Check("valu-sgpr-lane-select", 4,
                         lambda e, s=lane: 4 if e.is_valu and e.writes & s else None))
    if (m.startswith("s_getreg_") or m.startswith("s_setreg_")) and have.setreg:
        hw = _hwreg(c)
        out.append(Check("setreg-" + ("getreg" if m.startswith("s_getreg_") else "setreg"), 2,
                         lambda e, hw=hw: 2 if e.mnemonic.startswith("s_setreg_")
                         and _hwreg(e) == hw else None))
    if have.salu_m0 and (m.startswith(("s_movrel", "s_sendmsg", "s_ttracedata"))
                         or "addtid" in m or (c.is_lds and "gds" in c.modifiers)
                         or (c.is_vmem and c.reads & R.M0_MASK)):
        # SALU writes M0, then a reader of M0 (movrel, sendmsg, GDS, LDS DMA): 1
        out.append(Check("salu-m0", 1,
                         lambda e: 1 if e.is_salu and e.writes & R.M0_MASK else None))

    if fam == P.CDNA4 and m.startswith(_PERMLANE):
        # checkPermlaneHazards (gfx950): VALU writes a VGPR the permlane reads: 2;
        # v_cmpx writes EXEC: 4
        v = c.reads & R.VGPR_MASK
        out.append(Check("valu-vgpr-permlane", 2,
                         lambda e, v=v: 2 if e.is_valu and e.writes & v else None))
        out.append(Check("vcmpx-exec-permlane", 4, lambda e: 4 if e.is_valu
                         and e.mnemonic.startswith(("v_cmpx_", "v_cmpsx_"))
                         and e.writes & R.EXEC_MASK else None))
    if c.is_valu:
        out += _valu_checks(c, fam, gfx940, have)
    if c.mfma:
        out += _mfma_checks(c, fam, have)
    elif (c.is_valu or c.is_vmem or c.is_lds) and (have.mfma_dst or have.dot_dst):
        out += _mai_valu_checks(c, fam, have)
    return out


def _valu_checks(c: Effects, fam: str, gfx940: bool, have: Producers) -> list[Check]:
    out: list[Check] = []
    uses = c.uses
    use_all = c.use_mask
    m = c.mnemonic
    if gfx940:
        if not c.trans and use_all & have.trans:
            u = use_all
            out.append(Check("trans-valu", 1, lambda e, u=u: 1 if e.trans
                             and _first_def(e) & u else None))
        # gfx950 (LLVM 22): fp8/fp4 byte-select conversions forward too, and a consumer
        # that only overwrites the register is one as well
        u = use_all | (_all(c.defs) if fam == P.CDNA4 else 0)
        if u & have.dst_sel:
            wide = fam == P.CDNA4
            out.append(Check("dst-sel-valu", 1, lambda e, u=u, w=wide: 1 if e.is_valu and (
                e.dst_sel or (w and e.byte_sel)) and _first_def(e) & u else None))
        s = ((use_all & R.SGPR_MASK) | (c.reads & R.VCC_MASK)) & have.valu_sgpr
        if s:
            out.append(Check("valu-sgpr-valu", 2,
                             lambda e, s=s: 2 if e.is_valu and e.writes & s else None))
        if m.startswith(("v_readlane_", "v_readfirstlane_")) and uses:
            v = uses[0] & R.VGPR_MASK
            out.append(Check("valu-vgpr-readlane", 1,
                             lambda e, v=v: 1 if e.is_valu and e.writes & v else None))
        if m.startswith(("v_readlane_", "v_readfirstlane_", "v_writelane_")):
            out.append(Check("valu-exec-rwlane", 4,
                             lambda e: 4 if e.is_valu and e.writes & R.EXEC_MASK else None))
    # VMEM store of more than 64 bits, then a VALU overwrites its data: 1 (gfx940: 2)
    d = c.writes & have.store_data
    if d:
        need = 2 if gfx940 else 1
        out.append(Check("store-data-valu", need, lambda e, d=d, n=need: n
                         if e.is_vmem and e.mem_store and e.data_bits > 64
                         and not e.soffset_reg and e.data & d else None))
    return out


def _mfma_checks(c: Effects, fam: str, have: Producers) -> list[Check]:
    out = [Check("valu-exec-mfma", 4, lambda e: 4 if e.is_valu and not e.mfma
                 and e.writes & R.EXEC_MASK else None)]
    for k, u in enumerate(c.uses[:3]):
        if not u:
            continue
        out.append(Check("valu-vgpr-mfma", 2, lambda e, u=u: 2 if e.is_valu and not e.mfma
                         and not e.dot and e.writes & u else None))
        if not u & have.mfma_dst:
            continue
        if k == 2:
            out.append(Check("mfma-srcc", 19, lambda e, u=u: mfma_srcc_need(
                e, c, fam, _first_def(e) == u) if e.mfma and _first_def(e) & u else None))
        else:
            out.append(Check("mfma-srcab", 19, lambda e, u=u: mfma_srcab_need(e, fam)
                             if e.mfma and _first_def(e) & u else None))
    return out


def _mai_valu_checks(c: Effects, fam: str, have: Producers) -> list[Check]:
    out: list[Check] = []
    mem = c.is_vmem or c.is_lds
    for k, u in enumerate(c.uses):
        u &= R.VECTOR_MASK
        if not u:
            continue
        srcc = k == 2
        if u & have.dot_dst:
            out.append(Check("dot-read", 3, lambda e, u=u, srcc=srcc: (
                (0 if srcc else 3) if e.mnemonic == c.mnemonic else 3)
                if e.dot and _first_def(e) & u else None))
        if u & have.mfma_dst:
            out.append(Check("mfma-read", 19, lambda e, u=u: mfma_read_need(e, fam, mem)
                         if e.mfma and _first_def(e) & u else None))
    if c.mnemonic.startswith(("v_fma_f64", "v_fmac_f64")) and have.dgemm:
        out.append(Check("dgemm-fma64", 2, lambda e: 2 if e.dgemm else None))
    for d in c.defs:
        d &= R.VECTOR_MASK
        if not d:
            continue
        if d & have.dot_dst:
            out.append(Check("dot-write", 3, lambda e, d=d: 3 if e.dot
                             and e.mnemonic != c.mnemonic and _first_def(e) & d else None))
        if d & have.mfma_dst:
            out.append(Check("mfma-waw", 19, lambda e, d=d: mfma_waw_need(e, fam)
                             if e.mfma and _first_def(e) & d else None))
        if d & have.mfma_srcc:
            out.append(Check("mfma-srcc-war", 15, lambda e, d=d: mfma_war_need(e, fam)
                         if e.mfma and not e.dgemm and (fam != P.CDNA3 or e.xdl(fam))
                         and e.srcs[2] & d else None))
    return out


def _all(masks) -> int:
    out = 0
    for m in masks:
        out |= m
    return out


def _hwreg(e: Effects) -> str:
    for o in e.operands:
        if o.startswith("hwreg("):
            return o[6:].split(",")[0].rstrip(")").strip()
    return ""


# --- the search --------------------------------------------------------------------

def _search(cfg: CFG, j: int, checks: list[Check],
            met: bool = False) -> list[tuple[int, Check, int, int]]:
    """(need, check, producer, distance) for the worst path of each check; ``met``: also
    the producers whose wait states are already there (need <= 0)."""
    worst: dict[int, tuple[int, Check, int, int]] = {}
    bi = cfg.block_of[j]
    stack = [(bi, j - 1, 0, tuple(range(len(checks))))]
    seen: dict[tuple[int, tuple[int, ...]], int] = {}
    steps = 0
    while stack:
        bi, i, dist, open_ = stack.pop()
        start = cfg.blocks[bi].start
        while open_ and i >= start:
            e = cfg.effects[i]
            still = []
            for k in open_:
                ck = checks[k]
                r = ck.match(e)
                if r is not None:
                    need = r - dist
                    if (need > 0 or met) and (k not in worst or need > worst[k][0]):
                        worst[k] = (need, ck, i, dist)
                else:
                    still.append(k)
            dist += wait_states(e)
            # ``met`` looks one wait state further: a pair exactly at its need still binds
            open_ = tuple(k for k in still if checks[k].limit + met > dist)
            i -= 1
            steps += 1
        if open_ and i < start:
            for p in cfg.preds[bi]:
                # entering a block with the same open checks at a larger distance
                # can only find smaller needs: skip it
                key = (p, open_)
                if seen.get(key, 1 << 30) <= dist:
                    continue
                seen[key] = dist
                b = cfg.blocks[p]
                stack.append((p, b.end - 1, dist, open_))
        if steps > 100000:      # pathological CFG: stop, reporting what was found
            break
    return list(worst.values())


def _soft_clause(cfg: CFG, j: int) -> Problem | None:
    """xnack on/any: a soft clause (back-to-back SMEM, or back-to-back VMEM) may be
    replayed, so no clause member may write what a member reads, and a store may
    not join a clause that has defs (checkSoftClauseHazards): 1 wait state.
    Instructions are consecutive in issue order, so the walk ignores labels;
    any other instruction (a branch, an s_nop) ends the clause."""
    c = cfg.effects[j]
    smem = c.is_smem
    if not (smem or c.is_vmem):
        return None
    defs = uses = 0
    i = j - 1
    while i >= 0:
        e = cfg.effects[i]
        if not (e.is_smem if smem else e.is_vmem):
            break
        defs |= e.writes
        uses |= e.reads
        i -= 1
    if i == j - 1 or not defs:
        return None
    if not c.mem_store and not ((defs | c.writes) & (uses | c.reads)):
        return None
    return Problem("hazard", "soft-clause", j, cfg.addresses[j],
                   f"{cfg.texts[j]!r} joins a {'SMEM' if smem else 'VMEM'} soft clause that "
                   f"begins at #{i + 1} and writes registers the clause reads (or stores after "
                   f"a load): needs 1 wait state, has 0 ({GHR} checkSoftClauseHazards)",
                   producer=j - 1, required=1, actual=0,
                   registers=tuple(R.names(defs & (uses | c.reads))))


_CHECKED: Memo[tuple[Problem, ...]] = Memo("amdgpu.hazards.checked", 256)


def check_hazards(fn: Function, target, cfg: CFG | None = None) -> list[Problem]:
    """Every consumer that does not have the wait states a rule requires after its
    producer, on gfx90a or a gfx940-family target (TargetId or "gfx942").

    Remembered by content: the function's name and :func:`~asmevo.targets.amdgpu.
    analysis.cfg.shape`, and the target family (``cfg``, when given, is
    ``build_cfg(fn)``). Addresses are the one thing of ``fn`` the shape leaves out,
    and a problem's only use of them is its consumer's address, which is set from
    ``fn``: an operator's hazard padding and the static gate after it check the same
    candidate text, the gate's with K0's addresses on the lines the edit kept."""
    fam = target_family(target)
    key = (fn.name, shape(fn), fam)
    hit = _CHECKED.get(key)
    if hit is None:
        hit = _CHECKED.put(key, tuple(_check_hazards(fn, fam, cfg)))
    return at_addresses(hit, fn.instructions) if hit else []


# (family, Producers) -> per Effects object (soft clause member, its checks); bounded
# at 64 memos (cleared when full)
_CONSUMERS: Memo[IdentityMemo[tuple[bool, list[Check]]]] = Memo("amdgpu.hazards.consumers",
                                                                  64)


def _consumers(family: tuple[str, bool], have: Producers) -> IdentityMemo:
    """The memo of :func:`consumer_checks` for one family and one function's producers
    (its answer depends on nothing else of the function), shared by every function
    with the same producers (a candidate's are nearly always its parent's)."""
    key = (family, have)
    memo = _CONSUMERS.get(key)
    if memo is None:
        memo = _CONSUMERS.put(key, IdentityMemo(_MEMO_SIZE))
    return memo


def _check_hazards(fn: Function, family: tuple[str, bool], cfg: CFG | None) -> list[Problem]:
    fam, xnack = family
    cfg = cfg or build_cfg(fn)
    problems: list[Problem] = []
    have = summarize(cfg.effects)
    memo = _consumers(family, have)
    reachable, block_of = cfg.reachable, cfg.block_of
    for j, c in enumerate(cfg.effects):
        if not reachable[block_of[j]]:
            continue
        hit = memo.get(c)
        if hit is None:
            hit = memo.put(c, (xnack and (c.is_smem or c.is_vmem), consumer_checks(c, fam, have)))
        soft, checks = hit
        if soft:
            p = _soft_clause(cfg, j)
            if p is not None:
                problems.append(_named(p, fn.name))
        if not checks:
            continue
        for need, ck, i, dist in sorted(_search(cfg, j, checks), key=lambda t: -t[0]):
            p = cfg.effects[i]
            regs = (p.writes & (c.reads | c.writes)) | (p.reads & c.writes)
            problems.append(Problem(
                "hazard", ck.rule, j, cfg.addresses[j],
                f"{cfg.texts[i]!r} (#{i}) then {cfg.texts[j]!r} needs {need + dist} wait "
                f"states, has {dist}", fn.name, producer=i, registers=tuple(R.names(regs)),
                required=need + dist, actual=dist))
    return problems


def window_constraints(fn: Function, target, start: int, end: int, *, margin: int = 8,
                       cfg: CFG | None = None) -> list[Problem]:
    """Every hazard rule that binds a producer and a consumer in or near ``[start, end)``
    (consumers from ``start`` to ``margin`` past ``end``), met or not: what an edit that
    moves these instructions must keep. ``required``/``actual`` are wait states."""
    fam, _ = target_family(target)
    cfg = cfg or build_cfg(fn)
    have = summarize(cfg.effects)
    out: list[Problem] = []
    for j in range(max(0, start), min(cfg.n, end + margin)):
        checks = consumer_checks(cfg.effects[j], fam, have)
        if not checks:
            continue
        for need, ck, i, dist in _search(cfg, j, checks, met=True):
            if need + dist <= 0 or i < start - margin or (i >= end and j >= end):
                continue        # binds nothing, or neither end is in or next to the window
            out.append(Problem("hazard", ck.rule, j, cfg.addresses[j],
                               f"{cfg.texts[i]!r} (#{i}) then {cfg.texts[j]!r}: needs "
                               f"{need + dist} wait states, has {dist}", fn.name, producer=i,
                               required=need + dist, actual=dist))
    return sorted(out, key=lambda p: (p.index, p.producer, p.rule))


def _named(p: Problem, name: str) -> Problem:
    return replace(p, function=name)
