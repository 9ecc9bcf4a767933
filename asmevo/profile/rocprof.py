"""Measured profiles from rocprofv3 CSV: one column-mapped reader, two formats.

Both formats are one row per sampled or traced instruction, keyed by its
address. :func:`read_csv` does what they share: read the file, map the header
onto the fields a :class:`CsvFormat` declares (names matched case-insensitively,
first present wins, other columns ignored), find each row's instruction by
address and count rows that match none; the format's ``add`` says what one row
adds to that instruction's costs.

**Addresses** (both formats): the first present of ``Code_Object_Offset``,
``Instruction_Pc``, ``Pc``, ``PC`` -- an integer (``0x`` hex or decimal).
``Code_Object_Offset`` is the instruction's address in the code object (as
``llvm-objdump`` prints it); for the others pass ``pc_base`` (the load address
of the code object) and it is subtracted. Rows whose address is no instruction
of the program are counted in ``Profile.unmatched``.

**PC-sampling CSV** (``rocprofv3 --pc-sampling-* ... --output-format csv``,
``*_pc_sampling_*.csv``, :data:`PC_SAMPLING`): one row per sample.

* ``Instruction`` (optional): the sampled instruction's text. Used only to
  check the mapping: a mnemonic that differs from the program's is counted in
  ``Profile.mismatched``.
* ``Exec_Mask`` (optional, hex): its population count adds to ``lanes``.
* ``Wave_Issued`` / ``Wave_Issued_Instruction`` (optional, 0/1, stochastic
  sampling): a sample whose wave did not issue counts as a stall sample.
* ``Stall_Reason`` (optional): any value other than empty / ``NONE`` /
  ``NO_STALL`` / ``N/A`` also marks a stall sample.
* ``Dispatch_Id`` / ``Correlation_Id`` (optional): with ``dispatch=`` only
  rows of that dispatch are kept.

Each sample counts as ``interval`` cycles (default 1: sample counts), so
``cycles`` = samples and ``stalls`` = stall samples; executions are samples
too (PC sampling cannot count executions).

**Thread-trace CSV** (per-instruction aggregate, as decoded ATT output,
:data:`THREAD_TRACE`): ``Hitcount`` (executions) and ``Latency`` (cycles) are
required, ``Stall`` (cycles) optional; ``Idle`` and the rest are ignored.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from asmevo.files import read_input_text
from asmevo.profile.model import FunctionCosts, Profile, ProfileError, empty_costs
from asmevo.targets.amdgpu.program import Program


@dataclass(frozen=True)
class Column:
    """One field a format reads: the header names that may carry it, first present wins."""

    field: str
    names: tuple[str, ...]      # as rocprofv3 spells them; matched case-insensitively
    required: bool = False


# The row's instruction; the offset column is the only one that needs no pc_base.
ADDRESS = Column("address", ("Code_Object_Offset", "Instruction_Pc", "Pc"), required=True)
_OFFSET = "code_object_offset"

Row = dict[str, str]            # field -> the row's text, for the fields the header has


@dataclass(frozen=True)
class CsvFormat:
    """A rocprofv3 CSV layout: the columns it reads besides the address, and what one
    row adds to its instruction (``add(row, costs, index, where, interval)`` returns the
    cycles it added to the launch's total)."""

    name: str
    columns: tuple[Column, ...]
    add: Callable[[Row, FunctionCosts, int, str, float], float]


def _int(text: str, where: str) -> int:
    t = text.strip()
    try:
        return int(t, 16) if t.lower().startswith("0x") else int(t)
    except ValueError:
        raise ProfileError(f"{where}: not an integer: {text!r}") from None


_NOT_ISSUED = ("0", "false", "False")
_NO_STALL = ("NONE", "NO_STALL", "N/A")


def _add_sample(row: Row, fc: FunctionCosts, i: int, where: str, interval: float) -> float:
    fc.executions[i] += 1
    fc.cycles[i] += interval
    mask = row.get("exec_mask", "").strip()
    if mask:
        fc.lanes[i] += bin(_int(mask, where)).count("1")
    stalled = any(row[c].strip() in _NOT_ISSUED
                  for c in ("wave_issued", "wave_issued_instruction") if c in row)
    if "stall_reason" in row:
        reason = row["stall_reason"].strip().upper()
        if reason and reason not in _NO_STALL:
            stalled = True
    if stalled:
        fc.stalls[i] += interval
    return interval


def _add_trace(row: Row, fc: FunctionCosts, i: int, where: str, interval: float) -> float:
    latency = float(_int(row["latency"], where))
    fc.executions[i] += _int(row["hitcount"], where)
    fc.cycles[i] += latency
    if row.get("stall", "").strip():
        fc.stalls[i] += float(_int(row["stall"], where))
    return latency


PC_SAMPLING = CsvFormat("PC-sampling", (
    Column("instruction", ("Instruction",)),
    Column("exec_mask", ("Exec_Mask",)),
    Column("wave_issued", ("Wave_Issued",)),
    Column("wave_issued_instruction", ("Wave_Issued_Instruction",)),
    Column("stall_reason", ("Stall_Reason",)),
    Column("dispatch", ("Dispatch_Id", "Correlation_Id")),
), _add_sample)

THREAD_TRACE = CsvFormat("thread-trace", (
    Column("hitcount", ("Hitcount",), required=True),
    Column("latency", ("Latency",), required=True),
    Column("stall", ("Stall",)),
), _add_trace)


def _header(header: list[str], fmt: CsvFormat, path: Path) -> tuple[dict[str, int], str]:
    """Field -> column index for the fields ``header`` has, and the address column's name."""
    have = {h.strip().lower(): i for i, h in enumerate(header)}
    out: dict[str, int] = {}
    address = ""
    for col in (ADDRESS,) + fmt.columns:
        found = next((n.lower() for n in col.names if n.lower() in have), None)
        if found is not None:
            out[col.field] = have[found]
            address = found if col is ADDRESS else address
        elif col.required:
            raise ProfileError(f"{fmt.name} CSV: no {col.field} column; need "
                               f"{' or '.join(col.names)} (have: {', '.join(have)})",
                               path=str(path))
    return out, address


def _rows(path: Path, fmt: CsvFormat) -> Iterator[tuple[Row, str, str]]:
    """(row's fields, ``file:line``, address column name) for every non-empty row."""
    text = read_input_text(path, error=ProfileError, what="CSV")
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None:
        raise ProfileError("empty CSV", path=str(path))
    fields, address = _header(header, fmt, path)
    for n, row in enumerate(reader, start=2):
        if not row:
            continue
        where = f"{path}:{n}"
        if any(k >= len(row) for k in fields.values()):
            raise ProfileError(f"{where}: {len(row)} fields, the header has {len(header)}")
        yield {f: row[k] for f, k in fields.items()}, where, address


def _address_index(program: Program) -> dict[int, tuple[str, int]]:
    out = {}
    for fn in program.functions:
        for i, ins in enumerate(fn.instructions):
            if ins.address is not None:
                out[ins.address] = (fn.name, i)
    return out


def read_csv(path, program: Program, fmt: CsvFormat, *, unit: str, pc_base: int = 0,
             dispatch: int | None = None, interval: float = 1.0) -> Profile:
    """A measured profile of ``program`` from a rocprofv3 CSV of format ``fmt``
    (module docstring), in ``unit`` ("samples" or "cycles")."""
    path = Path(path)
    fns = empty_costs(program)
    index = _address_index(program)
    prof = Profile("measured", fns, 0.0, unit)
    for row, where, address in _rows(path, fmt):
        if dispatch is not None and "dispatch" in row and _int(row["dispatch"], where) != dispatch:
            continue
        hit = index.get(_int(row["address"], where) - (0 if address == _OFFSET else pc_base))
        if hit is None:
            prof.unmatched += 1
            continue
        name, i = hit
        text = row.get("instruction", "").strip()
        if text and text.split()[0] != program.function(name).instructions[i].mnemonic:
            prof.mismatched += 1
        prof.total_cycles += fmt.add(row, fns[name], i, where, interval)
    return prof


def read_pc_sampling_csv(path, program: Program, *, pc_base: int = 0,
                         dispatch: int | None = None, interval: float = 1.0) -> Profile:
    """A measured profile from a rocprofv3 PC-sampling CSV (module docstring)."""
    return read_csv(path, program, PC_SAMPLING, unit="samples" if interval == 1.0 else "cycles",
                    pc_base=pc_base, dispatch=dispatch, interval=interval)


def read_thread_trace_csv(path, program: Program, *, pc_base: int = 0) -> Profile:
    """A measured profile from a per-instruction thread-trace CSV (module docstring)."""
    return read_csv(path, program, THREAD_TRACE, unit="cycles", pc_base=pc_base)
