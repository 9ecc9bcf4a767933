"""``scalarize``: VALU integer work whose inputs are uniform, done once on the SALU.

Within one basic block and one EXEC value (no EXEC write in between), a VGPR
is *uniform* when a VALU op wrote it from uniform inputs only: SGPRs, constants
and other uniform VGPRs (no lane-dependent op: compares, carries, ``v_cndmask``,
``v_mbcnt``, lane reads/writes, DPP/SDWA, MFMA, 64-bit products). Every active
lane then holds the same bits. A uniform op whose SALU twin computes the same
32 bits for every input becomes that SALU op, into a fresh SGPR:

    v_add_u32 / v_sub_u32 / v_subrev_u32 -> s_add_i32 / s_sub_i32 (32-bit wrap)
    v_mul_lo_u32, v_mul_hi_u32, v_mul_hi_i32 -> s_mul_i32, s_mul_hi_u32, s_mul_hi_i32
    v_and/or/xor/not_b32, v_bfrev_b32 -> s_and/or/xor/not_b32, s_brev_b32
    v_lshlrev_b32, v_lshrrev_b32, v_ashrrev_i32 -> s_lshl_b32, s_lshr_b32, s_ashr_i32
        (both read the shift amount's low 5 bits)
    v_min/max_i32/u32 -> s_min/max_i32/u32;  v_mov_b32 -> s_mov_b32
    v_lshl_add_u32 (shift 1-4) -> s_lshl{1..4}_add_u32;  v_add3_u32, v_or3_b32,
        v_lshl_or_b32, v_and_or_b32 -> two SALU ops
    v_bfe_u32 with constant offset and width -> s_bfe_u32 (packed operand)

Floating point stays on the VALU: gfx942 has no SALU float op (refused). A
uniform VGPR the SALU needs is read with ``v_readfirstlane_b32`` (exact: all
active lanes agree; with EXEC empty no VALU reader of the result runs).
Readers of a converted result read the SGPR instead when the rewritten line
assembles (constant-bus rules are llvm-mc's); otherwise, and when the value
lives past the EXEC region or the block, ``v_mov_b32 vD, sX`` puts it back in
the active lanes it had. SALU ops that write SCC are used only where SCC is dead.

Refused, with the reason: no uniform integer VALU op; no SALU form; SCC live;
no free SGPRs; or the rewrite saves no VALU cycles (each read-back or move-back
costs one VALU op; a quarter-rate multiply counts 16 cycles, the rest 4).
"""
from __future__ import annotations

import re

from asmevo.edits import Edit
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.operator import OperatorContext, Rejected, mutation
from asmevo.operators.rules.common import candidate_windows, seal
from asmevo.operators.rules.structure import (PLAIN_SGPRS, Flow, WindowedMutation, assembles,
                                       first_result, parts, render)

QUARTER = ("v_mul_lo_u32", "v_mul_hi_u32", "v_mul_hi_i32", "v_mul_lo_i32")
_LANE_DEPENDENT = ("v_mbcnt", "v_readlane", "v_readfirstlane", "v_writelane", "v_permlane",
                   "v_cndmask", "v_cmp", "v_addc", "v_subb", "v_add_co", "v_sub_co",
                   "v_subrev_co", "v_div_scale", "v_div_fmas", "v_movrel", "v_swap",
                   "v_interp", "v_mfma", "v_smfmac", "v_mad_u64", "v_mad_i64", "v_prng",
                   "v_s_", "v_cvt_scalef32", "v_accvgpr", "v_nop", "v_clrexcp")
_PLAIN = re.compile(r"^(?:s\d+|v\d+|vcc_lo|vcc_hi|exec_lo|exec_hi|m0|-?0x[0-9a-fA-F]+|-?\d+"
                    r"|-?\d+\.\d+)$")
_SCALAR_VALUES = PLAIN_SGPRS | (0b11 << R.VCC) | R.EXEC_MASK | R.M0_MASK

