"""The emulator's compiled rows: ``native.c``, built once per machine, checked against
the numpy path, then used by the rows it covers.

Float32 add, subtract, multiply and fused multiply-add, with the NaN rule of
:mod:`asmevo.emu.numerics.approx` (first NaN operand quieted; a member's hash-picked one
where several are; the default NaN where none is), are most of a compiled
kernel's float work and cost the numpy path about ten passes over a cluster's
lanes each (the operation, then finding, gathering and fixing its NaNs). The C
file does each in one vectorized pass. It is exact where numpy is: IEEE
single-precision operations in round-to-nearest, fma rounded once (the CPU's FMA
instruction, else libm's correctly rounded ``fmaf``), built with
``-ffp-contract=off`` so nothing is fused that the ISA does not fuse.

Where a group's waves are not one run of the batch's waves, numpy must gather every
operand and scatter every result; so the common rows also run straight on the
register file (:func:`regs`, :func:`int_regs`: float and integer rows of VGPR, SGPR
and constant sources), and so do LDS dword reads and writes with the race tracker's
note (:func:`lds`) and global dword loads from a launch's heap (:func:`global_load`),
each only where the numpy path would take its plain course (anything else, a fault
or a note included, is left to it).

:func:`library` builds it with the machine's C compiler (``CC``, else cc, gcc, clang
or clang-19) into the cache folder (``ASMEVO_CACHE_DIR/native``, keyed by the source,
the compiler and the flags), loads it with ctypes and runs :func:`self_test`: every
operation on every pair (and fma triple) of float32 edge values (zeros,
subnormals, the smallest and largest normals, infinities, quiet and signalling
NaNs with payloads, values whose sum or product rounds at a tie) and on random
bits, under the NaN rule's members 0 and 3 and per-row members, bit for bit
against the numpy path, and every register, integer and LDS function on a random
state. A machine without a compiler, a build that fails, or one answer that differs
leaves the numpy path alone in use (``ASMEVO_NATIVE=0`` asks for that). The float
rows (:mod:`asmevo.emu.isa.valu`, :mod:`asmevo.emu.isa.packed`) use it only where the mode
asks for nothing else: IEEE mode, float32 denormals kept on input and output, no
clamp or output modifier.
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import weakref
from pathlib import Path

import numpy as np

from asmevo import knobs
from asmevo.memo import Memo
from asmevo.emu.machine.memory import HEAP_BASE

SOURCE = Path(__file__).with_name("native.c")
FLAGS = ("-O3", "-std=c99", "-fPIC", "-shared", "-ffp-contract=off", "-fno-fast-math",
         "-fno-strict-aliasing")
BUILD_TIMEOUT = 120.0
COMPILERS = ("cc", "gcc", "clang", "clang-19")    # tried in order where CC names none

# operation codes of native.c, by the row they stand in for
ADD, SUB, SUBREV, MUL, FMA = range(5)
ROWS = {"v_add_f32": ADD, "v_sub_f32": SUB, "v_subrev_f32": SUBREV, "v_mul_f32": MUL,
        "v_fma_f32": FMA, "v_pk_add_f32": ADD, "v_pk_mul_f32": MUL, "v_pk_fma_f32": FMA}
# integer rows (asmevo_int_regs), by name: (operation, which sources are 64-bit)
INT_ROWS = {name: (i, wide) for i, (name, wide) in enumerate((
    ("v_add_u32", ()), ("v_sub_u32", ()), ("v_subrev_u32", ()), ("v_add3_u32", ()),
    ("v_lshl_add_u32", ()), ("v_lshl_or_b32", ()), ("v_and_or_b32", ()), ("v_or3_b32", ()),
    ("v_and_b32", ()), ("v_or_b32", ()), ("v_xor_b32", ()), ("v_lshlrev_b32", ()),
    ("v_lshrrev_b32", ()), ("v_ashrrev_i32", ()), ("v_mov_b32", ()),
    ("v_lshl_add_u64", (0, 2)), ("v_lshlrev_b64", (1,))))}
_THREE = {"v_add3_u32", "v_lshl_add_u32", "v_lshl_or_b32", "v_and_or_b32", "v_or3_b32",
          "v_lshl_add_u64"}          # the integer rows of three sources
U32 = np.uint32

_STATE: dict = {}       # "lib": the checked library or None, once this process has decided
_I64, _P = ctypes.c_int64, ctypes.c_void_p


def library():
    """The checked library, or None (``ASMEVO_NATIVE=0``, no compiler, a failed build or
    self-test): decided once per process, before any fork that inherits it."""
    try:
        return _STATE["lib"]
    except KeyError:
        pass
    _STATE["lib"] = None
    if not knobs.native():
        _STATE["why"] = "ASMEVO_NATIVE=0"
        return None
    try:
        lib = _load()
        _STATE["lib"] = lib if lib is not None and self_test(lib) else None
    except (OSError, ValueError, AttributeError, subprocess.SubprocessError) as exc:
        _STATE["why"] = f"the native build does not load: {exc}"
    return _STATE["lib"]


@contextlib.contextmanager
def disabled():
    """This process takes the numpy path inside the block (a comparison of the two)."""
    saved = library()
    _STATE["lib"] = None
    try:
        yield
    finally:
        _STATE["lib"] = saved


def status() -> str:
    """A line saying which float32 path the emulator takes here, and why."""
    if library() is not None:
        return f"native ({_STATE.get('path')})"
    return f"numpy ({_STATE.get('why', 'the native build failed its self-test')})"


def _compiler() -> str | None:
    named = knobs.c_compiler()
    if named:
        return shutil.which(named)
    return next((p for p in map(shutil.which, COMPILERS) if p), None)


def _load():
    from asmevo.process import run_tool
    cc = _compiler()
    if cc is None:
        _STATE["why"] = f"no C compiler (CC, {', '.join(COMPILERS)})"
        return None
    st = os.stat(cc)
    key = hashlib.sha256(b"\0".join([SOURCE.read_bytes(), os.path.realpath(cc).encode(),
                                     f"{st.st_size}:{st.st_mtime_ns}".encode(),
                                     " ".join(FLAGS).encode()])).hexdigest()[:24]
    path = knobs.cache_dir() / "native" / f"f32-{key}.so"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=path.parent)
        os.close(fd)
        try:
            got = run_tool([cc, *FLAGS, "-o", tmp, str(SOURCE), "-lm"], timeout=BUILD_TIMEOUT)
            if got.returncode != 0:
                _STATE["why"] = f"{cc} failed: {got.stderr.decode(errors='replace')[:200]}"
                return None
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    lib = ctypes.CDLL(str(path))
    fn = lib.asmevo_f32_arith
    fn.argtypes = [ctypes.c_int, _I64, _I64, _P, _I64, _I64, _P, _I64, _I64, _P, _I64, _I64,
                   _P, _P, _I64, ctypes.c_uint32]
    fn.restype = ctypes.c_int
    fn = lib.asmevo_f32_regs
    fn.argtypes = [ctypes.c_int, _I64, _P, _I64, _P, _I64, _P, _I64, ctypes.c_int, _I64,
                   ctypes.c_int, _I64, ctypes.c_int, _I64, _I64, _P, _P, _I64, ctypes.c_uint32]
    fn.restype = ctypes.c_int
    fn = lib.asmevo_global_load
    fn.argtypes = [_I64, _P, _I64, _P, _I64, _P, _I64, _P, _I64, _I64, ctypes.c_uint64, _I64,
                   _I64, _P, ctypes.c_uint64, _P, _I64, _P, _P, ctypes.c_int, _P, _I64]
    fn.restype = ctypes.c_int
    fn = lib.asmevo_int_regs
    fn.argtypes = [ctypes.c_int, _I64, _P, _I64, _P, _I64, _P, _I64, ctypes.c_int, _I64,
                   ctypes.c_int, _I64, ctypes.c_int, _I64, _I64, _P]
    fn.restype = ctypes.c_int
    for fn in (lib.asmevo_lds_read, lib.asmevo_lds_write):
        data = [_I64] if fn is lib.asmevo_lds_read else [_I64, _I64]
        fn.argtypes = [_I64, _P, _I64, _P, _I64, _I64, _P, ctypes.c_int, _I64, _I64, _I64, _I64,
                       _I64, _P, _I64, _P, *data, _I64, _P, _P, _P, _P]
        fn.restype = ctypes.c_int
    _STATE["path"] = str(path)
    return lib


def arith(lib, op: int, args: list, variant: int, members, opcode: int):
    """``op`` on the float32 operands ``args`` (2 or 3, broadcast to one 2-D shape) with
    the NaN rule of member ``variant``, or of member ``members[i]`` for row ``i``
    (``members`` not None): a float32 array, or None where the operands are not float32
    arrays of one 2-D shape (the caller then takes the numpy path)."""
    if len(args) != (3 if op == FMA else 2):
        return None
    views = [a if type(a) is np.ndarray else np.asarray(a) for a in args]
    if any(a.dtype != np.float32 for a in views):
        return None
    shape = views[0].shape
    if any(a.shape != shape for a in views):
        try:
            shape = np.broadcast_shapes(*(a.shape for a in views))
        except ValueError:
            return None
        views = [a if a.shape == shape else np.broadcast_to(a, shape) for a in views]
    if len(shape) != 2 or 0 in shape:
        return None
    rows = None
    if members is not None:
        rows = members if members.dtype == np.int64 and members.flags.c_contiguous else \
            np.ascontiguousarray(members, np.int64)
        if rows.shape != (shape[0],):
            return None
    st = []
    for a in views:
        s0, s1 = a.strides
        if s0 % 4 or s1 % 4:
            return None
        st.append((a.ctypes.data, s0 // 4, s1 // 4))
    if len(st) == 2:
        st.append((st[0][0], 0, 0))      # unread
    out = np.empty(shape, np.float32)
    (pa, ar, ac), (pb, br, bc), (pc, cr, cc) = st
    lib.asmevo_f32_arith(op, shape[0], shape[1], pa, ar, ac, pb, br, bc, pc, cr, cc,
                         out.ctypes.data, None if rows is None else rows.ctypes.data,
                         int(variant), int(opcode) & 0xFFFFFFFF)
    return out


# -- on the register file -----------------------------------------------------------------

# id(array) -> (a weak reference to it, its data address)
_POINTERS: Memo[tuple] = Memo("emu.native.pointers", 257)


def _at(a: np.ndarray) -> int:
    """``a.ctypes.data``, kept for the arrays a pass reads on every instruction (its
    register file, LDS, ...): the lookup costs a tenth of asking numpy. Weak: a kept
    address never keeps its array alive, and a dead one's id is asked again."""
    got = _POINTERS.get(id(a))
    if got is None or got[0]() is not a:
        got = _POINTERS.put(id(a), (weakref.ref(a), a.ctypes.data))
    return got[1]


