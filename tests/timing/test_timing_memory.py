"""The timing model's memory side: coalescing, LDS banks, caches, pinned published figures.

Microbenchmarks are real assembled one-wave kernels (llvm-mc + ld.lld) run through the
emulator and the model; the per-access figure is the slope of a dependent chain
(``(cycles(N) - cycles(1)) / (N - 1)``), the way pointer-chasing microbenchmarks measure
latency on hardware.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from asmevo.timing import model as T
from asmevo.timing.model import instruction_record, load_params, model_launch
from asmevo.timing.memory import CuMemory, Lru, coalesce, lds_passes
from asmevo.launch.spec import ArgSpec, LaunchSpec, make_inputs
from tests.emu.asmdsl import build_kernel

MP = load_params("gfx942").memory


_HEAD = ["    s_load_dwordx2 s[4:5], s[0:1], 0x0", "    s_load_dwordx2 s[6:7], s[0:1], 0x8",
         "    v_and_b32 v0, 0x3ff, v0", "    s_waitcnt lgkmcnt(0)"]


def _kernel(body: list[str], lds: int = 0) -> bytes:
    """A one-kernel code object (tests/emu/asmdsl.py): src and dst pointers in s[4:7]."""
    return build_kernel("\n".join(_HEAD + body), buffers=2, lds=lds, nv=16, acc=16)


def _spec(src_floats: int, workgroups: int = 1) -> LaunchSpec:
    return LaunchSpec(name="t", kernel="k", code_object=Path("t.co"), grid=(workgroups, 1, 1),
                      block=(64, 1, 1), args=(
                          ArgSpec("src", "buffer", "float32", src_floats, offset=0, size=8),
                          ArgSpec("dst", "buffer", "float32", 64 * workgroups, output=True,
                                  offset=8, size=8)))


def _model(body: list[str], *, lds: int = 0, src_floats: int = 4096, workgroups: int = 1):
    spec = _spec(src_floats, workgroups)
    return model_launch(_kernel(body, lds), spec, make_inputs(spec))


def _chain_slope(unit, n: int = 9, **kw) -> float:
    """Cycles per link of a dependent chain of ``n`` copies of ``unit(i)``."""
    one = _model(unit(0), **kw).cycles
    many = _model([x for i in range(n) for x in unit(i)], **kw).cycles
    return (many - one) / (n - 1)


# --- published figures --------------------------------------------------------------

def _lds_read(shift: int):
    return lambda i: ([f"    v_lshlrev_b32 v1, {shift}, v0"] if i == 0 else []) + [
        "    ds_read_b32 v2, v1", "    s_waitcnt lgkmcnt(0)"]


def test_lds_read_latency_without_conflicts():
    """ds_read_b32 ~50-64 cycles without bank conflicts (MI300X microbenchmarks, issue #19)."""
    slope = _chain_slope(_lds_read(2), lds=4096)          # lane * 4 bytes: 32 banks
    assert 50 <= slope <= 64, slope


def test_lds_read_latency_with_a_4way_conflict():
    """~120 cycles when every bank serves 4 distinct dwords (lane stride 16 bytes)."""
    slope = _chain_slope(_lds_read(4), lds=4096)
    assert 105 <= slope <= 135, slope
    assert slope > 1.8 * _chain_slope(_lds_read(2), lds=4096)


def _buffer_x4(i: int) -> list[str]:
    head = ["    s_mov_b32 s8, s4", "    s_and_b32 s9, s5, 0xffff", "    s_mov_b32 s10, -1",
            "    s_mov_b32 s11, 0x27000", "    v_lshlrev_b32 v1, 4, v0"] if i == 0 else []
    return head + ["    buffer_load_dwordx4 v[4:7], v1, s[8:11], 0 offen",
                   "    s_waitcnt vmcnt(0)", "    v_add_u32 v1, 0x400, v1"]


def test_hbm_buffer_load_dwordx4_latency_at_one_wave_per_cu():
    """buffer_load_dwordx4 from HBM: 500-800 cycles with one wave on the CU (each link
    reads 1 KiB the launch has not read before: L1, L2 miss, HBM)."""
    slope = _chain_slope(_buffer_x4, src_floats=9 * 256)
    assert 500 <= slope <= 800, slope


# AMD matrix instruction calculator (ROCm/amd_matrix_instruction_calculator, commit
# 2ef9189, matrix_calculator.py): "cycles" per instruction of every CDNA3 and CDNA2 MFMA.
CDNA3_CYCLES = {
    "v_mfma_f32_16x16x8_xf32": 16, "v_mfma_f32_32x32x4_xf32": 32,
    "v_mfma_f32_32x32x1_2b_f32": 64, "v_mfma_f32_16x16x1_4b_f32": 32,
    "v_mfma_f32_4x4x1_16b_f32": 8, "v_mfma_f32_32x32x2_f32": 64, "v_mfma_f32_16x16x4_f32": 32,
    "v_mfma_f32_32x32x4_2b_f16": 64, "v_mfma_f32_16x16x4_4b_f16": 32,
    "v_mfma_f32_4x4x4_16b_f16": 8, "v_mfma_f32_32x32x8_f16": 32, "v_mfma_f32_16x16x16_f16": 16,
    "v_mfma_i32_32x32x4_2b_i8": 64, "v_mfma_i32_16x16x4_4b_i8": 32,
    "v_mfma_i32_4x4x4_16b_i8": 8, "v_mfma_i32_32x32x16_i8": 32, "v_mfma_i32_16x16x32_i8": 16,
    "v_mfma_f32_32x32x4_2b_bf16": 64, "v_mfma_f32_16x16x4_4b_bf16": 32,
    "v_mfma_f32_4x4x4_16b_bf16": 8, "v_mfma_f32_32x32x8_bf16": 32,
    "v_mfma_f32_16x16x16_bf16": 16, "v_mfma_f64_16x16x4_f64": 32, "v_mfma_f64_4x4x4_4b_f64": 16,
    "v_mfma_f32_16x16x32_bf8_bf8": 16, "v_mfma_f32_16x16x32_bf8_fp8": 16,
    "v_mfma_f32_16x16x32_fp8_bf8": 16, "v_mfma_f32_16x16x32_fp8_fp8": 16,
    "v_mfma_f32_32x32x16_bf8_bf8": 32, "v_mfma_f32_32x32x16_bf8_fp8": 32,
    "v_mfma_f32_32x32x16_fp8_bf8": 32, "v_mfma_f32_32x32x16_fp8_fp8": 32,
}
CDNA2_CYCLES = {
    "v_mfma_f32_32x32x1f32": 64, "v_mfma_f32_16x16x1f32": 32, "v_mfma_f32_4x4x1f32": 8,
    "v_mfma_f32_32x32x2f32": 64, "v_mfma_f32_16x16x4f32": 32, "v_mfma_f32_32x32x4f16": 64,
    "v_mfma_f32_16x16x4f16": 32, "v_mfma_f32_4x4x4f16": 8, "v_mfma_f32_32x32x8f16": 64,
    "v_mfma_f32_16x16x16f16": 32, "v_mfma_i32_32x32x4i8": 64, "v_mfma_i32_16x16x4i8": 32,
    "v_mfma_i32_4x4x4i8": 8, "v_mfma_i32_32x32x8i8": 64, "v_mfma_i32_16x16x16i8": 32,
    "v_mfma_f32_32x32x4bf16_1k": 64, "v_mfma_f32_16x16x4bf16_1k": 32,
    "v_mfma_f32_4x4x4bf16_1k": 8, "v_mfma_f32_32x32x8bf16_1k": 64,
    "v_mfma_f32_16x16x16bf16_1k": 32, "v_mfma_f32_32x32x2bf16": 64,
    "v_mfma_f32_16x16x2bf16": 32, "v_mfma_f32_4x4x2bf16": 8, "v_mfma_f32_32x32x4bf16": 64,
    "v_mfma_f32_16x16x8bf16": 32, "v_mfma_f64_16x16x4f64": 32, "v_mfma_f64_4x4x4f64": 16,
}


@pytest.mark.parametrize("target,table", [("gfx942", CDNA3_CYCLES), ("gfx90a", CDNA2_CYCLES)])
def test_mfma_cycles_match_the_matrix_instruction_calculator(target, table):
    p = load_params(target)
    got = {m: instruction_record(f"{m} a[0:15], v[0:1], v[2:3], a[0:15]", p).unit
           for m in table}
    assert got == table
    # the examples
    if target == "gfx942":
        assert (got["v_mfma_f32_32x32x8_f16"], got["v_mfma_f32_16x16x16_f16"],
                got["v_mfma_f32_16x16x32_fp8_fp8"]) == (32, 16, 16)


# --- coalescing and banks -------------------------------------------------------------

LANE = np.arange(64, dtype=np.int64)


def test_coalesce_counts_lines_and_sectors():
    assert coalesce((4 * LANE)[None], None, 4, MP) == [((0, 1), (2, 2))]       # 256 B: 2 lines
    assert coalesce((16 * LANE)[None], None, 16, MP)[0][0] == tuple(range(8))  # dwordx4: 8
    strided = coalesce((4096 * LANE)[None], None, 4, MP)[0]
    assert len(strided[0]) == 64 and set(strided[1]) == {1}                  # a line per lane
    assert coalesce(np.full((2, 64), 200), None, 4, MP) == [((1,), (1,))] * 2   # broadcast
    mask = np.zeros((1, 64), bool)
    mask[0, :3] = True
    assert coalesce((4096 * LANE)[None], mask, 4, MP) == [((0, 32, 64), (1, 1, 1))]
    # a lane straddling a sector boundary touches both sectors
    assert coalesce(np.full((1, 64), 60), None, 8, MP) == [((0,), (2,))]


def test_lds_banks_phases_and_broadcast():
    assert lds_passes([(4 * LANE)[None]], 1, None) == ([2], [2])      # b32: 2 phases
    assert lds_passes([(16 * LANE)[None]], 1, None) == ([8], [2])     # 4-way conflict
    assert lds_passes([(132 * LANE)[None]], 1, None) == ([2], [2])    # padded: stride 33
    assert lds_passes([(128 * LANE)[None]], 1, None) == ([64], [2])   # stride 32: 32-way
    assert lds_passes([np.zeros((1, 64), np.int64)], 1, None) == ([2], [2])   # broadcast
    assert lds_passes([(8 * LANE)[None]], 2, None) == ([4], [4])      # b64: 16 lanes/phase
    assert lds_passes([(16 * LANE)[None]], 4, None) == ([8], [8])     # b128: 8 lanes/phase
    assert lds_passes([(32 * LANE)[None]], 4, None) == ([16], [8])    # b128, 2-way
    # ds_read2_b32 at offsets 0 and 64 dwords: two b32 accesses, each conflict-free
    assert lds_passes([(4 * LANE)[None], (4 * LANE + 256)[None]], 1, None) == ([4], [4])
    assert lds_passes([(4 * LANE)[None], (16 * LANE)[None]], 1, None) == ([10], [4])
    mask = np.zeros((1, 64), bool)
    mask[0, :32] = True
    assert lds_passes([(4 * LANE)[None]], 1, mask) == ([1], [1])      # one busy phase


def test_lru_evicts_the_least_recent_line():
    lru = Lru(2)
    assert [lru.touch(x) for x in (1, 2, 1, 3, 2, 1)] == [False, False, True, False, False,
                                                          False]


def test_first_touches_capacity_misses_and_shared_lines():
    mp = MP.__class__(**{**MP.__dict__, "l1_bytes": 128, "l2_bytes_per_cu": 256})
    mem = CuMemory(mp, l2_bpc=64, hbm_bpc=8, mall_bpc=27, hbm_budget=2 * 128)
    assert mem.load((0, 1), (2, 2), 0.0, 0.0)[0] == 3                # first touches: HBM
    assert mem.load((1,), (2,), 0.0, 0.0)[0] == 0                    # still in the 1-line L1
    assert mem.load((0,), (2,), 0.0, 0.0)[0] == 1                    # in the 2-line L2 share
    assert mem.load((5,), (2,), 0.0, 0.0)[0] == 2                    # budget spent: another CU's
    assert mem.load((1,), (2,), 0.0, 0.0)[0] == 2                    # evicted since: the MALL
    s = mem.stats
    assert (s["hbm_lines"], s["shared_lines"], s["capacity_lines"], s["l2_hit"]) == (2, 1, 1, 1)
    mp90 = load_params("gfx90a").memory
    m90 = CuMemory(mp90, l2_bpc=64, hbm_bpc=8, mall_bpc=1, hbm_budget=0)
    m90.seen.add(7)
    assert m90.load((7,), (1,), 0.0, 0.0)[0] == 3                    # no MALL: back to HBM


# --- the model orders known pairs ------------------------------------------------------

def _global_loads(stride_shift: int, n: int = 16) -> list[str]:
    body = ["    v_lshlrev_b32 v2, {}, v0".format(stride_shift), "    v_mov_b32 v3, 0",
            "    v_lshl_add_u64 v[4:5], s[4:5], 0, v[2:3]"]
    for i in range(n):
        body += [f"    global_load_dword v{8 + i % 4}, v[4:5], off offset:{4 * i}"]
    return body + ["    s_waitcnt vmcnt(0)"]


def test_strided_loads_cost_more_than_coalesced_ones():
    """The same 16 loads per lane, lanes 4 bytes apart (2 lines per load) or 4 KiB apart
    (64 lines per load): more lines through the L1 tags, more sectors from memory."""
    good = _model(_global_loads(2), src_floats=64 * 1024, workgroups=4 * 304)
    bad = _model(_global_loads(12), src_floats=64 * 1024, workgroups=4 * 304)
    assert bad.cycles > 1.5 * good.cycles
    assert bad.memory["l1_miss"] + bad.memory["l1_hit"] > 20 * (good.memory["l1_miss"]
                                                               + good.memory["l1_hit"])


def test_rereads_hit_the_l1_and_the_scalar_cache():
    m = _model(_global_loads(2, n=8))       # 8 loads over bytes 0..283: three lines
    assert m.memory["l1_miss"] == 3 and m.memory["l1_hit"] == (2 + 7 * 3) - 3   # touches - misses
    many = _model(_global_loads(2, n=1), workgroups=64)     # every wave reads the kernargs
    assert many.memory["smem_hit"] > 0


def test_deterministic_with_memory():
    body = _global_loads(12, n=4)
    spec = _spec(64 * 1024, 8)
    code = _kernel(body)
    a = model_launch(code, spec, make_inputs(spec))
    T._CACHE.clear()
    b = model_launch(code, spec, make_inputs(spec))
    assert a.cycles == b.cycles and a.memory == b.memory
