"""The calibrated effects of the timing model: each moves modeled time the way the
measured data and the literature say (issue 41), on assembled or compiled kernels.

Launch overhead floor, device-wide workgroup dispatch, achievable (not peak) HBM
bandwidth, the device's CU count, sub-dword strided accesses, partial-line writes,
atomics under contention, MFMA co-execution with VALU, the steady-state extrapolation
of sampled launches, and the ensemble a speedup's band comes from.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from asmevo.timing import model as T
from asmevo.timing.model import load_params, model_launch
from asmevo.timing.parameters import ensemble
from asmevo.launch.spec import load_spec, make_inputs
from asmevo.targets.amdgpu.assemble import build_asm
from asmevo.targets.amdgpu.elf import TargetId
from asmevo.verdict import Timing
from tests.timing.test_timing import _TEMPLATE, _build, _spec

ROOT = Path(__file__).resolve().parents[2]
PAIRS = ROOT / "experiments" / "timing_pairs"
NAIVE = ROOT / "experiments" / "kernels_naive"


def _pair(name: str, size: str = "small", **kw):
    spec = load_spec(PAIRS / name / "spec.toml", size)
    return model_launch(spec.code_object.read_bytes(), spec, make_inputs(spec), **kw)


def _empty_kernel() -> bytes:
    text = _TEMPLATE.format(pre="", body="", nv=16, acc=16)
    body = text[text.index("k:\n") + 3:text.index(".Lk_end:")]
    return build_asm(text.replace(body, "    s_endpgm\n"), TargetId("gfx942"))


def test_the_launch_overhead_is_a_floor():
    p = load_params("gfx942")
    res = model_launch(_empty_kernel(), _spec(1), make_inputs(_spec(1)))
    assert p.launch_overhead_cycles <= res.cycles < p.launch_overhead_cycles + 200
    assert res.overhead_cycles == p.launch_overhead_cycles


def test_workgroups_start_at_the_device_dispatch_rate():
    """The device's dispatcher paces workgroup starts (``dispatch_cycles_per_workgroup``;
    the fit rows put it at 0 -- they cannot tell it from the launch overhead -- so the
    mechanism is shown at a pace of 8 cycles)."""
    p = load_params("gfx942")
    paced_p = p.with_values({"machine.dispatch_cycles_per_workgroup": 8.0}, "paced")
    nwg = p.compute_units * 64
    spec = _spec(nwg)
    code = _empty_kernel()
    paced = model_launch(code, spec, {}, params=paced_p)
    free = model_launch(code, spec, {})
    assert paced.cycles >= p.launch_overhead_cycles + 0.95 * nwg * 8
    assert free.cycles < p.launch_overhead_cycles + 0.1 * nwg * 8


def test_streaming_reaches_the_achievable_not_the_peak_hbm_bandwidth():
    p = load_params("gfx942")
    assert 0.4 < p.hbm_efficiency < 1.0
    spec = load_spec(PAIRS / "copy_coalesced" / "spec.toml", "large")
    res = model_launch(spec.code_object.read_bytes(), spec, {})
    bandwidth = sum(a.nbytes for a in spec.buffers) / res.seconds
    peak = p.hbm_bytes_per_cycle * p.clock_hz
    assert bandwidth <= 1.02 * p.hbm_efficiency * peak
    assert bandwidth >= 0.5 * p.hbm_efficiency * peak


def test_the_device_sets_the_compute_units():
    """The same VALU-bound launch (2,432 one-wave workgroups) on 304 and on 80 CUs."""
    from tests.timing.test_timing import _WORK

    code = _build("\n".join([_WORK] * 8))
    spec = _spec(304 * 8)
    x = model_launch(code, spec, make_inputs(spec), device="mi300x")
    y = model_launch(code, spec, make_inputs(spec), device="mi308x")
    assert (x.device, y.device) == ("mi300x", "mi308x")
    assert (x.cu_workgroups, y.cu_workgroups) == (8, -(-304 * 8 // 80))
    assert 3.0 < y.cu_cycles / x.cu_cycles < 4.5


def test_unknown_device_is_refused():
    with pytest.raises(T.TimingError, match="no device 'mi999'"):
        load_params("gfx942", "mi999")


@pytest.mark.parametrize("good,bad", [("load_u16_contig", "load_u16_strided"),
                                      ("store_u16_full", "store_u16_partial"),
                                      ("atomic_distinct", "atomic_same"),
                                      ("wg_stride", "wg_tiny"),
                                      ("mfma_indep", "mfma_dep")])
def test_pairs_of_the_calibrated_effects_are_ordered(good, bad):
    assert _pair(good).cycles < _pair(bad).cycles


def test_the_dispatch_pair_is_ordered_by_the_workgroup_dispatch_cost():
    """64x more workgroups for the same writes: slower only because each start costs the
    workgroup manager its cycles; at no cost per start the model would order them the
    other way."""
    p = load_params("gfx942")
    free = p.with_values({"machine.workgroup_dispatch_cycles": 0.0}, "free")
    assert _pair("wg_tiny").cycles > _pair("wg_stride").cycles
    assert _pair("wg_tiny", params=free).cycles < _pair("wg_stride", params=free).cycles


def test_partial_line_writes_are_read_back():
    full, partial = _pair("store_u16_full"), _pair("store_u16_partial")
    assert full.memory["rmw_bytes"] == 0
    assert partial.memory["rmw_bytes"] > 0


def test_strided_subdword_loads_cost_a_request_per_lane():
    p = load_params("gfx942")
    assert p.memory.subdword_lane_cycles * 64 > 2 * p.issue["vmem_ta_min_cycles"]
    contig, strided = _pair("load_u16_contig"), _pair("load_u16_strided")
    assert strided.cycles > 1.5 * contig.cycles


_MFMA = "    v_mfma_f32_32x32x8_f16 v[20:35], v[16:17], v[18:19], v[20:35]"


def test_mfma_coexecutes_with_independent_valu():
    """While the matrix core works on an MFMA (32 cycles), the SIMD issues independent VALU
    work at once (an XDL holds plain VALU one slot); VALU work that reads the MFMA's result
    waits for it; packed-F32 VALU waits passes + 2 slots after an XDL (llvm-project PR
    233721: rules fitted to MI308X thread traces). The loop body runs 4 times."""
    adds = "\n".join(f"    v_add_f32 v{10 + i % 4}, v{10 + i % 4}, 1.0" for i in range(6))
    dep = "\n".join(f"    v_add_f32 v{20 + i}, v{20 + i}, 1.0" for i in range(6))
    pk = "\n".join("    v_pk_add_f32 v[10:11], v[10:11], v[12:13]" for _ in range(2))
    plain = "\n".join("    v_add_f32 v10, v10, 1.0" for _ in range(2))

    def cyc(*lines):
        code = _build("\n".join([_MFMA, "    s_nop 7", *lines]), nv=40)
        return model_launch(code, _spec(1), make_inputs(_spec(1))).cycles

    alone, indep, after = cyc(), cyc(adds), cyc(dep)
    assert indep - alone <= 4 * 6 * 4               # their issue slots, nothing more
    assert after - indep >= 4 * 16                  # the result is 34 cycles after issue
    assert cyc(pk) - cyc(plain) >= 4 * 20           # 10 slots after the XDL's issue


def test_sampled_rounds_extrapolate_to_the_full_simulation(monkeypatch):
    spec = load_spec(PAIRS / "copy_coalesced" / "spec.toml", "large")  # 216 per CU
    code = spec.code_object.read_bytes()
    values = {}
    T._CACHE.clear()
    sampled = model_launch(code, spec, values)
    assert sampled.simulated_workgroups < sampled.cu_workgroups and sampled.steady
    T._CACHE.clear()
    monkeypatch.setattr(T, "ROUNDS", 10_000)
    full = model_launch(code, spec, values)
    assert full.simulated_workgroups == full.cu_workgroups
    assert abs(sampled.cycles - full.cycles) <= 0.05 * full.cycles


def test_an_unsteady_sample_is_not_extrapolated():
    # two rounds of 4: the second's workgroups take 300 cycles where the first's took 100
    starts = [0.0] * 4 + [100.0] * 4
    interval, steady = T.steady_interval([100.0] * 4 + [400.0] * 4, starts, 4)
    assert not steady and interval == 300 / 4
    interval, steady = T.steady_interval([100.0] * 4 + [205.0] * 4, starts, 4)
    assert steady and interval == pytest.approx(105 / 4)
    assert not T.steady_interval([100.0] * 5, [0.0] * 5, 4)[1]    # fewer than two rounds


def test_the_ensemble_is_seeded_and_within_the_calibration():
    p = load_params("gfx942")
    assert p.calibration, "gfx942's table has a [calibration] table"
    a, b = ensemble(p, 6), ensemble(p, 6)
    assert a[0] is p and [x.tag for x in a] == [x.tag for x in b]
    for x, y in zip(a[1:], b[1:]):
        for name, err in p.calibration.items():
            assert x.value(name) == y.value(name)
            f = x.value(name) / p.value(name) if p.value(name) else 1.0
            assert (1 + err) ** -4 <= f <= (1 + err) ** 4


def test_a_band_is_kept_through_json_and_names_artifacts():
    t = Timing("modeled", "model:gfx942", 100.0, 90.0, 0.0, "cycles", (0.98, 1.15))
    back = Timing.from_json(t.to_json())
    assert back == t and back.band == (0.98, 1.15)
    assert t.improved and not t.robust
    assert Timing("modeled", "m", 100.0, 90.0, band=(1.05, 1.2)).robust
    assert "band 0.980-1.150" in str(t)


def test_speedup_band_brackets_the_nominal_speedup():
    from asmevo.verify.timing import speedup_band
    from tests.timing.test_timing import _LOAD, _USE, _WAIT, _WORK

    late = _build("\n".join([_LOAD, _WAIT, _USE, _WORK]))
    early = _build("\n".join([_LOAD, _WORK, _WAIT, _USE]))
    spec = _spec(4)
    values = make_inputs(spec)
    nominal = model_launch(late, spec, values).cycles / model_launch(early, spec, values).cycles
    lo, hi = speedup_band(late, early, spec, values)
    assert lo <= nominal <= hi and lo > 1.0


def test_a_launch_too_large_to_emulate_is_checked_on_sampled_workgroups(monkeypatch):
    from asmevo.verify.timing import sampled_check, too_big_to_emulate
    from tests.timing.test_timing import _LOAD, _WAIT

    k0 = _build("\n".join([_LOAD, _WAIT, "    v_add_f32 v8, 1.0, v8"]))
    k1 = _build("\n".join([_LOAD, _WAIT, "    v_add_f32 v8, 2.0, v8"]))
    spec = _spec(200)
    values = make_inputs(spec)
    assert not too_big_to_emulate(spec)
    monkeypatch.setenv("ASMEVO_EMU_MAX_WAVES", "100")
    assert too_big_to_emulate(spec)
    same = sampled_check(k0, k0, spec, values)
    assert same.equal and same.details["sampled_workgroups"] == 64
    assert "sampled workgroups of 200" in same.reason
    bad = sampled_check(k0, k1, spec, values)
    assert bad.status == "mismatch" and "buffer dst" in bad.reason
