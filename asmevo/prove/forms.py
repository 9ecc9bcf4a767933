"""Instruction texts to check the semantics on: every mnemonic the prover models.

Two sources: the instructions of real code objects (every distinct form, registers
renumbered, that the corpus's kernels hold and the prover models) and, for every
mnemonic with an exact row, forms made from templates by operand kind (VGPRs, SGPRs,
inline and literal constants, float modifiers, clamp, DPP, 64-bit pairs, compares
into VCC and SGPR pairs, the memory families with offsets, buffer accesses by offen,
idxen and SOFFSET).
"""
from __future__ import annotations

from pathlib import Path

from asmevo.prove.registry import lookup, modeled, parsed
from asmevo.prove.sem_opaque import canonical
from asmevo.targets.amdgpu.processors import DEFAULT

__all__ = ["all_forms", "corpus_forms", "modeled", "template_forms"]


def _regs(t: str, base: int) -> str:
    w = int(t[1:])
    return f"v[{base}:{base + 1}]" if w == 64 else f"v{base}"


def _valu_forms(name: str, dst_t: str, src_ts: tuple) -> list[str]:
    srcs = [_regs(t, 4 + 2 * i) for i, t in enumerate(src_ts)]
    d = _regs(dst_t, 2)
    out = [f"{name}_e64 {d}, {', '.join(srcs)}"]
    if len(src_ts) <= 2 and all(int(t[1:]) <= 32 for t in src_ts + (dst_t,)):
        out.append(f"{name}_e32 {d}, {', '.join(srcs)}")
        if len(src_ts) == 2:
            out.append(f"{name}_e64 {d}, s6, {srcs[1]}")
            out.append(f"{name}_e64 {d}, {srcs[0]}, 17")
            out.append(f"{name}_dpp {d}, {', '.join(srcs)} row_shr:3 row_mask:0xf "
                       "bank_mask:0xe")
    if any(t[0] == "f" for t in src_ts):
        mods = [f"-{s}" if i == 0 else f"|{s}|" for i, s in enumerate(srcs)]
        out.append(f"{name}_e64 {d}, {', '.join(mods)}")
        if dst_t[0] == "f":
            out.append(f"{name}_e64 {d}, {', '.join(srcs)} clamp")
            if int(src_ts[0][1:]) <= 32:
                out.append(f"{name}_e64 {d}, 1.0, {', '.join(srcs[1:])}".rstrip(", "))
    return out


