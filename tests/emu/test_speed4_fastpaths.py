"""The speed4 round's shortcuts give what the straightforward computation gives, bit for
bit: each test runs the shortcut and a plain reference on the same data (NaNs and
special elements present and absent, partial EXEC, broadcast operands)."""
import zlib

import numpy as np
import pytest

from asmevo.emu.numerics import exact as nx


def _bits(x):
    x = np.asarray(x)
    return x.view(f"u{x.itemsize}")


def _round_sum_by_nonzero(p, c, dt):
    """round_sum as it was: the special elements by np.nonzero of the 2-D mask."""
    with np.errstate(all="ignore"):
        p = np.asarray(p, np.float64)
        c = np.asarray(c, np.float64)
        s = p + c
        special = nx._midpoint_or_tiny(s, dt)
        if not np.any(special):
            return np.asarray(s.astype(dt), dt)
        if np.ndim(s) == 0:
            return nx._round_sum_general(p, c, s, dt)
        at = np.nonzero(special)
        r = np.asarray(s.astype(dt), dt)
        r[at] = nx._round_sum_general(np.broadcast_to(p, s.shape)[at],
                                      np.broadcast_to(c, s.shape)[at], s[at], dt)
        return r


@pytest.mark.parametrize("dt", [np.float32, np.float16])
@pytest.mark.parametrize("cshape", ["full", "scalar", "column", "fortran"])
def test_round_sum_flat_indices(dt, cshape):
    rng = np.random.default_rng(11)
    w = 37
    f = np.finfo(dt)
    r = rng.standard_normal((w, 64)).astype(dt)
    mid = (r.astype(np.float64) + np.nextafter(r, dt(np.inf)).astype(np.float64)) / 2
    p = np.where(rng.random((w, 64)) < 0.3, mid, rng.standard_normal((w, 64)))
    p = np.where(rng.random((w, 64)) < 0.1, float(f.tiny) * 0.25, p)
    p = np.where(rng.random((w, 64)) < 0.05, np.nan, p)
    if cshape == "full":
        c = rng.standard_normal((w, 64)) * 2.0 ** -70
    elif cshape == "scalar":
        c = np.float64(2.0 ** -80)
    elif cshape == "column":
        c = rng.standard_normal((w, 1)) * 2.0 ** -75
    else:
        c = np.asfortranarray(rng.standard_normal((w, 64)) * 2.0 ** -70)
        p = np.asfortranarray(p)
    want = _round_sum_by_nonzero(p, c, dt)
    got = nx.round_sum(p, c, dt)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(_bits(want), _bits(got))
    # no special element: the shortcut as before
    q = rng.standard_normal((w, 64))
    assert np.array_equal(_bits(_round_sum_by_nonzero(q, q, dt)), _bits(nx.round_sum(q, q, dt)))


# -- LDS: dword forms without a shadow, and the tracker's access_dwords ----------------

import copy

from asmevo.emu.isa.decode import decode_one
from asmevo.emu.errors import MemoryFault
from asmevo.emu.machine.racecheck import Conflict, LdsTracker
from asmevo.emu.machine.state import MAX_RUNS, EXEC, Ctx, State


class _NoShadow:
    """A definedness shadow that records nothing: with it set, the LDS helpers take
    their general path (byte offsets, the tracker's access per dword)."""

    def lds_read(self, offs, size):
        pass

    def lds_write(self, offs, size):
        pass


