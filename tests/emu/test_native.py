"""asmevo.emu.native: the compiled float32 rows give the numpy path's bits, or stay unused."""
import shutil

import numpy as np
import pytest

from asmevo.emu import native
from asmevo.verify import evaluate as ev
from asmevo.verify.differential import _run_kwargs, candidate_plan
from tests.conftest import KERNELS

HAS_CC = any(shutil.which(c) for c in native.COMPILERS)
needs_cc = pytest.mark.skipif(not HAS_CC, reason="no C compiler here: the numpy path runs alone")
OPS = (native.ADD, native.SUB, native.SUBREV, native.MUL, native.FMA)


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A process that has not decided yet, with an empty build cache."""
    monkeypatch.setenv("ASMEVO_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ASMEVO_NATIVE", raising=False)
    monkeypatch.setattr(native, "_STATE", {})
    return tmp_path


def _nasty(rng, shape) -> np.ndarray:
    """Float32 operands where the NaN rule has work: a third NaN (random payloads, both
    signs, quiet and signalling), some infinities, zeros and subnormals, the rest random."""
    bits = rng.integers(0, 2**32, shape, dtype=np.uint32)
    kind = rng.integers(0, 9, shape)
    nan = (rng.integers(0, 2**22, shape, dtype=np.uint32) | 1) | np.uint32(0x7F800000)
    bits = np.where(kind < 3, nan | (rng.integers(0, 2, shape, dtype=np.uint32) << 31), bits)
    bits = np.where(kind == 3, np.uint32(0x7F800000) | (bits & np.uint32(0x80000000)), bits)
    bits = np.where(kind == 4, bits & np.uint32(0x807FFFFF), bits)     # subnormals and zeros
    return bits.view(np.float32)


@needs_cc
def test_builds_once_and_passes_its_self_test(fresh):
    assert native.library() is not None
    assert native.status().startswith("native (")
    assert len(list((fresh / "native").glob("f32-*.so"))) == 1


@needs_cc
@pytest.mark.parametrize("seed", range(3))
def test_random_operands_bit_for_bit(fresh, seed):
    lib = native.library()
    rng = np.random.default_rng(100 + seed)
    for op in OPS:
        k = 3 if op == native.FMA else 2
        full = [_nasty(rng, (37, 64)) for _ in range(k)]
        shapes = [full, [full[0][:, :1]] + full[1:], [full[0], full[1][:1, :1].reshape(())]
                  + full[2:]]
        members = rng.integers(0, 4, 37).astype(np.int64)
        for args in shapes:
            for variant, mem in ((0, None), (int(rng.integers(1, 9)), None), (0, members)):
                want = native._numpy(op, args, variant, mem, 0xBEEF).view(np.uint32)
                got = native.arith(lib, op, args, variant, mem, 0xBEEF)
                assert got is not None and np.array_equal(got.view(np.uint32), want), \
                    (op, variant, mem is not None, [np.shape(a) for a in args])


@needs_cc
def test_the_rule_on_every_lane_agrees_on_written_lanes(fresh):
    """The library applies the NaN rule on every lane; numpy only on EXEC's (a mask):
    the lanes a row writes agree."""
    lib = native.library()
    rng = np.random.default_rng(5)
    a, b = _nasty(rng, (8, 64)), _nasty(rng, (8, 64))
    mask = rng.integers(0, 2, (8, 64)).astype(bool)
    from asmevo.emu import approx
    for op, fn in ((native.ADD, np.add), (native.MUL, np.multiply)):
        with np.errstate(all="ignore"):
            want = approx.nan_result(fn(a, b), [a, b], 0, 9, mask=mask).view(np.uint32)
        got = native.arith(lib, op, [a, b], 0, None, 9).view(np.uint32)
        assert np.array_equal(got[mask], want[mask])


@needs_cc
def test_a_library_that_differs_is_not_used(fresh, monkeypatch):
    real = native.arith

    def off_by_one(*a, **k):     # one result bit wrong, on a NaN choice
        out = real(*a, **k)
        bits = out.view(np.uint32)
        at = np.flatnonzero(np.isnan(out))
        if at.size:
            bits.reshape(-1)[at[0]] ^= 1
        return out
    monkeypatch.setattr(native, "arith", off_by_one)
    assert native.library() is None
    assert native.status().startswith("numpy (the native build differs")


def test_no_compiler_or_switched_off_leaves_numpy(fresh, monkeypatch):
    monkeypatch.setenv("CC", "no-such-compiler-here")
    assert native.library() is None
    assert native.status() == "numpy (no C compiler (CC, cc, gcc, clang, clang-19))"
    monkeypatch.setattr(native, "_STATE", {})
    monkeypatch.delenv("CC")
    monkeypatch.setenv("ASMEVO_NATIVE", "0")
    assert native.library() is None and native.status() == "numpy (ASMEVO_NATIVE=0)"


@needs_cc
@pytest.mark.parametrize("kernel", ["matmul_tiled", "softmax", "layernorm", "tri_matmul_bf16"])
def test_a_check_s_launches_are_the_same_with_and_without_it(fresh, monkeypatch, kernel):
    """K0's launches of a candidate check (special values included, in one batched pass)
    give the same buffers and guards with the library and without it."""
    assert native.library() is not None
    ctx = ev.EvalContext(spec_path=str(KERNELS / kernel), size="small", isolate=False,
                         timing="none")
    st = ev._state(ctx)
    values = dict(st.reference.sets)
    kws = [_run_kwargs(st.spec, values[label], v, m)
           for label, v, m in candidate_plan(st.reference, 2, True)]

    def results():
        got = st.device.run_many(st.k0_bytes, st.spec, [dict(k) for k in kws])
        assert got is not None and all(r.ok for r in got)
        return [{n: (b.data.tobytes(), b.guard_before, b.guard_after)
                 for n, b in r.buffers.items()} for r in got]
    with_lib = results()
    monkeypatch.setitem(native._STATE, "lib", None)
    assert with_lib == results()


def test_a_compiler_that_hangs_or_fails_leaves_numpy(fresh, monkeypatch, tmp_path):
    """A compiler past its time limit, or one that fails, is met with the numpy path and
    a reason, not an error (a stand-in compiler: no real one needed)."""
    import subprocess
    from asmevo import process

    fake = tmp_path / "badcc"
    fake.write_text("#!/bin/sh\necho no >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    real = process.run_tool

    def hangs(cmd, **kw):
        raise subprocess.TimeoutExpired(cmd, kw.get("timeout"))
    monkeypatch.setattr(process, "run_tool", hangs)
    assert native.library() is None
    assert native.status().startswith("numpy (the native build does not load")
    monkeypatch.setattr(process, "run_tool", real)
    monkeypatch.setattr(native, "_STATE", {})
    assert native.library() is None and "failed: no" in native.status()
