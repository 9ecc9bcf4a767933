"""The helpers both GPU devices share: the timing protocol and the GPU choice."""
from __future__ import annotations

import pytest

from asmevo.runtime.device import DeviceError
from asmevo.runtime.gpu import check_status, interleaved_times, require_gpu


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
