"""The emulator on one wave from a given state: the executable reference a proof's
semantics are checked against and a counterexample is replayed on.

A :class:`Snapshot` is a concrete wave state (every SGPR, SCC, the VGPRs that
matter, global memory dwords, LDS dwords, the LDS size, MODE). :func:`run` decodes
instruction texts with the emulator's own decoder and runs them one after the other
on a one-wave :class:`~asmevo.emu.machine.state.State` whose global memory is one
allocation at :data:`BASE` of :data:`HEAP_BYTES` bytes (the rest of the address
space unmapped), exactly as a launch would run them; a memory fault or a refusal
ends the run with that status.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from asmevo.emu.numerics import fpmode
from asmevo.emu.isa.decode import decode_one
from asmevo.emu.errors import EmulatorError, MemoryFault
from asmevo.emu.machine.memory import Memory
from asmevo.emu.machine.state import Ctx, State
from asmevo.targets.amdgpu.processors import DEFAULT

HEAP_BYTES = 1 << 16


def _layout():
    mem = Memory()
    al = mem.add("window", HEAP_BYTES)
    return al.base


BASE = _layout()          # where the harness's one allocation starts
NVGPRS = 512


@dataclass
class Snapshot:
    """A concrete wave state."""

    s: list[int] = field(default_factory=lambda: [0] * 128)
    scc: bool = False
    v: dict[int, list[int]] = field(default_factory=dict)     # VGPR -> 64 lane values
    mem: dict[int, int] = field(default_factory=dict)         # dword byte address -> value
    lds: dict[int, int] = field(default_factory=dict)         # LDS dword byte address -> value
    lds_size: int = 65536
    mode: int = 0x2F0
    status: str = "ok"                              # after a run: ok | fault | barrier | ...
    detail: str = ""

    def vget(self, r: int) -> list[int]:
        return self.v.get(r, [0] * 64)


class _Launch:
    """What the instructions the prover models read of a launch."""

    def __init__(self, mem: Memory, processor: str, variant: int):
        self.mem = mem
        self.kernel_name = "window"
        self.kernel = None
        self.processor = processor
        self.approx_variant = variant
        self.clock = 0
        self.extra: dict = {}
        self.wave_base = 0

    def hwreg_value(self, c, reg: int) -> np.ndarray:
        """s_getreg: MODE as a launch reads it; other hardware registers are refused."""
        if reg == 1:
            return fpmode.wave_modes(c).astype(np.uint64)
        raise EmulatorError(f"hardware register {reg} is not modeled in the harness")


def _state(snap: Snapshot, vregs) -> tuple[State, Memory]:
    st = State(1, NVGPRS, snap.lds_size, np.zeros(1, np.int64), snap.mode)
    st.s[:, 0] = np.array(snap.s, np.uint32)
    st.scc[0] = bool(snap.scc)
    for r in vregs:
        st.v[r, 0] = np.array(snap.vget(r), np.uint32)
    st.refresh_exec(slice(None))
    lds32 = st.lds.view(np.uint32)
    for a, val in snap.lds.items():
        if 0 <= a and a + 4 <= snap.lds_size:
            lds32[a >> 2] = val
    mem = Memory()
    al = mem.add("window", HEAP_BYTES)
    mem.finalize()
    heap = mem.view(al).view(np.uint32)
    for a, val in snap.mem.items():
        off = a - BASE
        if 0 <= off <= HEAP_BYTES - 4:
            heap[off >> 2] = val
    return st, mem


def run(snap: Snapshot, texts: list[str], *, vregs, accum_offset: int = 0,
        processor: str = DEFAULT, variant: int = 0) -> Snapshot:
    """``texts`` run on the emulator from ``snap``: the state after them (its
    ``status`` says whether they all ran; ``barrier``: up to the first ``s_barrier``,
    the state there)."""
    st, mem = _state(snap, vregs)
    ctx = Ctx(st, np.array([0]), _Launch(mem, processor, variant))
    status, detail = "ok", ""
    for k, text in enumerate(texts):
        d = decode_one(text, index=k, address=None, kernel="window", accum_offset=accum_offset,
                       processor=processor)
        if d.ctl == "barrier":          # what other waves see: memory and LDS here (the
            status, detail = "barrier", f"at instruction {k}"    # run cannot go on: the
            break                                                # others' stores)
        if d.ctl != "op":
            status, detail = "unsupported", f"{text!r} is not straight-line"
            break
        try:
            d.fn(ctx)
        except MemoryFault as exc:
            status, detail = "fault", str(exc)
            break
        except EmulatorError as exc:
            status, detail = "unsupported", str(exc)
            break
        except IndexError as exc:       # an address past the harness's one allocation,
            status, detail = "unsupported", f"{text!r}: {exc}"      # unchecked by a fused
            break                                                  # access: no replay
    return _snapshot(st, mem, snap, vregs, status, detail)


def _snapshot(st: State, mem: Memory, snap: Snapshot, vregs, status, detail) -> Snapshot:
    heap = mem.view(mem.allocs[0]).view(np.uint32)
    nz = np.flatnonzero(heap)
    keys = set(snap.mem) | {BASE + 4 * int(i) for i in nz}
    memd = {a: int(heap[(a - BASE) >> 2]) if 0 <= a - BASE <= HEAP_BYTES - 4 else snap.mem[a]
            for a in keys}
    lds32 = st.lds.view(np.uint32)
    ldsn = {4 * int(i) for i in np.flatnonzero(lds32[:snap.lds_size // 4])} | set(snap.lds)
    return Snapshot(s=[int(x) for x in st.s[:, 0]], scc=bool(st.scc[0]),
                    v={r: [int(x) for x in st.v[r, 0]] for r in vregs},
                    mem=memd, lds={a: int(lds32[a >> 2]) for a in ldsn
                                   if 0 <= a and a + 4 <= snap.lds_size},
                    lds_size=snap.lds_size, mode=snap.mode, status=status, detail=detail)
