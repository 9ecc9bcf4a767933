"""A candidate's launches finished as K0's, where the two passes meet in one state.

A candidate differs from K0 in a few rows of code (a window the operators edited).
Its batched pass (:mod:`asmevo.emu.run.batch`) runs the same launches as K0's would:
the same inputs, garbage, guards, schedules and members. Take the *moment at Q*:
the first time every runnable group of the pass is at a row >= Q, no row >= Q
having run yet (:attr:`asmevo.emu.run.batch._Pass.stop_at`). With Q one past the last
changed row, both passes reach that moment having run only their own rows < Q.

If at that moment the candidate's pass holds exactly the state K0's pass holds
(every register of every wave, EXEC, SCC, LDS, every launch's memory, poison notes,
clocks, race trackers, scheduler groups, barrier counts, instructions used: the whole
object graph of the pass, compared field by field, with only the fields listed in
:data:`_SKIP` left out), and K0's pass afterwards never runs a changed row and never
reads its code object's bytes (the one part of memory the two differ in), then the
candidate's future is K0's future step for step: the pass is deterministic, and every
row it can reach is the same row in both programs. Its results are then K0's final
memory, notes and counters, with per-row counts its own up to the moment and K0's
after it. Anything else (another state, a changed row K0 runs again in a loop, a
read of the code object, K0's pass failing, different code lengths) runs the
candidate's pass to its end as before: this only ever skips work whose outcome is
already known.

K0's side is made once per K0, set of launches and scheduling mode, and kept for the
next candidates (:func:`prepare`, as an evaluating worker starts): its pass run once to
place checkpoints (block leaders spread over its lane steps), then stopped at each in
turn and copied there (the candidate's pass stops at the same ones), and run to its end.
A candidate is compared at the first checkpoint past its changed rows after which K0
runs none of them, where its share of the pass and the cost of one comparison leave
something to gain.
``experiments/bench_converge.py`` and ``tests/emu/test_converge.py`` check results
taken this way against the pass run to its end, field by field.
"""
from __future__ import annotations

import copy
import struct
import time
import types
from dataclasses import dataclass

import numpy as np

from asmevo.emu.machine.memory import HEAP_BASE, Memory
from asmevo.emu.run.scheduler import _INF
from asmevo import counters
from asmevo.memo import Memo

MAX_ENTRIES = 16        # K0 passes kept (each: a deep copy of a pass and K0's final memory):
                        # a check's size under check and its launch-family members
MAX_ENTRY_BYTES = 256 << 20   # and their snapshots' bytes together, at most
CODE_ALLOCATION = "code object"   # the allocation a code object's sections are loaded into


@dataclass
class Tail:
    """What K0's pass did after the moment: its launches at the end, instructions each
    launch used in all, and its steps after the moment (``(row, counts)`` as the pass
    traces them)."""

    launches: list
    used: np.ndarray
    trace: list
    notes_at: list          # each launch's count of out-of-contract notes at the moment

    def finish(self, cand_launches: list) -> list:
        """The launches to collect a converged candidate's results from: K0's at the end,
        with the candidate's own notes up to the moment (they name its rows) and K0's
        after it (rows the two share). Shallow: collect_result copies what it keeps."""
        out = []
        for ln, mine, n in zip(self.launches, cand_launches, self.notes_at):
            ln = copy.copy(ln)
            mem = ln.mem = copy.copy(ln.mem)
            mem.poison_reads = list(mine.mem.poison_reads) + ln.mem.poison_reads[n:]
            out.append(ln)
        return out


@dataclass
class _Entry:
    """K0's pass over one set of launches, stopped at each of its checkpoints in turn."""

    rows: list[int]             # the checkpoints' rows, in order (those K0's pass reached)
    stops: list[int]            # how many of ``reached`` K0's pass stopped at for each
    reached: list[int]          # every row K0's pass stopped at, in order
    snapshots: list             # K0's pass at each moment (deep copies)
    tails: list[Tail]
    afters: list[np.ndarray]    # rows K0's pass runs after each moment (sorted, unique)
    shares: list[float]         # K0's lane steps before each moment, of all its lane steps
    why: str = ""               # why there is none
    pass_s: float = 0.0         # seconds of K0's whole pass, and of one comparison of two
    compare_s: float = 0.0      # copies of it: a candidate is compared only where it pays
    nbytes: int = 0             # of the snapshots


_ENTRIES: Memo[_Entry] = Memo("emu.converge.entries", MAX_ENTRIES, evict="lru",
                              weigh=lambda e: e.nbytes, maxweight=MAX_ENTRY_BYTES)
