"""buffer_load_dword ... lds: LDS address M0[15:0] + offset + 4*lane, V# range check (zeros),
EXEC, no VGPR written, refused forms."""
import numpy as np
import pytest

from asmevo.emu.errors import MemoryFault, UnsupportedInstruction
from tests.emu.asmdsl import run_asm

VSHARP = """
    s_mov_b32 s8, s4
    s_and_b32 s9, s5, 0xffff
    s_mov_b32 s10, {nrec}
    s_mov_b32 s11, 0x27000
"""


def _read_back(n_dwords: int) -> str:
    """ds_read every dword of the first n_dwords of LDS into v[20+...] lane-wise."""
    lines = ["v_lshlrev_b32_e32 v30, 2, v0", "s_waitcnt vmcnt(0)"]
    for blk in range(n_dwords // 64):
        lines.append(f"ds_read_b32 v{20 + blk}, v30 offset:{256 * blk}")
    lines.append("s_waitcnt lgkmcnt(0)")
    return "\n".join(lines)


def test_lds_address_from_m0_offset_and_lane():
    data = np.arange(300, dtype=np.uint32) + 1000
    body = VSHARP.format(nrec=4 * 300) + """
    v_lshlrev_b32_e32 v2, 2, v0
    v_mov_b32 v7, 0x1234
    s_mov_b32 m0, 0x10100
    buffer_load_dword v2, s[8:11], 0 offen lds
    buffer_load_dword v2, s[8:11], 0 offen offset:256 lds
    s_mov_b32 m0, 0
    buffer_load_dword v2, s[8:11], 0 offen offset:768 lds
""" + _read_back(1024)
    o = run_asm(body, buffers={"b": data}, ptrs={"b": 4}, lds=4096)
    lanes = np.arange(64)
    # m0 = 0x10100: only M0[15:0] = 0x100 counts; offset 0 and 256 move both addresses
    np.testing.assert_array_equal(o.v(21), data[lanes])            # LDS 256..511
    np.testing.assert_array_equal(o.v(22), data[64 + lanes])       # LDS 512..767
    # M0 = 0, offset 768: LDS 768.., memory 768/4 = 192 + lane; lanes past 300 dwords read 0
    want = np.where(192 + lanes < 300, data[np.minimum(192 + lanes, 299)], 0)
    np.testing.assert_array_equal(o.v(23), want)
    assert (o.v(7) == 0x1234).all()                                # no VGPR is written


def test_inactive_lanes_leave_lds_alone_and_idxen_form():
    data = np.arange(64, dtype=np.uint32) * 3 + 1
    body = VSHARP.format(nrec=64) + """
    s_or_b32 s9, s9, 0x40000          // stride 4: structured (index) addressing
    v_mov_b32 v1, 0xdead
    v_lshlrev_b32_e32 v3, 2, v0
    ds_write_b32 v3, v1
    s_waitcnt lgkmcnt(0)
    s_mov_b32 m0, 0
    s_mov_b32 exec_lo, 0x0000ffff
    s_mov_b32 exec_hi, 0
    buffer_load_dword v0, s[8:11], 0 idxen lds
    s_mov_b64 exec, -1
""" + _read_back(64)
    o = run_asm(body, buffers={"b": data}, ptrs={"b": 4}, lds=256)
    got = o.v(20)
    np.testing.assert_array_equal(got[:16], data[:16])
    assert (got[16:] == 0xDEAD).all()


def test_lds_address_past_the_allocation_faults():
    body = VSHARP.format(nrec=1024) + """
    v_lshlrev_b32_e32 v2, 2, v0
    s_mov_b32 m0, 0x100
    buffer_load_dword v2, s[8:11], 0 offen lds
"""
    with pytest.raises(MemoryFault):
        run_asm(body, buffers={"b": np.zeros(256, np.uint32)}, ptrs={"b": 4}, lds=256)


def test_byte_loads_into_lds_are_refused():
    with pytest.raises(UnsupportedInstruction):
        run_asm("buffer_load_ubyte v2, s[8:11], 0 offen lds", lds=256)


def test_offen_access_with_a_stride_is_range_checked_in_bytes():
    """Without IDXEN the V# stride plays no part: num_records counts bytes (AITer's GEMMs set
    stride 4 and step base and num_records together)."""
    data = np.arange(64, dtype=np.uint32) + 7
    body = VSHARP.format(nrec=4 * 40) + """
    s_or_b32 s9, s9, 0x40000          // stride 4
    v_lshlrev_b32_e32 v2, 2, v0
    buffer_load_dword v6, v2, s[8:11], 0 offen
"""
    o = run_asm(body, buffers={"b": data}, ptrs={"b": 4})
    np.testing.assert_array_equal(o.v(6), np.where(np.arange(64) < 40, data, 0))


def test_nonzero_soffset_at_the_range_boundary_is_refused():
    body = VSHARP.format(nrec=4 * 40) + """
    s_mov_b32 s12, 8
    v_lshlrev_b32_e32 v2, 2, v0
    buffer_load_dword v6, v2, s[8:11], s12 offen
"""
    with pytest.raises(UnsupportedInstruction, match="SOFFSET"):
        run_asm(body, buffers={"b": np.zeros(64, np.uint32)}, ptrs={"b": 4})


def test_timing_model_counts_lds_form_loads():
    """The modeled-timing trace reads the LDS form's operands (no VDATA) correctly."""
    from pathlib import Path

    from asmevo.timing.model import model_launch
    from asmevo.launch.spec import load_spec, make_inputs
    kdir = Path(__file__).resolve().parents[2] / "experiments" / "kernels" / "aiter_bf16gemm"
    spec = load_spec(kdir, "small")
    res = model_launch(spec.code_object.read_bytes(), spec, make_inputs(spec, 0))
    assert res.cycles > 0 and res.label == "modeled"


def test_the_lds_form_reads_its_v_sharp_from_the_second_operand():
    """The LDS form has no VDATA: SRSRC is the second operand. The private-resource check
    read the third ("0", taken as s[0:3]), so a swizzled-looking s[0:3] sent AITer's
    fp8 GEMM loads down the private path (a wrong fault on a scalarize candidate)."""
    data = np.arange(64, dtype=np.uint32) + 7
    body = ("s_mov_b32 s0, 0xfffffe00\ns_mov_b32 s1, 0x80000200\ns_mov_b32 s3, -1\n"
            + VSHARP.format(nrec=4 * 64) + """
    v_lshlrev_b32_e32 v2, 2, v0
    s_mov_b32 m0, 0
    buffer_load_dword v2, s[8:11], 0 offen lds
""" + _read_back(64))
    o = run_asm(body, buffers={"b": data}, ptrs={"b": 4}, lds=4096)
    np.testing.assert_array_equal(o.v(20), data)
    # a swizzled V# as SRSRC itself is refused, not loaded as a linear one
    with pytest.raises(UnsupportedInstruction, match="swizzled"):
        run_asm(VSHARP.format(nrec=256) + "s_or_b32 s11, s11, 0x800000\n"
                "s_mov_b32 m0, 0\nbuffer_load_dword v2, s[8:11], 0 offen lds",
                buffers={"b": data}, ptrs={"b": 4}, lds=4096)
