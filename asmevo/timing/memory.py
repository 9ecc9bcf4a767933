"""The memory side of the CDNA timing model: coalescing, LDS banks, caches.

Two halves, both deterministic:

* **From lane addresses to transactions** (called by the trace recorder while
  the emulator runs, so only these summaries are kept, never the addresses):
  :func:`coalesce` turns one wave's lane byte ranges into the cache lines and
  64-byte sectors it touches -- what the texture addresser hands the vector L1
  (rocprofiler-compute, "Vector L1 cache": the TA "coalesces [requests] into
  fewer requests for the cache"); :func:`lds_passes` counts the LDS cycles of
  one access on 32 banks x 4 bytes, in the phases the instruction width
  implies (ds_*_b32: 32 lanes per phase, b64: 16, b128: 8 -- AMD Composable
  Kernel docs, "Understanding AMD GPU LDS and Bank Conflicts"), lanes that read
  the same dword being broadcast.
* **From transactions to time** (used by the per-CU simulation, in simulated
  issue order): :class:`CuMemory` holds the CU's vector L1, its share of the
  L2 and its scalar cache as LRUs over lines, and three bandwidth servers (L2,
  Infinity Cache / MALL, HBM). A line missing from the CU's L2 share that the
  CU read before is a capacity miss (MALL; HBM on gfx90a); one it never read is
  a first touch: HBM while the CU's share of the launch's unique bytes lasts,
  then a line other CUs already read (re-reads across workgroups, as in a GEMM:
  served through the MALL where the L2 is per XCD, else by the L2; the other CUs
  are not simulated).

Parameters: ``[memory]`` of ``params/<target>.toml`` (sources there and in
docs/timing_model.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asmevo.memo import Memo

_SENT = np.iinfo(np.int64).max


@dataclass(frozen=True)
class MemoryParams:
    """Cache geometry, latencies and bandwidths (see ``[memory]`` in the TOML)."""

    l1_bytes: int
    l1_line: int
    l2_bytes_per_cu: int                 # tracked in vector-L1 lines
    sector: int
    scalar_bytes_per_cu: int
    scalar_line: int
    mall: bool
    mall_bytes_per_cycle: float          # whole device
    tag_cycles_per_line: float
    lds_banks: int
    lds_conflict_cycles: float           # latency added per extra (conflict) pass
    l1_hit: float
    l2_hit: float
    mall_hit: float
    hbm: float
    smem_hit: float
    smem_miss: float
    subdword_lane_cycles: float = 0.0    # per active lane of a strided sub-dword access
    atomic_lane_cycles: float = 0.0      # L2 atomic unit, per active lane


# --- addresses -> transactions (recorder side) --------------------------------------

def coalesce(addr: np.ndarray, mask: np.ndarray | None, nbytes: int,
             mp: MemoryParams) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Per wave of ``addr`` ((w, 64) byte addresses of each lane's first byte, lanes in
    ``mask``; each lane touches ``nbytes`` from there): (lines, sectors per line) of the
    L1 lines and 64-byte sectors the instruction touches."""
    a = np.asarray(addr).astype(np.int64, copy=False).reshape(-1, 64)
    w = a.shape[0]
    sh = mp.sector.bit_length() - 1
    if mask is None:
        step = a[:, 1:] - a[:, :-1]
        if (step == nbytes).all() or (step == 0).all():
            return _contiguous(a[:, 0].tolist(), 64 * nbytes if step[0, 0] else nbytes, mp)
    secs = np.concatenate([a >> sh, (a + (nbytes - 1)) >> sh], axis=1)
    if mask is not None:
        m = np.broadcast_to(mask, (w, 64))
        secs = np.where(np.concatenate([m, m], axis=1), secs, _SENT)
    secs.sort(axis=1)
    new = np.empty(secs.shape, bool)
    new[:, 0] = True
    np.not_equal(secs[:, 1:], secs[:, :-1], out=new[:, 1:])
    new &= secs != _SENT
    rows, cols = np.nonzero(new)
    lines = secs[rows, cols] >> ((mp.l1_line // mp.sector).bit_length() - 1)
    start = np.empty(lines.size, bool)
    if lines.size:
        start[0] = True
        start[1:] = (lines[1:] != lines[:-1]) | (rows[1:] != rows[:-1])
    idx = np.flatnonzero(start)
    counts = np.diff(np.append(idx, lines.size)).tolist()
    ids = lines[idx].tolist()
    bounds = np.searchsorted(rows[idx], np.arange(w + 1)).tolist()
    return [(tuple(ids[bounds[i]:bounds[i + 1]]), tuple(counts[bounds[i]:bounds[i + 1]]))
            for i in range(w)]


def _contiguous(starts: list[int], span: int, mp: MemoryParams):
    """coalesce() of waves each touching the ``span`` bytes from its start (the common
    unit-stride or broadcast access), without sorting."""
    sh = mp.sector.bit_length() - 1
    lsh = (mp.l1_line // mp.sector).bit_length() - 1
    out = []
    for a0 in starts:
        s0, s1 = a0 >> sh, (a0 + span - 1) >> sh
        l0, l1 = s0 >> lsh, s1 >> lsh
        per = 1 << lsh
        lines = tuple(range(l0, l1 + 1))
        if l0 == l1:
            out.append((lines, (s1 - s0 + 1,)))
            continue
        counts = [per] * len(lines)
        counts[0] = per - (s0 & (per - 1))
        counts[-1] = (s1 & (per - 1)) + 1
        out.append((lines, tuple(counts)))
    return out


_PATTERNS: Memo[tuple] = Memo("timing.lds_patterns", 50_001)   # lds_passes of an address pattern


def lds_passes(addrs: list[np.ndarray], ndw: int, mask: np.ndarray | None,
               banks: int = 32) -> tuple[list[int], list[int]]:
    """lds_passes_uncached(), remembered per pattern: shifting every address of a wave
    by a multiple of the bank period (banks x 4 bytes) changes no bank and no
    distinctness, and loops repeat their patterns at shifted bases."""
    period = 4 * banks
    arrs = [np.asarray(a).astype(np.int64, copy=False).reshape(-1, 64) for a in addrs]
    low = arrs[0].min(axis=1, keepdims=True)
    for a in arrs[1:]:
        low = np.minimum(low, a.min(axis=1, keepdims=True))
    base = (low // period) * period
    rel = [a - base for a in arrs]
    key = b"".join([x.tobytes() for x in rel]) + (b"" if mask is None else np.packbits(
        mask).tobytes()) + bytes((ndw, len(addrs), banks, mask is None))
    hit = _PATTERNS.get(key)
    if hit is None:
        hit = _PATTERNS.put(key, lds_passes_uncached(rel, ndw, mask, banks))
    return hit


def lds_passes_uncached(addrs: list[np.ndarray], ndw: int, mask: np.ndarray | None,
                        banks: int = 32) -> tuple[list[int], list[int]]:
    """Per wave: (LDS cycles of the access, cycles without bank conflicts).

    ``addrs``: one or two (w, 64) arrays of lane byte addresses (ds_read2 / write2 have
    two, served as two accesses), each lane touching ``ndw`` consecutive dwords at each.
    An access is served in phases of ``32 // ndw`` lanes (at least 8, the b128 phase); a
    phase takes as many cycles as the most distinct dwords any one bank must deliver
    (the same dword to several lanes is one broadcast).
    """
    if len(addrs) > 1:
        parts = [lds_passes_uncached([a], ndw, mask, banks) for a in addrs]
        return ([sum(x) for x in zip(*[p[0] for p in parts])],
                [sum(x) for x in zip(*[p[1] for p in parts])])
    per_lane = ndw
    width = 1 << max(0, (per_lane - 1).bit_length())        # dwords rounded up to 2^k
    lanes = max(8, banks // min(width, 4))
    if mask is None:
        a = np.asarray(addrs[0]).reshape(-1, 64)
        step = a[:, 1:] - a[:, :-1]
        if (step == 4 * ndw).all() or (step == 0).all():   # unit stride or broadcast
            nph = 64 // lanes
            return [nph] * a.shape[0], [nph] * a.shape[0]
    d0 = np.asarray(addrs[0]).astype(np.int64, copy=False).reshape(-1, 64) >> 2
    dw = d0[:, :, None] if ndw == 1 else np.stack([d0 + k for k in range(ndw)], axis=2)
    w = dw.shape[0]
    if mask is not None:
        dw = np.where(np.broadcast_to(mask, (w, 64))[:, :, None], dw, _SENT)
    nph = 64 // lanes
    ph = np.sort(dw.reshape(w * nph, lanes * per_lane), axis=1)
    new = np.empty(ph.shape, bool)
    new[:, 0] = True
    np.not_equal(ph[:, 1:], ph[:, :-1], out=new[:, 1:])
    new &= ph != _SENT
    r, col = np.nonzero(new)
    key = r * banks + ph[r, col] % banks
    degree = np.bincount(key, minlength=ph.shape[0] * banks).reshape(-1, banks).max(axis=1)
    degree = degree.reshape(w, nph)
    return degree.sum(axis=1).tolist(), (degree > 0).sum(axis=1).tolist()


def scalar_lines(addr: np.ndarray, nbytes: int, line: int) -> list[tuple[int, ...]]:
    """Per wave: the scalar-cache lines of an SMEM load of ``nbytes`` at ``addr`` (w,)."""
    a = np.asarray(addr).astype(np.int64, copy=False).reshape(-1)
    sh = line.bit_length() - 1
    lo, hi = (a >> sh).tolist(), ((a + nbytes - 1) >> sh).tolist()
    return [tuple(range(x, y + 1)) for x, y in zip(lo, hi)]


# --- transactions -> time (simulation side) -----------------------------------------

class Lru:
    """An LRU set of line ids with a capacity in lines (dict order = recency); each line
    keeps the time its fill completes, so a hit on a line still in flight waits for it."""

    __slots__ = ("cap", "d")

    def __init__(self, capacity_lines: int):
        self.cap = max(1, int(capacity_lines))
        self.d: dict[int, float] = {}

    def touch(self, line: int) -> bool:
        """Look ``line`` up and make it most recent; True on a hit (a miss inserts it,
        ready at once: :meth:`fill` sets its time)."""
        d = self.d
        if line in d:
            d[line] = d.pop(line)
            return True
        d[line] = 0.0
        if len(d) > self.cap:
            del d[next(iter(d))]
        return False

    def ready(self, line: int) -> float:
        return self.d.get(line, 0.0)

    def fill(self, line: int, t: float) -> None:
        if line in self.d:
            self.d[line] = t


L1, L2, MALL, HBM = 0, 1, 2, 3          # where a load's slowest line was served


class CuMemory:
    """One CU's caches and bandwidth servers, in simulated time.

    ``hbm_budget``: bytes this CU reads from HBM before a first touch counts as a line
    another CU already read into the shared L2 (its part of the launch's unique bytes).
    """

    def __init__(self, mp: MemoryParams, *, l2_bpc: float, hbm_bpc: float, mall_bpc: float,
                 hbm_budget: float):
        self.mp = mp
        self.l1 = Lru(mp.l1_bytes // mp.l1_line)
        self.l2 = Lru(mp.l2_bytes_per_cu // mp.l1_line)      # keyed by vector-L1 line
        self.sc = Lru(mp.scalar_bytes_per_cu // mp.scalar_line)
        self.l2_bpc, self.hbm_bpc, self.mall_bpc = l2_bpc, hbm_bpc, mall_bpc
        self.budget = hbm_budget
        self.seen: set[int] = set()           # lines this CU has read or written
        self.written: dict[int, list] = {}    # line written -> [sectors, bytes written]
        self.free = [0.0, 0.0, 0.0]           # L2, MALL, HBM servers
        self.busy = [0.0, 0.0, 0.0]           # ... the cycles each has served
        self.latency = (mp.l1_hit, mp.l2_hit, mp.mall_hit if mp.mall else mp.l2_hit, mp.hbm)
        self.stats = {"l1_hit": 0, "l1_miss": 0, "l2_hit": 0, "capacity_lines": 0,
                      "hbm_lines": 0, "shared_lines": 0, "l2_bytes": 0.0, "mall_bytes": 0.0,
                      "hbm_bytes": 0.0, "store_bytes": 0.0, "unaddressed_bytes": 0.0,
                      "smem_hit": 0, "smem_miss": 0, "rmw_bytes": 0.0}

    def _serve(self, k: int, t: float, nbytes: float, bpc: float) -> float:
        if nbytes <= 0:
            return t
        start = t if t > self.free[k] else self.free[k]
        self.free[k] = start + nbytes / bpc
        self.busy[k] += nbytes / bpc
        return self.free[k]

    def backlog_bound(self, more: float) -> float:
        """The earliest the servers can be done when ``more`` times the work they served so
        far follows it (the extrapolated rest of a sampled launch, whose workgroups move the
        same bytes): each server's free time plus ``more`` x its busy cycles. A backlog that
        builds up over many rounds (a streaming kernel at its HBM bound) does not show in the
        first few, so the extrapolated time is bounded below by this."""
        return max(f + more * b for f, b in zip(self.free, self.busy))

    def load(self, lines, secs, t: float, arrive: float, *,
             atomic: bool = False) -> tuple[int, float]:
        """A load (or returning atomic) whose requests leave the texture unit from ``t``
        and whose last address is processed at ``arrive``: (level of the slowest line,
        completion time).

        An L1 miss is an L2 hit when the line is in the CU's L2 share; else a capacity
        miss (the CU read it before: MALL, or HBM without one); else a first touch by
        this CU: from HBM while the CU's budget of the launch's unique bytes lasts, after
        that a line another CU already read: through the MALL on gfx942 (MI300X places
        consecutive workgroups on different XCDs, each with its own L2), from the one
        shared L2 without a MALL (gfx90a). A hit on a line whose fill is still in flight
        completes no earlier than the fill."""
        mp, st = self.mp, self.stats
        level = L1
        l2b = mallb = hbmb = 0.0
        seen = self.seen
        l1 = self.l1
        inflight = 0.0
        missed = []
        for line, ns in zip(lines, secs):
            if not atomic and l1.touch(line):
                st["l1_hit"] += 1
                r = l1.d[line]
                if r > inflight:
                    inflight = r
                continue
            st["l1_miss"] += 1
            missed.append(line)
            nbytes = ns * mp.sector
            l2b += nbytes
            if self.l2.touch(line) or atomic:
                st["l2_hit"] += 1
                if level < L2:
                    level = L2
            elif line in seen:
                st["capacity_lines"] += 1
                if mp.mall:
                    mallb += nbytes
                    if level < MALL:
                        level = MALL
                else:
                    hbmb += nbytes
                    level = HBM
            elif self.budget > 0:
                self.budget -= nbytes
                hbmb += nbytes
                st["hbm_lines"] += 1
                level = HBM
            else:
                st["shared_lines"] += 1
                if mp.mall:                 # another XCD's L2 or the MALL: via the MALL
                    mallb += nbytes
                    if level < MALL:
                        level = MALL
                elif level < L2:            # one L2 for all CUs (gfx90a GCD)
                    level = L2
            seen.add(line)
        st["l2_bytes"] += l2b
        st["mall_bytes"] += mallb
        st["hbm_bytes"] += hbmb
        done = max(arrive + self.latency[level], inflight, self._serve(0, t, l2b, self.l2_bpc),
                   self._serve(1, t, mallb, self.mall_bpc), self._serve(2, t, hbmb, self.hbm_bpc))
        if not atomic:
            for line in missed:
                l1.fill(line, done)
        return level, done

    def store(self, lines, secs, t: float, nbytes: float = 0.0) -> float:
        """A store of ``nbytes`` (lanes x width): its sectors are write requests to the L2
        (which allocates the lines); the L2 writes back whole lines, so HBM sees a line's
        bytes once, at its first write by this CU (partial writes merge in the L2). The
        bytes written per line are kept for :meth:`partial_write_bytes`."""
        sec = self.mp.sector
        nsec = float(sum(secs))
        req = nsec * sec
        per = nbytes / nsec if nsec else 0.0
        hbm = 0.0
        written = self.written
        for line, ns in zip(lines, secs):
            self.l2.touch(line)
            self.seen.add(line)
            w = written.get(line)
            if w is None:
                written[line] = [ns, per * ns]
                hbm += ns * sec
            else:
                w[0] = max(w[0], ns)
                w[1] += per * ns
        st = self.stats
        st["store_bytes"] += req
        st["l2_bytes"] += req
        st["hbm_bytes"] += hbm
        return max(self._serve(0, t, req, self.l2_bpc), self._serve(2, t, hbm, self.hbm_bpc))

    def partial_write_bytes(self) -> float:
        """Bytes HBM reads back to merge partially written sectors (read-modify-write at
        write-back): the sectors of every line this CU wrote fewer bytes into than its
        written sectors hold."""
        sec = self.mp.sector
        return float(sum(ns * sec for ns, b in self.written.values() if b < ns * sec - 0.5))

    def drain(self, t: float) -> float:
        """When the write-back of partially written sectors ends (their read-back through
        HBM after ``t``, the last store's completion); ``t`` when there is none."""
        rmw = self.partial_write_bytes()
        self.stats["rmw_bytes"] = rmw
        return self._serve(2, t, rmw, self.hbm_bpc) if rmw else t

    def atomic(self, lines, secs, t: float, arrive: float, lanes: float,
               distinct: float) -> float:
        """A returning or non-returning atomic: L2 latency, and the L2's atomic unit busy
        ``atomic_lane_cycles`` per pass: one per line (its lanes' different words are
        updated together) and one more per lane that hits an address another lane of the
        instruction hits first (same-address read-modify-writes are serial: contention)."""
        _, done = self.load(lines, secs, t, arrive, atomic=True)
        busy = (len(lines) + max(0.0, lanes - distinct)) * self.mp.atomic_lane_cycles
        if busy <= 0:
            return done
        start = t if t > self.free[0] else self.free[0]
        self.free[0] = start + busy
        self.busy[0] += busy
        return max(done, self.free[0] + self.mp.l2_hit)
    def uncached(self, nbytes: float, t: float) -> float:
        """VMEM bytes whose addresses were not followed: L2 traffic, no cache state."""
        self.stats["unaddressed_bytes"] += nbytes
        self.stats["l2_bytes"] += nbytes
        return self._serve(0, t, nbytes, self.l2_bpc)

    def scalar(self, lines) -> float:
        """Latency of a scalar load: a hit when every line is in the scalar cache."""
        hit = True
        for line in lines:
            hit = self.sc.touch(line) and hit
        self.stats["smem_hit" if hit else "smem_miss"] += 1
        return self.mp.smem_hit if hit else self.mp.smem_miss