def _group(c):
    """(the address of its waves or None, first wave, of its EXEC mask or None) of a
    Ctx, and the arrays they point into (kept alive by the caller for the call)."""
    idx = c.idx
    if isinstance(idx, slice):
        waves, w0 = None, idx.start
    else:
        waves, w0 = c.waves, 0
        if waves.dtype != np.int64 or not waves.flags.c_contiguous:
            waves = np.ascontiguousarray(waves, np.int64)
    mask = c.mask
    if mask is not None and not mask.flags.c_contiguous:
        mask = np.ascontiguousarray(mask)
    return (None if waves is None else waves.ctypes.data, w0,
            None if mask is None else mask.ctypes.data, (waves, mask))


def _laid_out(st) -> bool:
    """Whether the state's register files are the C-ordered arrays native.c indexes."""
    v, s = st.v, st.s
    return v.dtype == np.uint32 and v.flags.c_contiguous and v.ndim == 3 and \
        v.shape[2] == 64 and s.dtype == np.uint32 and s.flags.c_contiguous and \
        s.shape[1:] == v.shape[1:2]


def regs(lib, op: int, c, kinds: tuple, operands: tuple, dst: int, variant: int, members,
         opcode: int) -> bool:
    """:func:`arith` of a float row read from and written to the register file of
    ``c``'s waves, EXEC lanes only (what ``c.vw(dst, arith(...))`` writes): source k is
    VGPR ``operands[k]`` (``kinds[k]`` 0), SGPR ``operands[k]`` (1) or the constant bits
    ``operands[k]`` (2). False (nothing written) where the state is not laid out for it."""
    st = c.st
    if not _laid_out(st):
        return False
    waves, w0, mask, keep = _group(c)
    rows = None
    if members is not None:
        rows = members if members.dtype == np.int64 and members.flags.c_contiguous else \
            np.ascontiguousarray(members, np.int64)
        if rows.shape != (c.w,):
            return False
    nw = st.v.shape[1]
    lib.asmevo_f32_regs(op, c.w, waves, w0, _at(st.v), nw * 64, _at(st.s), nw,
                        *_sources(kinds, operands), dst, mask,
                        None if rows is None else rows.ctypes.data, int(variant),
                        int(opcode) & 0xFFFFFFFF)
    return True


