"""The GFX9 memory counter model: is every ``s_waitcnt`` sufficient, and what is
the weakest one a new instruction order needs?

GFX9 (gfx90a, gfx942) has three counters; asmevo models two (AMDGPUUsage,
"Memory Model GFX90A/GFX942", and SIInsertWaitcnts):

- ``vmcnt``: every VMEM instruction, loads *and* stores (no separate vscnt on
  GFX9). They complete in issue order, so after ``vmcnt(N)`` every VMEM op with
  at least N younger VMEM ops has completed.
- ``lgkmcnt``: LDS, GDS, SMEM and messages. LDS ops complete in order among
  themselves, so an LDS op with at least N younger LDS ops has completed after
  ``lgkmcnt(N)`` however SMEM interleaves. SMEM (and GDS, and FLAT, which may
  go to LDS or memory) complete out of order: only ``lgkmcnt(0)`` retires them.

The state is, per queue, the outstanding producers with the registers they
will write and their age (younger ops of the same queue). Joins keep the
union with the minimum age, so loops reach a fixed point (ages are capped at
the counter maximum). A read of a pending register is RAW; a write is WAW,
except a VMEM load after a VMEM load (or LDS after LDS): those land in order.
Store data is read at issue on GFX9, so overwriting it needs no wait. At
``s_barrier`` no LDS access may be outstanding: the barrier is how waves
publish LDS to each other (the workgroup release fence LLVM emits).

An LDS DMA load (``buffer_load_dword ... lds``, ``global_load_lds_*``) writes LDS
at an M0-based address through the VMEM queue: it returns nothing into registers,
and LDS instructions do not wait for VMEM ones, so an LDS access after it -- or
an ``s_barrier`` publishing its data -- needs ``vmcnt`` to retire it (the address
is not followed, so any LDS access counts; LLVM's SIInsertWaitcnts waits likewise
for the LDS DMA it cannot prove disjoint).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.cfg import CFG, build_cfg, shape
from asmevo.targets.amdgpu.analysis.dominance import reverse_postorder
from asmevo.targets.amdgpu.analysis.effects import (WAIT_MAX, Effects, effects,
                                                    waitcnt_fields, waitcnt_text)
from asmevo.memo import IdentityMemo, Memo
from asmevo.targets.amdgpu.analysis.problems import AnalysisError, Problem, at_addresses
from asmevo.targets.amdgpu.program import Function, Instruction

VM_CAP = WAIT_MAX["vm"]
LGKM_CAP = WAIT_MAX["lgkm"]


@dataclass(frozen=True)
class Entry:
    mask: int        # registers the op will write (0 for stores)
    age: int         # younger ops of the same queue
    store: bool
    producer: int    # instruction index (window position in recompute)
    lds: bool = False   # an LDS DMA load: the op writes LDS (vm queue)


@dataclass
class State:
    """Outstanding memory operations. ``vm``/``lds`` are ordered queues; ``other``
    holds SMEM, GDS and FLAT-via-LGKM entries, retired only by lgkmcnt(0)."""

    vm: dict[int, Entry] = field(default_factory=dict)
    lds: dict[int, Entry] = field(default_factory=dict)
    other: dict[int, Entry] = field(default_factory=dict)

    def copy(self) -> "State":
        return State(dict(self.vm), dict(self.lds), dict(self.other))

    def empty(self) -> bool:
        return not (self.vm or self.lds or self.other)

    def pending(self) -> int:
        m = 0
        for q in (self.vm, self.lds, self.other):
            for e in q.values():
                m |= e.mask
        return m


def join(a: State | None, b: State) -> State:
    """The conservative merge: every entry of either, at the younger age."""
    if a is None:
        return b.copy()
    out = a.copy()
    for name in ("vm", "lds", "other"):
        qa, qb = getattr(out, name), getattr(b, name)
        for p, e in qb.items():
            old = qa.get(p)
            if old is None:
                qa[p] = e
            elif e != old:
                qa[p] = Entry(e.mask | old.mask, min(e.age, old.age), e.store or old.store, p,
                              e.lds or old.lds)
    return out


def same(a: State | None, b: State | None) -> bool:
    return a is not None and b is not None and a.vm == b.vm and a.lds == b.lds \
        and a.other == b.other


def apply_wait(st: State, fields: dict[str, int]) -> None:
    vm, lgkm = fields.get("vm"), fields.get("lgkm")
    if vm is not None:
        st.vm = {p: e for p, e in st.vm.items() if e.age < vm}
    if lgkm is not None:
        st.lds = {p: e for p, e in st.lds.items() if e.age < lgkm}
        if lgkm == 0:
            st.other = {}


def writes_lds_via_vm(e: Effects) -> bool:
    """An LDS DMA load: a VMEM op (buffer, global, scratch) that writes LDS and
    returns nothing into registers."""
    return e.klass == "VMEM" and e.mem in ("buffer", "global", "scratch") and \
        e.mem_store and not e.mem_load and "L" in e.spaces


def issue(st: State, e: Effects, producer: int) -> None:
    """Account for memory instruction ``e`` being issued."""
    if not e.counters:
        return
    mask = e.writes if e.mem_load else 0
    if "vm" in e.counters:
        st.vm = {p: Entry(x.mask, min(x.age + 1, VM_CAP), x.store, p, x.lds)
                 for p, x in st.vm.items()}
        st.vm[producer] = Entry(mask, 0, e.mem_store, producer, writes_lds_via_vm(e))
    if "lgkm" in e.counters:
        if e.mem == "lds" and e.ordered:
            st.lds = {p: Entry(x.mask, min(x.age + 1, LGKM_CAP), x.store, p)
                      for p, x in st.lds.items()}
            st.lds[producer] = Entry(mask, 0, e.mem_store and bool(e.spaces), producer)
        elif e.mem != "msg":
            st.other[producer] = Entry(mask, 0, e.mem_store, producer)


@dataclass(frozen=True)
class Need:
    """What instruction ``e`` needs before it may issue, against state ``st``."""

    vm: int | None = None
    lgkm: int | None = None
    hits: tuple = ()          # (rule, regs, producer)


def need(st: State, e: Effects) -> Need:
    if e.klass == "WAITCNT" or st.empty():
        return Need()
    vm = lgkm = None
    hits = []
    same_vm = e.mem_load and "vm" in e.counters and e.ordered and "lgkm" not in e.counters
    same_lds = e.mem_load and e.mem == "lds" and e.ordered
    lds_reader = e.mem == "lds" or e.mnemonic == "s_barrier"
    for qname, q in (("vm", st.vm), ("lds", st.lds), ("other", st.other)):
        for p, x in q.items():
            if x.lds and lds_reader:        # the LDS an LDS DMA load writes
                hits.append(("lds-dma", 0, p))
                vm = x.age if vm is None else min(vm, x.age)
            if not x.mask:
                continue
            raw = x.mask & e.reads
            waw = x.mask & e.writes
            if waw and ((qname == "vm" and same_vm) or (qname == "lds" and same_lds)):
                waw = 0
            if not (raw or waw):
                continue
            hits.append(("raw" if raw else "waw", raw or waw, p))
            if qname == "vm":
                vm = x.age if vm is None else min(vm, x.age)
            elif qname == "lds":
                lgkm = x.age if lgkm is None else min(lgkm, x.age)
            else:
                lgkm = 0
    if e.mnemonic == "s_barrier":
        for p, x in st.lds.items():
            hits.append(("barrier", x.mask, p))
            lgkm = x.age if lgkm is None else min(lgkm, x.age)
    if e.unknown and not st.empty():
        hits.append(("unknown-instruction", st.pending(), -1))
        vm = lgkm = 0
    return Need(vm, lgkm, tuple(hits))


def _transfer(st: State, e: Effects, index: int) -> None:
    if e.klass == "WAITCNT":
        apply_wait(st, waitcnt_fields(e.text))
    else:
        issue(st, e, index)


_MEMO_SIZE = 256
# per CFG object, its block entry states (bounded). Graphs are remembered per function
# (build_cfg), so an operator asking for several windows of one parent runs the fixed
# point once.
_FLOWS: IdentityMemo[list] = IdentityMemo(_MEMO_SIZE, "amdgpu.waitcnt.flows")
# (function name, shape) -> the problems check_waitcnts found
_CHECKED: Memo[tuple[Problem, ...]] = Memo("amdgpu.waitcnt.checked", _MEMO_SIZE)


def _dataflow(cfg: CFG) -> list[State | None]:
    """State at the entry of every block (None: unreachable), iterated in
    reverse post-order to a fixed point. Remembered per graph: callers copy a state
    before they run instructions on it, never change one in place."""
    entry = _FLOWS.get(cfg)
    if entry is None:
        entry = _FLOWS.put(cfg, _fixed_point(cfg))
    return entry


def _fixed_point(cfg: CFG) -> list[State | None]:
    nb = len(cfg.blocks)
    entry: list[State | None] = [None] * nb
    if nb == 0:
        return entry
    order = _rpo(cfg)
    rank = {b: k for k, b in enumerate(order)}
    entry[0] = State()
    dirty = {0}
    while dirty:
        bi = min(dirty, key=rank.__getitem__)
        dirty.discard(bi)
        out = entry[bi].copy()
        b = cfg.blocks[bi]
        for i in range(b.start, b.end):
            _transfer(out, cfg.effects[i], i)
        for s in cfg.succs[bi]:
            new = join(entry[s], out)
            if not same(new, entry[s]):
                entry[s] = new
                dirty.add(s)
    return entry


def _rpo(cfg: CFG) -> list[int]:
    """Reachable blocks in reverse postorder, then the unreachable ones."""
    order = reverse_postorder(cfg)
    seen = set(order)
    return order + [b for b in range(len(cfg.blocks)) if b not in seen]


def check_waitcnts(fn: Function, cfg: CFG | None = None) -> list[Problem]:
    """Every read (or overwrite) of a register whose memory op may still be in
    flight, every ``s_barrier`` with LDS traffic outstanding, and every
    ``s_waitcnt`` whose count does not fit its field. Unreachable code is skipped.

    Remembered by the function's name and :func:`~asmevo.targets.amdgpu.analysis.cfg.
    shape` (``cfg``, when given, is ``build_cfg(fn)``), as
    :func:`~asmevo.targets.amdgpu.analysis.hazards.check_hazards` is: the problems
    depend on nothing else but their consumers' addresses, which are set from ``fn``
    (the static gate sees one candidate text again when an operator proposes it again)."""
    key = (fn.name, shape(fn))
    hit = _CHECKED.get(key)
    if hit is None:
        hit = _CHECKED.put(key, tuple(_check_waitcnts(fn, cfg or build_cfg(fn))))
    return at_addresses(hit, fn.instructions) if hit else []


def _check_waitcnts(fn: Function, cfg: CFG) -> list[Problem]:
    entry = _dataflow(cfg)
    problems: list[Problem] = []
    for bi, b in enumerate(cfg.blocks):
        if entry[bi] is None:
            continue
        st = entry[bi].copy()
        for i in range(b.start, b.end):
            e = cfg.effects[i]
            if e.klass == "WAITCNT":
                for name, v in waitcnt_fields(e.text).items():
                    if not 0 <= v <= WAIT_MAX[name]:
                        problems.append(Problem(
                            "waitcnt", "encoding", i, cfg.addresses[i],
                            f"{name}cnt({v}) does not fit (0..{WAIT_MAX[name]})", fn.name))
            else:
                nd = need(st, e)
                for rule, regs, p in nd.hits:
                    prod = cfg.texts[p] if p >= 0 else "?"
                    problems.append(Problem(
                        "waitcnt", rule, i, cfg.addresses[i],
                        f"{cfg.texts[i]!r} {_verb(rule)} {R.render(regs) or 'LDS'} while "
                        f"{prod!r} (#{p}) may be outstanding", fn.name,
                        producer=p if p >= 0 else None, registers=tuple(R.names(regs))))
            _transfer(st, e, i)
    return problems


def _verb(rule: str) -> str:
    return {"raw": "reads", "waw": "overwrites", "barrier": "synchronizes with",
            "unknown-instruction": "may use"}.get(rule, "touches")


# --- windows -----------------------------------------------------------------

def window_states(fn: Function, start: int, end: int,
                  cfg: CFG | None = None) -> tuple[State, State]:
    """(outstanding before ``start``, outstanding after ``end - 1``) for a window
    inside one block, as compiled: what a rewritten window starts from, and the
    most it may leave behind for the code after it."""
    cfg = cfg or build_cfg(fn)
    if not 0 <= start < end <= cfg.n or cfg.block_of[start] != cfg.block_of[end - 1]:
        raise AnalysisError(f"window [{start}, {end}) is not inside one block", kernel=fn.name)
    bi = cfg.block_of[start]
    entry = _dataflow(cfg)[bi]
    st = entry.copy() if entry is not None else State()
    b = cfg.blocks[bi]
    for i in range(b.start, start):
        _transfer(st, cfg.effects[i], i)
    before = st.copy()
    for i in range(start, end):
        _transfer(st, cfg.effects[i], i)
    return _renumber(before), _renumber(st)


def _renumber(st: State) -> State:
    """Producers outside a window get negative ids so they never clash with
    window positions."""
    out = State()
    for name in ("vm", "lds", "other"):
        q = {}
        for k, (_, e) in enumerate(sorted(getattr(st, name).items())):
            q[-2 - k] = Entry(e.mask, e.age, e.store, -2 - k, e.lds)
        setattr(out, name, q)
    return out


def _exit_violations(new: State, allowed: State) -> list[tuple[str, int, int]]:
    """Entries (queue, producer, age) of ``new`` that make it worse than
    ``allowed``: every pending register (and store) of ``new`` must be pending in
    ``allowed`` in the same queue with an age no larger, so that any later wait
    that retired it there still does."""
    out = []
    for qname in ("vm", "lds", "other"):
        qa = getattr(allowed, qname)
        for p, x in getattr(new, qname).items():
            cover = 0
            store_ok = not x.store
            for y in qa.values():
                if qname == "other" or y.age <= x.age:
                    cover |= y.mask
                    store_ok = store_ok or y.store
            if x.mask & ~cover or not store_ok:
                out.append((qname, p, x.age))
    return out


def _as_wait(items) -> tuple[int | None, int | None]:
    """The weakest (vmcnt, lgkmcnt) retiring every (queue, producer, age)."""
    vm = lgkm = None
    for q, _, age in items:
        if q == "vm":
            vm = _min(vm, age)
        else:
            lgkm = _min(lgkm, age if q == "lds" else 0)
    return vm, lgkm


def _exit_need(new: State, allowed: State) -> tuple[int | None, int | None]:
    return _as_wait(_exit_violations(new, allowed))


def _is_terminator(text: str) -> bool:
    e = effects(text)
    return e.is_branch or e.klass in ("END", "BRANCH")


def _texts(instructions) -> list[str]:
    return [x.text if isinstance(x, Instruction) else str(x).strip() for x in instructions]


def _min(a, b):
    return b if a is None else a if b is None else min(a, b)


def recompute_waitcnts(instructions, entry: State | None = None,
                       exit: State | None = None, *, keep: bool = False) -> list[str]:
    """``instructions`` with the weakest ``s_waitcnt`` before each use that needs
    one, starting from ``entry`` (default: nothing outstanding) and leaving no
    more outstanding than ``exit`` (default: nothing, i.e. drain at the end; pass
    :func:`window_states`'s second value to keep the original's slack). Existing
    waits are dropped unless ``keep``. A final branch or ``s_endpgm`` stays last;
    after ``s_endpgm`` nothing is needed."""
    lines = [t for t in _texts(instructions) if keep or not t.startswith("s_waitcnt")]
    st = entry.copy() if entry is not None else State()
    allowed = exit if exit is not None else State()
    out: list[str] = []
    n = len(lines)
    term = n > 0 and (effects(lines[-1]).is_branch or effects(lines[-1]).klass in ("END",)
                      or lines[-1].startswith(("s_setpc", "s_swappc")))
    for k, t in enumerate(lines):
        e = effects(t)
        if k == n - 1 and term and e.klass != "END":
            vm, lgkm = _exit_need(st, allowed)
            nd = need(st, e)
            _emit(out, st, _min(vm, nd.vm), _min(lgkm, nd.lgkm))
        elif e.klass != "WAITCNT":
            nd = need(st, e)
            _emit(out, st, nd.vm, nd.lgkm)
        out.append(t)
        _transfer(st, e, k)
    if not term:
        vm, lgkm = _exit_need(st, allowed)
        _emit(out, st, vm, lgkm)
    return out


def state_after(instructions, entry: State | None = None) -> State:
    """What is outstanding after straight-line ``instructions`` run from ``entry``:
    the entry state of the block that follows. Producers get fresh negative ids, so
    the state can be the ``entry`` of a window whose own positions are 0, 1, ..."""
    st = entry.copy() if entry is not None else State()
    for k, t in enumerate(_texts(instructions)):
        _transfer(st, effects(t), k + (1 << 20))
    return _renumber(st)


def _emit(out: list[str], st: State, vm, lgkm) -> None:
    text = waitcnt_text(vm=vm, lgkm=lgkm)
    if text:
        out.append(text)
        apply_wait(st, {k: v for k, v in (("vm", vm), ("lgkm", lgkm)) if v is not None})


def relax_waitcnts(instructions, entry: State | None = None,
                   exit: State | None = None) -> list[str]:
    """The same instructions with every ``s_waitcnt`` kept in place but weakened
    to the smallest wait its uses need (dropped when none). A wait answers for
    the ops outstanding at it and used before the next wait (or, for the last
    one, left beyond what ``exit`` allows). A use no wait covers (the original
    was insufficient) gets a new wait just before it."""
    lines = _texts(instructions)
    st = entry.copy() if entry is not None else State()
    allowed = exit if exit is not None else State()
    n = len(lines)
    term = n > 0 and _is_terminator(lines[-1])
    out: list[str] = []
    for k, t in enumerate(lines):
        e = effects(t)
        if e.klass != "WAITCNT":
            nd = need(st, e)
            vm, lgkm = nd.vm, nd.lgkm
            if k == n - 1 and term and e.klass != "END":
                ev, el = _exit_need(st, allowed)
                vm, lgkm = _min(vm, ev), _min(lgkm, el)
            _emit(out, st, vm, lgkm)
            out.append(t)
            _transfer(st, e, k)
            continue
        seg_end = k + 1
        while seg_end < n and effects(lines[seg_end]).klass != "WAITCNT":
            seg_end += 1
        ages = {(q, p): x.age for q in ("vm", "lds", "other") for p, x in getattr(st, q).items()}
        sim = st.copy()
        due: list[tuple[str, int, int]] = []
        for j in range(k + 1, seg_end):
            ej = effects(lines[j])
            if j == n - 1 and term and ej.klass != "END":
                due += [(q, p, ages[q, p]) for q, p, _ in _exit_violations(sim, allowed)
                        if (q, p) in ages]
            for _, _, p in need(sim, ej).hits:
                due += [(q, p, ages[q, p]) for q in ("vm", "lds", "other")
                        if (q, p) in ages and p in getattr(sim, q)]
                if p == -1:                      # unknown instruction: drain
                    due += [(q, pp, 0) for (q, pp) in ages]
            _transfer(sim, ej, j)
        if seg_end == n and not term:
            due += [(q, p, ages[q, p]) for q, p, _ in _exit_violations(sim, allowed)
                    if (q, p) in ages]
        vm, lgkm = _as_wait(due)
        text = waitcnt_text(vm=vm, lgkm=lgkm, exp=waitcnt_fields(t).get("exp"))
        if text:
            out.append(text)
            apply_wait(st, {key: v for key, v in (("vm", vm), ("lgkm", lgkm)) if v is not None})
    if not term:
        _emit(out, st, *_exit_need(st, allowed))
    return out
