import os
import time

import numpy as np
import pytest

from asmevo.runtime import hip as hipmod
from asmevo.runtime.device import DeviceError
from asmevo.runtime.registry import get_device
from asmevo.targets.amdgpu import load
from asmevo.verify.isolate import run_isolated
from asmevo.launch.spec import load_spec, make_inputs
from tests.conftest import KERNELS, corpus_specs


@pytest.mark.parametrize("path", corpus_specs(), ids=lambda p: p.parent.name)
def test_hip_kernarg_bytes_equal_the_emulators_kernarg_segment(path):
    from asmevo.emu.run.dispatch import setup
    spec = load_spec(path, "small")
    co = load(spec.code_object)
    k = co.kernel(spec.kernel)
    values = make_inputs(spec, 0)
    ln = setup(co, k, spec, values)
    pointers = {name: al.base for name, al in ln.buffers.items()}
    packed = hipmod.kernarg_bytes(k, spec, values, pointers)
    segment = bytes(ln.mem.view(ln.kernarg)[:len(packed)])
    assert packed == segment
    for m in (k.meta.explicit_args if k.meta else ()):
        assert m.offset + m.size <= len(packed)


def test_hip_device_without_rocm_is_one_clear_error():
    try:
        from hip import hip  # noqa: F401
        import ctypes.util
        if ctypes.util.find_library("amdhip64"):
            pytest.skip("ROCm is installed here: the no-ROCm path cannot be exercised")
    except ImportError:
        pass
    with pytest.raises(DeviceError) as ei:
        get_device("hip")
    msg = str(ei.value)
    assert "libamdhip64" in msg and "--device emulator" in msg


def test_hip_without_hip_python(monkeypatch):
    import builtins
    real = builtins.__import__

    def fake(name, *a, **kw):
        if name == "hip":
            raise ImportError("No module named 'hip'")
        return real(name, *a, **kw)
    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(DeviceError, match="pip install hip-python"):
        get_device("hip")


def test_hip_return_codes_are_checked():
    class Err:
        value, name = 2, "hipErrorOutOfMemory"
    with pytest.raises(DeviceError, match="hipMalloc failed: hipErrorOutOfMemory"):
        hipmod._check((Err(), 0), "hipMalloc")
    assert hipmod._check((0, 42), "hipMalloc") == 42


def test_unknown_device():
    with pytest.raises(DeviceError, match="unknown device 'tpu'"):
        get_device("tpu")


def _crash():
    import faulthandler
    faulthandler.disable()          # pytest's handler would print "Fatal Python error: Aborted"
    os.abort()                      # and the stack of this deliberate crash


def _hang():
    time.sleep(60)


def _boom():
    raise RuntimeError("kaput")


def test_isolation_turns_crash_hang_and_exception_into_verdicts():
    v = run_isolated(_crash, timeout=10)
    assert v.status == "crash" and "exit code" in v.reason
    t0 = time.monotonic()
    v = run_isolated(_hang, timeout=1)
    assert v.status == "timeout" and time.monotonic() - t0 < 5
    v = run_isolated(_boom, timeout=10)
    assert v.status == "crash" and "kaput" in v.reason
    assert run_isolated(sum, [1, 2, 3], timeout=10) == 6


def test_emulator_device_runs_and_returns_guards():
    spec = load_spec(KERNELS / "vector_add", "small")
    dev = get_device("emulator")
    bufs = {k: v for k, v in make_inputs(spec, 0).items() if isinstance(v, np.ndarray)}
    res = dev.run(spec.code_object.read_bytes(), spec, bufs | {"n": spec.params["N"]},
                  guard_bytes=64, guard_pattern=0x5A)
    assert res.ok
    g = res.buffers["c"]
    assert len(g.guard_after) >= 64 and set(g.guard_after) == {0x5A} == set(g.guard_before)
    np.testing.assert_array_equal(res.buffers["c"].data, bufs["a"] + bufs["b"])


def test_spawned_isolation_works_like_forked():
    """GPU devices isolate with spawn (a GPU context does not survive fork)."""
    v = run_isolated(_crash, timeout=30, method="spawn")
    assert v.status == "crash"
    v = run_isolated(_hang, timeout=2, method="spawn")
    assert v.status == "timeout"
    assert run_isolated(sum, [1, 2], timeout=30, method="spawn") == 3


def test_differential_run_in_a_spawned_child():
    """The evaluation path a GPU device takes, exercised on the emulator."""
    from asmevo.verify.evaluate import EvalContext, _run_differential, k0_state
    from asmevo.verify.isolate import run_isolated as iso
    ctx = EvalContext(spec_path=str(KERNELS / "vector_add"), size="small", timing="none")
    data = k0_state(ctx).k0_bytes
    v = iso(_run_differential, ctx, data, timeout=120, method="spawn")
    assert v.status == "equal", v


def _pid_and_count():
    """The worker's pid and how often this process has been called."""
    global _CALLS
    _CALLS = globals().get("_CALLS", 0) + 1
    return os.getpid(), _CALLS


def _fault_verdict():
    from asmevo.verdict import Verdict
    return Verdict("fault", "illegal address (simulated)")


