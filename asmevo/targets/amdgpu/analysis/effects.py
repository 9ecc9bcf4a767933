"""What one instruction does to registers, memory and the wait counters.

Every later analysis (liveness, dependency DAG, waitcnt, hazards, the timing
model) asks the same questions of an instruction's text, so the answers are
decoded once into an :class:`Effects` value and cached by text. Unknown
mnemonics get a conservative effect (may read and write every register, kills
none, is a fence) instead of an error: the analyses then refuse to prove
anything across them, which is the safe direction.

Operand order is llvm-objdump's: destinations first (a VOPC ``_e32`` prints its
``vcc``; carry-out forms print their SGPR pair), stores list address then data.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from asmevo.memo import cached
from asmevo.targets.amdgpu import processors as P
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.syntax import comma_fields, top_level_words

# instruction classes for the timing model
CLASSES = ("SALU", "VALU", "VALU_TRANS", "MFMA", "DOT", "SMEM", "VMEM", "LDS", "BRANCH",
           "WAITCNT", "NOP", "BARRIER", "MSG", "END", "OTHER")

_TRANS = ("v_exp_", "v_log_", "v_rcp_", "v_rsq_", "v_sqrt_", "v_sin_", "v_cos_")
# SALU mnemonic prefixes that write SCC (SOP1/SOP2/SOPC/SOPK arithmetic and logic)
_SCC_WRITERS = ("s_add_", "s_addc_", "s_sub_", "s_subb_", "s_min_", "s_max_", "s_and_",
                "s_or_", "s_xor_", "s_andn2_", "s_orn2_", "s_nand_", "s_nor_", "s_xnor_",
                "s_lshl_", "s_lshr_", "s_ashr_", "s_bfe_", "s_absdiff_", "s_abs_", "s_not_",
                "s_bcnt0_", "s_bcnt1_", "s_quadmask_", "s_wqm_", "s_lshl1_add", "s_lshl2_add",
                "s_lshl3_add", "s_lshl4_add", "s_addk_", "s_cmpk_", "s_cmp_", "s_bitcmp",
                "s_andn1_", "s_orn1_")
# vector instructions whose register effects the generic "first operand is the
# destination" reading would get wrong: treated as unknown
_VALU_UNMODELED = ("v_permlane", "v_swaprel", "v_cvt_scalef32", "v_prng", "v_s_")
# ... except these, modelled below: gfx950's lane swaps exchange their two operands;
# its scaled conversions write their first operand
_VALU_MODELED = ("v_permlane16_swap_", "v_permlane32_swap_", "v_cvt_scalef32_")
# conversions that write one byte or word of their destination and keep the rest
# (LLVM ties the old destination as an input); op_sel[2:] choose which
_PARTIAL_CVT = re.compile(r"^v_cvt_(?:scalef32_)?(?:sr_)?(?:pk_)?(?:fp8|bf8|fp4)_")
_SCC_READERS = ("s_addc_", "s_subb_", "s_cselect_", "s_cmov_", "s_cmovk_")
# SALU prefixes known not to touch SCC
_SALU_PLAIN = ("s_mov_", "s_movk_", "s_mul_i32", "s_mul_hi_", "s_mulk_", "s_brev_", "s_bfm_",
               "s_ff0_", "s_ff1_", "s_flbit_", "s_sext_", "s_pack_", "s_getpc_", "s_bitset0_",
               "s_bitset1_", "s_bitreplicate", "s_cselect_", "s_cmov_", "s_cmovk_",
               "s_getreg_", "s_setreg_", "s_movrels_", "s_movreld_", "s_setpc_", "s_swappc_")
_NO_DEST_SALU = ("s_cmp_", "s_cmpk_", "s_bitcmp", "s_setreg_", "s_setpc_")
_CONTROL = {
    "s_nop": "NOP", "s_endpgm": "END", "s_endpgm_saved": "END", "s_trap": "END",
    "s_waitcnt": "WAITCNT", "s_barrier": "BARRIER", "s_setprio": "OTHER", "s_sleep": "OTHER",
    "s_sendmsg": "MSG", "s_sendmsghalt": "MSG", "s_ttracedata": "MSG", "s_icache_inv": "OTHER",
    "s_incperflevel": "OTHER", "s_decperflevel": "OTHER", "s_setkill": "OTHER",
    "s_set_gpr_idx_off": "OTHER", "s_set_gpr_idx_mode": "OTHER", "s_set_gpr_idx_on": "OTHER",
    "s_setvskip": "OTHER", "s_code_end": "NOP", "s_rfe_b64": "BRANCH",
}
# instructions nothing may be moved across
FENCES = ("s_barrier", "s_waitcnt", "s_setprio", "s_sleep", "s_sendmsg", "s_sendmsghalt",
          "s_ttracedata", "s_icache_inv", "s_trap", "s_setkill", "s_set_gpr_idx_on",
          "s_set_gpr_idx_off", "s_set_gpr_idx_mode", "s_setvskip", "s_setreg_b32",
          "s_setreg_imm32_b32", "s_dcache_wb", "s_dcache_inv", "buffer_wbinvl1",
          "buffer_wbinvl1_vol", "buffer_wbl2", "buffer_inv", "s_endpgm", "s_swappc_b64",
          "s_setpc_b64")
_SIZES = (("dwordx4", 16), ("dwordx3", 12), ("dwordx2", 8), ("dword", 4), ("b128", 16),
          ("b96", 12), ("b64", 8), ("b32", 4), ("b16", 2), ("b8", 1), ("ubyte", 1),
          ("sbyte", 1), ("byte", 1), ("ushort", 2), ("sshort", 2), ("short", 2), ("u16", 2),
          ("i16", 2), ("u8", 1), ("i8", 1), ("x4", 16), ("x3", 12), ("x2", 8), ("u32", 4),
          ("i32", 4), ("f32", 4), ("u64", 8), ("i64", 8), ("f64", 8))
_MFMA_SHAPE = re.compile(r"_(\d+)x(\d+)x(\d+)")


@dataclass(frozen=True)
class Effects:
    """The decoded effect of one instruction (a pure function of its text)."""

    text: str
    mnemonic: str
    klass: str                 # one of CLASSES
    reads: int                 # registers it may read (bit mask, see regs.py)
    writes: int                # registers it may write
    kills: int                 # registers it surely overwrites entirely (liveness)
    operands: tuple[str, ...] = ()
    op_masks: tuple[int, ...] = ()
    ndefs: int = 0             # the first ``ndefs`` operands are destinations
    modifiers: tuple[str, ...] = ()
    # memory
    mem: str | None = None     # global flat buffer scratch lds gds smem msg
    mem_load: bool = False     # returns data into registers (loads, returning atomics)
    mem_store: bool = False    # writes memory (stores, atomics, LDS DMA)
    spaces: frozenset = frozenset()   # "G" (global/private memory), "L" (LDS)
    counters: tuple[str, ...] = ()    # "vm", "lgkm" it increments
    ordered: bool = True       # completes in issue order with its own kind
    data: int = 0              # store data registers
    data_bits: int = 0
    soffset_reg: bool = False  # MUBUF soffset is a register (no >64-bit data hazard)
    addr: str = ""             # address operands, for independence proofs
    offset: int = 0
    width: int = 0             # bytes touched from offset (ds_*2: whole span)
    # vector flavours
    dpp: bool = False
    sdwa: bool = False
    dst_sel: bool = False      # writes part of its dst with a shifted lane select
    byte_sel: bool = False     # fp8/fp4 conversion into a selected byte/word of its dst
    trans: bool = False
    mfma: bool = False
    dot: bool = False
    dgemm: bool = False
    mfma_shape: tuple[int, int, int] = (0, 0, 0)
    mfma_blocks: int = 1
    mfma_f32: bool = False     # plain f32 inputs (not xf32): not XDL on gfx940
    unknown: bool = False
    fence: bool = False

    @property
    def defs(self) -> tuple[int, ...]:
        return self.op_masks[:self.ndefs]

    @property
    def uses(self) -> tuple[int, ...]:
        return self.op_masks[self.ndefs:]

    @property
    def use_mask(self) -> int:
        m = 0
        for x in self.uses:
            m |= x
        return m

    @property
    def is_valu(self) -> bool:
        return self.klass in ("VALU", "VALU_TRANS", "MFMA", "DOT")

    @property
    def is_salu(self) -> bool:
        return self.klass == "SALU"

    @property
    def is_vmem(self) -> bool:
        return self.mem in ("global", "flat", "buffer", "scratch")

    @property
    def is_lds(self) -> bool:
        return self.mnemonic.startswith("ds_")

    @property
    def is_smem(self) -> bool:
        return self.mem == "smem"

    @property
    def is_branch(self) -> bool:
        return self.mnemonic.startswith(("s_branch", "s_cbranch_"))

    @property
    def srcs(self) -> tuple[int, ...]:
        """MFMA: (srcA, srcB, srcC) masks."""
        u = self.uses
        return tuple(u[:3]) + (0,) * (3 - len(u[:3]))

    def passes(self, family: str) -> int:
        """MFMA passes (4 cycles each) on ``family``: LLVM's ReleaseAtCycles, checked
        against llvm-mca for gfx90a and gfx942."""
        if not self.mfma:
            return 0
        m = self.mfma_shape[0]
        if self.dgemm:
            return 4 if m == 4 else 8
        full = {32: 16, 16: 8, 4: 2}.get(m, 16)
        if "f8f6f4" in self.mnemonic:
            # gfx950: full rate only with an fp8/bf8 operand (cbsz/blgp 0 or 1; default 0),
            # half with fp6/fp4 ones (LLVM 22 post-RA-hazard-rec, every operand pair)
            fmt = [int(x) for x in re.findall(r"\b(?:cbsz|blgp):(\d)", self.text)] or [0]
            return full if len(fmt) < 2 or min(fmt) <= 1 else full // 2
        if family == P.CDNA2 or self.mfma_blocks > 1 or self.mfma_f32 or m == 4:
            return full
        return full // 2      # CDNA3 runs dense f16/bf16/i8/fp8/xf32 at twice the rate

    def xdl(self, family: str) -> bool:
        """An XDL MFMA (every non-DGEMM one on gfx90a; not plain-f32 ones on gfx940)."""
        if not self.mfma or self.dgemm:
            return False
        return family == P.CDNA2 or not self.mfma_f32


def split_operands(operands: str) -> tuple[list[str], list[str]]:
    """Comma-separated operands, and the space-separated modifiers after the last one."""
    parts, tail = comma_fields(operands)
    if not tail:
        return parts, []
    # split the last part at top-level whitespace: operand, then modifiers
    words = top_level_words(tail)
    if parts and words and _is_modifier(words[0]):
        return parts, words
    if not parts and words and _is_modifier(words[0]):
        return [], words
    return parts + words[:1], words[1:]


_MOD_WORD = re.compile(r"^[a-z_0-9]+:")
_MOD_FLAGS = {"offen", "idxen", "glc", "slc", "dlc", "gds", "lds", "sc0", "sc1", "nt", "tfe",
              "lwe", "clamp", "addr64", "done", "vm", "compr", "row_mirror",
              "row_half_mirror", "row_bcast:15", "row_bcast:31"}


def _is_modifier(word: str) -> bool:
    return word in _MOD_FLAGS or bool(_MOD_WORD.match(word))


def _size(mnemonic: str) -> int:
    """Bytes one lane touches; 16 (the widest) when the suffix is not understood."""
    sizes = dict(_SIZES)
    for part in reversed(mnemonic.split("_")):
        if part in sizes:
            return sizes[part]
    return 16


def _offset(mods: list[str]) -> int:
    for w in mods:
        if w.startswith("offset:"):
            try:
                return int(w[7:], 0)
            except ValueError:
                return 0
    return 0


@cached("targets.amdgpu.analysis.effects.effects", 65536)
def effects(text: str) -> Effects:
    """The effects of one instruction line (cached by text)."""
    text = text.strip()
    mnemonic, _, rest = text.partition(" ")
    try:
        return _decode(text, mnemonic, rest.strip())
    except (ValueError, IndexError):
        return unknown(text, mnemonic)


def unknown(text: str, mnemonic: str) -> Effects:
    return Effects(text, mnemonic, "OTHER", R.ALL, R.ALL, 0, unknown=True, fence=True,
                   spaces=frozenset("GL"), mem_store=True, mem="unknown")


def _decode(text: str, m: str, rest: str) -> Effects:
    ops, mods = split_operands(rest) if rest else ([], [])
    masks = [R.operand_mask(o) for o in ops]
    base = dict(text=text, mnemonic=m, operands=tuple(ops), op_masks=tuple(masks),
                modifiers=tuple(mods), fence=m in FENCES or m.startswith("s_dcache_"))
    if m in _CONTROL or m.startswith(("s_branch", "s_cbranch_")):
        return _control(m, ops, masks, base)
    if m.startswith(("s_load_", "s_buffer_load_", "s_scratch_load_", "s_store_",
                     "s_buffer_store_", "s_scratch_store_", "s_atomic_", "s_buffer_atomic_",
                     "s_dcache_", "s_memtime", "s_memrealtime", "s_atc_probe")):
        return _smem(m, ops, masks, mods, base)
    if m.startswith("s_"):
        return _salu(m, ops, masks, base)
    if m.startswith("ds_"):
        return _lds(m, ops, masks, mods, base)
    if m.startswith(("global_", "flat_", "scratch_", "buffer_", "tbuffer_")):
        return _vmem(m, ops, masks, mods, base)
    if m.startswith("v_"):
        return _valu(m, ops, masks, mods, base)
    return unknown(text, m)


def _control(m, ops, masks, base) -> Effects:
    reads = 0
    if m.startswith("s_cbranch_scc"):
        reads = R.SCC_MASK
    elif m.startswith("s_cbranch_vcc"):
        reads = R.VCC_MASK
    elif m.startswith("s_cbranch_exec"):
        reads = R.EXEC_MASK
    elif m.startswith(("s_sendmsg", "s_ttracedata")):
        reads = R.M0_MASK
    elif m.startswith("s_cbranch_"):       # cdbg*, g_fork...: unknown condition
        reads = R.SGPR_MASK | R.SCC_MASK
    klass = _CONTROL.get(m, "BRANCH")
    counters = ("lgkm",) if klass == "MSG" else ()
    ordered = klass != "MSG"
    for mk in masks:
        reads |= mk
    if m == "s_set_gpr_idx_on":
        return Effects(**base, klass="OTHER", reads=reads, writes=R.M0_MASK, kills=0)
    return Effects(**base, klass=klass, reads=reads, writes=0, kills=0, counters=counters,
                   ordered=ordered, mem="msg" if counters else None)


def _salu(m, ops, masks, base) -> Effects:
    known = m.startswith(_SCC_WRITERS + _SALU_PLAIN)
    if not known:
        return unknown(base["text"], m)
    ndefs = 0 if m.startswith(_NO_DEST_SALU) else min(1, len(ops))
    if m.startswith("s_setreg_") or m.startswith("s_getreg_"):
        masks = [0 if "hwreg" in o else mk for o, mk in zip(ops, masks)]
    defs = masks[0] if ndefs else 0
    reads = 0
    for mk in masks[ndefs:]:
        reads |= mk
    writes = defs
    kills = defs
    if m.startswith(_SCC_WRITERS):
        writes |= R.SCC_MASK
        kills |= R.SCC_MASK
    if m.startswith(_SCC_READERS):
        reads |= R.SCC_MASK
    if m.startswith(("s_addk_", "s_mulk_")):       # sdst = sdst op simm16
        reads |= defs
    if m.startswith(("s_cmov_", "s_cmovk_", "s_bitset0_", "s_bitset1_")):
        # conditional move keeps the old value; bitset changes one bit of it
        reads |= defs
        kills &= ~defs
    if "saveexec" in m or "wrexec" in m:
        reads |= R.EXEC_MASK
        writes |= R.EXEC_MASK
        kills |= R.EXEC_MASK
    if m.startswith(("s_movrels_", "s_movreld_")):
        reads |= R.M0_MASK | R.SGPR_MASK
        if m.startswith("s_movreld_"):
            writes |= R.SGPR_MASK
            kills &= ~R.SGPR_MASK
    if m.startswith("s_setpc_") or m.startswith("s_swappc_"):
        reads |= R.ALL
    if m.startswith("s_swappc_"):
        writes = R.ALL
        kills = defs
    return Effects(**base, klass="BRANCH" if m.startswith(("s_setpc_", "s_swappc_"))
                   else "SALU", reads=reads, writes=writes, kills=kills, ndefs=ndefs)


def _smem(m, ops, masks, mods, base) -> Effects:
    store = m.startswith(("s_store_", "s_buffer_store_", "s_scratch_store_", "s_dcache_"))
    atomic = "_atomic_" in m
    returns = not store and (not atomic or "glc" in mods)
    ndefs = 1 if returns and ops else 0
    defs = masks[0] if ndefs else 0
    reads = 0
    for mk in masks[ndefs:]:
        reads |= mk
    if atomic and returns:
        reads |= defs
    # s_load sdst, sbase, offset / s_store sdata, sbase, offset: the address is uniform
    rest = ops[1:] if ops else []
    addr = ",".join(o for o in rest[:1] + [o for o in rest[1:] if R.operand_mask(o)])
    try:
        off = int(rest[1], 0) if len(rest) > 1 and not R.operand_mask(rest[1]) else 0
    except ValueError:
        addr, off = "", 0
    return Effects(**base, klass="SMEM", reads=reads, writes=defs, kills=defs if not atomic
                   else 0, ndefs=ndefs, mem="smem", mem_load=returns and bool(ops),
                   mem_store=store or atomic, spaces=frozenset("G"), counters=("lgkm",),
                   ordered=False, addr=addr, offset=off, width=_size(m))


def _lds(m, ops, masks, mods, base) -> Effects:
    gds = "gds" in mods or m.startswith("ds_gws")
    returns = (m.startswith(("ds_read", "ds_permute", "ds_bpermute", "ds_swizzle", "ds_append",
                             "ds_consume", "ds_ordered_count")) or "_rtn_" in m)
    nomem = m.startswith(("ds_permute", "ds_bpermute", "ds_swizzle", "ds_nop"))
    ndefs = 1 if returns and ops else 0
    defs = masks[0] if ndefs else 0
    reads = R.EXEC_MASK
    for mk in masks[ndefs:]:
        reads |= mk
    partial = "_d16" in m
    if partial:
        reads |= defs
    if gds or "addtid" in m or m.startswith(("ds_append", "ds_consume", "ds_gws",
                                             "ds_ordered_count")):
        reads |= R.M0_MASK
    size = _size(m)
    off = _offset(mods)
    width = size
    if m.startswith(("ds_read2", "ds_write2", "ds_wrxchg2")):
        mult = size * (64 if "st64" in m else 1)
        o = {k: int(v) for k, v in (w.split(":") for w in mods if w.startswith("offset"))}
        o0, o1 = o.get("offset0", 0) * mult, o.get("offset1", 0) * mult
        off, width = min(o0, o1), max(o0, o1) - min(o0, o1) + size
    store = not nomem and not m.startswith("ds_read")
    data = 0
    if store and not returns:
        for mk in masks[1:]:
            data |= mk
    return Effects(**base, klass="LDS", reads=reads, writes=defs, kills=0 if partial else defs,
                   ndefs=ndefs, mem="gds" if gds else "lds", mem_load=returns,
                   mem_store=store, spaces=frozenset() if nomem else frozenset("L"),
                   counters=("lgkm",), ordered=not gds, data=data,
                   addr=ops[ndefs] if len(ops) > ndefs else "", offset=off, width=width)


def _vmem(m, ops, masks, mods, base) -> Effects:
    kind = m.split("_", 1)[0]
    kind = "buffer" if kind == "tbuffer" else kind
    lds_dma = "lds" in mods or m.startswith(("global_load_lds_", "scratch_load_lds_",
                                              "buffer_load_lds_"))
    atomic = "_atomic_" in m
    if m.startswith(("buffer_wbinvl1", "buffer_wbl2", "buffer_inv")):
        return Effects(**base, klass="VMEM", reads=R.EXEC_MASK, writes=0, kills=0,
                       mem=kind, mem_store=True, spaces=frozenset("G"), counters=("vm",))
    store = "_store_" in m or atomic or lds_dma
    returns = (("_load_" in m and not lds_dma)
               or (atomic and ("glc" in mods or "sc0" in mods)))
    reads = R.EXEC_MASK
    data = 0
    if kind == "buffer":
        # vdata, vaddr|off, srsrc, soffset: the returned value lands in vdata
        ndefs = 1 if returns else 0
        defs = masks[0] if returns else 0
        for mk in (masks if (atomic or not returns) else masks[1:]):
            reads |= mk
        if store and not lds_dma:
            data = masks[0] if ops else 0
        addr = ",".join(ops[1:])
        soffset_reg = len(ops) > 3 and masks[3] != 0
    else:
        ndefs = 1 if returns else 0
        defs = masks[0] if returns else 0
        for mk in masks[ndefs:]:
            reads |= mk
        if store and not lds_dma and len(masks) > ndefs + 1:
            data = masks[ndefs + 1]
        addr = ",".join(ops[ndefs:ndefs + 1] + ops[ndefs + 2 if store and not lds_dma
                                                    else ndefs + 1:])
        soffset_reg = False
    partial = "_d16" in m or "lwe" in mods or "tfe" in mods
    if partial:
        reads |= defs
    if lds_dma:
        reads |= R.M0_MASK
    spaces = frozenset("GL") if (kind == "flat" or lds_dma) else frozenset("G")
    counters = ("vm", "lgkm") if kind == "flat" else ("vm",)
    return Effects(**base, klass="VMEM", reads=reads, writes=defs,
                   kills=0 if (partial or (atomic and kind == "buffer")) else defs,
                   ndefs=ndefs, mem=kind, mem_load=returns, mem_store=store, spaces=spaces,
                   counters=counters, ordered=kind != "flat", data=data,
                   data_bits=32 * R.count(data), soffset_reg=soffset_reg, addr=addr,
                   offset=_offset(mods), width=_size(m))


# VALU instructions that read their destination as the accumulator
_ACCUMULATORS = ("v_mac_", "v_fmac_", "v_pk_fmac_", "v_dot2c_", "v_dot4c_", "v_dot8c_")


def _valu(m, ops, masks, mods, base) -> Effects:
    special = _valu_special(m, masks, base)
    if special is not None:
        return special
    mfma = m.startswith(("v_mfma_", "v_smfmac_"))
    dot = m.startswith("v_dot")
    trans = m.startswith(_TRANS) or m.startswith(("v_exp_legacy", "v_log_legacy",
                                                  "v_rcp_iflag"))
    dpp = m.endswith("_dpp") or any(w.startswith(("quad_perm:", "row_", "wave_"))
                                    for w in mods)
    sdwa = m.endswith("_sdwa")
    ndefs = _valu_ndefs(m, ops)
    defs = 0
    for mk in masks[:ndefs]:
        defs |= mk
    reads = R.EXEC_MASK
    for mk in masks[ndefs:]:
        reads |= mk
    reads, writes, kills = _valu_implicit(m, reads, defs, defs)
    op_sel = next((w for w in mods if w.startswith("op_sel:")), None)
    dst_sel, keep = _valu_dst_sel(m, ops[ndefs:], mods, op_sel, sdwa, dot)
    byte_sel = False
    if _PARTIAL_CVT.match(m):
        # gfx950's dst-sel forwarding hazard (LLVM 22): a selected byte/word, and always
        # for the stochastic-rounding fp4 pair
        bits = op_sel[len("op_sel:["):].rstrip("]").split(",") if op_sel else []
        byte_sel = "_sr_pk_fp4_" in m or any(b.strip() == "1" for b in bits[2:])
    if keep or m.startswith(("v_writelane", "v_fma_mixlo", "v_fma_mixhi", "v_mad_mixlo",
                             "v_mad_mixhi") + _ACCUMULATORS) \
            or "_d16" in m or dpp or _PARTIAL_CVT.match(m):
        # the old destination is an input: accumulators add into it; DPP keeps it in
        # masked-off rows/banks and invalid lanes; writelane/d16/mixlo and a partial
        # (selected) destination keep the rest
        reads |= defs
        kills &= ~defs
    klass = "MFMA" if mfma else "DOT" if dot else "VALU_TRANS" if trans else "VALU"
    shape, blocks, dgemm, f32 = _mfma_shape(m) if mfma else ((0, 0, 0), 1, False, False)
    return Effects(**base, klass=klass, reads=reads, writes=writes, kills=kills, ndefs=ndefs,
                   dpp=dpp, sdwa=sdwa, dst_sel=dst_sel, byte_sel=byte_sel, trans=trans,
                   mfma=mfma, dot=dot,
                   dgemm=dgemm, mfma_shape=shape, mfma_blocks=blocks, mfma_f32=f32)


def _valu_special(m, masks, base) -> Effects | None:
    """The VALU instructions outside the destination-then-sources pattern: v_nop, the
    swaps (both operands read and written), and the unmodeled ones (unknown)."""
    if m in ("v_nop", "v_nop_e32", "v_nop_e64", "v_nop_sdwa"):
        return Effects(**base, klass="VALU", reads=R.EXEC_MASK, writes=0, kills=0)
    if m.startswith(("v_swap_", "v_swaprel")) or (m.startswith(_VALU_UNMODELED)
                                                 and not m.startswith(_VALU_MODELED[2])):
        both = 0
        for mk in masks:
            both |= mk
        if m.startswith(("v_swap_b",) + _VALU_MODELED[:2]):   # exchange their two operands
            return Effects(**base, klass="VALU", reads=both | R.EXEC_MASK, writes=both,
                           kills=0, ndefs=2)
        return unknown(base["text"], m)
    return None


def _valu_ndefs(m, ops) -> int:
    """How many leading operands are destinations (a carry-out or second result: 2)."""
    ndefs = min(1, len(ops))
    if ("_co_" in m or m.startswith(("v_div_scale_", "v_mad_u64_u32", "v_mad_i64_i32"))) \
            and len(ops) >= 3:
        ndefs = 2
    if m.startswith(("v_cmp_", "v_cmpx_", "v_cmps_", "v_cmpsx_")) and not ops:
        ndefs = 0
    return ndefs


def _valu_implicit(m, reads, writes, kills) -> tuple[int, int, int]:
    """Implicit operands: v_cmpx writes EXEC, v_div_fmas reads VCC, v_movrel* and
    v_interp read M0 (and read or write any VGPR)."""
    if m.startswith(("v_cmpx_", "v_cmpsx_")):
        writes |= R.EXEC_MASK
        kills |= R.EXEC_MASK
    if m.startswith("v_div_fmas_"):
        reads |= R.VCC_MASK
    if m.startswith(("v_movrel", "v_interp_")):
        reads |= R.M0_MASK
        if m.startswith(("v_movreld", "v_movrelsd")):
            writes |= R.VGPR_MASK
            kills = 0
        if m.startswith(("v_movrels", "v_movrelsd")):
            reads |= R.VGPR_MASK
    return reads, writes, kills


def _valu_dst_sel(m, srcs, mods, op_sel, sdwa, dot) -> tuple[bool, bool]:
    """(whether only a selected part of the destination is written, whether the rest
    keeps its old value, so the old destination is read): SDWA ``dst_sel`` with
    ``UNUSED_PRESERVE``, VOP3P's DST_OP_SEL, VOP3's ``op_sel`` destination bit."""
    dst_sel = keep = False
    if sdwa:
        sel = next((w.split(":", 1)[1] for w in mods if w.startswith("dst_sel:")), "DWORD")
        dst_sel = sel != "DWORD"
        keep = dst_sel and any(w == "dst_unused:UNUSED_PRESERVE" for w in mods)
    op_sel_hi = next((w for w in mods if w.startswith("op_sel_hi:")), None)
    if m.startswith("v_pk_") or dot or m.startswith(("v_fma_mix", "v_mad_mix")):
        # VOP3P: LLVM reads DST_OP_SEL as bit 3 of src0_modifiers = op_sel_hi[0],
        # whose default is 1 except for the mix instructions.
        if op_sel_hi is not None:
            dst_sel = op_sel_hi[len("op_sel_hi:["):].startswith("1")
        else:
            dst_sel = not m.startswith(("v_fma_mix", "v_mad_mix"))
    elif op_sel is not None:
        bits = op_sel[len("op_sel:["):].rstrip("]").split(",")
        if len(bits) >= 2 and bits[-1].strip() == "1" and len(bits) == len(srcs) + 1:
            dst_sel = keep = True
    return dst_sel, keep


def _mfma_shape(m) -> tuple[tuple[int, int, int], int, bool, bool]:
    """An MFMA's (M, N, K), its blocks, whether it is DGEMM (f64) and whether it
    accumulates f32 (not xf32)."""
    shape = (0, 0, 0)
    sm = _MFMA_SHAPE.search(m)
    if sm:
        shape = (int(sm.group(1)), int(sm.group(2)), int(sm.group(3)))
    nb = re.search(r"_(\d+)b(?:_|$)", m[sm.end():] if sm else m)
    blocks = int(nb.group(1)) if nb else 1
    dgemm = m.startswith("v_mfma_f64")
    f32 = m.endswith("f32") and not m.endswith("xf32") and not dgemm
    return shape, blocks, dgemm, f32


# --- s_waitcnt ---------------------------------------------------------------

WAIT_MAX = {"vm": 63, "lgkm": 15, "exp": 7}
_WAIT_FIELD = re.compile(r"(vmcnt|expcnt|lgkmcnt)\((\d+)\)")


@cached("targets.amdgpu.analysis.effects.waitcnt_fields", 4096)
def waitcnt_fields(text: str) -> dict[str, int]:
    """The counts an ``s_waitcnt`` asks for; a counter it does not name is absent.

    A bare immediate is decoded with the GFX9 layout (vmcnt in bits 3:0 and
    15:14, expcnt 6:4, lgkmcnt 11:8); an all-ones field means "no wait".
    """
    ops = text.split(None, 1)[1].strip() if " " in text.strip() else ""
    found = _WAIT_FIELD.findall(ops)
    if found:
        names = {"vmcnt": "vm", "expcnt": "exp", "lgkmcnt": "lgkm"}
        return {names[k]: int(v) for k, v in found}
    try:
        imm = int(ops, 0)
    except ValueError:
        return {"vm": 0, "lgkm": 0, "exp": 0}
    vm = (imm & 0xF) | ((imm >> 14) & 0x3) << 4
    out = {}
    if vm != 63:
        out["vm"] = vm
    if (imm >> 4) & 0x7 != 7:
        out["exp"] = (imm >> 4) & 0x7
    if (imm >> 8) & 0xF != 15:
        out["lgkm"] = (imm >> 8) & 0xF
    return out


def waitcnt_text(vm: int | None = None, lgkm: int | None = None,
                 exp: int | None = None) -> str | None:
    """``s_waitcnt`` text for the given counts (None when nothing is waited for)."""
    parts = []
    if vm is not None:
        parts.append(f"vmcnt({vm})")
    if exp is not None:
        parts.append(f"expcnt({exp})")
    if lgkm is not None:
        parts.append(f"lgkmcnt({lgkm})")
    return "s_waitcnt " + " ".join(parts) if parts else None
