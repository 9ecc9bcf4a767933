"""One table of VMEM access widths and directions (asmevo/timing/access.py): LDS-DMA loads
are reads (HBM read bytes, complete as loads), atomics move their data type's bytes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from asmevo.launch.spec import ArgSpec, LaunchSpec, make_inputs
from asmevo.timing.access import ATOMIC, READ, WRITE, vmem_access
from asmevo.timing.model import instruction_record, load_params, model_launch
from tests.emu.asmdsl import build_kernel

P = load_params("gfx942")


@pytest.mark.parametrize("mnemonic, width, direction", [
    ("buffer_load_dword", 4, READ), ("global_load_lds_dwordx4", 16, READ),
    ("global_load_dwordx4", 16, READ), ("global_load_ushort", 2, READ),
    ("global_store_short", 2, WRITE), ("buffer_store_dwordx2", 8, WRITE),
    ("global_atomic_pk_add_bf16", 4, ATOMIC), ("global_atomic_pk_add_f16", 4, ATOMIC),
    ("buffer_atomic_add_f32", 4, ATOMIC), ("global_atomic_add", 4, ATOMIC),
    ("global_atomic_cmpswap", 4, ATOMIC), ("global_atomic_add_x2", 8, ATOMIC),
    ("global_atomic_cmpswap_x2", 8, ATOMIC), ("global_atomic_add_f64", 8, ATOMIC),
    ("buffer_wbl2", 0, WRITE)])
def test_access_table(mnemonic, width, direction):
    assert vmem_access(mnemonic) == (width, direction)


def test_records_read_the_table():
    """The LDS-DMA form is a load (not a store); pk_add_bf16 is 4 bytes a lane, not the
    16-byte default an unknown suffix gets in effects."""
    dma = instruction_record("buffer_load_dword v2, s[8:11], 0 offen lds", P)
    plain = instruction_record("buffer_load_dword v6, v2, s[8:11], 0 offen", P)
    assert (dma.store, dma.atomic, dma.width) == (False, False, 4)
    assert (dma.store, dma.width) == (plain.store, plain.width)
    at = instruction_record("global_atomic_pk_add_bf16 v0, v1, s[4:5]", P)
    assert (at.atomic, at.store, at.width) == (True, False, 4)
    st = instruction_record("global_store_dword v0, v1, s[4:5]", P)
    assert st.store and st.width == 4


_VSHARP = ["    s_load_dwordx2 s[4:5], s[0:1], 0x0", "    s_waitcnt lgkmcnt(0)",
           "    s_mov_b32 s8, s4", "    s_and_b32 s9, s5, 0xffff",
           "    s_mov_b32 s10, 0x100000", "    s_mov_b32 s11, 0x27000",
           "    v_and_b32 v0, 0x3ff, v0", "    v_lshlrev_b32 v2, 2, v0",
           "    s_lshl_b32 s12, s2, 14"]       # workgroup * 16 KiB


def _stream(kind: str) -> bytes:
    """A 64-lane workgroup moves 16 KiB at its own offset, 64 dwords a lane, 8 in flight:
    ``dma`` into LDS (buffer_load_dword ... lds), ``load`` into VGPRs, ``store`` from them."""
    body = list(_VSHARP) + ["    s_mov_b32 m0, 0", "    v_add_u32 v2, s12, v2"]
    for i in range(64):
        off = f"offset:{256 * (i % 16)}"
        if kind == "dma":
            body.append(f"    buffer_load_dword v2, s[8:11], 0 offen {off} lds")
        elif kind == "load":
            body.append(f"    buffer_load_dword v{6 + i % 8}, v2, s[8:11], 0 offen {off}")
        else:
            body.append(f"    buffer_store_dword v{6 + i % 8}, v2, s[8:11], 0 offen {off}")
        if i % 16 == 15:
            body.append(f"    v_add_u32 v2, 0x1000, v2")
        if i % 8 == 7:
            body.append("    s_waitcnt vmcnt(0)")
    return build_kernel("\n".join(body), buffers=1, lds=4096, nv=16, acc=16)


def _time(kind: str, workgroups: int = 64):
    spec = LaunchSpec(name="t", kernel="k", code_object=Path("t.co"), grid=(workgroups, 1, 1),
                      block=(64, 1, 1), args=(ArgSpec("buf", "buffer", "float32",
                                                      4096 * workgroups, output=kind == "store",
                                                      offset=0, size=8),))
    return model_launch(_stream(kind), spec, make_inputs(spec))


def test_lds_dma_load_is_timed_as_the_same_bytes_read_not_written():
    """Pair: an LDS-DMA load kernel and a plain load kernel read the same 16 KiB per
    workgroup; they must cost about the same and move the bytes as HBM reads (no write
    bytes, no read-modify-write), unlike the store kernel that writes them."""
    dma, load, store = _time("dma"), _time("load"), _time("store")
    assert dma.memory["hbm_bytes"] == load.memory["hbm_bytes"] > 0
    assert dma.memory["store_bytes"] == dma.memory["rmw_bytes"] == 0
    assert store.memory["store_bytes"] == 16384          # the busiest CU's one workgroup
    assert abs(dma.cycles - load.cycles) <= 0.05 * load.cycles
    assert abs(dma.cycles - store.cycles) > 0.2 * store.cycles
    assert dma.vmem_bytes == load.vmem_bytes


def test_extrapolation_waits_for_the_hbm_backlog():
    """Naive ``elu`` at ``large`` (54 workgroups on the busiest CU, 16 simulated): streaming,
    its HBM backlog grows over more rounds than are simulated. The extrapolated time must
    not fall under what the CU's HBM share needs for all of its workgroups (it came out
    at 15563 cycles, under the HBM bound 17345, where simulating every workgroup gives
    17490), and it agrees with simulating them all."""
    from asmevo.files import read_input
    from asmevo.launch.spec import load_spec
    from asmevo.timing.model import simulate_launch, trace_launch

    kdir = Path(__file__).resolve().parents[2] / "experiments" / "kernels_naive" / "elu"
    spec = load_spec(kdir, "large")
    data = read_input(spec.code_object_for(None), what="code object")
    values = make_inputs(spec, 0)
    sampled = model_launch(data, spec, values)
    assert sampled.simulated_workgroups < sampled.cu_workgroups
    full = simulate_launch(trace_launch(data, spec, values, rounds=None), P)
    assert full.simulated_workgroups == full.cu_workgroups
    hbm = sampled.memory["hbm_bytes"] / (P.hbm_bytes_per_cycle * P.hbm_efficiency
                                         / P.compute_units)
    assert sampled.cu_cycles >= 0.99 * hbm
    assert abs(sampled.cycles - full.cycles) <= 0.02 * full.cycles