# VALU base mnemonic -> (SALU lines as templates over d, a, b, c; writes SCC)
_FORMS = {
    "v_add_u32": (["s_add_i32 {d}, {a}, {b}"], True),
    "v_sub_u32": (["s_sub_i32 {d}, {a}, {b}"], True),
    "v_subrev_u32": (["s_sub_i32 {d}, {b}, {a}"], True),
    "v_mul_lo_u32": (["s_mul_i32 {d}, {a}, {b}"], False),
    "v_mul_hi_u32": (["s_mul_hi_u32 {d}, {a}, {b}"], False),
    "v_mul_hi_i32": (["s_mul_hi_i32 {d}, {a}, {b}"], False),
    "v_and_b32": (["s_and_b32 {d}, {a}, {b}"], True),
    "v_or_b32": (["s_or_b32 {d}, {a}, {b}"], True),
    "v_xor_b32": (["s_xor_b32 {d}, {a}, {b}"], True),
    "v_not_b32": (["s_not_b32 {d}, {a}"], True),
    "v_bfrev_b32": (["s_brev_b32 {d}, {a}"], False),
    "v_mov_b32": (["s_mov_b32 {d}, {a}"], False),
    "v_lshlrev_b32": (["s_lshl_b32 {d}, {b}, {a}"], True),
    "v_lshrrev_b32": (["s_lshr_b32 {d}, {b}, {a}"], True),
    "v_ashrrev_i32": (["s_ashr_i32 {d}, {b}, {a}"], True),
    "v_min_i32": (["s_min_i32 {d}, {a}, {b}"], True),
    "v_max_i32": (["s_max_i32 {d}, {a}, {b}"], True),
    "v_min_u32": (["s_min_u32 {d}, {a}, {b}"], True),
    "v_max_u32": (["s_max_u32 {d}, {a}, {b}"], True),
    "v_add3_u32": (["s_add_i32 {d}, {a}, {b}", "s_add_i32 {d}, {d}, {c}"], True),
    "v_or3_b32": (["s_or_b32 {d}, {a}, {b}", "s_or_b32 {d}, {d}, {c}"], True),
    "v_lshl_or_b32": (["s_lshl_b32 {d}, {a}, {b}", "s_or_b32 {d}, {d}, {c}"], True),
    "v_and_or_b32": (["s_and_b32 {d}, {a}, {b}", "s_or_b32 {d}, {d}, {c}"], True),
}


def base(mnemonic: str) -> str:
    return mnemonic.removesuffix("_e32").removesuffix("_e64")


def valu_cycles(mnemonic: str) -> int:
    return 16 if base(mnemonic) in QUARTER else 4


def _int(text: str) -> int | None:
    try:
        return int(text, 0)
    except ValueError:
        return None


def salu_lines(mnemonic: str, d: str, srcs: list[str]) -> tuple[list[str], bool] | None:
    """The SALU lines computing ``mnemonic srcs`` into SGPR ``d`` (and whether they
    write SCC), or None when there is no exact SALU form."""
    b = base(mnemonic)
    if b == "v_lshl_add_u32" and len(srcs) == 3 and _int(srcs[1]) in (1, 2, 3, 4):
        return [f"s_lshl{_int(srcs[1])}_add_u32 {d}, {srcs[0]}, {srcs[2]}"], True
    if b == "v_bfe_u32" and len(srcs) == 3 and _int(srcs[1]) is not None \
            and _int(srcs[2]) is not None:
        packed = ((_int(srcs[2]) & 31) << 16) | (_int(srcs[1]) & 31)
        return [f"s_bfe_u32 {d}, {srcs[0]}, {hex(packed)}"], True
    form = _FORMS.get(b)
    if form is None:
        return None
    lines, scc = form
    names = dict(zip("abc", srcs))
    if any("{" + k + "}" in "".join(lines) and k not in names for k in "abc"):
        return None
    return [t.format(d=d, **names) for t in lines], scc


def uniform_op(e, uniform: dict[int, int]) -> bool:
    """Whether VALU op ``e`` writes one VGPR the same in every active lane, given the
    VGPRs currently known uniform (bit -> index of their def)."""
    if not e.is_valu or e.unknown or e.dpp or e.sdwa or e.ndefs != 1:
        return False
    if e.mnemonic.startswith(_LANE_DEPENDENT) or e.klass == "MFMA":
        return False
    d = e.op_masks[0]
    if not d or d & ~R.VGPR_MASK or e.writes != d:
        return False
    vec = e.reads & R.VECTOR_MASK
    while vec:
        low = vec & -vec
        if low.bit_length() - 1 not in uniform:
            return False
        vec ^= low
    return not (e.reads & ~R.VECTOR_MASK & ~_SCALAR_VALUES)