class _RefTracker(LdsTracker):
    """The tracker's access as it was before access_dwords (the straightforward one)."""

    def access(self, st, offs, size, write):
        c = st.track_ctx
        lanes = self._lanes(st, c)
        if lanes is None:
            return
        n, sel, slots = lanes
        offs = np.asarray(offs, np.int64).reshape(-1)
        assert n == offs.size
        nd = max(1, -(-size // 4))
        if isinstance(sel, slice):      # the lanes' positions as one run
            sel = np.arange(n)[sel]
        d = offs >> 2 if sel is None else offs.take(sel) >> 2
        if nd > 1:
            d = (d[:, None] + np.arange(nd)).reshape(-1)
            s = np.repeat(slots, nd)
        else:
            s = slots
        cur = self.owner[d]
        if write:
            if ((cur != self.NONE) & (cur != s)).any():
                raise Conflict("touched")
            self.owner[d] = s
            if (self.owner[d] != s).any():
                raise Conflict("two")
            self.written[d] = True
            return
        if (self.written[d] & (cur != s)).any():
            raise Conflict("wrote")
        new = np.where((cur == self.NONE) | (cur == s), s, self.MANY)
        self.owner[d] = new
        if d.size > 1:
            back = self.owner[d]
            clash = back != new
            if clash.any():
                self.owner[d[clash]] = self.MANY


LDS_FORMS = ["ds_read_b32 v8, v1 offset:8", "ds_read_b64 v[8:9], v1", "ds_read_b96 v[8:10], v1",
             "ds_read_b128 v[8:11], v1", "ds_read_b128 v[8:11], v1 offset:16",
             "ds_read_b128 v[8:11], v1 offset:4", "ds_read_b64 v[8:9], v1 offset:8",
             "ds_read2_b32 v[8:9], v1 offset0:1 offset1:9", "ds_read2_b64 v[8:11], v1 offset1:3",
             "ds_read2st64_b32 v[8:9], v1 offset1:1", "ds_write_b32 v1, v2 offset:4",
             "ds_write_b64 v1, v[2:3]", "ds_write_b128 v1, v[2:5] offset:16",
             "ds_write_b96 v1, v[2:4]", "ds_write2_b32 v1, v2, v3 offset0:2 offset1:3",
             "ds_write2_b64 v1, v[2:3], v[4:5] offset1:1", "ds_read_u16 v8, v1"]


def _lds_state(rng, nw, lds_bytes, wpg, align, exec_kind, spread):
    st = State(nw, 16, lds_bytes, np.arange(nw) // wpg, 3)
    st.v[:] = rng.integers(0, 2 ** 32, st.v.shape, dtype=np.uint64).astype(np.uint32)
    st.lds[:] = rng.integers(0, 256, st.lds.size, dtype=np.uint16).astype(np.uint8)
    st.wave_in_wg = (np.arange(nw) % wpg).astype(np.int64)
    addr = rng.integers(0, spread, (nw, 64)) * align
    st.v[1] = addr.astype(np.uint32)
    lo = np.full(nw, 0xFFFFFFFF, np.uint32)
    hi = lo.copy()
    if exec_kind == "partial":
        lo = rng.integers(0, 2 ** 32, nw, dtype=np.uint64).astype(np.uint32)
        hi[::2] = 0
    elif exec_kind == "some-off":
        lo[1::3] = 0
        hi[1::3] = 0
    st.s[EXEC], st.s[EXEC + 1] = lo, hi
    st.refresh_exec(np.arange(nw))
    return st


def _run_form(d, st, waves, tracked, shadow, prior):
    st = copy.deepcopy(st)
    if tracked is not None:
        cls = _RefTracker if shadow else LdsTracker
        st.tracker = cls(st, tracked, max(st.lds_bytes, 4))
        for text, ws in prior:        # the same earlier accesses on both
            c = Ctx(st, ws, None)
            st.track_ctx = c
            try:
                text.fn(c)
            except (Conflict, MemoryFault):
                return st, "prior"
    st.shadow = _NoShadow() if shadow else None
    c = Ctx(st, waves, None)
    st.track_ctx = c
    try:
        d.fn(c)
    except Conflict:
        return st, "Conflict"
    except MemoryFault as exc:
        return st, f"MemoryFault {exc}"
    return st, None


def _decode(text):
    return decode_one(text, index=0, address=0, kernel=None, accum_offset=256,
                      processor="gfx942")


@pytest.mark.parametrize("form", LDS_FORMS)
def test_lds_dword_forms_match_the_general_path(form):
    d = _decode(form)
    rng = np.random.default_rng(zlib.crc32(form.encode()))   # the same trials every run
    others = [_decode(t) for t in ("ds_write_b32 v1, v2", "ds_read_b32 v9, v1 offset:4",
                                   "ds_read2_b32 v[8:9], v1 offset1:2")]
    runs = 0
    for trial in range(48):
        nw, wpg = [(8, 4), (12, 3), (6, 2)][trial % 3]
        lds_bytes = [256, 512, 1024][trial % 3]
        align = [16, 4, 8, 2][trial % 4] if "u16" in form else [16, 4, 8][trial % 3]
        spread = [lds_bytes // align // 2, lds_bytes // align + 4, 6][trial % 3]
        exec_kind = ["full", "partial", "some-off"][(trial // 3) % 3]
        st = _lds_state(rng, nw, lds_bytes, wpg, align, exec_kind, max(spread, 1))
        waves = np.arange(nw) if trial % 2 else np.sort(rng.choice(nw, nw - 2, replace=False))
        tracked = [None, rng.random(nw) < 0.6, (np.arange(nw) >= 2) & (np.arange(nw) < nw - 1),
                   np.ones(nw, bool)][trial % 4]     # none, scattered, one run, all
        prior = [(others[k], np.sort(rng.choice(nw, nw // 2, replace=False)))
                 for k in rng.integers(0, 3, trial % 3)]
        a, ea = _run_form(d, st, waves, tracked, True, prior)
        b, eb = _run_form(d, st, waves, tracked, False, prior)
        assert ea == eb, (form, trial)
        if ea is None:
            runs += 1
            assert np.array_equal(a.v, b.v) and np.array_equal(a.lds, b.lds), (form, trial)
        if tracked is not None and ea in (None, "prior"):
            assert np.array_equal(a.tracker.owner, b.tracker.owner), (form, trial)
            assert np.array_equal(a.tracker.written, b.tracker.written), (form, trial)
    assert runs >= 8, runs      # enough trials without a fault or a conflict


# -- the NaN rule: in place, no gather of the result where only its shape counts ---------

from asmevo.emu.numerics import approx
from asmevo.emu.numerics.fpmode import _QUIET, quiet
from asmevo.emu.isa import valu


def _ref_nan_rule(res, nan, inputs, variant, opcode):
    """nan_rule as it was (np.where per operand)."""
    ui = approx._UINT[res.dtype.itemsize]
    same = [approx._shaped(x, res.shape) for x in inputs if np.asarray(x).dtype == res.dtype]
    if len(same) != len(inputs):
        if nan is None:
            nan = np.ones(res.shape, bool)
        if len(inputs) == 1:
            src = approx._shaped(inputs[0], res.shape)
            return np.where(nan & np.isnan(src), approx.convert_nan(src, res.dtype),
                            np.where(nan, quiet(res), res))
        return np.where(nan, quiet(res), res)
    d = approx._DEFAULT_NAN[res.dtype.itemsize]
    out = np.full(res.shape, d, ui).view(res.dtype) if nan is None else \
        np.where(nan, np.array(d, ui).view(res.dtype), res)
    nans = [np.isnan(x) for x in same]
    chosen = None
    if variant and sum(1 for m in nans if m.any()) >= 2:
        h = approx.element_hash(variant, opcode, *same)
        count = np.sum(nans, axis=0)
        pick = (h % np.maximum(count, 1).astype(np.uint64)).astype(np.int64)
        chosen = np.full(res.shape, -1, np.int64)
        seen = np.zeros(res.shape, np.int64)
        for i, m in enumerate(nans):
            chosen = np.where(m & (seen == pick) & (chosen < 0), i, chosen)
            seen = seen + m
    q = _QUIET[res.dtype.itemsize]
    bits = out.view(ui)
    for i in range(len(same) - 1, -1, -1):
        sel = nans[i] if chosen is None else chosen == i
        if nan is not None:
            sel = sel & nan
        bits = np.where(sel, same[i].view(ui) | q, bits)
    return bits.astype(ui, copy=False).view(res.dtype)


def _ref_nan_result(res, inputs, variant, opcode, mask=None):
    """nan_result by the straightforward rule on every element (no gathers)."""
    res = np.asarray(res)
    nan = np.isnan(res)
    if mask is not None and mask.shape == nan.shape:
        nan &= mask
    if not nan.any():
        return res
    return _ref_nan_rule(res, nan, inputs, variant, opcode)


def _operands(rng, shape, dt, frac, n):
    ui = approx._UINT[np.dtype(dt).itemsize]
    xs = []
    for k in range(n):
        x = rng.standard_normal(shape).astype(dt)
        pick = rng.random(shape)
        with np.errstate(invalid="ignore"):
            default_nan = dt(np.inf) - dt(np.inf)
        x = np.where(pick < frac, default_nan, x)                          # default NaNs
        payload = rng.integers(1, 1 << 8, shape).astype(ui)
        sig = (np.array(dt(np.inf)).view(ui) | payload).view(dt)           # signalling
        x = np.where((pick > 1 - frac / 2), sig, x)
        x = np.where(pick > 1 - frac / 4, -np.abs(sig), x)
        xs.append(x.astype(dt))
    return xs


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("nops", [1, 2, 3])
def test_nan_result_matches_the_straightforward_rule(dt, nops):
    rng = np.random.default_rng(7 + nops)
    shape = (23, 64)
    key = approx.opcode_key("v_test")
    for frac in (0.0, 0.02, 0.3, 0.8):
        xs = _operands(rng, shape, dt, frac, nops)
        if nops >= 2 and frac:
            xs[1] = dt(np.nan) if frac < 0.5 else np.asarray(xs[1][0, :1])   # broadcast
        with np.errstate(all="ignore"):
            res = np.asarray(sum(np.asarray(x, dt) for x in xs), dt) if nops > 1 else \
                np.sqrt(xs[0] * dt(-1) ** rng.integers(0, 2, shape)).astype(dt)
        for mask in (None, rng.random(shape) < 0.7):
            for variant in (0, 1, 2):
                want = _ref_nan_result(res, xs, variant, key, mask)
                got = approx.nan_result(res, xs, variant, key, mask=mask)
                keep = np.ones(shape, bool) if mask is None else mask
                assert np.array_equal(_bits(want)[keep], _bits(got)[keep]), (frac, variant)


def test_nan_result_conversion_and_scalar():
    rng = np.random.default_rng(3)
    x = _operands(rng, (9, 64), np.float32, 0.3, 1)[0]
    with np.errstate(all="ignore"):
        res = x.astype(np.float16)
    for variant in (0, 1):
        want = _ref_nan_result(res, [x], variant, 5)
        got = approx.nan_result(res, [x], variant, 5)
        assert np.array_equal(_bits(want), _bits(got))
    s = np.asarray(np.float32(np.nan))
    assert np.array_equal(_bits(_ref_nan_result(s, [s, s], 1, 5)),
                          _bits(approx.nan_result(s, [s, s], 1, 5)))


@pytest.mark.parametrize("which", ["0-2", "0-1", "only 1", "1-2", "three ops", "scalar op",
                                   "conversion"])
def test_nan_by_member_matches_member_by_member(which):
    rng = np.random.default_rng(9)
    shape = (30, 64)
    key = approx.opcode_key("v_add_f32")
    members = {"0-2": np.sort(rng.integers(0, 3, 30)), "0-1": np.repeat([0, 1], 15),
               "only 1": np.ones(30, np.int64), "1-2": np.repeat([1, 2], 15)}.get(
                   which, np.sort(rng.integers(0, 2, 30)))
    for frac in (0.0, 0.05, 0.4, 0.9):
        nops = 3 if which == "three ops" else 2
        xs = _operands(rng, shape, np.float32, frac, nops)
        if which == "scalar op":
            xs[1] = np.asarray(np.float32(np.nan) if frac > 0.3 else np.float32(2.0))
        with np.errstate(all="ignore"):
            res = sum(xs[1:], xs[0]).astype(np.float32)
        if which == "conversion":
            xs = [x.astype(np.float16) for x in xs]
        for mask in (None, rng.random(shape) < 0.6):
            got = approx.nan_by_member(res, xs, members, key, mask)
            want = np.array(res)
            for m in np.unique(members):
                rows = members == m
                want[rows] = _ref_nan_result(res[rows], [np.broadcast_to(x, shape)[rows]
                                                         for x in xs], int(m), key,
                                             None if mask is None else mask[rows])
            keep = np.ones(shape, bool) if mask is None else mask
            assert np.array_equal(_bits(want)[keep], _bits(got)[keep]), frac


# -- scalar loads: all dwords in one gather and one row write below EXEC ----------------

from tests.emu.asmdsl import run_asm


def test_scalar_loads_all_widths_and_a_partial_buffer_range():
    data = (np.arange(64, dtype=np.uint32) * np.uint32(0x01010101)) ^ np.uint32(0xA5A5A5A5)
    body = """
    s_load_dwordx2 s[4:5], s[0:1], 0x0
    s_waitcnt lgkmcnt(0)
    s_load_dword s6, s[4:5], 0x8
    s_load_dwordx2 s[8:9], s[4:5], 0xc
    s_load_dwordx4 s[12:15], s[4:5], 0x14
    s_load_dwordx8 s[16:23], s[4:5], 0x40
    s_load_dwordx16 s[24:39], s[4:5], 0x60
    s_load_dwordx2 vcc, s[4:5], 0x4
    s_mov_b32 s40, s4
    s_mov_b32 s41, s5
    s_mul_i32 s42, s2, 32
    s_mov_b32 s43, 0
    s_buffer_load_dwordx4 s[44:47], s[40:43], 0x8
    s_waitcnt lgkmcnt(0)
    """
    o = run_asm(body, buffers={"b": data.copy()}, grid=2)
    for w in range(2):
        assert o.s(6, w) == data[2]
        assert [o.s(r, w) for r in (8, 9)] == list(data[3:5])
        assert [o.s(r, w) for r in range(12, 16)] == list(data[5:9])
        assert [o.s(r, w) for r in range(16, 24)] == list(data[16:24])
        assert [o.s(r, w) for r in range(24, 40)] == list(data[24:40])
        assert [o.s(r, w) for r in (106, 107)] == list(data[1:3])
    # workgroup 0's V# has no records (its load reads 0), workgroup 1's 32 bytes
    assert [o.s(r, 0) for r in range(44, 48)] == [0, 0, 0, 0]
    assert [o.s(r, 1) for r in range(44, 48)] == list(data[2:6])


def test_memory_check_alignment_fault_names_the_first_misaligned_lane():
    from asmevo.emu.machine.memory import HEAP_BASE
    buf = np.zeros(64, np.uint32)
    body = """
    s_load_dwordx2 s[4:5], s[0:1], 0x0
    s_waitcnt lgkmcnt(0)
    global_load_dword v2, v1, s[4:5]
    s_waitcnt vmcnt(0)
    """
    off = np.arange(64, dtype=np.uint32) * 4
    off[37] += 2
    off[41] += 1
    with pytest.raises(MemoryFault) as e:
        run_asm(body, v={1: off}, buffers={"b": buf})
    assert "misaligned 4-byte load" in str(e.value)
    assert e.value.byte_address % 4 == 2          # lane 37's, the first one


def test_midpoint_or_tiny_on_bits_matches_float_comparisons():
    rng = np.random.default_rng(21)
    for dt in (np.float32, np.float16):
        f = np.finfo(dt)
        r = rng.standard_normal(5000).astype(dt)
        mid = (r.astype(np.float64) + np.nextafter(r, dt(np.inf)).astype(np.float64)) / 2
        vals = np.concatenate([mid, rng.standard_normal(5000) * 2.0 ** rng.integers(-160, 160, 5000),
                               [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, float(f.tiny),
                                -float(f.tiny), np.nextafter(float(f.tiny), 0),
                                -np.nextafter(float(f.tiny), 0), 5e-324, -5e-324,
                                float(f.max) * 2, float(f.smallest_subnormal)]])
        with np.errstate(all="ignore"):
            shift = 52 - f.nmant
            low = vals.view(np.uint64) & np.uint64((1 << shift) - 1)
            tiny = (np.abs(vals) < f.tiny) & (vals != 0)
            want = (low == np.uint64(1 << (shift - 1))) | tiny
        got = nx._midpoint_or_tiny(vals, dt)
        assert np.array_equal(want, got)
        assert got[:5000].any() and got[-14:].any()
        assert np.array_equal(want[:10000].reshape(100, -1),
                              nx._midpoint_or_tiny(vals[:10000].reshape(100, -1), dt))
        assert bool(nx._midpoint_or_tiny(np.float64(vals[0]), dt)) == bool(want[0])


# -- the global-memory tracker: private-segment test on lane offsets, reads before writes --

from types import SimpleNamespace

from asmevo.emu.machine.memory import HEAP_BASE
from asmevo.emu.machine.racecheck import MemoryTracker


class _RefMemoryTracker(MemoryTracker):
    """The rule one byte at a time in plain Python: the oracle the numpy path matches."""

    def __call__(self, offs, size, write):
        addrs = [int(o) + k for o in np.asarray(offs, np.int64).reshape(-1) for k in range(size)]
        if any(lo <= a < hi for a in addrs for lo, hi in self.private):
            raise Conflict("private")
        if write and (len(set(addrs)) != len(addrs) or any(self.w[a] or self.r[a] for a in addrs)):
            raise Conflict("a byte written twice, or written where it was accessed")
        if not write and any(self.w[a] for a in addrs):
            raise Conflict("a byte read after a write")
        for a in addrs:
            (self.w if write else self.r)[a] = True


def test_memory_tracker_matches_the_byte_by_byte_one():
    rng = np.random.default_rng(17)
    alloc = lambda name, lo, hi: SimpleNamespace(name=name, start=HEAP_BASE + lo,
                                                 end=HEAP_BASE + hi)
    for trial in range(300):
        allocs = [alloc("a", 0, 300), alloc("private segment", 300, 340), alloc("b", 340, 600)]
        if trial % 3 == 0:
            allocs = allocs[:1]
        mem = SimpleNamespace(heap=np.zeros(640, np.uint8), allocs=allocs)
        ref, new = _RefMemoryTracker(mem), MemoryTracker(mem)
        for step in range(6):
            size = int(rng.choice([1, 2, 4, 8, 16]))
            n = int(rng.integers(1, 20))
            lo = int(rng.choice([0, 280, 330, 340]))
            offs = np.sort(rng.integers(lo, lo + 60, n)) if step % 2 else \
                rng.integers(0, 620, n)
            write = bool(rng.random() < 0.3)
            outcome = []
            for t in (ref, new):
                try:
                    t(offs, size, write)
                    outcome.append(None)
                except Conflict:
                    outcome.append("Conflict")
            assert outcome[0] == outcome[1], (trial, step)
            if outcome[0]:
                break
            assert np.array_equal(ref.r, new.r) and np.array_equal(ref.w, new.w)


def test_exec_moved_sees_any_change_of_a_wave_exec_word():
    from asmevo.emu.run.batch import _exec_moved, _exec_words
    st = State(6, 4, 64, np.arange(6) // 2, 3)
    st.s[EXEC], st.s[EXEC + 1] = 0xFFFFFFFF, 0x0000FFFF
    st.refresh_exec(np.arange(6))
    for waves in (np.arange(6), np.array([0, 2, 5])):
        c = Ctx(st, waves, None)
        before = _exec_words(c)
        assert not _exec_moved(c, before)
        st.s[EXEC + 1, 4] ^= 1           # another wave's word, or one of c's
        assert _exec_moved(c, before) == (4 in waves)
        st.s[EXEC + 1, 4] ^= 1
        st.s[EXEC, waves[-1]] = 0        # one of c's: seen through a slice's view too
        assert _exec_moved(c, before)
        st.s[EXEC, waves[-1]] = 0xFFFFFFFF
        assert not _exec_moved(c, before)


def _ref_fma32(a, b, c, scale=0):
    a = np.asarray(a, np.float32).astype(np.float64)
    b = np.asarray(b, np.float32).astype(np.float64)
    c = np.asarray(c, np.float32).astype(np.float64)
    with np.errstate(all="ignore"):
        p = a * b
        if scale:
            k = 2.0 ** scale
            p, c = p * k, c * k
        return _round_sum_by_nonzero(p, c, np.float32)


@pytest.mark.parametrize("shapes", [("full", "full", "full"), ("scalar", "full", "full"),
                                    ("full", "scalar", "column"), ("scalar", "scalar", "full"),
                                    ("column", "full", "scalar"), ("scalar", "scalar", "scalar")])
@pytest.mark.parametrize("scale", [0, 2, -3])
def test_fma32_in_place_product_matches(shapes, scale):
    rng = np.random.default_rng(5 + scale)
    w = 29

    def make(kind):
        x = (rng.standard_normal((w, 64)) * 2.0 ** rng.integers(-70, 70, (w, 64))).astype(np.float32)
        x[rng.random((w, 64)) < 0.05] = np.nan
        x[rng.random((w, 64)) < 0.03] = np.inf
        x[rng.random((w, 64)) < 0.05] = np.float32(1e-40)
        if kind == "scalar":
            return np.float32(x[0, 0] if np.isfinite(x[0, 0]) else 1.5)
        if kind == "column":
            return x[:, :1].copy()
        return x
    r = rng.standard_normal((w, 64)).astype(np.float32)
    mid_c = ((r.astype(np.float64) + np.nextafter(r, np.float32(np.inf)).astype(np.float64)) / 2
             - 1.0).astype(np.float32)
    a, b, c = (make(k) for k in shapes)
    for cc in (c, mid_c if shapes[2] == "full" else c):
        want = _ref_fma32(a, b, cc, scale)
        got = nx.fma32(a, b, cc, scale)
        assert np.shape(want) == np.shape(got)
        assert np.array_equal(_bits(want), _bits(got))


def test_round_sum_takes_a_float32_addend_like_its_float64():
    rng = np.random.default_rng(2)
    p = rng.standard_normal((17, 64)) * 2.0 ** -100
    c = (rng.standard_normal((17, 64)) * 2.0 ** -126).astype(np.float32)
    c[3, 5] = np.float32(1e-45)
    for dt in (np.float32, np.float16):
        want = _round_sum_by_nonzero(p, c.astype(np.float64), dt)
        assert np.array_equal(_bits(want), _bits(nx.round_sum(p, c, dt)))
        s = nx.round_sum(np.float64(p[0, 0]), np.float32(c[0, 0]), dt)
        assert _bits(s) == _bits(_round_sum_by_nonzero(np.float64(p[0, 0]),
                                                       np.float64(c[0, 0]), dt))


def test_ctx_views_of_registers_and_exec_match_fancy_indexing():
    rng = np.random.default_rng(4)
    st = State(10, 6, 64, np.arange(10) // 2, 3)
    st.v[:] = rng.integers(0, 2 ** 32, st.v.shape, dtype=np.uint64).astype(np.uint32)
    st.s[EXEC] = rng.integers(0, 2 ** 32, 10, dtype=np.uint64).astype(np.uint32)
    st.s[EXEC + 1] = 0xFFFFFFFF
    st.s[EXEC, 3] = 0xFFFFFFFF
    st.refresh_exec(np.arange(10))
    for waves in (np.array([1, 3, 4, 8]), np.arange(2, 6), np.array([3])):
        c = Ctx(st, waves, None)
        assert c.lanes == int(st.nactive[waves].sum())
        assert (c.mask is None) == bool(st.exec_full[waves].all())
        if c.mask is not None:
            assert np.array_equal(c.mask, st.execmask[waves]) and c.mask.dtype == bool
        assert np.array_equal(c.vr(2), st.v[2, waves])
        want = st.v[2, waves].astype(np.uint64) | (st.v[3, waves].astype(np.uint64) << 32)
        assert np.array_equal(c.vr64(2), want)
        new = rng.integers(0, 2 ** 32, (waves.size, 64), dtype=np.uint64).astype(np.uint32)
        before = st.v[5].copy()
        c.vw(5, new)
        m = np.ones((waves.size, 64), bool) if c.mask is None else c.mask
        expect = before.copy()
        expect[waves] = np.where(m, new, before[waves])
        assert np.array_equal(st.v[5], expect)


@pytest.mark.parametrize("waves", [[0, 1, 2, 5, 6, 9], [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21],
                                   [4, 5, 6, 7, 20]])
@pytest.mark.parametrize("exec_kind", ["full", "partial"])
@pytest.mark.parametrize("val_kind", ["u32", "int64", "float32", "view", "column", "scalar"])
def test_vw_through_wave_runs_matches_the_fancy_index(waves, exec_kind, val_kind):
    """A write to a few runs of waves (slices of the register file) leaves the file as a
    fancy-indexed write does: every dtype, mask and shape of value, a value that is a
    view of the register written, and more runs than MAX_RUNS (the fancy index)."""
    rng = np.random.default_rng(len(waves) + len(val_kind))
    n = 24
    st = State(n, 6, 64, np.arange(n) // 2, 3)
    st.v[:] = rng.integers(0, 2 ** 32, st.v.shape, dtype=np.uint64).astype(np.uint32)
    st.s[EXEC] = 0xFFFFFFFF
    st.s[EXEC + 1] = 0xFFFFFFFF
    if exec_kind == "partial":
        st.s[EXEC, 5] = 0x0000FFFF
        st.s[EXEC + 1, 1::4] = 0
    st.refresh_exec(np.arange(n))
    waves = np.array(waves)
    c = Ctx(st, waves, None)
    assert (c.runs is None) == (np.count_nonzero(np.diff(waves) != 1) + 1 > MAX_RUNS)
    shape = (waves.size, 64)
    val = {"u32": lambda: rng.integers(0, 2 ** 32, shape, dtype=np.uint64).astype(np.uint32),
           "int64": lambda: rng.integers(-2 ** 40, 2 ** 40, shape),
           "float32": lambda: np.abs(rng.standard_normal(shape)).astype(np.float32) * 1e6,
           "view": lambda: st.v[5, waves[0]:waves[0] + waves.size],
           "column": lambda: rng.integers(0, 2 ** 32, (waves.size, 1), dtype=np.uint64)
           .astype(np.uint32),
           "scalar": lambda: np.uint32(0xDEADBEEF)}[val_kind]()
    before = st.v.copy()
    m = np.ones(shape, bool) if c.mask is None else c.mask
    expect = before.copy()
    with np.errstate(all="ignore"):
        expect[5, waves] = np.where(m, np.asarray(val).copy(), before[5, waves])
        c.vw(5, val)
    assert np.array_equal(st.v, expect)


class _MixedCtx(Ctx):
    """A Ctx over waves of several approximate members, as asmevo.emu.run.batch makes one."""

    __slots__ = ("members",)


class _NoVariant:
    """A launch shared by several members: reading its approx_variant is an error."""

    kernel_name = None

    def __getattr__(self, name):
        raise AssertionError(f"read {name!r} of a launch shared by several members")


class _Member:
    kernel_name = None

    def __init__(self, variant):
        self.approx_variant = variant


@pytest.mark.parametrize("text", ["v_pk_mul_f32 v[4:5], v[0:1], v[2:3]",
                                  "v_pk_add_f32 v[4:5], v[0:1], v[2:3] op_sel:[1,0]",
                                  "v_pk_fma_f32 v[4:5], v[0:1], v[2:3], v[6:7]"])
def test_packed_f32_on_waves_of_several_members_matches_member_by_member(text):
    """v_pk_*_f32 runs once on waves of several members (each wave's member's NaN choice)
    and writes what it writes run member by member, each with its own approx_variant:
    NaN operands in one, two and three sources, partial EXEC."""
    d = _decode(text)
    assert not d.variant        # the batch runs it on mixed waves as one
    rng = np.random.default_rng(len(text))
    n = 12
    members = np.repeat([0, 1, 2], 4)
    for frac in (0.0, 0.3, 0.8):
        st = State(n, 8, 64, np.arange(n) // 2, 0xF0)
        for r, x in enumerate(_operands(rng, (8, n, 64), np.float32, frac, 1)[0]):
            st.v[r] = x.view(np.uint32)
        st.s[EXEC] = 0xFFFFFFFF
        st.s[EXEC + 1] = 0xFFFFFFFF
        st.s[EXEC, 3] = 0x00FF00FF
        st.refresh_exec(np.arange(n))
        want = copy.deepcopy(st)
        c = _MixedCtx(st, np.arange(n), _NoVariant())
        c.members = members
        d.fn(c)
        for m in (0, 1, 2):
            d.fn(Ctx(want, np.flatnonzero(members == m), _Member(m)))
        assert np.array_equal(st.v, want.v), frac