def template_forms() -> list[str]:
    """Forms of every exact-row mnemonic, from templates."""
    from asmevo.emu.isa.lds import READS, WRITES
    from asmevo.emu.isa.vcmp import _names
    from asmevo.emu.isa.vmem import LOADS, STORES
    from asmevo.prove.sem_float import FLOAT
    from asmevo.prove.sem_scalar import SOP1, SOP2_32, SOP2_64
    from asmevo.prove.sem_vector import INT
    out = []
    for table in (INT, FLOAT):
        for name, (dst_t, src_ts, _) in table.items():
            out += _valu_forms(name, dst_t, src_ts)
    for n in _names():
        t = n.split("_")[-1]
        a, b = (("v[2:3]", "v[4:5]") if t.endswith("64") else ("v2", "v3"))
        out += [f"{n}_e64 s[8:9], {a}, {b}", f"{n}_e32 vcc, {a}, {b}"]
    out += [f"{n} s1, s2, s3" for n in SOP2_32] + [f"{n} s1, s2, 0x12345" for n in SOP2_32]
    for n, (wa, wb, _) in SOP2_64.items():
        a = "s[4:5]" if wa == 64 else "s4"
        b = "s[6:7]" if wb == 64 else "s6"
        out.append(f"{n} s[2:3], {a}, {b}")
    for n, (dw, sw, _) in SOP1.items():
        out.append(f"{n} {'s[2:3]' if dw == 64 else 's2'}, {'s[4:5]' if sw == 64 else 's4'}")
    out += [f"global_load_{k} v[10:13], v[2:3], off offset:8" for k in LOADS]
    out += [f"global_load_{k} v[10:13], v4, s[2:3] offset:-4" for k in LOADS]
    out += [f"global_store_{k} v[2:3], v[10:13], off offset:12" for k in STORES]
    out += [f"buffer_load_{k} v[10:13], v4, s[8:11], 0 offen offset:8" for k in LOADS]
    out += [f"buffer_load_{k} v[10:13], v4, s[8:11], s12 idxen offset:4" for k in LOADS]
    out += [f"buffer_store_{k} v[10:13], v4, s[8:11], s12 offen offset:12" for k in STORES]
    out += ["buffer_load_dwordx2 v[10:11], v[4:5], s[8:11], s12 idxen offen offset:16",
            "buffer_load_dword v10, off, s[8:11], s12 offset:20",
            "buffer_store_dwordx2 v[10:11], v4, s[8:11], 0 idxen glc slc"]
    out += [f"ds_read_{k} v[10:13], v4 offset:8" for k in READS]
    out += [f"ds_write_{k} v4, v[10:13] offset:4" for k in WRITES]
    out += ["ds_read2_b32 v[10:11], v4 offset0:1 offset1:9",
            "ds_read2st64_b64 v[10:13], v4 offset1:2", "ds_write2_b64 v4, v[10:11], v[12:13] "
            "offset0:2 offset1:5", "ds_bpermute_b32 v1, v2, v3 offset:4",
            "ds_swizzle_b32 v1, v2 offset:swizzle(BITMASK_PERM,\"01pip\")",
            "s_load_dword s2, s[4:5], 0x8", "s_load_dwordx8 s[8:15], s[4:5], 0x20",
            "v_cndmask_b32_e64 v1, v2, v3, s[4:5]", "v_cndmask_b32_e32 v1, v2, v3, vcc",
            "v_add_co_u32_e64 v1, s[4:5], v2, v3", "v_subb_co_u32_e32 v1, vcc, v2, v3, vcc",
            "v_mad_i64_i32 v[2:3], s[4:5], v1, v6, v[8:9]", "v_readlane_b32 s1, v2, 37",
            "v_readfirstlane_b32 s3, v1", "v_writelane_b32 v1, s2, s3",
            "v_mbcnt_lo_u32_b32 v1, -1, 0", "v_swap_b32 v1, v2", "s_cmov_b32 s1, s2",
            "s_movk_i32 s1, 0x8001", "s_addk_i32 s1, 0x7fff", "s_cmpk_lt_i32 s1, 0xfff0",
            "s_bitcmp1_b64 s[2:3], s4", "s_bitset0_b32 s1, s2",
            "s_and_saveexec_b64 s[2:3], s[4:5]", "s_andn2_wrexec_b64 s[2:3], s[4:5]",
            "s_cmp_lg_u64 s[2:3], s[4:5]", "s_getreg_b32 s1, hwreg(HW_REG_MODE, 4, 6)"]
    return out


def corpus_forms(root: Path) -> list[str]:
    """Distinct forms of the instructions in ``root``'s code objects (gfx942 ones)."""
    from asmevo.targets.amdgpu.codeobject import load
    from asmevo.targets.amdgpu.recover import recover
    seen: dict[str, str] = {}
    for f in sorted(root.glob(f"kernels*/*/*.{DEFAULT}.co")):
        try:
            prog = recover(load(f.read_bytes(), path=str(f)))
        except Exception:       # noqa: BLE001 - a code object the corpus cannot read: skipped
            continue
        for fn in prog.functions:
            for ins in fn.instructions:
                seen.setdefault(canonical(ins.text), ins.text)
    return list(seen.values())


def all_forms(root: Path) -> list[str]:
    """Template forms, then corpus forms the prover models (by a row or as opaque)."""
    out = template_forms()
    for text in corpus_forms(root):
        try:
            ins = parsed(text)
        except Exception:       # noqa: BLE001 - not an instruction the parser reads
            continue
        if lookup(ins) is not None or text.startswith("v_"):
            out.append(text)
    return list(dict.fromkeys(out))
