"""Per-wave instruction traces from one emulator launch, captured cheaply.

The emulator runs *groups* of waves that share a PC, so the trace hook sees
one call per group step, not per wave. :class:`TraceRecorder` stores, per
step, the instruction index and the group's mean active lanes per wave, and
opens a *segment* whenever the group changes (a new ``Ctx``); a segment names
its waves (launch-global ids: batches restart their local ids, so each new
batch ``State`` adds the previous batches' wave counts). A wave's trace is the
concatenation of the step ranges of the segments it belongs to; waves that
walked the same segments share one trace object.

For ``buffer_load_*`` / ``buffer_store_*`` the lanes recorded are the lanes
that pass the V# range check, not the active ones: an out-of-range buffer lane
reads 0 or drops its write without a memory access (CDNA3 ISA guide, "Buffer
Instructions: range checking"), which is how Triton masks its tails -- so a
masked-off lane must not count as bytes moved.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class TraceRecorder:
    """The ``trace=`` callback for :meth:`Emulator.launch`."""

    __slots__ = ("pcs", "lanes", "seg_waves", "seg_start", "_ctx", "_st", "_base", "_next",
                 "_buf")

    def __init__(self) -> None:
        self.pcs: list[int] = []
        self.lanes: list[float] = []           # active lanes per wave at the step
        self.seg_waves: list[np.ndarray] = []  # launch-global wave ids of each segment
        self.seg_start: list[int] = []
        self._ctx = None
        self._st = None
        self._base = 0
        self._next: int | None = None
        self._buf: dict[int, object] = {}     # instruction index -> in-range lane counter

    def next_batch_base(self, first_wave: int) -> None:
        """The next batch's local wave 0 is launch-global wave ``first_wave`` (for
        batches that are not consecutive, e.g. one CU's workgroups)."""
        self._next = first_wave

    def __call__(self, d, c) -> None:
        if c is not self._ctx:
            self._ctx = c
            st = c.st
            if st is not self._st:
                if self._next is not None:
                    self._base, self._next = self._next, None
                elif self._st is not None:
                    self._base += self._st.nwaves
                self._st = st
            self.seg_waves.append(c.waves + self._base if self._base else c.waves)
            self.seg_start.append(len(self.pcs))
        self.pcs.append(d.index)
        if d.mnemonic.startswith("buffer_") and c.lanes:
            fn = self._buf.get(d.index)
            if fn is None:
                fn = self._buf[d.index] = _buffer_lanes(d)
            if fn is not False:
                self.lanes.append(fn(c) / c.w)
                return
        self.lanes.append(c.lanes / c.w)


def _buffer_lanes(d):
    """A function ctx -> number of active lanes of buffer load/store ``d`` whose first
    element passes the range check (False: not a plain buffer load/store)."""
    from asmevo.emu.decode import parse
    from asmevo.emu.vmem import LOADS, STORES, _buffer_addr, _in_range

    m = d.mnemonic
    table, key = (LOADS, m.split("_load_", 1)[-1]) if "_load_" in m else \
        (STORES, m.split("_store_", 1)[-1]) if "_store_" in m else (None, None)
    if table is None or key not in table:
        return False
    size = table[key][0]
    try:
        ins = parse(d.text, index=d.index, address=d.address, kernel=None, accum_offset=0,
                    processor="gfx942")
        if "lds" in ins.mods:       # the LDS form has no VDATA operand
            from asmevo.emu.lds_dma import buffer_lds_addr
            addr = buffer_lds_addr(ins)
        else:
            addr = _buffer_addr(ins, size, table[key][1])
    except Exception:       # noqa: BLE001 -- an operand the model cannot read: count all lanes
        return False

    def count(c) -> int:
        _, offset, stride, index, nrec = addr(c)
        ok = _in_range(offset, stride, index, nrec, size)
        if c.mask is not None:
            ok = ok & c.mask
        return int(np.count_nonzero(ok))
    return count


@dataclass
class LaunchTraces:
    """The traces of one launch, ready for the timing model."""

    pcs: np.ndarray                 # instruction index per step
    lanes: np.ndarray               # active lanes per wave per step
    seg_waves: list[np.ndarray]
    seg_bounds: np.ndarray          # (nseg + 1,) step offsets
    total_waves: int
    waves_per_wg: int

    @staticmethod
    def from_recorder(rec: TraceRecorder, total_waves: int, waves_per_wg: int) -> "LaunchTraces":
        bounds = np.array(rec.seg_start + [len(rec.pcs)], np.int64)
        return LaunchTraces(np.asarray(rec.pcs, np.int64), np.asarray(rec.lanes, np.float64),
                            rec.seg_waves, bounds, total_waves, waves_per_wg)

    def wave_work(self) -> np.ndarray:
        """Instructions executed per wave (launch-global ids)."""
        work = np.zeros(self.total_waves, np.int64)
        lens = np.diff(self.seg_bounds)
        for waves, n in zip(self.seg_waves, lens):
            work[waves] += n
        return work

    def wave_steps(self, waves: np.ndarray) -> dict[int, list[int]]:
        """wave id -> its trace as a list of step indices (shared between equal paths)."""
        wanted = np.zeros(self.total_waves, bool)
        wanted[waves] = True
        segs: dict[int, list[int]] = {int(w): [] for w in waves}
        for k, ws in enumerate(self.seg_waves):
            sel = ws[wanted[ws]]
            for w in sel.tolist():
                segs[w].append(k)
        shared: dict[tuple[int, ...], list[int]] = {}
        out: dict[int, list[int]] = {}
        b = self.seg_bounds
        for w, ks in segs.items():
            key = tuple(ks)
            steps = shared.get(key)
            if steps is None:
                steps = (np.concatenate([np.arange(b[k], b[k + 1]) for k in ks]).tolist()
                         if ks else [])
                shared[key] = steps
            out[w] = steps
        return out