def _sources(kinds: tuple, operands: tuple) -> list:
    """native.c's three (kind, operand) source arguments: missing ones a constant 0, a
    64-bit constant's bits as the signed int64 ctypes passes."""
    out = []
    for k, r in zip(kinds + (2,) * (3 - len(kinds)), operands + (0,) * (3 - len(operands))):
        out += [k, r - (1 << 64) if r >= 1 << 63 else r]
    return out


def int_regs(lib, op: int, c, kinds: tuple, operands: tuple, dst: int) -> bool:
    """An integer row (:data:`INT_ROWS`) read from and written to the register file of
    ``c``'s waves, EXEC lanes only, as :func:`regs` (a 64-bit source: a register pair or
    the 64-bit constant; a 64-bit result: ``dst`` and ``dst + 1``)."""
    st = c.st
    if not _laid_out(st):
        return False
    waves, w0, mask, keep = _group(c)
    nw = st.v.shape[1]
    lib.asmevo_int_regs(op, c.w, waves, w0, _at(st.v), nw * 64, _at(st.s), nw,
                        *_sources(kinds, operands), dst, mask)
    return True


# id(a memory's starts) -> (a weak reference to them, its bounds)
_BOUNDS: Memo[tuple] = Memo("emu.native.bounds", 65)


def _bounds(mem) -> np.ndarray:
    """A laid-out Memory's allocations as native.c reads them: (start, end, contract
    start, contract end) each, kept per layout (copies of a launch share its arrays)."""
    key = mem._starts
    got = _BOUNDS.get(id(key))
    if got is None or got[0]() is not key:
        b = np.array([[a.start, a.end, lo, hi] for a, lo, hi in
                      zip(mem.allocs, mem._clo, mem._chi)], np.uint64).reshape(-1)
        got = _BOUNDS.put(id(key), (weakref.ref(key), b))
    return got[1]


