"""Definedness shadow: which registers and LDS bytes hold a value the launch defined.

Verification runs a candidate twice with different garbage in everything the
dispatch leaves undefined (VGPRs, AGPRs, SGPRs it does not set, LDS) and
different poison past the kernarg segment and around buffers. A result that
changes between the runs depended on one of them; this shadow, switched on
only to explain such a result (it costs a Python call per instruction), says
which: the first reads of registers no instruction has written in those lanes,
and of LDS bytes no store has written, each with the instruction that read it.

Register effects come from the target's effects model (the same one the static
checks use); an instruction it does not model is skipped, never guessed.
"""
from __future__ import annotations

import numpy as np

MAX_EVENTS = 16


def _regs(mask: int, accum_offset: int) -> tuple[list[int], list[int]]:
    """(unified VGPR file indices, SGPR numbers) of a register bit mask."""
    from asmevo.targets.amdgpu.analysis import regs as R
    v, s = [], []
    m = mask
    while m:
        low = m & -m
        b = low.bit_length() - 1
        m ^= low
        if R.VGPR_BASE <= b < R.AGPR_BASE:
            v.append(b - R.VGPR_BASE)
        elif b >= R.AGPR_BASE:
            v.append(accum_offset + b - R.AGPR_BASE)
        elif b < 128 and b not in (R.EXEC, R.EXEC + 1):
            s.append(b)
    return v, s


class Shadow:
    """A trace hook (``Emulator.launch(trace=...)``) plus LDS hooks (``State.shadow``)."""

    def __init__(self, accum_offset: int = 0):
        self.accum_offset = accum_offset
        self.events: list[dict] = []
        self._ops: dict[int, tuple] = {}
        self._st = None
        self._current = None

    # -- per batch -----------------------------------------------------------------
    def start(self, st) -> None:
        """Shadows for a fresh batch: what the dispatch itself sets is defined."""
        self._st = st
        st.shadow = self
        self.vdef = np.zeros(st.v.shape, bool)
        self.vdef[0] = st.execmask
        for r in st.dispatch_vgprs[1:]:
            self.vdef[r] = st.execmask
        self.sdef = np.zeros(st.s.shape, bool)
        for r in st.dispatch_sgprs:
            self.sdef[r] = True
        self.sdef[102:106] = True          # flat_scratch, xnack_mask: zero at dispatch
        self.ldsdef = np.zeros(st.lds.shape, bool)

    def _note(self, kind: str, what: str, lanes: int) -> None:
        d = self._current
        text = d.text if d is not None else "?"
        if len(self.events) >= MAX_EVENTS or any(
                e["what"] == what and e["text"] == text for e in self.events):
            return
        self.events.append({"kind": kind, "what": what, "text": text,
                            "address": d.address if d is not None else None,
                            "lanes": lanes})

    # -- registers -------------------------------------------------------------------
    def _decoded_ops(self, d) -> tuple:
        hit = self._ops.get(d.index)
        if hit is None:
            from asmevo.targets.amdgpu.analysis import regs as R
            from asmevo.targets.amdgpu.analysis.effects import effects
            eff = effects(d.text)
            if eff.reads == R.ALL or eff.writes == R.ALL:
                hit = ((), (), (), ())
            else:
                hit = _regs(eff.reads, self.accum_offset) + _regs(eff.writes, self.accum_offset)
            self._ops[d.index] = hit
        return hit

    def __call__(self, d, c) -> None:
        if c.st is not self._st:
            self.start(c.st)
        self._current = d
        vr, sr, vw, sw = self._decoded_ops(d)
        idx = c.idx
        if vr or vw:
            mask = c.exec_mask()
            if c.lanes:
                for r in vr:
                    if r < self.vdef.shape[0]:
                        bad = mask & ~self.vdef[r, idx]
                        if bad.any():
                            self._note("vgpr", _vname(r, self.accum_offset), int(bad.sum()))
            for r in vw:
                if r < self.vdef.shape[0]:
                    self.vdef[r, idx] = self.vdef[r, idx] | mask
        for r in sr:
            if not self.sdef[r, idx].all():
                self._note("sgpr", _sname(r), int((~self.sdef[r, idx]).sum()))
        for r in sw:
            self.sdef[r, idx] = True

    # -- LDS -------------------------------------------------------------------------
    def lds_read(self, offs: np.ndarray, size: int) -> None:
        if offs.size == 0:
            return
        span = offs[:, None] + np.arange(size)[None, :]
        bad = ~self.ldsdef[span]
        if bad.any():
            i = int(np.argmax(bad.any(axis=1)))
            lds = max(self._st.lds_bytes, 4)
            self._note("lds", f"LDS bytes {int(offs[i]) % lds}..{int(offs[i]) % lds + size - 1}"
                       " (never written in this workgroup)", int(bad.any(axis=1).sum()))

    def lds_write(self, offs: np.ndarray, size: int) -> None:
        if offs.size:
            self.ldsdef[offs[:, None] + np.arange(size)[None, :]] = True


def _vname(r: int, acc: int) -> str:
    return f"a{r - acc}" if acc and r >= acc else f"v{r}"


def _sname(r: int) -> str:
    named = {106: "vcc_lo", 107: "vcc_hi", 124: "m0"}
    if r in named:
        return named[r]
    if 108 <= r < 124:
        return f"ttmp{r - 108}"
    return f"s{r}"


def describe(events: list[dict]) -> list[str]:
    """One line per undefined read: what, by which instruction, in how many lanes."""
    out = []
    for e in events:
        where = f" at 0x{e['address']:x}" if e.get("address") is not None else ""
        out.append(f"{e['what']} read by '{e['text']}'{where}"
                   + (" (never written)" if e["kind"] in ("vgpr", "sgpr") else ""))
    return out
