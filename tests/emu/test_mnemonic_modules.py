"""Every mnemonic the decoder handles names the module that implements it, and
docs/emulator_mnemonics.md (generated from the registry) is up to date."""
import re
from pathlib import Path

import pytest

from asmevo.emu.isa import mnemonics
from asmevo.emu.isa.decode import decode_one
from asmevo.emu.isa.insn import BUILDERS

REPO = Path(__file__).resolve().parents[2]
ISA = REPO / "asmevo" / "emu" / "isa"


def test_every_registered_mnemonic_names_an_isa_module_that_defines_its_builder():
    table = mnemonics.entries()
    assert [e.mnemonic for e in table] == sorted(BUILDERS)
    assert len(table) > 900
    for e in table:
        assert e.module.startswith("asmevo.emu.isa."), e
        path = REPO / mnemonics._path(e.module)
        assert path.is_file(), e
        assert e.wrapped_by in (None, "asmevo.emu.isa.scratch"), e


def test_every_module_that_registers_builders_is_in_the_table():
    """A family module that registers mnemonics but that decode.py does not import
    would decode none of them; the table (built from what decode loads) would miss it."""
    registering = {f"asmevo.emu.isa.{p.stem}" for p in ISA.glob("*.py")
                   if re.search(r"^\s*@?register\(", p.read_text(), re.M)}
    assert registering - {"asmevo.emu.isa.insn"} == {e.module for e in mnemonics.entries()}


@pytest.mark.parametrize("mnemonic, module", [
    ("v_add_f32", "valu"), ("v_add_f32_e64", "valu"), ("v_mov_b32_dpp", "valu"),
    ("v_cmp_eq_u32_e32", "vcmp"), ("v_cmpx_lt_f32", "vcmp"), ("s_add_u32", "salu"),
    ("s_endpgm", "salu"), ("s_load_dwordx4", "smem"), ("s_atomic_add", "smem_atomic"),
    ("global_load_dword", "vmem"), ("flat_load_dword", "vmem"),
    ("scratch_load_dword", "scratch"), ("ds_read_b32", "lds"), ("ds_swizzle_b32", "lds"),
    ("v_exp_f32", "trans"), ("v_div_scale_f32", "division"), ("v_pk_fma_f32", "packed"),
    ("v_mfma_f32_32x32x8f16", "mfma"), ("v_mfma_f32_16x16x32_fp8_fp8", "mfma_fp8"),
    ("v_cvt_pk_fp8_f32", "cvt8"), ("v_readlane_b32", "lanes"), ("s_setvskip", "wavemode"),
    ("global_atomic_pk_add_bf16", "fatomic")])
def test_module_of_known_mnemonics(mnemonic, module):
    assert mnemonics.module_of(mnemonic) == f"asmevo.emu.isa.{module}"


def test_flat_builders_are_vmem_wrapped_by_scratch():
    by_name = {e.mnemonic: e for e in mnemonics.entries()}
    assert by_name["flat_load_dword"].wrapped_by == "asmevo.emu.isa.scratch"
    assert by_name["global_load_dword"].wrapped_by is None


def test_an_unknown_mnemonic_has_no_module_and_decodes_to_a_fault():
    assert mnemonics.module_of("v_no_such_op_b32") is None
    d = decode_one("v_no_such_op_b32 v0, v1", index=0, address=0, kernel="k",
                   accum_offset=256, processor="gfx942")
    assert d.ctl == "fault"


def test_the_reference_page_is_up_to_date():
    page = (REPO / "docs" / "emulator_mnemonics.md").read_text()
    assert page == mnemonics.render(), f"stale: regenerate with `{mnemonics.COMMAND}`"
    for e in mnemonics.entries():
        assert f"| `{e.mnemonic}` | `{mnemonics._path(e.module)}` |" in page