# declined_cost: of the declined, those the cost test alone declined (a timing: it varies
# with the machine's load and with how fast the pass runs against one comparison)
STATS = counters.group("emu.converge", ("attempts", "converged", "diverged", "declined",
                                        "declined_cost"))
CHECKPOINTS = 16            # moments K0's pass is copied at, at most
SPACING = 1 / 16            # of K0's lane steps between two checkpoints, at least
MAX_SHARE = 0.9             # a candidate that must run more of the pass runs all of it
# a comparison must cost under 1/COMPARE_MARGIN of the pass it saves: short launches
# (the fuzzer's) came out slower than run in full at margins 1 and 2 (medians 1.24x, 1.06x)
COMPARE_MARGIN = 4.0
MAX_SNAPSHOT_BYTES = 64 << 20   # K0's copies for one set of launches, at most


def changed_rows(img0, img1) -> np.ndarray | None:
    """Rows where two decoded programs differ, or None where they do not line up row for
    row (other lengths, functions, entry points or wave-mode wrapping)."""
    c0, c1 = img0.code, img1.code
    if len(c0) != len(c1) or img0.processor != img1.processor or \
            [(n, f.start, f.end) for n, f in img0.functions.items()] != \
            [(n, f.start, f.end) for n, f in img1.functions.items()]:
        return None
    rows = [i for i, (a, b) in enumerate(zip(_rows(img0), _rows(img1))) if a != b]
    return np.array(rows, np.int64)


def _rows(img) -> list[tuple]:
    """:func:`_row` of every decoded row of ``img``, computed once per image (an image
    does not change once built; K0's is compared with every candidate's)."""
    got = img.__dict__.get("_converge_rows")
    if got is None or len(got) != len(img.code):
        got = img.__dict__["_converge_rows"] = [_row(d) for d in img.code]
    return got


def _row(d) -> tuple:
    """What decides a decoded row's effect: its text at its address (decoding is a
    function of them and the kernel's descriptor, compared with the pass state), where it
    branches to, and whether it is wrapped for non-default wave modes."""
    return (d.text, d.address, d.ctl, d.target, d.mnemonic, d.variant, type(d.fn),
            getattr(d.fn, "__qualname__", None))


def leaders(img) -> np.ndarray:
    """Rows a block starts at: the first, the row after a branch, barrier or end, and every
    branch target. Lockstep groups meet there, so a moment at one comes early."""
    lead = {0, len(img.code)}
    for i, d in enumerate(img.code):
        if d.ctl not in ("op", "getpc"):
            lead.add(i + 1)
        if d.target is not None:
            lead.add(int(d.target))
    return np.array(sorted(lead), np.int64)


def attempt(run, img0, key: tuple, make, check):
    """Run the candidate's pass ``run`` to the first of K0's checkpoints past its changed
    rows and, where its state there is K0's, return K0's :class:`Tail` to finish with.
    Otherwise None, with ``run`` paused or finished exactly as it would be without this
    (its ``run()`` then goes on). ``img0``: K0's decoded program; ``key``: what K0's
    pass over these launches is kept under; ``make()``: that pass, set up and not run
    (``(pass, launches, state)`` or None); ``check(tracked, launches)``: the batch's
    check of a finished pass's serial launches."""
    rows = changed_rows(img0, run.img)
    if rows is None:
        return None
    STATS["attempts"] += 1
    entry = _entry(key, make, check)
    q = int(rows.max()) + 1 if rows.size else 0
    j = next((j for j, c in enumerate(entry.rows) if c >= q and not
              (rows.size and np.isin(rows, entry.afters[j]).any())), None)
    if j is None or entry.shares[j] > MAX_SHARE:
        STATS["declined"] += 1
        return None
    if COMPARE_MARGIN * entry.compare_s > entry.pass_s * (MAX_SHARE - entry.shares[j]):
        STATS["declined"] += 1
        STATS["declined_cost"] += 1
        return None
    try:
        for c in entry.reached[:entry.stops[j]]:    # where K0's pass stopped before its copy
            run.stop_at = c
            run.run()
            if not run.paused:
                STATS["declined"] += 1
                return None
    finally:
        run.stop_at = _INF
    moved = ({img0.code[i].address for i in rows.tolist()},
             {run.img.code[i].address for i in rows.tolist()})
    try:
        apart = differ(run, entry.snapshots[j], moved)
    except Exception as exc:   # noqa: BLE001 - a state it cannot compare: run in full
        apart = f"not compared ({type(exc).__name__})"
    if apart is not None:
        STATS["diverged"] += 1
        return None
    STATS["converged"] += 1
    return entry.tails[j]