def global_load(lib, c, vaddr: int, saddr: int, offset: int, ndw: int, dst: int) -> int:
    """A global_load_dword[xN] of one launch's waves (``c.launch``) straight from its heap
    into the register file (see native.c): VGPR ``vaddr`` + SGPR pair ``saddr`` (or the
    VGPR pair ``vaddr`` where ``saddr`` < 0) + ``offset``; a serial launch's memory
    tracker notes it first. 0: done; 1: the numpy path must run (a fault, a read outside
    a buffer's contract (it is noted), lanes in two allocations, a memory that watches
    its reads, a state not laid out); 2 or 3: the tracker's conflict (the private
    segment; a byte written before)."""
    mem = c.launch.mem
    if mem.watch is not None or not _laid_out(c.st) or mem.heap is None or \
            mem.heap.size % 4:
        return 1
    tr = mem.track
    track = (None, None, 0, None, 0)
    if tr is not None:
        r, w = tr.r, tr.w           # a racecheck.MemoryTracker: its byte maps
        if not (r.dtype == w.dtype == np.bool_ and r.size == w.size == mem.heap.size):
            return 1
        priv = np.array(tr.private, np.int64).reshape(-1)
        track = (_at(r), _at(w), int(bool(tr.wrote)), priv.ctypes.data, len(tr.private))
    st = c.st
    waves, w0, mask, keep = _group(c)
    bounds = _bounds(mem)
    nw = st.v.shape[1]
    return lib.asmevo_global_load(c.w, waves, w0, _at(st.v), nw * 64, _at(st.s), nw, mask,
                                  vaddr, saddr, offset & ((1 << 64) - 1), ndw, dst,
                                  _at(mem._h32), HEAP_BASE, bounds.ctypes.data,
                                  len(mem.allocs), *track)