def test_worker_keeps_its_process_until_a_call_goes_wrong():
    """GPU evaluations reuse one spawned worker (its caches, its GPU context), and
    replace it after any call that hangs, dies, raises or reports a fault."""
    from asmevo.verify.isolate import Worker
    w = Worker("spawn")
    try:
        (p1, n1), (p2, n2) = w.call(_pid_and_count, timeout=60), w.call(_pid_and_count, timeout=60)
        assert p1 == p2 != os.getpid() and (n1, n2) == (1, 2) and w.started == 1
        for bad, status in ((_boom, "crash"), (_hang, "timeout"), (_crash, "crash"),
                            (_fault_verdict, "fault")):
            started = w.started
            v = w.call(bad, timeout=2 if bad is _hang else 60)
            assert v.status == status, (bad, v)
            pid, n = w.call(_pid_and_count, timeout=60)
            assert (pid, n) != (p1, n2 + 1) and n == 1, bad      # a fresh process
            assert w.started == started + 1
            p1, n2 = pid, n
    finally:
        w.close()


def _differential_and_misses(ctx, data):
    from asmevo.verify import evaluate as ev
    return ev._run_differential(ctx, data), ev._state.cache_info().misses


def test_worker_keeps_k0_state_between_candidates():
    """The path GPU devices take: the second candidate in a worker finds K0's state
    (recovered program, reference runs) cached there instead of recomputing it."""
    from asmevo.verify.evaluate import EvalContext, k0_state
    from asmevo.verify.isolate import Worker
    ctx = EvalContext(spec_path=str(KERNELS / "vector_add"), size="small", timing="none")
    data = k0_state(ctx).k0_bytes
    w = Worker("spawn")
    try:
        (v1, m1), (v2, m2) = (w.call(_differential_and_misses, ctx, data, timeout=120)
                              for _ in range(2))
    finally:
        w.close()
    assert v1.status == v2.status == "equal"
    assert m1 == m2 == 1 and w.started == 1


def _worker_in_a_loky_process():
    from asmevo.verify.isolate import Worker, run_isolated
    w = Worker("spawn")
    try:
        first = w.call(_pid_and_count, timeout=60)
    finally:
        w.close()
    return first, run_isolated(sum, [1, 2], timeout=60, method="spawn")


def test_workers_start_inside_joblib_loky_workers():
    """The engine and the benchmarks evaluate in joblib (loky) workers, whose global
    start method is "loky": a child spawned there must still start (found on the
    H200, where every GPU candidate of a parallel run crashed at start)."""
    from joblib import Parallel, delayed
    out = Parallel(n_jobs=2, backend="loky")(delayed(_worker_in_a_loky_process)()
                                             for _ in range(2))
    for (pid, n), three in out:
        assert n == 1 and pid != os.getpid() and three == 3


def test_a_fresh_worker_sets_up_k0_outside_the_candidates_time_limit(monkeypatch):
    """K0's state in a new GPU worker can take long on large launches; it is set up in
    a call of its own, so the first candidate's time limit is its own run only."""
    from asmevo.runtime.emulator import EmulatorDevice
    from asmevo.runtime.registry import REGISTRY
    from asmevo.verify import evaluate as ev
    from asmevo.verify.isolate import Worker, _WORKERS
    ctx = ev.EvalContext(spec_path=str(KERNELS / "vector_add"), size="small", timing="none",
                         device="emulator")
    data = ev.k0_state(ctx).k0_bytes
    w = Worker("spawn")
    monkeypatch.setitem(_WORKERS, (os.getpid(), "spawn"), w)
    # a device that does not survive a fork takes the GPU path
    monkeypatch.setitem(REGISTRY, "emulator-spawned", type("Spawned", (EmulatorDevice,),
                                                           {"forks": False}))
    gpu_like = ev.replace(ctx, device="emulator-spawned")
    calls = []
    real = w.call
    monkeypatch.setattr(w, "call", lambda fn, *a, timeout: calls.append(
        (fn.__name__, timeout)) or real(fn, *(ctx if x is gpu_like else x for x in a),
                                        timeout=timeout))
    try:
        v1 = ev._differential_verdict(gpu_like, data)
        v2 = ev._differential_verdict(gpu_like, data)
    finally:
        w.close()
    assert v1.status == v2.status == "equal"
    assert calls == [("_warm_worker", ev.WARM_TIMEOUT), ("_run_differential", ctx.timeout),
                     ("_run_differential", ctx.timeout)]


def _pid(*_):
    return os.getpid()


def test_emulator_candidates_share_one_forked_worker(monkeypatch):
    """On the emulator a forked worker serves candidate after candidate (no process
    per candidate); one that crashes is replaced, and so is one that served its
    quota (FORKED_CALLS)."""
    from asmevo.verify import evaluate as ev
    from asmevo.verify.isolate import Worker, _WORKERS
    ctx = ev.EvalContext(spec_path=str(KERNELS / "vector_add"), size="small", timing="none")
    data = ev.k0_state(ctx).k0_bytes
    w = Worker("fork", max_calls=100)
    monkeypatch.setitem(_WORKERS, (os.getpid(), "fork"), w)
    try:
        assert [ev._differential_verdict(ctx, data).status for _ in range(2)] == ["equal"] * 2
        pid = w.call(_pid, timeout=30)
        assert w.started == 1 and pid != os.getpid()
        assert w.call(_crash, timeout=30).status == "crash"
        assert w.call(_pid, timeout=30) != pid and w.started == 2
    finally:
        w.close()
    q = Worker("fork", max_calls=2)
    try:
        pids = [q.call(_pid, timeout=30) for _ in range(5)]
    finally:
        q.close()
    assert len(set(pids)) == 3 and pids[0] == pids[1] and q.started == 3
