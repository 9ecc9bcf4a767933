"""Global memory: a set of allocations at distinct, guard-separated addresses.

All allocations live in one host byte array (the *heap*) that starts at
:data:`HEAP_BASE` in the emulated address space, with unmapped gaps between
them. Every access is checked: it must fall entirely inside one allocation
(including its guard bytes, which are mapped on purpose so that writes just
past a buffer are visible, not fatal), be writable if it writes, and be
naturally aligned (to its size, at most 4 bytes). A failed check raises
:class:`MemoryFault` naming the first bad byte address; nothing is written.

Some mapped bytes are outside the launch's contract: the guard regions around
buffers and the kernarg allocation past the kernarg segment. They hold poison
that changes with the run (see :mod:`asmevo.emu.run.launch`), and every read that
touches them is noted in :attr:`Memory.poison_reads`, so a verdict can say what
a result that changes between runs depended on.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asmevo.emu.errors import LaunchError, MemoryFault

HEAP_BASE = 0x7F00_0000_0000
GAP = 1 << 16          # unmapped bytes between allocations
PAGE = 1 << 12
MAX_HEAP = 8 << 30


@dataclass
class Allocation:
    name: str
    start: int          # first mapped address (guard included)
    base: int           # address the kernel is given
    size: int           # bytes of the buffer proper
    guard: int
    readonly: bool = False
    contract: int | None = None   # bytes from ``base`` a kernel may read (default: size)

    @property
    def end(self) -> int:
        return self.base + self.size + self.guard


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


class Memory:
    """The launch's global address space."""

    def __init__(self):
        self.allocs: list[Allocation] = []
        self._next = HEAP_BASE + PAGE
        self.heap: np.ndarray | None = None
        self.kernel: str | None = None
        self.poison_reads: list[dict] = []     # reads outside the contract (first few)
        # stores where lanes of one wave wrote one byte with different values (first few)
        self.lane_conflicts: list[dict] = []
        self.track = None       # a racecheck.MemoryTracker: called (heap offsets, size, write)
        # [(start, end)] of address ranges whose reads count in watch_hits (asmevo.emu.run.converge)
        self.watch: list[tuple[int, int]] | None = None
        self.watch_hits = 0

    # -- layout ------------------------------------------------------------
    def add(self, name: str, size: int, *, guard: int = 0, readonly: bool = False,
            align: int = 256, contract: int | None = None, extend: int = 0,
            reserve: int = 0) -> Allocation:
        """A new allocation after the last one. ``extend`` more bytes than ``size`` go into
        the gap after it, where they fit, so that every later allocation keeps the address
        it has without them (a launch with overlapping buffers lays out like one without);
        the next allocation starts as if this one held ``reserve`` bytes where that is
        more than ``size`` (launches of one pass with buffers of other sizes lay out
        alike: :mod:`asmevo.emu.run.batch`)."""
        if self.heap is not None:
            raise LaunchError("memory is already laid out")
        guard = _align(guard, align) if guard else 0
        start = _align(self._next, PAGE)
        base = start + guard
        a = Allocation(name, start, base, size, guard, readonly, contract)
        self._next = _align(base + max(size, reserve) + guard, PAGE) + GAP
        if extend:
            a.size += extend
            if a.end + PAGE > self._next:
                self._next = _align(a.end, PAGE) + GAP
        self.allocs.append(a)
        return a

    def finalize(self) -> None:
        total = self._next - HEAP_BASE
        if total > MAX_HEAP:
            raise LaunchError(f"launch needs {total >> 20} MiB of global memory; the emulator "
                              f"allows {MAX_HEAP >> 20} MiB")
        self.heap = np.zeros(_align(total, 16), np.uint8)
        self._starts = np.array([a.start for a in self.allocs], np.uint64)
        self._ends = np.array([a.end for a in self.allocs], np.uint64)
        self._ro = np.array([a.readonly for a in self.allocs], bool)
        self._clo = [a.base for a in self.allocs]
        self._chi = [a.base + (a.size if a.contract is None else a.contract)
                     for a in self.allocs]
        self._h32 = self.heap.view(np.uint32)
        self._h16 = self.heap.view(np.uint16)

    def view(self, a: Allocation, *, with_guard: bool = False) -> np.ndarray:
        """The bytes of ``a`` (a writable view into the heap)."""
        if with_guard:
            o = a.start - HEAP_BASE
            return self.heap[o:o + (a.end - a.start)]
        o = a.base - HEAP_BASE
        return self.heap[o:o + a.size]

    def write_bytes(self, a: Allocation, data: bytes | np.ndarray, offset: int = 0) -> None:
        raw = np.frombuffer(bytes(data), np.uint8) if not isinstance(data, np.ndarray) \
            else np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        v = self.view(a, with_guard=True)
        o = a.base - a.start + offset
        v[o:o + raw.size] = raw

    # -- checks ------------------------------------------------------------
    def check(self, addrs: np.ndarray, size: int, write: bool, where) -> np.ndarray:
        """Heap offsets (int64) of ``addrs`` after checking bounds, permission, alignment."""
        if addrs.size == 0:
            return addrs.astype(np.int64)
        if self.watch is not None and not write:
            self._watched(addrs, size)
        align = min(size, 4)
        # alignment from one or-reduce (the element-wise pass only to name the first)
        if align > 1 and int(np.bitwise_or.reduce(addrs, axis=None)) & (align - 1):
            bad = (addrs & np.uint64(align - 1)) != 0
            if bad.any():
                addr = int(addrs[np.argmax(bad)])
                raise MemoryFault(f"misaligned {size}-byte {'store' if write else 'load'} at "
                                  f"0x{addr:x}", kernel=where[0], address=where[1],
                                  byte_address=addr)
        lo, hi = int(addrs.min()), int(addrs.max())
        k = int(np.searchsorted(self._starts, np.uint64(lo), side="right")) - 1
        if k >= 0 and hi + size <= int(self._ends[k]) and not (write and self._ro[k]):
            if not write and (lo < self._clo[k] or hi + size > self._chi[k]):
                self._note(addrs, size, np.full(addrs.shape, k), where)
            offs = addrs.astype(np.int64)
            offs -= HEAP_BASE
            if self.track is not None:
                self.track(offs, size, write)
            return offs
        ks = np.searchsorted(self._starts, addrs, side="right").astype(np.int64) - 1
        kc = np.maximum(ks, 0)
        ok = (ks >= 0) & (addrs + np.uint64(size) <= self._ends[kc])
        if write:
            ok &= ~self._ro[kc]
        if not ok.all():
            i = int(np.argmin(ok))
            addr = int(addrs[i])
            kind = "store" if write else "load"
            if ks[i] >= 0 and addrs[i] + np.uint64(size) <= self._ends[kc[i]]:
                msg = f"{kind} to read-only {self.allocs[kc[i]].name} at 0x{addr:x}"
            else:
                msg = f"out-of-bounds {size}-byte {kind} at 0x{addr:x}{self._near(addr)}"
            raise MemoryFault(msg, kernel=where[0], address=where[1], byte_address=addr)
        if not write:
            self._note(addrs, size, kc, where)
        offs = addrs.astype(np.int64) - HEAP_BASE
        if self.track is not None:
            self.track(offs, size, write)
        return offs

    def _watched(self, addrs: np.ndarray, size: int) -> None:
        """Note a read whose span of addresses meets a watched range (conservatively:
        the span from the lowest to the highest address)."""
        lo, hi = int(addrs.min()), int(addrs.max()) + size
        if any(lo < e and hi > s for s, e in self.watch):
            self.watch_hits += 1

    def _note(self, addrs: np.ndarray, size: int, ks: np.ndarray, where) -> None:
        """Record a read that touches bytes outside its allocation's contract."""
        if len(self.poison_reads) >= 16:
            return
        clo = np.array(self._clo, np.uint64)[ks]
        chi = np.array(self._chi, np.uint64)[ks]
        out = (addrs < clo) | (addrs + np.uint64(size) > chi)
        if not out.any():
            return
        i = int(np.argmax(out))
        a = self.allocs[int(ks.reshape(-1)[i])]
        addr = int(addrs.reshape(-1)[i])
        off = addr - a.base
        if a.contract is not None and a.guard == 0:
            what = f"{a.name} bytes {off}..{off + size - 1}, past its {a.contract}-byte contract"
        elif off < 0:
            what = f"{a.name} at byte offset {off} (the guard before it)"
        else:
            what = (f"{a.name} bytes {off}..{off + size - 1}, past its {a.size} bytes "
                    "(the guard after it)")
        entry = {"what": what, "address": where[1], "byte_address": addr,
                 "lanes": int(out.sum())}
        if not any(e["what"] == entry["what"] and e["address"] == entry["address"]
                   for e in self.poison_reads):
            self.poison_reads.append(entry)

    def note_conflict(self, what: str, where, byte_address: int, lanes: int) -> None:
        """Record a store whose lanes wrote one byte with different values: the ISA does
        not say which lane's value lands, so a result that depends on it is unspecified."""
        if len(self.lane_conflicts) < 16 and not any(
                e["address"] == where[1] for e in self.lane_conflicts):
            self.lane_conflicts.append({"what": what, "address": where[1],
                                        "byte_address": byte_address, "lanes": lanes})

    def _near(self, addr: int) -> str:
        for a in self.allocs:
            if a.start - GAP <= addr < a.end + GAP:
                if addr >= a.end:
                    return f" ({addr - a.base - a.size} bytes past the end of {a.name})"
                return f" ({a.base - addr} bytes before {a.name})"
        return " (unmapped)"

    # -- access ------------------------------------------------------------
    def load(self, offs: np.ndarray, size: int) -> np.ndarray:
        """Checked heap offsets -> values (uint32 for 4, uint16 for 2, uint8 for 1)."""
        if size == 4:
            return np.take(self._h32, offs >> 2)
        if size == 2:
            return self._h16[offs >> 1]
        if size == 1:
            return self.heap[offs]
        raise ValueError(size)

    def load_dwords(self, offs: np.ndarray, n: int) -> np.ndarray:
        """(n, len(offs)): row i is ``load(offs + 4 * i, 4)``; ``offs`` as :meth:`check`
        returns them for 4n bytes, inside the heap, so "clip" (faster) clips nothing."""
        return np.take(self._h32, (offs >> 2)[None, :] + np.arange(n)[:, None], mode="clip")

    def store(self, offs: np.ndarray, size: int, vals: np.ndarray) -> None:
        if size == 4:
            self._h32[offs >> 2] = vals
        elif size == 2:
            self._h16[offs >> 1] = vals
        elif size == 1:
            self.heap[offs] = vals
        else:
            raise ValueError(size)
