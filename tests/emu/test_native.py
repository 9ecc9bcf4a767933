"""asmevo.emu.isa.native: the compiled float32 rows give the numpy path's bits, or stay unused."""
import shutil

import numpy as np
import pytest

from asmevo.emu.isa import native
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


@pytest.fixture
def compiled():
    """This process's library (built once, as setup.sh builds it), or a skip saying why
    there is none."""
    if native.library() is None:
        pytest.skip(f"the compiled rows are not in use here: {native.status()}")


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
    from asmevo.emu.numerics import approx
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


# -- rows and LDS accesses straight on the register file ---------------------------------

def _state(rng, nw=12, wpg=3, lds_bytes=512, exec_kind="full"):
    from asmevo.emu.machine.state import EXEC, State
    # MODE: round to nearest even, float denormals kept, IEEE and DX10 clamp on
    st = State(nw, 16, lds_bytes, np.arange(nw) // wpg, 0x3F0)
    st.v[:] = _nasty(rng, st.v.shape).view(np.uint32)
    st.s[:] = _nasty(rng, st.s.shape).view(np.uint32)
    st.lds[:] = rng.integers(0, 256, st.lds.size, dtype=np.uint16).astype(np.uint8)
    st.wave_in_wg = (np.arange(nw) % wpg).astype(np.int64)
    st.v[1] = (rng.integers(0, lds_bytes // 16 - 2, (nw, 64)) * 8).astype(np.uint32)
    lo = np.full(nw, 0xFFFFFFFF, np.uint32)
    hi = lo.copy()
    if exec_kind == "partial":
        lo = rng.integers(0, 2 ** 32, nw, dtype=np.uint64).astype(np.uint32)
        hi[::2] = 0
    st.s[EXEC], st.s[EXEC + 1] = lo, hi
    st.refresh_exec(np.arange(nw))
    return st


def _decode(text):
    from asmevo.emu.isa.decode import decode_one
    return decode_one(text, index=0, address=0, kernel=None, accum_offset=256,
                      processor="gfx942")


def _run(d, c, native_on: bool) -> None:
    """``d`` on ``c``, with the compiled library or on numpy alone."""
    if native_on:
        d.fn(c)
        return
    with native.disabled():
        d.fn(c)


def _both(d, st, waves, tracked=None):
    """``d`` run on copies of ``st`` with the library and without: the two states, or the
    conflicts they raised."""
    import copy
    from asmevo.emu.errors import EmulatorError
    from asmevo.emu.machine.racecheck import Conflict, LdsTracker
    from asmevo.emu.machine.state import Ctx
    out = []
    for use in (True, False):
        s = copy.deepcopy(st)
        if tracked is not None:
            s.tracker = LdsTracker(s, tracked, max(s.lds_bytes, 4))
        c = Ctx(s, waves, None)
        s.track_ctx = c
        try:
            _run(d, c, use)
        except Conflict:
            out.append("Conflict")
            continue
        except EmulatorError as exc:      # a row the emulator refuses: refused alike
            out.append(f"{type(exc).__name__}: {exc}")
            continue
        out.append(s)
    return out


def _answers(monkeypatch, name: str) -> list:
    """What each call of ``native.<name>`` answers from now on (the call goes through)."""
    got = []
    real = getattr(native, name)

    def counted(*a, **k):
        out = real(*a, **k)
        got.append(out)
        return out
    monkeypatch.setattr(native, name, counted)
    return got


ROWS = ["v_add_f32_e32 v5, v2, v3", "v_mul_f32_e64 v5, s3, v2", "v_sub_f32_e32 v5, 1.0, v3",
        "v_subrev_f32_e32 v2, v2, v3", "v_fmac_f32_e32 v5, v2, v3", "v_fma_f32 v5, v2, s4, v3",
        "v_mul_f32_e32 v5, 0x3fc00000, v2", "v_pk_mul_f32 v[6:7], v[2:3], v[4:5]",
        "v_pk_fma_f32 v[6:7], v[2:3], v[4:5], v[8:9]",
        "v_pk_add_f32 v[6:7], v[2:3], v[4:5] op_sel:[1,0] op_sel_hi:[0,1]",
        "v_pk_mul_f32 v[2:3], v[2:3], v[4:5]"]


@needs_cc
@pytest.mark.parametrize("text", ROWS)
def test_rows_on_registers_give_the_numpy_path_s_bits(compiled, monkeypatch, text):
    """A float row read from and written to the register file (native.regs): every
    register of every wave as the numpy path leaves it, fancy and sliced wave lists,
    EXEC full and partial; the compiled path is taken."""
    taken = _answers(monkeypatch, "regs")
    d = _decode(text)
    rng = np.random.default_rng(len(text))
    for exec_kind in ("full", "partial", "flushing", "ieee off", "ieee off, no snan"):
        st = _state(rng, exec_kind=exec_kind)
        if exec_kind == "flushing":     # float32 denormals flushed: the numpy path's
            st.mode &= ~0x30
        if exec_kind.startswith("ieee off"):    # IEEE mode clear: the numpy path's too
            st.mode &= ~0x200
        if exec_kind.endswith("no snan"):      # quiet NaNs only: then it computes
            for regs in (st.v, st.s):
                regs |= np.where((regs & 0x7F800000) == 0x7F800000, 0x400000, 0).astype(
                    np.uint32)
        for waves in (np.arange(2, 9), np.array([0, 3, 4, 7, 11])):
            a, b = _both(d, st, waves)
            if isinstance(a, str) or isinstance(b, str):
                assert a == b and exec_kind == "ieee off", (text, exec_kind, a, b)
                continue
            assert np.array_equal(a.v, b.v), (text, exec_kind, waves)
    assert len(taken) >= 4 and all(taken)


LDS = ["ds_read_b32 v8, v1 offset:8", "ds_read_b64 v[8:9], v1", "ds_read_b128 v[8:11], v1",
       "ds_read_b128 v[8:11], v1 offset:4", "ds_read2_b32 v[8:9], v1 offset0:1 offset1:9",
       "ds_read2_b64 v[8:11], v1 offset1:3", "ds_read2st64_b32 v[8:9], v1 offset1:1",
       "ds_read_b32 v1, v1 offset:4", "ds_write_b32 v1, v2 offset:4", "ds_write_b64 v1, v[2:3]",
       "ds_write_b128 v1, v[2:5] offset:16", "ds_write2_b32 v1, v2, v3 offset0:2 offset1:3",
       "ds_write2_b64 v1, v[2:3], v[4:5] offset1:1"]


@needs_cc
@pytest.mark.parametrize("text", LDS)
def test_lds_accesses_on_registers_match_numpy(compiled, monkeypatch, text):
    """An LDS dword access (native.lds) with the race tracker's note in C: registers, LDS
    and the tracker's owners and written marks as the numpy path leaves them, the same
    conflicts; an address out of bounds takes the numpy path (which names it)."""
    answers = _answers(monkeypatch, "lds")
    d = _decode(text)
    rng = np.random.default_rng(len(text) + 1)
    agreed = 0
    for trial in range(12):
        st = _state(rng, exec_kind=("full", "partial")[trial % 2])
        waves = np.arange(12) if trial % 3 else np.array([1, 2, 3, 6, 7, 10])
        tracked = [None, rng.random(12) < 0.5, np.ones(12, bool)][trial % 3]
        if trial == 11:
            st.v[1][waves[0], :] = 1 << 20     # out of bounds
            a, b = _both(d, st, waves)          # faulted alike, by the numpy path
            assert a == b and a.startswith("MemoryFault") and answers[-1] == 1
            continue
        a, b = _both(d, st, waves, tracked)
        if isinstance(a, str) or isinstance(b, str):
            assert a == b, (text, trial)
            continue
        assert np.array_equal(a.v, b.v) and np.array_equal(a.lds, b.lds), (text, trial)
        if tracked is not None:
            assert np.array_equal(a.tracker.owner, b.tracker.owner), (text, trial)
            assert np.array_equal(a.tracker.written, b.tracker.written), (text, trial)
        agreed += 1
    assert agreed >= 4 and 0 in answers


INT_ROWS = ["v_add_u32_e32 v5, v2, v3", "v_sub_u32_e32 v5, s3, v2", "v_subrev_u32_e32 v5, 4, v2",
            "v_add3_u32 v5, v2, s3, 7", "v_lshl_add_u32 v5, v2, 3, v3",
            "v_lshl_or_b32 v5, v2, v3, v4", "v_and_or_b32 v5, v2, 0xff, v3",
            "v_or3_b32 v5, v2, v3, s4", "v_and_b32_e32 v5, 0xffff, v2", "v_or_b32_e32 v5, v2, v3",
            "v_xor_b32_e32 v5, s3, v2", "v_lshlrev_b32_e32 v5, v3, v2",
            "v_lshrrev_b32_e32 v5, 33, v2", "v_ashrrev_i32_e32 v5, v3, v2", "v_mov_b32_e32 v5, s3",
            "v_mov_b32_e32 v5, -7", "v_lshl_add_u64 v[6:7], v[2:3], 2, v[4:5]",
            "v_lshl_add_u64 v[2:3], s[4:5], 0, v[2:3]", "v_lshl_add_u64 v[6:7], v[2:3], v8, -1",
            "v_lshlrev_b64 v[6:7], v3, v[4:5]", "v_lshlrev_b64 v[4:5], 40, v[4:5]"]


@needs_cc
@pytest.mark.parametrize("text", INT_ROWS)
def test_integer_rows_on_registers_give_the_numpy_path_s_bits(compiled, monkeypatch, text):
    """An integer row on the register file (native.int_regs): every register of every
    wave as the numpy path leaves it (wrapping, shift counts masked, a destination pair
    that is a source), fancy and sliced waves, EXEC full and partial."""
    taken = _answers(monkeypatch, "int_regs")
    d = _decode(text)
    rng = np.random.default_rng(len(text) + 7)
    for exec_kind in ("full", "partial"):
        st = _state(rng, exec_kind=exec_kind)
        st.v[3] = rng.integers(0, 80, st.v[3].shape).astype(np.uint32)    # shift counts too
        for waves in (np.arange(2, 9), np.array([0, 3, 4, 7, 11])):
            a, b = _both(d, st, waves)
            assert np.array_equal(a.v, b.v), (text, exec_kind, waves)
    assert len(taken) == 4 and all(taken)


LOADS = ["global_load_dword v8, v1, s[4:5] offset:16", "global_load_dwordx2 v[8:9], v1, s[4:5]",
         "global_load_dwordx4 v[8:11], v1, s[4:5] offset:-32",
         "global_load_dword v1, v1, s[4:5]", "global_load_dwordx2 v[8:9], v[2:3], off offset:8"]


def _launch_state(rng, exec_kind, reach):
    """A state whose v1 (with s[4:5]) and v[2:3] address a buffer of a real Memory (a guard
    after it, its contract 64 bytes short of its end); ``reach``: how far past the
    buffer's start the addresses go (past the contract: a note; past the guard: a fault)."""
    from types import SimpleNamespace
    from asmevo.emu.machine.memory import Memory
    st = _state(rng, exec_kind=exec_kind)
    mem = Memory()
    mem.add("other", 4096)
    buf = mem.add("buf", 4096, guard=256, contract=4096 - 64)
    mem.finalize()
    mem.heap[:] = rng.integers(0, 256, mem.heap.size, dtype=np.uint16).astype(np.uint8)
    st.s[4], st.s[5] = buf.base & 0xFFFFFFFF, buf.base >> 32
    offs = rng.integers(16, reach // 4, (st.nwaves, 64)).astype(np.uint64) * 4
    st.v[1] = offs.astype(np.uint32)
    st.v[2] = ((buf.base + offs) & 0xFFFFFFFF).astype(np.uint32)
    st.v[3] = np.uint32(buf.base >> 32)
    return st, SimpleNamespace(mem=mem, kernel_name="k", approx_variant=0)


@needs_cc
@pytest.mark.parametrize("text", LOADS)
def test_global_loads_from_the_heap_match_numpy(compiled, monkeypatch, text):
    """A global dword load straight from a launch's heap (native.global_load): registers as
    the numpy path leaves them; reads past the contract noted alike and faults raised
    alike (both by the numpy path, which the compiled one leaves them to)."""
    import copy
    from asmevo.emu.errors import MemoryFault
    from asmevo.emu.machine.state import Ctx
    answers = _answers(monkeypatch, "global_load")
    d = _decode(text)
    rng = np.random.default_rng(len(text) + 3)
    from asmevo.emu.machine.racecheck import Conflict, MemoryTracker
    for exec_kind, reach, waves, track in (
            ("full", 3000, np.arange(2, 9), None), ("partial", 3000, np.array([0, 3, 4, 7, 11]),
                                                    None),
            ("full", 4090, np.arange(12), None), ("full", 9000, np.arange(5), None),
            ("full", 3000, np.arange(12), "read"), ("partial", 3000, np.arange(12), "written"),
            ("full", 3000, np.arange(6), "private")):
        st, ln = _launch_state(rng, exec_kind, reach)
        if track is not None:
            ln.mem.track = MemoryTracker(ln.mem)
            buf = ln.mem.allocs[1]
            at = buf.base - 0x7F00_0000_0000 + 1024
            if track == "written":          # bytes another access wrote: a conflict
                ln.mem.track.w[at:at + 64] = ln.mem.track.wrote = True
            elif track == "private":        # the buffer counted as the private segment
                ln.mem.track.private = [(at - 1024, at + 4096)]
        out = []
        for use in (True, False):
            s, launch = copy.deepcopy((st, ln))
            c = Ctx(s, waves, launch)
            try:
                _run(d, c, use)
            except (MemoryFault, Conflict) as exc:
                out.append(f"{type(exc).__name__}: {exc}")
                continue
            out.append((s.v, launch.mem.poison_reads,
                        None if track is None else launch.mem.track.r))
        a, b = out
        if isinstance(a, str) or isinstance(b, str):
            assert a == b and (reach > 4096 or track in ("written", "private")), (text, reach)
            continue
        assert np.array_equal(a[0], b[0]) and a[1] == b[1], (text, exec_kind, reach)
        assert track is None or np.array_equal(a[2], b[2]), (text, track)
    assert 0 in answers and any(a != 0 for a in answers)
