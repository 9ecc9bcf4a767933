"""Launch set-up reused from one candidate to the next: only the code bytes differ.

Verification launches every candidate of one K0 with the same inputs, guards,
garbage seeds and schedules, and a candidate keeps K0's ABI. The 15 launches'
set-up (memory layout and contents, kernargs, dispatch packet, initial registers,
LDS and private garbage, the stacked State) is then the same for every candidate
except the bytes of the code object in memory. :func:`get` hands out fresh copies
of a set-up made once, keyed by everything that decides it (kernel descriptor and
metadata, loaded sections' addresses and sizes, the spec's launch shape, the
VGPR file size, and per launch the inputs' bytes, guard, fill, garbage seed and
member), with the candidate's code written over the copy; a miss builds it and
keeps a pristine copy. Every array is copied, so no run sees another's state.

The copies of the large arrays (the register file, each launch's heap: megabytes)
are made into the buffers of a pass that has finished (:func:`recycle`): a fresh
allocation of that size is new pages from the kernel, and faulting them in cost
more than the copy itself. A buffer is recycled only once its pass has collected
its results (which copy what they keep), and is handed to one copy only.
"""
from __future__ import annotations

import copy
import hashlib

import numpy as np

from asmevo.emu.run.dispatch import LOADED_SECTIONS
from asmevo.launch import frozen
from asmevo.memo import Memo

_SIZE = 16                   # set-ups kept: a check's size under check and family members
MAX_BYTES = 64 << 20         # set-ups larger than this are not kept
TOTAL_BYTES = 256 << 20      # nor more than this of them together
# (launches, state, bytes), the least recently used dropped first
_CACHE: Memo[tuple[list, object, int]] = Memo("emu.launchcache.setups", _SIZE, evict="lru",
                                             weigh=lambda e: e[2], maxweight=TOTAL_BYTES)
# buffers of finished passes, by (shape, dtype): the copies' destinations
_SPARE: dict[tuple, list[np.ndarray]] = {}
SPARE_MIN = 64 << 10         # smaller arrays are copied as usual
SPARE_BYTES = MAX_BYTES      # at most this much is kept spare


def _inputs_digest(h, inputs: dict) -> None:
    for name in sorted(inputs):
        a = inputs[name]
        h.update(name.encode() + b"\0")
        if isinstance(a, np.ndarray):
            h.update(f"{a.dtype.str}{a.shape}".encode())
            d = frozen.digest(a)        # an input made once for many launches: hashed once
            if d is not None:
                h.update(b"d" + d)
            else:
                h.update(b"r")
                h.update(np.ascontiguousarray(a).view(np.uint8).reshape(-1).data)
        else:
            h.update(repr((type(a).__name__, a)).encode())


def key(co, k, spec, nv: int, requests) -> bytes:
    h = hashlib.blake2b(digest_size=20)
    h.update(repr((k.name, k.kd_bytes, k.kd_address, k.entry, repr(k.meta), co.target.processor,
                   sorted((s.name, s.addr, s.size) for s in co.sections.values()
                          if s.addr and s.name in LOADED_SECTIONS),
                   spec.name, spec.size, tuple(spec.grid), tuple(spec.block), nv)).encode())
    for r in requests:
        h.update(repr((r.guard_bytes, r.guard_fill, r.garbage_seed, r.schedule,
                       r.approx_variant, r.aliases, r.order,
                       None if r.spec is None else (r.spec.size, sorted(r.spec.params.items()),
                                                    [(a.name, a.count) for a in r.spec.args],
                                                    [a.value for a in r.spec.args]))).encode())
        _inputs_digest(h, r.inputs)
    return h.digest()


def get(key_: bytes, co, k):
    """Fresh copies of the set-up kept under ``key_`` with ``co``'s code in memory, or None."""
    hit = _CACHE.get(key_)
    if hit is None:
        return None
    launches, st, _ = hit
    out = [_launch_copy(ln, co, k) for ln in launches]
    return out, _state_copy(st)


def put(key_: bytes, launches: list, st) -> None:
    """Keep pristine copies of a set-up (before anything ran on it)."""
    size = st.v.nbytes + sum(ln.mem.heap.nbytes for ln in launches)
    if size > MAX_BYTES:
        return
    _CACHE.put(key_, ([_launch_copy(ln, ln.co, ln.kernel) for ln in launches], _state_copy(st),
                      size))


def _launch_copy(ln, co, k):
    out = copy.copy(ln)
    out.co, out.kernel = co, k
    mem = out.mem = copy.copy(ln.mem)
    mem.heap = _copy(ln.mem.heap)
    mem._h32, mem._h16 = mem.heap.view(np.uint32), mem.heap.view(np.uint16)
    mem.poison_reads, mem.track, mem.watch, mem.watch_hits = [], None, None, 0
    mem.lane_conflicts = []
    if ln.code is not None and co is not ln.co:
        for s in co.sections.values():
            if s.addr and s.name in LOADED_SECTIONS and s.name != ".bss" and s.data:
                mem.write_bytes(ln.code, s.data, s.addr)
    return out


def _state_copy(st):
    out = copy.copy(st)
    for name, val in vars(st).items():
        if isinstance(val, np.ndarray):
            setattr(out, name, _copy(val))
        elif isinstance(val, list):
            setattr(out, name, list(val))
    out.shadow = out.tracker = out.track_ctx = None
    return out


def _copy(a: np.ndarray) -> np.ndarray:
    """``a.copy()``, into a spare buffer of its shape and dtype when there is one."""
    spare = _SPARE.get((a.shape, a.dtype.str)) if a.nbytes >= SPARE_MIN else None
    try:
        buf = spare.pop() if spare else None    # one buffer, one copy (threads too)
    except IndexError:                          # another thread took the last one
        buf = None
    if buf is None:
        return a.copy()
    np.copyto(buf, a)
    return buf


def recycle(launches: list, st) -> None:
    """The large arrays of a finished pass's set-up (``st``'s and each launch's heap),
    kept as destinations for the next copies. The caller has collected every result
    and drops ``launches`` and ``st``: nothing else holds these arrays."""
    arrays, seen = [], set()
    for a in [ln.mem.heap for ln in launches] + [v for v in vars(st).values()
                                                 if isinstance(v, np.ndarray)]:
        if a.nbytes >= SPARE_MIN and a.base is None and a.flags.c_contiguous and \
                a.flags.writeable and id(a) not in seen:
            seen.add(id(a))
            arrays.append(a)
    size = sum(a.nbytes for a in arrays)
    if size > SPARE_BYTES:
        return
    if size + sum(b.nbytes for bufs in _SPARE.values() for b in bufs) > SPARE_BYTES:
        _SPARE.clear()      # the newest pass's buffers replace older ones
    for a in arrays:
        _SPARE.setdefault((a.shape, a.dtype.str), []).append(a)