def lds(lib, c, write: bool, vaddr: int, offsets: tuple, ndw: int, regs_: tuple,
        tracker=None) -> int:
    """An LDS dword access of ``c``'s active lanes in the batch's LDS, as the numpy path
    makes it (see native.c): a read of ``ndw`` dwords at each of ``offsets`` (one or
    two) into VGPRs ``regs_[0]``, ``regs_[0] + 1``, ... or a write of them from VGPRs
    ``regs_[k]``, ``regs_[k] + 1``, ... (offset k); with ``tracker``'s arrays
    (``(tracked, slot, owner, written)``, :meth:`asmevo.emu.machine.racecheck.LdsTracker.arrays`)
    its note first. 0: done; 1: nothing done, the numpy path must run (a lane's address
    out of bounds or unaligned, a state not laid out for it); 2 or 3: the tracker's
    conflict on a read or a write (the pass is abandoned)."""
    st = c.st
    stride = max(st.lds_bytes, 4)
    wg = st.wg_of_wave
    if stride % 4 or not _laid_out(st) or st.lds.size % 4 or wg.dtype != np.int64 or \
            not wg.flags.c_contiguous:
        return 1
    waves, w0, mask, keep = _group(c)
    n = len(offsets)
    o0, o1 = offsets[0], offsets[-1]
    data = (regs_[0], regs_[-1]) if write else (regs_[0],)
    tr = (None,) * 4 if tracker is None else tuple(_at(a) for a in tracker)
    fn = lib.asmevo_lds_write if write else lib.asmevo_lds_read
    return fn(c.w, waves, w0, _at(st.v), st.v.shape[1] * 64, vaddr, mask, n, o0, o1, ndw,
              4 * ndw, st.lds_bytes, _at(wg), stride, _at(st.lds), *data, c.lanes, *tr)


# -- the self-test ----------------------------------------------------------------------

def _edges() -> np.ndarray:
    """Float32 bit patterns where arithmetic is easy to get wrong."""
    bits = [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF,
            0x00800000, 0x80800000, 0x3F800000, 0xBF800000, 0x3F800001, 0x33800000,
            0x33800001, 0xB3800000, 0x34000000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F000000,
            0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7FC12345, 0xFFA00001,
            0x7F800001, 0x40490FDB, 0x3EAAAAAB, 0x00400000, 0x4B000001, 0xCB000000]
    return np.array(bits, np.uint32)


def _numpy(op: int, args: list, variant: int, members, opcode: int) -> np.ndarray:
    from asmevo.emu.numerics import approx
    from asmevo.emu.numerics import exact as nx
    fn = {ADD: lambda a, b: a + b, SUB: lambda a, b: a - b, SUBREV: lambda a, b: b - a,
          MUL: lambda a, b: a * b, FMA: nx.fma32}[op]
    with np.errstate(all="ignore"):
        res = np.asarray(fn(*args), np.float32)
        if members is None:
            return approx.nan_result(res, args, variant, opcode)
        return approx.nan_by_member(res, args, members, opcode, None)


def self_test(lib, seed: int = 0) -> bool:
    """Whether the library gives the numpy path's bits on every case (see the module's
    docstring): what :func:`library` asks before it hands the library out."""
    e = _edges()
    rng = np.random.default_rng(seed)
    n = e.size
    a2, b2 = np.repeat(e, n), np.tile(e, n)
    a3, b3, c3 = (np.repeat(e, n * n), np.tile(np.repeat(e, n), n), np.tile(e, n * n))
    rand = [rng.integers(0, 2**32, 4096, dtype=np.uint32) for _ in range(3)]
    cases = [(op, [a2, b2]) for op in (ADD, SUB, SUBREV, MUL)] + [(FMA, [a3, b3, c3])]
    cases += [(op, rand[:2]) for op in (ADD, SUB, SUBREV, MUL)] + [(FMA, rand)]
    for op, cols in cases:
        width = n if cols[0].size % 64 else 64       # rows of n edge values, or of 64 lanes
        args = [x.view(np.float32).reshape(-1, width) for x in cols]
        rows = args[0].shape[0]
        members = (np.arange(rows) % 3).astype(np.int64)
        for variant, mem in ((0, None), (3, None), (0, members)):
            want = _numpy(op, args, variant, mem, 0x5A17).view(np.uint32)
            got = arith(lib, op, args, variant, mem, 0x5A17)
            if got is None or not np.array_equal(got.view(np.uint32), want):
                _STATE["why"] = f"the native build differs from numpy (operation {op})"
                return False
        # a row-broadcast and a scalar operand
        bcast = [args[0][:, :1], args[1][:1, :1].reshape(())] + args[2:]
        want = _numpy(op, bcast, 0, None, 7).view(np.uint32)
        got = arith(lib, op, bcast, 0, None, 7)
        if got is None or not np.array_equal(got.view(np.uint32), want):
            _STATE["why"] = f"the native build differs from numpy (operation {op}, broadcast)"
            return False
    why = _test_registers(lib, rng)
    if why:
        _STATE["why"] = f"the native build differs from numpy ({why})"
        return False
    return True


