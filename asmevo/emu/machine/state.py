"""Architectural state of many waves at once, and the view of one group of them.

Registers are numpy arrays over waves: VGPRs (and AGPRs, which live in the same
unified file above ``accum_offset``) as ``v[reg, wave, lane]``, SGPRs as
``s[reg, wave]`` with the special registers at their hardware encodings
(VCC = s106/s107, M0 = s124, EXEC = s126/s127). A :class:`Ctx` is the set of
waves that currently share a program counter; every instruction reads and
writes state through it, so the same semantics serve one wave or ten thousand.
"""
from __future__ import annotations

import numpy as np

_LITTLE = np.little_endian
N_SREGS = 128
VCC = 106
FLAT_SCRATCH = 102
XNACK_MASK = 104
TTMP0 = 108
M0 = 124
EXEC = 126



def _pairs(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """lo/hi uint32 arrays -> their shape + (2,), little-endian uint32: lo then hi."""
    out = np.empty(np.shape(lo) + (2,), "<u4")
    out[..., 0], out[..., 1] = lo, hi
    return out


def _words(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(w,) lo/hi uint32 words -> (w, 2) little-endian uint32 (lane 0 in byte 0, bit 0)."""
    return _pairs(np.reshape(lo, -1), np.reshape(hi, -1))


def join64(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """uint32 halves -> uint64 values, on a little-endian host (the two halves side by side
    are the uint64's bytes)."""
    return _pairs(lo, hi).view(np.uint64)[..., 0]


def split64(val) -> tuple[np.ndarray, np.ndarray]:
    """uint64 values -> their (lo, hi) uint32 halves (views of ``val`` where it can be)."""
    val = np.asarray(val, np.uint64)
    if _LITTLE and val.ndim and val.flags.c_contiguous:
        halves = val.view(np.uint32).reshape(val.shape + (2,))
        return halves[..., 0], halves[..., 1]
    return (val & np.uint64(0xFFFFFFFF)).astype(np.uint32), (val >> np.uint64(32)).astype(np.uint32)


def unpack_mask(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(w,) lo/hi uint32 words -> (w, 64) bool lane mask."""
    return _unpack(_words(lo, hi))


def _unpack(words: np.ndarray) -> np.ndarray:
    # unpackbits gives 0/1 bytes, which are exactly numpy's bools
    return np.unpackbits(words.view(np.uint8), axis=1, bitorder="little").view(bool)


def pack_mask(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(w, 64) bool -> (lo, hi) uint32 words."""
    b = np.packbits(np.ascontiguousarray(mask, dtype=bool), axis=1, bitorder="little")
    m = b.view("<u8").reshape(-1)
    return split64(m)


class State:
    """Registers, LDS and per-wave bookkeeping of one batch of workgroups."""

    def __init__(self, nwaves: int, nvgprs: int, lds_bytes: int, wg_of_wave: np.ndarray,
                 mode: int):
        self.nwaves = nwaves
        self.v = np.zeros((max(nvgprs, 1), nwaves, 64), np.uint32)
        self.s = np.zeros((N_SREGS, nwaves), np.uint32)
        self.scc = np.zeros(nwaves, bool)
        self.execmask = np.zeros((nwaves, 64), bool)
        self.exec_full = np.zeros(nwaves, bool)
        self.nactive = np.zeros(nwaves, np.int64)
        self.wg_of_wave = wg_of_wave
        nwg = int(wg_of_wave.max()) + 1 if nwaves else 0
        self.lds_bytes = lds_bytes
        self.lds = np.zeros(nwg * max(lds_bytes, 4) + 16, np.uint8)
        self.mode = mode
        self.wave_mode = None           # per-wave MODE once waves differ (numerics.fpmode)
        self.wave_in_wg = np.zeros(nwaves, np.int64)
        self.shadow = None              # a definedness shadow (run.shadow) when diagnosing
        self.tracker = None             # LDS sharing between waves (asmevo.emu.machine.racecheck)
        self.track_ctx = None           # the Ctx whose instruction runs, for the tracker
        self.dispatch_sgprs: list[int] = []   # SGPRs the dispatch sets (the rest is garbage)
        self.dispatch_vgprs: list[int] = [0]  # VGPRs holding work-item ids

    def refresh_exec(self, idx) -> None:
        words = _words(self.s[EXEC, idx], self.s[EXEC + 1, idx])
        self.execmask[idx] = _unpack(words)
        n = np.bitwise_count(words).sum(axis=1, dtype=np.int64)
        self.nactive[idx] = n
        self.exec_full[idx] = n == 64


def as_index(waves: np.ndarray):
    """A slice when ``waves`` (sorted) is a contiguous run, else the array itself."""
    if len(waves) and int(waves[-1]) - int(waves[0]) + 1 == len(waves):
        return slice(int(waves[0]), int(waves[-1]) + 1)
    return waves


MAX_RUNS = 8    # wave runs a write is split into (beyond: one fancy-indexed write)


def wave_runs(waves: np.ndarray) -> tuple | None:
    """``(first wave, end wave, first row, end row)`` of each run of consecutive waves in
    ``waves`` (sorted, not one run), or None when there are more than :data:`MAX_RUNS`.
    A write to the rows of a few runs goes through slices of the register file: each
    row written once, as by the fancy index, without its gather and scatter."""
    last = np.flatnonzero(waves[1:] != waves[:-1] + 1).tolist()    # a run's last row
    if len(last) >= MAX_RUNS:
        return None
    rows = [0, *[q + 1 for q in last], len(waves)]
    firsts = waves[rows[:-1]].tolist()          # Python ints, as the slices want them
    lasts = waves[[*last, len(waves) - 1]].tolist()
    return tuple((a, b + 1, p, q) for a, b, p, q in zip(firsts, lasts, rows, rows[1:]))


class Ctx:
    """One group of waves at the same PC: the unit every instruction executes on."""

    __slots__ = ("st", "waves", "idx", "w", "mask", "full", "lanes", "kernel", "address",
                 "launch", "dpp_enable", "lds_base", "runs")
    members = None      # a batch's waves of several approximate members: each wave's member

    @property
    def approx_variant(self) -> int:
        """The launch's member of the approximate-instruction families (0: no launch)."""
        return self.launch.approx_variant if self.launch is not None else 0

    def __init__(self, st: State, waves: np.ndarray, launch):
        self.st = st
        self.waves = waves
        self.idx = as_index(waves)
        self.runs = None if isinstance(self.idx, slice) else wave_runs(waves)
        self.w = len(waves)
        self.launch = launch
        self.kernel = launch.kernel_name if launch is not None else None
        self.address = None
        self.exec_changed()

    def exec_changed(self) -> None:
        st = self.st
        idx = self.idx
        self.lanes = int(st.nactive[idx].sum())
        self.full = self.lanes == 64 * self.w     # every wave has all 64 lanes on
        if self.full:
            self.mask = None
        else:   # a wave list's rows by np.take: the copy fancy indexing makes, cheaper
            self.mask = st.execmask[idx] if isinstance(idx, slice) else \
                np.take(st.execmask, idx, axis=0)
        self.lds_base = None    # active lanes' workgroup LDS base (asmevo.emu.isa.lds), per EXEC

    # -- VGPRs -------------------------------------------------------------
    def vr(self, r: int) -> np.ndarray:
        idx = self.idx
        if isinstance(idx, slice):
            return self.st.v[r, idx]
        # np.take of the wave rows: the copy v[r, idx] makes, without the general
        # fancy-index machinery (about 40% less time at a cluster's size)
        return np.take(self.st.v[r], idx, axis=0)

    def vw(self, r: int, val, mask=None) -> None:
        """Write VGPR ``r`` in active lanes (and in ``mask`` when given)."""
        m = self.mask if mask is None else (mask if self.mask is None else mask & self.mask)
        v = self.st.v
        if isinstance(self.idx, slice):
            if m is None:
                v[r, self.idx] = val
            else:
                np.copyto(v[r, self.idx], val, casting="unsafe", where=m)
        elif self.runs is not None and isinstance(val, np.ndarray) and \
                val.shape == (self.w, 64) and \
                (m is None or val.dtype == v.dtype and np.shape(m) == val.shape):
            vr = v[r]
            if np.may_share_memory(val, vr):    # a view of the register written: as one
                val = val.copy()
            if m is None:
                for a, b, p, q in self.runs:
                    vr[a:b] = val[p:q]
            else:
                for a, b, p, q in self.runs:
                    np.copyto(vr[a:b], val[p:q], where=m[p:q])
        elif m is None:
            v[r, self.idx] = val
        elif isinstance(val, np.ndarray) and val.dtype == v.dtype:
            sub = np.take(v[r], self.idx, axis=0)   # a copy (fancy index): merged, written back
            np.copyto(sub, val, where=m)
            v[r, self.idx] = sub
        else:
            v[r, self.idx] = np.where(m, val, np.take(v[r], self.idx, axis=0))

    def vr64(self, r: int) -> np.ndarray:
        v = self.st.v
        if _LITTLE:
            idx = self.idx
            if isinstance(idx, slice):
                return join64(v[r, idx], v[r + 1, idx])
            return join64(np.take(v[r], idx, axis=0), np.take(v[r + 1], idx, axis=0))
        return v[r, self.idx].astype(np.uint64) | (v[r + 1, self.idx].astype(np.uint64) << np.uint64(32))

    def vw64(self, r: int, val, mask=None) -> None:
        lo, hi = split64(val)
        self.vw(r, lo, mask)
        self.vw(r + 1, hi, mask)

    # -- SGPRs -------------------------------------------------------------
    def sr(self, r: int) -> np.ndarray:
        return self.st.s[r, self.idx]

    def sw(self, r: int, val) -> None:
        self.st.s[r, self.idx] = val
        if r >= EXEC:
            self.st.refresh_exec(self.idx)
            self.exec_changed()

    def sr64(self, r: int) -> np.ndarray:
        s = self.st.s
        if _LITTLE:
            return join64(s[r, self.idx], s[r + 1, self.idx])
        return s[r, self.idx].astype(np.uint64) | (s[r + 1, self.idx].astype(np.uint64) << np.uint64(32))

    def sw64(self, r: int, val) -> None:
        s = self.st.s
        s[r, self.idx], s[r + 1, self.idx] = split64(val)
        if r + 1 >= EXEC:
            self.st.refresh_exec(self.idx)
            self.exec_changed()

    def lane_mask_read(self, r: int) -> np.ndarray:
        """An SGPR pair as a (w, 64) bool lane mask."""
        return unpack_mask(self.st.s[r, self.idx], self.st.s[r + 1, self.idx])

    def lane_mask_write(self, r: int, mask: np.ndarray) -> None:
        """Write a lane mask to an SGPR pair; inactive lanes' bits become 0."""
        if self.mask is not None:
            mask = mask & self.mask
        lo, hi = pack_mask(np.broadcast_to(mask, (self.w, 64)))
        s = self.st.s
        s[r, self.idx] = lo
        s[r + 1, self.idx] = hi
        if r + 1 >= EXEC:
            self.st.refresh_exec(self.idx)
            self.exec_changed()

    def exec_mask(self) -> np.ndarray:
        if self.mask is None:
            return np.ones((self.w, 64), bool)
        return self.mask

    # -- SCC ---------------------------------------------------------------
    def scc(self) -> np.ndarray:
        return self.st.scc[self.idx]

    def set_scc(self, val) -> None:
        self.st.scc[self.idx] = val
