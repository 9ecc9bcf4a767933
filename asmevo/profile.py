"""Where a kernel spends its time, per instruction, and the hot windows operators edit.

A :class:`Profile` holds, per function and per instruction: executions
(wave-level), active lanes (sums), cycles attributed to it and the stall part
of those cycles. Its ``source`` says where the numbers came from:

* ``"modeled"`` -- :func:`profile_launch`: an emulator run plus the CDNA timing
  model (:func:`asmevo.emu.timing.model_launch`); cycles are issue + stall
  cycles on the busiest CU, executions and lanes cover the whole launch.
* ``"measured"`` -- :func:`read_pc_sampling_csv` / :func:`read_thread_trace_csv`:
  hardware profiles written by ``rocprofv3`` (CSV), mapped onto the program by
  instruction address.

**PC-sampling CSV** (``rocprofv3 --pc-sampling-* ... --output-format csv``,
``*_pc_sampling_*.csv``): one row per sample. Consumed columns (names matched
case-insensitively; others ignored):

* the sampled instruction, first present of ``Code_Object_Offset``,
  ``Instruction_Pc``, ``Pc``, ``PC`` -- an integer (``0x`` hex or decimal);
  ``Code_Object_Offset`` is the instruction's address in the code object
  (as ``llvm-objdump`` prints it); for the others pass ``pc_base`` (the load
  address of the code object) and it is subtracted. Rows whose address is no
  instruction of the program are counted in ``Profile.unmatched``.
* ``Instruction`` (optional): the sampled instruction's text. Used only to
  check the mapping: a mnemonic that differs from the program's is counted in
  ``Profile.mismatched``.
* ``Exec_Mask`` (optional, hex): its population count adds to ``lanes``.
* ``Wave_Issued`` / ``Wave_Issued_Instruction`` (optional, 0/1, stochastic
  sampling): a sample whose wave did not issue counts as a stall sample.
* ``Stall_Reason`` (optional): any value other than empty / ``NONE`` /
  ``NO_STALL`` also marks a stall sample.
* ``Dispatch_Id`` / ``Correlation_Id`` (optional): with ``dispatch=`` only
  rows of that dispatch are kept.

Each sample counts as ``interval`` cycles (default 1: sample counts), so
``cycles`` = samples and ``stalls`` = stall samples; executions are samples
too (PC sampling cannot count executions).

**Thread-trace CSV** (per-instruction aggregate, as decoded ATT output): one
row per instruction with an address column as above plus ``Hitcount``
(executions), ``Latency`` (cycles) and optionally ``Stall`` (cycles) and
``Idle``.

Hot windows are contiguous ranges inside one basic block (so never across a
label), ranked by their share of the kernel's cycles.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from asmevo.errors import AsmevoError
from asmevo.files import read_input_text
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.targets.amdgpu.program import Function, Program


class ProfileError(AsmevoError):
    """A profile that cannot be computed or read."""


@dataclass
class FunctionCosts:
    """Per instruction of one function (indices of ``Function.instructions``)."""

    name: str
    executions: np.ndarray
    lanes: np.ndarray
    cycles: np.ndarray          # issue + stall (modeled) or sampled/latency (measured)
    stalls: np.ndarray


@dataclass
class Profile:
    source: str                         # "modeled" | "measured"
    functions: dict[str, FunctionCosts]
    total_cycles: float = 0.0           # the launch (modeled cycles, or samples)
    unit: str = "cycles"                # "cycles" | "samples"
    detail: dict = field(default_factory=dict)
    unmatched: int = 0
    mismatched: int = 0

    @property
    def label(self) -> str:
        return f"{self.source} {self.unit}"


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


# --- from the emulator and the timing model ---------------------------------

def profile_launch(code, spec, values: dict) -> Profile:
    """A modeled profile of one launch (``code``: bytes, path, CodeObject or Program)."""
    from asmevo.emu.timing import model_launch

    res = model_launch(code, spec, values)
    fns = {}
    for name, fp in res.profile.items():
        issue = res.issue[name]
        stalls = res.stalls[name]
        fns[name] = FunctionCosts(name, fp.counts.copy(), fp.lanes.copy(), issue + stalls,
                                  stalls.copy())
    return Profile("modeled", fns, float(res.cycles), "cycles",
                   {"occupancy": res.occupancy, "target": res.target,
                    "cu_cycles": res.cu_cycles, "cu_workgroups": res.cu_workgroups,
                    "workgroups": res.workgroups, "seconds": res.seconds})


# --- from rocprofv3 CSV -----------------------------------------------------

_ADDR_COLUMNS = ("code_object_offset", "instruction_pc", "pc")


def _columns(header: list[str]) -> dict[str, int]:
    return {h.strip().lower(): i for i, h in enumerate(header)}


def _int(text: str, where: str) -> int:
    t = text.strip()
    try:
        return int(t, 16) if t.lower().startswith("0x") else int(t)
    except ValueError:
        raise ProfileError(f"{where}: not an integer: {text!r}") from None


def _address_index(program: Program) -> dict[int, tuple[str, int]]:
    out = {}
    for fn in program.functions:
        for i, ins in enumerate(fn.instructions):
            if ins.address is not None:
                out[ins.address] = (fn.name, i)
    return out


def _empty(program: Program) -> dict[str, FunctionCosts]:
    out = {}
    for fn in program.functions:
        n = len(fn.instructions)
        out[fn.name] = FunctionCosts(fn.name, np.zeros(n, np.int64), np.zeros(n, np.int64),
                                     np.zeros(n), np.zeros(n))
    return out


def _rows(path: Path):
    text = read_input_text(path, error=ProfileError, what="CSV")
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None:
        raise ProfileError("empty CSV", path=str(path))
    cols = _columns(header)
    for n, row in enumerate(reader, start=2):
        if row:
            yield cols, row, f"{path}:{n}"


def _addr_col(cols: dict[str, int], path: Path) -> str:
    for c in _ADDR_COLUMNS:
        if c in cols:
            return c
    raise ProfileError(f"no address column; need one of Code_Object_Offset, Instruction_Pc, "
                       f"Pc (have: {', '.join(cols)})", path=str(path))


def read_pc_sampling_csv(path, program: Program, *, pc_base: int = 0,
                         dispatch: int | None = None, interval: float = 1.0) -> Profile:
    """A measured profile from a rocprofv3 PC-sampling CSV (shape: module docstring)."""
    path = Path(path)
    fns = _empty(program)
    index = _address_index(program)
    prof = Profile("measured", fns, 0.0, "samples" if interval == 1.0 else "cycles")
    col = None
    for cols, row, where in _rows(path):
        if col is None:
            col = _addr_col(cols, path)
        if dispatch is not None:
            dcol = cols.get("dispatch_id", cols.get("correlation_id"))
            if dcol is not None and _int(row[dcol], where) != dispatch:
                continue
        addr = _int(row[cols[col]], where) - (0 if col == "code_object_offset" else pc_base)
        hit = index.get(addr)
        if hit is None:
            prof.unmatched += 1
            continue
        name, i = hit
        fc = fns[name]
        if "instruction" in cols:
            text = row[cols["instruction"]].strip()
            want = program.function(name).instructions[i].mnemonic
            if text and text.split()[0] != want:
                prof.mismatched += 1
        fc.executions[i] += 1
        fc.cycles[i] += interval
        prof.total_cycles += interval
        if "exec_mask" in cols and row[cols["exec_mask"]].strip():
            fc.lanes[i] += bin(_int(row[cols["exec_mask"]], where)).count("1")
        stalled = False
        for c in ("wave_issued", "wave_issued_instruction"):
            if c in cols and row[cols[c]].strip() in ("0", "false", "False"):
                stalled = True
        if "stall_reason" in cols:
            reason = row[cols["stall_reason"]].strip().upper()
            if reason and reason not in ("NONE", "NO_STALL", "N/A"):
                stalled = True
        if stalled:
            fc.stalls[i] += interval
    return prof


def read_thread_trace_csv(path, program: Program, *, pc_base: int = 0) -> Profile:
    """A measured profile from a per-instruction thread-trace CSV (module docstring)."""
    path = Path(path)
    fns = _empty(program)
    index = _address_index(program)
    prof = Profile("measured", fns, 0.0, "cycles")
    col = None
    for cols, row, where in _rows(path):
        if col is None:
            col = _addr_col(cols, path)
            for need in ("hitcount", "latency"):
                if need not in cols:
                    raise ProfileError(f"thread-trace CSV needs a {need.capitalize()} column",
                                       path=str(path))
        addr = _int(row[cols[col]], where) - (0 if col == "code_object_offset" else pc_base)
        hit = index.get(addr)
        if hit is None:
            prof.unmatched += 1
            continue
        name, i = hit
        fc = fns[name]
        lat = float(_int(row[cols["latency"]], where))
        fc.executions[i] += _int(row[cols["hitcount"]], where)
        fc.cycles[i] += lat
        prof.total_cycles += lat
        if "stall" in cols and row[cols["stall"]].strip():
            fc.stalls[i] += float(_int(row[cols["stall"]], where))
    return prof


# --- liveness ----------------------------------------------------------------

def _block_graph(fn: Function):
    blocks = fn.blocks()
    by_label = {b.label: k for k, b in enumerate(blocks) if b.label is not None}
    succ = []
    for k, b in enumerate(blocks):
        out = []
        for s in b.successors:
            if s.startswith("#"):
                out.append(int(s[1:]))
            elif s in by_label:
                out.append(by_label[s])
        succ.append(out)
    return blocks, succ


def liveness(fn: Function) -> tuple[list[int], list[int]]:
    """Registers live before and after each instruction of ``fn`` (bit masks, see
    ``regs``): a backward dataflow over basic blocks with ``effects`` read/kill
    masks. Nothing is live after ``s_endpgm``."""
    ins = fn.instructions
    fx = [effects(i.text) for i in ins]
    blocks, succ = _block_graph(fn)
    live_in = [0] * len(blocks)
    changed = True
    while changed:
        changed = False
        for k in range(len(blocks) - 1, -1, -1):
            b = blocks[k]
            live = 0
            for s in succ[k]:
                live |= live_in[s]
            for i in range(b.end - 1, b.start - 1, -1):
                live = (live & ~fx[i].kills) | fx[i].reads
            if live != live_in[k]:
                live_in[k] = live
                changed = True
    before = [0] * len(ins)
    after = [0] * len(ins)
    for k, b in enumerate(blocks):
        live = 0
        for s in succ[k]:
            live |= live_in[s]
        for i in range(b.end - 1, b.start - 1, -1):
            after[i] = live
            live = (live & ~fx[i].kills) | fx[i].reads
            before[i] = live
    return before, after


# --- hot windows -------------------------------------------------------------

_TERMINATORS = ("s_branch", "s_cbranch_", "s_endpgm", "s_setpc_", "s_swappc_", "s_trap")


def _fmt(n: float) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else f"{n:.0f}"


def _loop_blocks(blocks, succ) -> set[int]:
    """Blocks inside a loop body: between a back-edge target and its source."""
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
        blocks, succ = _block_graph(fn)
        loops = _loop_blocks(blocks, succ)
        before, after = liveness(fn)
        for k, b in enumerate(blocks):
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
                                     tuple(R.names(before[s])),
                                     tuple(R.names(after[e - 1])),
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
