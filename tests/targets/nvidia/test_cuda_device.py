"""The cuda device: a clear error without a GPU; on an NVIDIA GPU, K0 against numpy and a
legally reordered candidate bit-equal to K0 (the evidence that the move rules are right)."""
from __future__ import annotations

import numpy as np
import pytest

from asmevo.runtime.device import DeviceError
from asmevo.launch.spec import load_spec, make_inputs
from tests.targets.nvidia.conftest import SPECS


def _device_or_reason():
    from asmevo.runtime.cuda import CudaDevice
    try:
        return CudaDevice(), ""
    except DeviceError as exc:
        return None, str(exc)


DEVICE, WHY = _device_or_reason()
gpu = pytest.mark.skipif(DEVICE is None, reason=f"no CUDA GPU here: {WHY}")


def test_without_a_gpu_the_error_names_what_is_missing():
    if DEVICE is not None:
        pytest.skip("a CUDA GPU is present")
    assert any(w in WHY for w in ("cuda-bindings", "libcuda", "driver", "no GPU"))


def _spec(name, size="small"):
    return load_spec(next(p for p in SPECS if p.stem == name), size)


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("name", ["tri_add", "tri_softmax", "tri_matmul_fp16"])
def test_k0_matches_numpy(name):
    spec = _spec(name)
    vals = make_inputs(spec, 0)
    res = DEVICE.run(spec.code_object.read_bytes(), spec, vals, guard_bytes=256,
                     guard_pattern=0xA5)
    assert res.ok, res.message
    for out, ref in spec.expected(vals).items():
        got = res.buffers[out].data.astype(np.float64)
        np.testing.assert_allclose(got, ref.reshape(-1), atol=spec.atol, rtol=spec.rtol)
        assert res.buffers[out].guard_before == b"\xa5" * 256


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("name", ["tri_add", "tri_layernorm"])
def test_reordered_candidate_is_bit_equal(name, programs):
    from asmevo.targets.nvidia import edit as E
    from asmevo.verify.differential import differential, reference_runs
    spec = _spec(name)
    prog = programs[name]
    code = prog.kernel(spec.kernel)
    i = next(i for i, ins in enumerate(code.instructions)
             if ins.ops.movable and E.legal_moves(code, i, max_distance=8))
    code = E.move(code, i, E.legal_moves(code, i, max_distance=8)[0])
    k1 = E.build(prog.with_kernel(code))
    ref = reference_runs(DEVICE, spec.code_object.read_bytes(), spec, seeds=(0, 1))
    assert differential(DEVICE, ref, k1, spec).equal


@pytest.mark.gpu
@gpu
def test_timing_keeps_one_input_set_resident_and_unloads_old_modules(programs, monkeypatch):
    """Timing inputs stay on the GPU while the same set comes back; a new set replaces
    them. Loaded modules stay under MAX_MODULES, never unloading one in use."""
    from asmevo.runtime import cuda
    from asmevo.targets.nvidia import edit as E
    spec = _spec("tri_add")
    k0 = spec.code_object.read_bytes()
    vals = make_inputs(spec, 0)
    a = DEVICE.time([k0, k0], spec, vals, warmup=1, repetitions=3)
    held = DEVICE._resident
    assert held[0] is vals and all(t > 0 for ts in a for t in ts)
    DEVICE.time([k0], spec, vals, warmup=0, repetitions=2)
    assert DEVICE._resident is held                      # not uploaded again
    other = make_inputs(spec, 1)
    DEVICE.time([k0], spec, other, warmup=0, repetitions=2)
    assert DEVICE._resident[0] is other
    # three distinct cubins with room for two: the oldest one not in use goes
    code = programs["tri_add"].kernel(spec.kernel)
    variants = [E.build(programs["tri_add"].with_kernel(E.retime(code, 79, stall=s)))
                for s in (2, 3)]
    monkeypatch.setattr(cuda, "MAX_MODULES", 2)
    DEVICE._modules.clear()
    for c in [k0] + variants:
        assert DEVICE.run(c, spec, vals).ok
    assert set(DEVICE._modules) == set(variants)           # k0, the oldest, went
    DEVICE.time([variants[0], variants[1], k0], spec, vals, warmup=0, repetitions=1)
    assert set(DEVICE._modules) >= {variants[0], variants[1], k0}


@pytest.mark.gpu
@gpu
def test_run_returns_outputs_and_both_guards_without_copies():
    spec = _spec("tri_add")
    vals = make_inputs(spec, 0)
    res = DEVICE.run(spec.code_object.read_bytes(), spec, vals, guard_bytes=256,
                     guard_pattern=0x5A)
    for a in spec.buffers:
        img = res.buffers[a.name]
        assert img.guard_before == img.guard_after == b"\x5a" * 256
        assert img.data.dtype == vals[a.name].dtype and img.data.size == vals[a.name].size
        if not a.output:
            np.testing.assert_array_equal(img.data, vals[a.name])