def prepare(key: tuple, make, check) -> None:
    """Make K0's checkpoints for these launches ahead of the first candidate (a worker
    does it as it starts, outside any candidate's time limit); arguments as
    :func:`attempt`'s."""
    _entry(key, make, check)


def _entry(ek: tuple, make, check) -> _Entry:
    hit = _ENTRIES.get(ek)
    if hit is not None:
        return hit
    try:
        hit = _k0_passes(make, check)
    except Exception as exc:   # noqa: BLE001 - K0's pass cannot stand in: run candidates in full
        hit = _Entry([], [], [], [], [], [], [], f"{type(exc).__name__}: {exc}")
    return _ENTRIES.put(ek, hit)


def _k0_passes(make, check) -> _Entry:
    """K0's pass twice: once to the end, to place the checkpoints (block leaders, spaced
    by :data:`SPACING` of its lane steps), then stopped and copied at each, and run to
    its end watching for reads of its code object."""
    with np.errstate(all="ignore"):
        made = make()
        if made is None:
            return _Entry([], [], [], [], [], [], [], "no pass")
        first = made[0]
        if _nbytes(first) > MAX_SNAPSHOT_BYTES:     # not one copy would be kept
            return _Entry([], [], [], [], [], [], [], "the pass's state is too large to copy")
        t0 = time.perf_counter()
        first.run()
        pass_s = time.perf_counter() - t0
        rows, shares = _checkpoints(first)
        run, launches, _ = make()
        for ln in launches:     # from the code allocation on (the last): see _memories
            ln.mem.watch = [(HEAP_BASE + code_cut(ln.mem), 1 << 64)]
        reached, snaps, marks, size, compare_s = [], [], [], 0, 0.0
        for c in rows:
            run.stop_at = c
            run.run()
            if not run.paused:
                break
            snap = _copy_pass(run)
            if not snaps:       # the cheaper of two comparisons: a pause elsewhere is noise
                compare_s = min(_timed(differ, run, snap) for _ in range(2))
            size += _nbytes(snap)
            if size > MAX_SNAPSHOT_BYTES:
                break
            reached.append(c)
            snaps.append(snap)
            marks.append((len(run.trace), [ln.mem.watch_hits for ln in launches],
                          [len(ln.mem.poison_reads) for ln in launches]))
        run.stop_at = _INF
        run.run()
        check(run.tracked, launches)
    keep = [i for i, (_, hits, _) in enumerate(marks)      # K0 reads no code after it
            if all(ln.mem.watch_hits == h for ln, h in zip(launches, hits))]
    used = run.used.copy()
    tails = [Tail(launches, used, run.trace[marks[i][0]:], marks[i][2]) for i in keep]
    afters = [np.unique(np.array([pc for pc, _ in t.trace], np.int64)) for t in tails]
    share = dict(zip(rows, shares))
    return _Entry([reached[i] for i in keep], [i + 1 for i in keep], reached,
                  [snaps[i] for i in keep], tails, afters, [share[reached[i]] for i in keep],
                  pass_s=pass_s, compare_s=compare_s if snaps else 0.0, nbytes=size)


def _timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def _checkpoints(run) -> tuple[list[int], list[float]]:
    """Rows to stop K0's pass at, from the steps of its whole pass: the first block leader
    after the entry block, then each leader first reached after another :data:`SPACING`
    of its lane steps; and the share of lane steps before each."""
    lanes = np.array([int(per[1].sum()) for _, per in run.trace], np.float64)
    pcs = np.array([pc for pc, _ in run.trace], np.int64)
    total = lanes.sum() or 1.0
    before = np.concatenate([[0.0], np.cumsum(lanes)]) / total
    # the lane share before the pass first runs a row >= each leader
    top = np.maximum.accumulate(pcs) if pcs.size else pcs
    out, shares, last = [], [], -1.0
    for lead in leaders(run.img).tolist():
        if lead == 0:
            continue
        first = int(np.searchsorted(top, lead)) if top.size else 0
        share = float(before[min(first, len(before) - 1)])
        if not out or share - last >= SPACING:
            out.append(lead)
            shares.append(share)
            last = share
        if len(out) >= CHECKPOINTS:
            break
    return out, shares


def _nbytes(obj) -> int:
    st = obj.st
    return sum(v.nbytes for v in vars(st).values() if isinstance(v, np.ndarray)) + \
        sum(ln.mem.heap.nbytes for ln in obj.launches)


