"""Proof that a serial launch may run in lockstep: no two waves of it communicate.

A ``serial`` (``serial_reverse``) launch runs the waves of each workgroup one slot
after another between barriers, so that a read racing another wave's write sees
stale data as hardware may. Its result differs from a lockstep run of the same
launch only through state that waves share: LDS, global memory, the launch's clock
(``s_memtime``) and the order in which out-of-contract reads are noted. So
:func:`asmevo.emu.run.batch.launch_many` may run serial launches in lockstep with the
others when it also proves, while they run, that

* no LDS byte of a workgroup is written by one wave and read or written by another
  wave of it between two of its barriers (the trackers here, per byte and slot);
* no global byte (private segment included) a wave writes is read or written by any
  other access of the launch, and no access through a global address touches the
  private segment (conservative: a wave reading back its own output counts too;
  ``scratch_`` accesses address the wave's own private slot only and are not seen);
* no instruction reads the launch's clock and no other per-launch instruction
  (``s_dcache``, ``s_sendmsg``, ...) runs, and reads outside the contract are noted
  only by the schedule's first wave slot while the launch's waves still run as one
  group (the serial launch alone notes exactly those first, with the same counts;
  see ``asmevo.emu.run.batch._Pass._tracked_launch``).

Then each wave reads the same values in either order, so every result field is the
one the serial launch gives alone. Anything else is a :class:`Conflict`: the pass
is abandoned and the launches run serially after all.
"""
from __future__ import annotations

import numpy as np

from asmevo.emu.machine.memory import HEAP_BASE

# per-launch instructions whose memory accesses go through the trackers
TRACKED_MEMORY = ("global_", "flat_", "buffer_", "scratch_", "s_load", "s_buffer_load",
                  "s_store")
MAX_SLOTS = 16          # waves of a workgroup, one bit each


class Conflict(Exception):
    """Waves of a serial launch may have communicated: lockstep does not prove its result."""