class _Probe:
    """The few Ctx fields :func:`regs` and :func:`lds` read, over a test state."""

    def __init__(self, st, waves, mask):
        self.st, self.waves, self.w = st, waves, len(waves)
        self.idx = waves if len(waves) != waves[-1] - waves[0] + 1 else \
            slice(int(waves[0]), int(waves[-1]) + 1)
        self.mask = mask
        self.lanes = 64 * len(waves) if mask is None else int(mask.sum())


def _test_registers(lib, rng) -> str | None:
    """:func:`regs` and :func:`lds` on a random state, fancy and sliced wave lists, with and
    without an EXEC mask, against the numpy path's gathers and scatters; what differs,
    or None."""
    from types import SimpleNamespace
    nw, lds_bytes = 12, 256
    edges = _edges()
    for waves in (np.array([1, 2, 5, 9, 10], np.int64), np.arange(3, 8, dtype=np.int64)):
        for mask in (None, rng.random((len(waves), 64)) < 0.7):
            v = rng.integers(0, 2**32, (10, nw, 64), dtype=np.uint32)
            v[0] = rng.choice(edges, (nw, 64))
            st = SimpleNamespace(v=v, s=rng.integers(0, 2**32, (4, nw), dtype=np.uint32),
                                 lds=rng.integers(0, 256, nw // 2 * lds_bytes + 16,
                                                  dtype=np.uint8),
                                 lds_bytes=lds_bytes,
                                 wg_of_wave=np.repeat(np.arange(nw // 2), 2).astype(np.int64))
            c = _Probe(st, waves, mask)
            on = np.ones((len(waves), 64), bool) if mask is None else mask
            for op, kinds, ops in ((ADD, (0, 1), (0, 2)), (MUL, (2, 0), (0x3FC00000, 1)),
                                   (FMA, (0, 0, 1), (0, 1, 3)), (SUBREV, (0, 0), (0, 0))):
                args = [v[r][waves] if k == 0 else np.broadcast_to(
                    st.s[r][waves][:, None] if k == 1 else np.uint32(r), (len(waves), 64))
                    for k, r in zip(kinds, ops)]
                want = v.copy()
                got = _numpy(op, [a.view(np.float32) for a in args], 2, None, 9)
                want[5][waves] = np.where(on, got.view(np.uint32), v[5][waves])
                regs(lib, op, c, kinds, ops, 5, 2, None, 9)
                if not np.array_equal(v, want):
                    return f"register operation {op}"
            # LDS: aligned addresses in bounds, reads into v6.. and writes from v0..
            v[4] = rng.integers(0, (lds_bytes - 32) // 4, (nw, 64)).astype(np.uint32) * 4
            lds32 = st.lds.view(np.uint32)
            for offsets, ndw in (((8,), 4), ((0, 16), 1), ((4,), 1)):
                want = v.copy()
                base = st.wg_of_wave[waves][:, None] * lds_bytes + v[4][waves]
                for k, o in enumerate(offsets):
                    for q in range(ndw):
                        r = 6 + k * ndw + q
                        want[r][waves] = np.where(on, lds32[(base + o) // 4 + q], v[r][waves])
                if lds(lib, c, False, 4, offsets, ndw, (6,)) != 0 or not np.array_equal(v, want):
                    return f"LDS read at {offsets} x {ndw}"
                want_lds = lds32.copy()
                lanes = np.flatnonzero(on.reshape(-1))
                for k, o in enumerate(offsets):
                    for q in range(ndw):
                        d = ((base + o) // 4 + q).reshape(-1)[lanes]
                        want_lds[d] = v[k + q][waves].reshape(-1)[lanes]
                if lds(lib, c, True, 4, offsets, ndw, tuple(range(len(offsets)))) != 0 or \
                        not np.array_equal(lds32, want_lds):
                    return f"LDS write at {offsets} x {ndw}"
            why = _test_integers(lib, c, v, st, waves, on, rng)
            if why:
                return why
            v[4][waves[0], 0] = lds_bytes       # out of bounds: nothing done
            before = v.copy()
            if lds(lib, c, False, 4, (0,), 1, (6,)) != 1 or not np.array_equal(v, before):
                if mask is None or mask[0, 0]:
                    return "an LDS address out of bounds"
    return None


# the integer rows' numpy results, for the self-test: (x, y, z) uint32 (uint64 for a
# 64-bit source) -> the result as uint64, on the numpy rows' wrapping and masking
_INT_REFERENCE = {
    "v_add_u32": lambda x, y, z: x + y, "v_sub_u32": lambda x, y, z: x - y,
    "v_subrev_u32": lambda x, y, z: y - x, "v_add3_u32": lambda x, y, z: x + y + z,
    "v_lshl_add_u32": lambda x, y, z: (x << (y & 31)) + z,
    "v_lshl_or_b32": lambda x, y, z: (x << (y & 31)) | z,
    "v_and_or_b32": lambda x, y, z: (x & y) | z, "v_or3_b32": lambda x, y, z: x | y | z,
    "v_and_b32": lambda x, y, z: x & y, "v_or_b32": lambda x, y, z: x | y,
    "v_xor_b32": lambda x, y, z: x ^ y, "v_lshlrev_b32": lambda x, y, z: y << (x & 31),
    "v_lshrrev_b32": lambda x, y, z: y >> (x & 31),
    "v_ashrrev_i32": lambda x, y, z: (y.view(np.int32) >> (x & 31).view(np.int32)).view(U32),
    "v_mov_b32": lambda x, y, z: x,
    "v_lshl_add_u64": lambda x, y, z: (x << (y & 7).astype(np.uint64)) + z,
    "v_lshlrev_b64": lambda x, y, z: y << (x & 63).astype(np.uint64)}


def _test_integers(lib, c, v, st, waves, on, rng) -> str | None:
    """Every integer row on registers against its numpy result (:data:`_INT_REFERENCE`),
    VGPR, SGPR and constant sources; what differs, or None."""
    v[3] = rng.integers(0, 80, v[3].shape).astype(np.uint32)        # shift counts
    for name, (row, wide) in INT_ROWS.items():
        n = 1 if name == "v_mov_b32" else 3 if name in _THREE else 2
        kinds = tuple(1 if n == 1 else (0, 1, 2)[i % 3] for i in range(n))
        operands = tuple((2, 1, 0xFFFFFFFFFFFFFFF0 if i in wide else 0xFFFFFFF0)[k] if k != 0
                         else (2, 3, 4)[i] for i, k in enumerate(kinds))
        args = []
        for i, (k, r) in enumerate(zip(kinds, operands)):
            if k == 0:
                x = v[r][waves].astype(np.uint64) | (v[r + 1][waves].astype(np.uint64) << 32) \
                    if i in wide else v[r][waves]
            elif k == 1:
                x = (st.s[r][waves].astype(np.uint64) | (st.s[r + 1][waves].astype(np.uint64)
                                                         << 32) if i in wide
                     else st.s[r][waves])[:, None]
            else:
                x = np.array(r, np.uint64 if i in wide else U32)
            args.append(np.broadcast_to(x, (len(waves), 64)))
        args += [args[0]] * (3 - n)
        with np.errstate(all="ignore"):
            res = _INT_REFERENCE[name](*args).astype(np.uint64)
        want = v.copy()
        want[6][waves] = np.where(on, (res & np.uint64(0xFFFFFFFF)).astype(U32), v[6][waves])
        if wide:
            want[7][waves] = np.where(on, (res >> np.uint64(32)).astype(U32), v[7][waves])
        int_regs(lib, row, c, kinds, operands, 6)
        if not np.array_equal(v, want):
            return f"integer row {name}"
    return None

