"""The helpers both GPU devices share: the timing protocol, the runtime start-up and the GPU choice."""
from __future__ import annotations

import pytest

from asmevo.runtime.device import DeviceError
from asmevo.runtime.cuda import CUDA
from asmevo.runtime.gpu import Runtime, check_status, interleaved_times, require_gpu, start
from asmevo.runtime.hip import HIP


def test_interleaved_times_runs_objects_in_turn_and_drops_warmup():
    calls = []

    def timed_run(rep, i):
        calls.append((rep, i))
        return rep * 10.0 + i

    times = interleaved_times(2, 1, 3, timed_run)
    assert calls == [(r, i) for r in range(4) for i in range(2)]
    assert times == [[10.0, 20.0, 30.0], [11.0, 21.0, 31.0]]


def test_require_gpu_refuses_none_visible_and_an_index_past_the_count():
    with pytest.raises(DeviceError, match="no GPU here"):
        require_gpu(0, 0, "no GPU here")
    with pytest.raises(DeviceError, match="GPU 2 requested, 2 visible"):
        require_gpu(2, 2, "no GPU here")
    require_gpu(2, 1, "no GPU here")


def test_check_status_returns_none_one_value_or_several():
    assert check_status(0, "f") is None
    assert check_status((0, 7), "f") == 7
    assert check_status((0, 7, 8), "f") == (7, 8)
    with pytest.raises(DeviceError, match=r"g failed: 3 \(3\)"):
        check_status((3, 7), "g")


class _Binding:
    """A GPU binding's two start-up calls (no GPU here): ``init`` raises or returns a code."""

    def __init__(self, init, count=1):
        self._init, self._count = init, count

    def xInit(self, flags):
        if isinstance(self._init, BaseException):
            raise self._init
        return self._init

    def xCount(self):
        return (0, self._count)


def _runtime(binding, base=None, **fields):
    """``base`` (a backend's Runtime, else a made-up x runtime) loading ``binding`` through
    the x calls."""
    made_up = dict(needs="the x device needs libx.so", remedy="install x",
                   none_visible="x is installed but no GPU is visible")
    return Runtime(**{**(base.__dict__ if base else made_up), "load": lambda: binding,
                      "init": "xInit", "count": "xCount", **fields})


def test_start_names_a_missing_runtime_with_its_remedy():
    with pytest.raises(DeviceError) as ei:
        start(_runtime(_Binding(RuntimeError("libx.so: cannot open"))), 0)
    assert str(ei.value) == ("the x device needs libx.so, which is not installed here "
                             "(libx.so: cannot open); install x")


def test_start_passes_a_failed_init_code_through_or_prefixes_it_when_told():
    with pytest.raises(DeviceError, match=r"^xInit failed: 100 \(100\)$"):
        start(_runtime(_Binding(100)), 0)
    broken = _runtime(_Binding(100), unusable="x is present but unusable")
    with pytest.raises(DeviceError, match=r"^x is present but unusable: xInit failed: 100 \(100\)$"):
        start(broken, 0)


def test_start_refuses_no_visible_gpu_and_an_index_past_the_count():
    with pytest.raises(DeviceError, match="^x is installed but no GPU is visible$"):
        start(_runtime(_Binding(0, count=0)), 0)
    with pytest.raises(DeviceError, match="GPU 1 requested, 1 visible"):
        start(_runtime(_Binding(0, count=1)), 1)
    binding = _Binding(0, count=2)
    assert start(_runtime(binding), 1) is binding


def test_each_backend_names_its_own_runtime_and_the_emulator():
    with pytest.raises(DeviceError) as hip_err:
        start(_runtime(_Binding(RuntimeError("no lib")), HIP), 0)
    assert "libamdhip64.so" in str(hip_err.value) and "--device emulator" in str(hip_err.value)
    with pytest.raises(DeviceError) as cuda_err:
        start(_runtime(_Binding(OSError("no lib")), CUDA), 0)
    assert "libcuda.so" in str(cuda_err.value) and "--device emulator" in str(cuda_err.value)
    assert (HIP.init, HIP.count, CUDA.init, CUDA.count) == ("hipInit", "hipGetDeviceCount", "cuInit",
                                                           "cuDeviceGetCount")