def _copy_pass(run):
    """A deep copy of a paused pass, sharing what no instruction changes (the decoded
    program, code objects, kernels, the spec) and leaving out its trace."""
    memo: dict = {id(run.img): run.img, id(run.trace): [], id(run.counts): run.counts,
                  id(run.lanes): run.lanes}
    for ln in run.launches:
        for shared in (ln.co, ln.kernel, ln.spec):
            memo[id(shared)] = shared
    return copy.deepcopy(run, memo)


# -- the comparison ------------------------------------------------------------------

# fields that are not machine state: the program (compared row by row), the step trace
# (the candidate keeps its own), a time limit, the step counter that paces its check,
# the Ctx of the instruction that ran last, the code object itself (its bytes in
# memory are compared, but for the code allocation, which K0 must not read afterwards)
_SKIP: dict[str, frozenset] = {
    "_Pass": frozenset({"img", "trace", "steps", "deadline", "per_launch", "reads_variant",
                        "counts", "lanes", "stop_at", "paused"}),
    "State": frozenset({"track_ctx"}),
    "Launch": frozenset({"co", "code"}),    # code: its allocation, in _memories
    # where the kernel's symbol says its code ends: the emulator never reads it (a rebuild
    # may size the symbol over padding K0's symbol left out)
    "Kernel": frozenset({"code_end"}),
    "_Shared": frozenset({"co"}),
    # the layout and bytes up to the code allocation are compared by _memories
    "Memory": frozenset({"heap", "_h32", "_h16", "watch", "watch_hits", "allocs", "_starts",
                         "_ends", "_ro", "_clo", "_chi", "_next", "poison_reads"}),
    "MemoryTracker": frozenset({"r", "w"}),
}
_ATOMIC = (int, bool, str, bytes, type(None), complex, range)
# the same object or different: code is not compared by what it does
_BY_IDENTITY = (type, types.FunctionType, types.BuiltinFunctionType, types.ModuleType,
                types.CodeType)


def differ(a, b, moved: tuple[set, set] = (set(), set())) -> str | None:
    """The path of the first difference between two passes (or any two object graphs),
    or None where they are the same, field by field (floats by their bits, arrays by
    their bytes, dicts in their order). A type it does not know differs unless it is
    one object. ``moved``: the addresses of the changed rows in ``a``'s program and in
    ``b``'s, where an out-of-contract note may name either (see :func:`_notes`)."""
    return _differ(a, b, "pass", _Seen(moved))


class _Seen(set):
    """The pairs of objects compared so far (cycles compare once), and ``moved``."""

    def __init__(self, moved: tuple[set, set]):
        super().__init__()
        self.moved = moved


def _differ(a, b, path: str, seen: set) -> str | None:
    if a is b:
        return None
    t = type(a)
    if t is not type(b):
        return f"{path}: {t.__name__} vs {type(b).__name__}"
    if t in _ATOMIC:
        return None if a == b else path
    if t in _BY_IDENTITY or isinstance(a, type):
        return path
    if t is float:
        return None if struct.pack("<d", a) == struct.pack("<d", b) else path
    if isinstance(a, np.ndarray):
        return _arrays(a, b, path, seen)
    if isinstance(a, np.generic):
        return None if a.dtype == b.dtype and a.tobytes() == b.tobytes() else path
    pair = (id(a), id(b))
    if pair in seen:
        return None
    seen.add(pair)
    if t in (list, tuple):
        if len(a) != len(b):
            return f"{path}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            if (d := _differ(x, y, f"{path}[{i}]", seen)) is not None:
                return d
        return None
    if t is dict:
        ka, kb = list(a), list(b)
        if (d := _differ(ka, kb, f"{path}.keys()", seen)) is not None:
            return d
        for k in ka:
            if (d := _differ(a[k], b[k], f"{path}[{k!r}]", seen)) is not None:
                return d
        return None
    if t in (set, frozenset):
        return None if a == b else path
    if t is slice:
        return _differ((a.start, a.stop, a.step), (b.start, b.stop, b.step), path, seen)
    if t is types.MethodType:
        if a.__func__ is not b.__func__:
            return path
        return _differ(a.__self__, b.__self__, f"{path}.__self__", seen)
    return _fields(a, b, path, seen)


def _arrays(a: np.ndarray, b: np.ndarray, path: str, seen: set) -> str | None:
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{path}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
    if a.dtype.hasobject:
        for i, (x, y) in enumerate(zip(a.reshape(-1), b.reshape(-1))):
            if (d := _differ(x, y, f"{path}.flat[{i}]", seen)) is not None:
                return d
        return None
    if a.size == 0:
        return None
    av = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    bv = np.ascontiguousarray(b).reshape(-1).view(np.uint8)
    return None if np.array_equal(av, bv) else path