class Plan:
    """One block's scalarizable ops: the uniform VGPR defs and SALU candidates."""

    def __init__(self, flow: Flow, bi: int):
        cfg = flow.cfg
        b = cfg.blocks[bi]
        self.segment: dict[int, int] = {}       # index -> EXEC region number
        self.uniform_src: dict[int, dict[int, int]] = {}   # index -> VGPR bit -> def index
        self.candidates: list[int] = []
        uniform: dict[int, int] = {}
        seg = 0
        for i in range(b.start, b.end):
            e = cfg.effects[i]
            if e.writes & R.EXEC_MASK:
                seg += 1
                uniform = {}
            self.segment[i] = seg
            is_uniform = uniform_op(e, uniform)
            if is_uniform:
                self.uniform_src[i] = {bit: uniform[bit] for bit in _bits(e.reads & R.VGPR_MASK)}
            for bit in _bits(e.writes & R.VECTOR_MASK):
                uniform.pop(bit, None)
            if is_uniform:
                uniform[e.op_masks[0].bit_length() - 1] = i
                if self._salu_able(flow, i):
                    self.candidates.append(i)
            if e.writes & R.EXEC_MASK:
                uniform = {}

    @staticmethod
    def _salu_able(flow: Flow, i: int) -> bool:
        e = flow.cfg.effects[i]
        if e.modifiers or R.count(e.op_masks[0]) != 1:
            return False
        if not all(_PLAIN.match(o) for o in e.operands):
            return False
        got = salu_lines(e.mnemonic, "s0", list(e.operands[1:]))
        if got is None:
            return False
        return not (got[1] and flow.live.after(i) & R.SCC_MASK)


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def components(flow: Flow, plan: Plan) -> list[list[int]]:
    """Candidates joined by def-use (one converts with its uniform producers)."""
    cand = set(plan.candidates)
    near: dict[int, set[int]] = {i: set() for i in cand}
    for i in cand:
        for d in plan.uniform_src[i].values():
            if d in cand:
                near[i].add(d)
                near[d].add(i)
    out, seen = [], set()
    for i in sorted(cand):
        if i in seen:
            continue
        comp, todo = [], [i]
        while todo:
            x = todo.pop()
            if x not in seen:
                seen.add(x)
                comp.append(x)
                todo.extend(near[x])
        out.append(sorted(comp))
    return out


def _readers(flow: Flow, plan: Plan, i: int, end: int) -> tuple[list[int], bool]:
    """Readers of ``i``'s VGPR result up to its next full overwrite in the same EXEC
    region of the block, and whether the value may be read beyond them."""
    cfg = flow.cfg
    d = cfg.effects[i].op_masks[0]
    seg = plan.segment[i]
    out = []
    k = i + 1
    while k < end and plan.segment[k] == seg:
        e = cfg.effects[k]
        if e.reads & d:
            out.append(k)
        if e.writes & d:
            return out, not (e.kills & d == d and not (e.dpp or e.sdwa))
        k += 1
    return out, bool(flow.lanes.after(k - 1) & d)


