"""Hot windows: the contiguous instruction ranges where a kernel's time goes.

A window lies inside one basic block of the function's control-flow graph
(:mod:`asmevo.targets.amdgpu.analysis.cfg`, the graph operators and the gate
read too), so it never crosses a label and never holds the block's closing
branch. Windows are ranked by their share of the kernel's cycles; a long block
is cut into windows of at most ``max_len`` instructions, hottest first. Each
window carries the registers live at its edges from the one liveness analysis
(:class:`~asmevo.targets.amdgpu.analysis.liveness.Liveness`), so what the
profile shows is what an operator editing the window must assume -- all
registers live-out where the block leaves the function (``s_setpc``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asmevo.profile.model import Profile
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.cfg import build_cfg
from asmevo.targets.amdgpu.analysis.liveness import Liveness
from asmevo.targets.amdgpu.program import Program


@dataclass(frozen=True)
class HotWindow:
    """Instructions ``[start, end)`` of ``function``: one basic block or part of one."""

    function: str
    start: int
    end: int
    share: float                # of the function's cycles
    cycles: float
    reason: str
    live_in: tuple[str, ...]
    live_out: tuple[str, ...]
    loop: bool = False

    @property
    def size(self) -> int:
        return self.end - self.start


# Control flow trimmed off a block's end before it is cut into windows (prefixes: the
# s_endpgm_* variants too, which Instruction.ends_block does not end a block at).
_TERMINATORS = ("s_branch", "s_cbranch_", "s_endpgm", "s_setpc_", "s_swappc_", "s_trap")


def _fmt(n: float) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else f"{n:.0f}"


def _loop_blocks(succ: list[list[int]]) -> set[int]:
    """Blocks inside a loop body, by layout: between a back-edge target and its source.
    A ranking hint for the reason text only; operators find natural loops themselves
    (:mod:`asmevo.targets.amdgpu.analysis.dominance`)."""
    inside = set()
    for k, ss in enumerate(succ):
        for s in ss:
            if s <= k:
                inside.update(range(s, k + 1))
    return inside


def _split(lo: int, hi: int, cyc: np.ndarray, max_len: int, min_len: int) -> list[tuple[int, int]]:
    """Cut [lo, hi) into windows of at most ``max_len``, hottest first."""
    if hi - lo <= max_len:
        return [(lo, hi)]
    pre = np.concatenate([[0.0], np.cumsum(cyc[lo:hi])])
    sums = pre[max_len:] - pre[:-max_len]
    a = lo + int(np.argmax(sums))
    out = [(a, a + max_len)]
    for l2, h2 in ((lo, a), (a + max_len, hi)):
        if h2 - l2 >= min_len:
            out.extend(_split(l2, h2, cyc, max_len, min_len))
    return out


def hot_windows(program: Program, profile: Profile, *, top: int = 10, min_len: int = 4,
                max_len: int = 48, functions: list[str] | None = None) -> list[HotWindow]:
    """The ``top`` hottest windows over ``functions`` (default: every function with cycles)."""
    out: list[HotWindow] = []
    unit = profile.unit
    for fn in program.functions:
        if functions is not None and fn.name not in functions:
            continue
        fc = profile.functions.get(fn.name)
        if fc is None or not fc.cycles.sum():
            continue
        total = float(profile.total_cycles if profile.source == "measured"
                      else fc.cycles.sum()) or 1.0
        ins = fn.instructions
        cfg = build_cfg(fn)
        loops = _loop_blocks(cfg.succs)
        live = Liveness(fn, cfg)
        for k, b in enumerate(cfg.blocks):
            lo, hi = b.start, b.end
            while hi > lo and ins[hi - 1].mnemonic.startswith(_TERMINATORS):
                hi -= 1
            if hi <= lo:
                continue
            for s, e in _split(lo, hi, fc.cycles, max_len, min_len):
                cyc = float(fc.cycles[s:e].sum())
                if cyc <= 0:
                    continue
                st = fc.stalls[s:e]
                j = s + int(np.argmax(st))
                share = cyc / total
                why = f"{share:.1%} of {profile.source} {unit}"
                if st[j - s] > 0:
                    why += f"; {_fmt(float(st[j - s]))} stall {unit} at {ins[j].text} (#{j})"
                if k in loops:
                    why += "; loop body"
                out.append(HotWindow(fn.name, s, e, share, cyc, why,
                                     tuple(R.names(live.before(s))),
                                     tuple(R.names(live.after(e - 1))),
                                     k in loops))
    out.sort(key=lambda w: (-w.cycles, w.function, w.start))
    return out[:top]


def render_windows(program: Program, profile: Profile, windows: list[HotWindow]) -> str:
    """Windows with their asm and per-line executions, lanes, cycles and stalls."""
    lines = [f"total: {profile.total_cycles:,.0f} {profile.label}"]
    for n, w in enumerate(windows, 1):
        fc = profile.functions[w.function]
        ins = program.function(w.function).instructions
        lines.append("")
        lines.append(f"#{n} {w.function}[{w.start}:{w.end}] ({w.size} instructions): {w.reason}")
        lines.append(f"   live in:  {' '.join(w.live_in) or '-'}")
        lines.append(f"   live out: {' '.join(w.live_out) or '-'}")
        lines.append(f"   {'idx':>5} {'execs':>8} {'lanes':>9} {profile.unit:>9} "
                     f"{'stall':>9}  instruction")
        for i in range(w.start, w.end):
            lines.append(f"   {i:5d} {int(fc.executions[i]):8d} {int(fc.lanes[i]):9d} "
                         f"{fc.cycles[i]:9.0f} {fc.stalls[i]:9.0f}  {ins[i].text}")
    return "\n".join(lines)