def _names(obj) -> list[str]:
    names = list(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        for n in getattr(cls, "__slots__", ()):
            if n not in ("__dict__", "__weakref__") and hasattr(obj, n) and n not in names:
                names.append(n)
    return names


def _fields(a, b, path: str, seen: set) -> str | None:
    t = type(a)
    skip = _SKIP.get(t.__name__, frozenset())
    na, nb = _names(a), _names(b)
    if na != nb:
        return f"{path}: fields {na} vs {nb}"
    if not na and not hasattr(a, "__dict__"):
        return f"{path}: {t.__name__} (not compared)"
    for n in na:
        if n in skip:
            continue
        if (d := _differ(getattr(a, n), getattr(b, n), f"{path}.{n}", seen)) is not None:
            return d
    if isinstance(a, Memory):
        return _memories(a, b, path, seen)
    if t.__name__ == "MemoryTracker":
        return _trackers(a, b, path)
    return None


def code_cut(mem: Memory) -> int:
    """The heap offset from which a launch's memory holds its code object (the last
    allocation, sized by the object's layout, which a rebuild changes), or the heap's
    size where none is mapped. Below it two launches of K0 and a candidate are alike."""
    code = [a for a in mem.allocs if a.name == CODE_ALLOCATION]
    if not code:
        return mem.heap.size
    return code[0].start - HEAP_BASE


def _memories(a: Memory, b: Memory, path: str, seen: set) -> str | None:
    """Two launches' memories, but for their code allocations, which hold each program's
    own bytes (K0 must not read its own after the moment: asmevo.emu.run.converge._k0_pass)
    and may differ in size: the allocation is the last, so nothing else moves."""
    if a.heap is None or b.heap is None:
        return None if a.heap is b.heap else f"{path}.heap"
    na = [x.name for x in a.allocs]
    if na != [x.name for x in b.allocs] or na.count(CODE_ALLOCATION) > 1 or \
            (CODE_ALLOCATION in na and na[-1] != CODE_ALLOCATION):
        return f"{path}.allocs"
    n = len(na) - (CODE_ALLOCATION in na)
    if (d := _differ(a.allocs[:n], b.allocs[:n], f"{path}.allocs", seen)) is not None:
        return d
    if n < len(na):
        ca, cb = a.allocs[-1], b.allocs[-1]
        if (ca.start, ca.base, ca.guard, ca.readonly, ca.contract) != \
                (cb.start, cb.base, cb.guard, cb.readonly, cb.contract):
            return f"{path}.allocs[{n}]"
    for name in ("_starts", "_ro", "_clo", "_ends", "_chi"):
        x, y = vars(a)[name], vars(b)[name]
        if name in ("_ends", "_chi"):
            x, y = x[:n], y[:n]
        if (d := _differ(x, y, f"{path}.{name}", seen)) is not None:
            return d
    cut = code_cut(a)
    if cut != code_cut(b) or not np.array_equal(a.heap[:cut], b.heap[:cut]):
        return f"{path}.heap[:{cut}]"
    return _notes(a.poison_reads, b.poison_reads, f"{path}.poison_reads", seen.moved)


def _notes(a: list, b: list, path: str, moved: tuple[set, set]) -> str | None:
    """Two lists of out-of-contract notes: alike but for the instruction address of a
    note made by a changed row (the same read, made by the row at its place in each
    program). Notes made later by rows the programs share carry other addresses, so
    neither list's de-duplication treats them differently; the candidate keeps its own
    notes (:meth:`Tail.finish`)."""
    if len(a) != len(b):
        return f"{path}: {len(a)} vs {len(b)} notes"
    for i, (x, y) in enumerate(zip(a, b)):
        if set(x) != set(y) or any(x[k] != y[k] for k in x if k != "address"):
            return f"{path}[{i}]"
        if x["address"] != y["address"] and not (x["address"] in moved[0]
                                                 and y["address"] in moved[1]):
            return f"{path}[{i}].address"
    return None


def _trackers(a, b, path: str) -> str | None:
    """Two serial launches' race trackers (bytes read and written), below the code
    allocation; neither may have touched it."""
    cut = code_cut(a.mem)
    for name, x, y in (("r", a.r, b.r), ("w", a.w, b.w)):
        if x[cut:].any() or y[cut:].any() or not np.array_equal(x[:cut], y[:cut]):
            return f"{path}.{name}"
    return None