def rewrite(flow: Flow, plan: Plan, comp: list[int]) -> tuple[int, int, list[str], str] | str:
    """``(start, end, lines, note)`` converting ``comp``, or why not."""
    cfg = flow.cfg
    target = flow.program.source.target
    bi = cfg.block_of[comp[0]]
    end = cfg.blocks[bi].end
    members = set(comp)
    reads: dict[int, tuple[list[int], bool]] = {i: _readers(flow, plan, i, end) for i in comp}
    last = max([k for rs, _ in reads.values() for k in rs] + comp)
    start = comp[0]
    free = flow.live.free(start, last + 1, "s") & PLAIN_SGPRS
    pool = [b for b in _bits(free)]
    sgpr: dict[int, str] = {}
    read_back: dict[int, str] = {}           # def index of a uniform VGPR -> its SGPR copy
    before: dict[int, list[str]] = {}
    new: dict[int, list[str]] = {}
    cost_saved = 0
    for i in comp:
        e = cfg.effects[i]
        srcs = []
        for op, m in zip(e.operands[1:], e.op_masks[1:]):
            if m & R.VGPR_MASK:
                d = plan.uniform_src[i][m.bit_length() - 1]
                if d in members:
                    srcs.append(sgpr[d])
                    continue
                if d not in read_back:
                    if not pool:
                        return "no free SGPR for a read-back"
                    read_back[d] = f"s{pool.pop(0)}"
                    before.setdefault(i, []).append(f"v_readfirstlane_b32 {read_back[d]}, {op}")
                    cost_saved -= 4
                srcs.append(read_back[d])
            else:
                srcs.append(op)
        if not pool:
            return "no free SGPR for a result"
        sgpr[i] = f"s{pool.pop(0)}"
        lines, _ = salu_lines(e.mnemonic, sgpr[i], srcs)
        new[i] = lines
        cost_saved += valu_cycles(e.mnemonic)
    renamed: dict[int, str] = {}
    for i in comp:
        readers, beyond = reads[i]
        vd = cfg.effects[i].operands[0]
        keep = beyond
        for k in readers:
            if k in members:
                continue
            line = _read_sgpr(renamed.get(k, cfg.texts[k]), vd, sgpr[i], cfg.effects[k], target)
            if line is None:
                keep = True
            else:
                renamed[k] = line
        if keep:
            new[i] = new[i] + [f"v_mov_b32_e32 {vd}, {sgpr[i]}"]
            cost_saved -= 4
    if cost_saved <= 0:
        return f"converting {len(comp)} op(s) saves no VALU cycles ({cost_saved})"
    lines: list[str] = []
    for k in range(start, last + 1):
        lines.extend(before.get(k, []))
        if k in new:
            lines.extend(new[k])
        else:
            lines.append(renamed.get(k, cfg.texts[k]))
    why = assembles([t for k in new for t in new[k]] + list(renamed.values())
                    + [t for v in before.values() for t in v], target)
    if why:
        return why
    note = (f"{len(comp)} uniform op(s) to SALU, {len(read_back)} read-back(s), "
            f"{cost_saved} VALU cycles fewer: " + "; ".join(cfg.texts[i] for i in comp))
    return start, last + 1, lines, note[:300]


def _read_sgpr(text: str, vd: str, sd: str, e, target) -> str | None:
    """``text`` reading SGPR ``sd`` where it read VGPR ``vd`` as a plain source, or None
    (a lane-crossing or memory reader, a destination read, or it does not assemble)."""
    if not e.is_valu or e.dpp or e.sdwa or e.mnemonic.startswith(("v_readlane", "v_writelane",
                                                                  "v_readfirstlane")):
        return None
    got = parts(text)
    if got is None:
        return None
    m, ops, mods = got
    vmask = R.operand_mask(vd)
    named = 0
    for mk in e.op_masks[e.ndefs:]:
        named |= mk
    if e.reads & vmask & ~named:
        return None                 # read as the accumulator (v_fmac) or implicitly
    hit = False
    for k in range(e.ndefs, len(ops)):
        if ops[k] == vd:
            ops[k] = sd
            hit = True
        elif R.operand_mask(ops[k]) & vmask:
            return None
    if not hit:
        return None
    for cand in (render(m, ops, mods), render(m.replace("_e32", "_e64"), ops, mods)):
        if assembles([cand], target) is None:
            return cand
        if not m.endswith("_e32"):
            break
    return None


@mutation("scalarize", targets=("amdgpu",))
class Scalarize(WindowedMutation):
    """Uniform VALU integer work to the SALU (see the module doc)."""

    def mutate(self, individual, context: OperatorContext) -> Edit | Rejected:
        program = context.program(individual)
        flow = Flow(program, context.kernel)
        blocks: list[int] = []
        for _, a, _ in candidate_windows(context, individual, top=self.top_windows, min_len=1):
            bi = flow.cfg.block_of[a]
            if bi not in blocks:
                blocks.append(bi)
        comps = []
        for bi in blocks:
            plan = Plan(flow, bi)
            comps += [(plan, c) for c in components(flow, plan)]
        if not comps:
            return context.reject("no uniform integer VALU op with a SALU form in the hot blocks")
        # quarter-rate work first
        comps.sort(key=lambda pc: -sum(valu_cycles(flow.cfg.effects[i].mnemonic) for i in pc[1]))
        return first_result(context, (("", self._seal(program, flow, plan, comp))
                                      for plan, comp in comps[:self.tries]))

    def _seal(self, program, flow: Flow, plan: Plan, comp: list[int]):
        got = rewrite(flow, plan, comp)
        if isinstance(got, str):
            return got
        start, end, lines, note = got
        return seal(program, flow.fn.name, start, end, lines, operator=self.name, note=note)