class LdsTracker:
    """Which slot of each workgroup owns each LDS dword since its last barrier.

    ``st.tracker`` in a pass; ``st.track_ctx`` is the Ctx whose instruction runs (the
    LDS helpers pass per-active-lane byte offsets of it, in wave-major lane order).
    Dwords, not bytes: two waves writing two bytes of one dword count as sharing it
    (a refusal too many, never one too few)."""

    NONE, MANY = -1, -2         # owner: no slot yet; read by several slots

    def __init__(self, st, tracked: np.ndarray, stride: int):
        if stride % 4:
            raise Conflict("workgroups' LDS not dword-aligned in the batch's array")
        self.tracked = tracked                        # per wave: a serial launch's
        # slots and owners as int8 (MAX_SLOTS slots, NONE and MANY): the owner table is
        # gathered and scattered at random on every tracked access, an eighth of the bytes
        if st.wave_in_wg.size and int(st.wave_in_wg.max()) > 127:
            raise Conflict("more waves per workgroup than the LDS tracker has slots")
        self.slot = st.wave_in_wg.astype(np.int8)
        self.stride = stride
        n = -(-st.lds.size // 4)
        self.owner = np.full(n, self.NONE, np.int8)   # the slot that touched the dword
        self.written = np.zeros(n, bool)
        self._memo = None

    def _lanes(self, st, c):
        """(lanes in order, the positions of a tracked wave's among them (None: all),
        their slots; None when no wave is tracked), once per Ctx and EXEC
        (Ctx.exec_changed makes a new mask)."""
        m = self._memo
        if m is not None and m[0] is c and m[1] is c.mask:
            return m[2]
        waves = np.asarray(c.waves)
        tw = self.tracked[waves]
        if not tw.any():
            out = None
        else:
            per_wave = np.full(c.w, 64) if c.mask is None else st.nactive[c.idx]
            n = int(per_wave.sum())
            if tw.all():
                out = (n, None, np.repeat(self.slot[waves], per_wave))
            else:   # the tracked lanes' positions (a gather is cheaper than a mask;
                # one run of them, the serial launches' waves side by side: a slice)
                sel = np.flatnonzero(np.repeat(tw, per_wave))
                if sel.size and int(sel[-1]) - int(sel[0]) + 1 == sel.size:
                    sel = slice(int(sel[0]), int(sel[-1]) + 1)
                out = (n, sel, np.repeat(self.slot[waves][tw], per_wave[tw]))
        self._memo = (c, c.mask, out)
        return out

    def _tracked(self, st):
        """:meth:`_lanes` of the instruction that runs, None when no wave is tracked."""
        c = st.track_ctx
        if c is None:
            raise Conflict("an LDS access outside a known instruction context")
        return self._lanes(st, c)

    def access(self, st, offs: np.ndarray, size: int, write: bool) -> None:
        lanes = self._tracked(st)
        if lanes is None:
            return
        n, sel, slots = lanes
        offs = np.asarray(offs, np.int64).reshape(-1)
        if n != offs.size:
            raise Conflict("LDS offsets that are not one per active lane")
        nd = max(1, -(-size // 4))
        d = offs >> 2 if sel is None else _pick(offs, sel) >> 2
        if nd > 1:
            d = (d[:, None] + np.arange(nd)).reshape(-1)
            s = np.repeat(slots, nd)
        else:
            s = slots
        self._update(d, s, write)

    def access_dwords(self, st, dws: list, ndw: int, write: bool) -> None:
        """One instruction's dword accesses at once: each of ``dws`` holds one dword index
        per active lane (wave-major lane order), and each lane touches that dword and the
        ``ndw - 1`` after it. The same as :meth:`access` of each ``dws[k] * 4 + 4 * i``
        (4 bytes), k and then i ascending, as the LDS helpers made them one by one: an
        instruction's accesses conflict whatever their order (a read conflicts with a write
        of another slot in the interval, a write with any access of another slot), and
        the owner a dword ends with is the one slot that touched it, or MANY."""
        lanes = self._tracked(st)
        if lanes is None:
            return
        n, sel, slots = lanes
        for x in dws:
            if x.size != n:
                raise Conflict("LDS offsets that are not one per active lane")
        parts = [x if sel is None else _pick(x, sel) for x in dws]
        d = parts[0] if len(parts) == 1 else np.concatenate(parts)
        if ndw > 1:
            d = (d[:, None] + np.arange(ndw)).reshape(-1)
        self._update(d, self._slots(slots, len(parts), ndw), write)

    def arrays(self, st, c):
        """What :func:`asmevo.emu.isa.native.lds` notes ``c``'s access in (``(tracked, slot,
        owner, written)``: a byte per wave and per dword), or None where ``c`` is not the
        instruction's context or an array is not laid out for it (then
        :meth:`access_dwords` notes it)."""
        if st.track_ctx is not c:
            return None
        out = (self.tracked, self.slot, self.owner, self.written)
        if any(not a.flags.c_contiguous or a.dtype not in (np.bool_, np.int8) for a in out):
            return None
        return out

    @staticmethod
    def conflict(code: int) -> None:
        """Raise the conflict :func:`asmevo.emu.isa.native.lds` answered (2: a read, 3: a write)."""
        if code == 2:
            raise Conflict("an LDS dword another wave wrote in this interval is read")
        raise Conflict("an LDS dword another wave touched in this interval is written")

    def _slots(self, slots: np.ndarray, k: int, ndw: int) -> np.ndarray:
        """``slots`` for ``k`` concatenated per-lane arrays of ``ndw`` dwords each, kept
        with the lanes' memo (the same Ctx and EXEC)."""
        if k == 1 and ndw == 1:
            return slots
        key = (k, ndw)
        m = self._memo
        extra = m[3] if len(m) > 3 else None
        if extra is None:
            extra = {}
            self._memo = (*m[:3], extra)
        got = extra.get(key)
        if got is None:
            got = np.repeat(np.tile(slots, k) if k > 1 else slots, ndw)
            extra[key] = got
        return got

    def _update(self, d: np.ndarray, s: np.ndarray, write: bool) -> None:
        """Dwords ``d`` accessed by slots ``s`` (elementwise) in one access.

        Untouched dwords (owner NONE) are never written ones: a write makes its slot the
        owner, and a read of a written dword by its owner keeps it (by another slot: a
        conflict, and the pass is abandoned), until a barrier resets both."""
        owner = self.owner     # (d: the LDS helpers' checked dwords, so "clip" clips nothing)
        cur = np.take(owner, d, mode="clip")
        lo, hi = (int(cur.min()), int(cur.max())) if cur.size else (self.NONE, self.NONE)
        untouched = lo == hi == self.NONE
        if write:
            if not untouched and ((cur != self.NONE) & (cur != s)).any():
                raise Conflict("an LDS dword another wave touched in this interval is written")
            owner[d] = s
            if (np.take(owner, d, mode="clip") != s).any():
                raise Conflict("two waves write one LDS dword in one instruction")
            self.written[d] = True
            return
        if lo == hi == self.MANY:
            return      # read by several slots already (so not written): it stays so
        if untouched:
            new = s     # where((cur == NONE) | (cur == s), s, MANY) with every cur NONE
        else:
            if (np.take(self.written, d, mode="clip") & (cur != s)).any():
                raise Conflict("an LDS dword another wave wrote in this interval is read")
            new = np.where((cur == self.NONE) | (cur == s), s, self.MANY)
        owner[d] = new
        if d.size > 1:      # one dword read by several slots in this read: shared
            back = np.take(owner, d, mode="clip")
            clash = back != new
            if clash.any():
                owner[d[clash]] = self.MANY

    def barrier(self, workgroups: np.ndarray) -> None:
        """The workgroups' waves passed a barrier: a new interval for their dwords."""
        q = self.stride // 4
        g = np.asarray(workgroups, np.int64).reshape(-1)
        if q and g.size and self.owner.size % q == 0 and 0 <= g.min() and \
                g.max() < self.owner.size // q:
            self.owner.reshape(-1, q)[g] = self.NONE
            self.written.reshape(-1, q)[g] = False
            return
        for g in g.tolist():
            self.owner[g * q:(g + 1) * q] = self.NONE
            self.written[g * q:(g + 1) * q] = False


def _pick(x: np.ndarray, sel) -> np.ndarray:
    """``x`` at the tracked lanes' positions ``sel`` (a slice or an index array)."""
    return x[sel] if isinstance(sel, slice) else x.take(sel)


class MemoryTracker:
    """Global bytes one serial launch read and wrote (``Memory.track``)."""

    def __init__(self, mem):
        self.mem = mem
        n = mem.heap.size
        self.r = np.zeros(n, bool)
        self.w = np.zeros(n, bool)
        self.private = [(a.start - HEAP_BASE, a.end - HEAP_BASE)
                        for a in mem.allocs if a.name == "private segment"]
        self.wrote = False      # whether any byte is in ``w`` yet

    def __call__(self, offs: np.ndarray, size: int, write: bool) -> None:
        offs = np.asarray(offs, np.int64).reshape(-1)
        if offs.size and self.private:
            # a lane's bytes [o, o + size) meet [lo, hi) iff o < hi and o + size > lo: on
            # the lanes' offsets, after a span test of their min and max
            first, last = int(offs.min()), int(offs.max())
            for lo, hi in self.private:
                if first < hi and last + size > lo and \
                        ((offs < hi) & (offs > lo - size)).any():
                    raise Conflict("a global access to the private segment")
        b = (offs[:, None] + np.arange(size)).reshape(-1)
        if not write and not self.wrote:
            self.r[b] = True    # nothing written yet: no byte of b can be
            return
        self.wrote |= bool(write)
        if write:
            if self.w[b].any() or self.r[b].any():
                raise Conflict("a global byte written and accessed again")
            lo, hi = int(b.min()), int(b.max()) + 1
            before = int(np.count_nonzero(self.w[lo:hi]))
            self.w[b] = True
            if int(np.count_nonzero(self.w[lo:hi])) - before != b.size:
                raise Conflict("two lanes write one global byte in one instruction")
        else:
            if self.w[b].any():
                raise Conflict("a global byte read after a write")
            self.r[b] = True
