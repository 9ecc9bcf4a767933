"""``merge_loads``: two narrow loads from one base at adjacent offsets become one wide load.

Forms merged (gfx90a / gfx942):

- ``global_load_dword[xN]`` + ``global_load_dword[xM]`` at contiguous byte
  offsets from the same ``vaddr, saddr|off`` -> ``global_load_dwordx{2,3,4}``;
- ``s_load_dword[xN]`` pairs of one width at contiguous immediate offsets from
  the same base -> ``s_load_dwordx{2,4,8}`` (merged offset naturally aligned,
  destination even / 4-aligned as the ISA requires);
- ``ds_read_b32`` (``ds_read_b64``) pairs from the same address register ->
  ``ds_read2_b32`` (``ds_read2_b64``, or the ``st64`` forms), which only needs
  each half's own alignment, so the offsets need not be adjacent.

Not merged: ``buffer_load_*`` (out-of-range checking decides per access, and a
wide access straddling ``num_records`` could read zeros where the narrow one
read data: Triton masks with exactly that), flat and scratch loads, loads with
different cache flags (``glc slc nt sc0 sc1``), or with any store, atomic,
barrier, cache fence, EXEC write or address-register write between them.

Preserves: every lane reads the same bytes of the same address space with the
same cache policy and the same EXEC, and no store of this wave can intervene
(the later load only moves up past loads and ALU work). The wide destination
is either the loads' own registers (when they already form an aligned tuple,
or a value is live out of the block) or a register range free over the rest
of the block (VGPR tuples even-aligned, llvm-mc checked); every read of a
renamed value up to its redefinition is renamed, and a value that lives past
the block keeps its register. Waits from the first load to the block end are
recomputed (one op fewer shifts every count) from the block's counter state,
keeping the release waits before barriers, leaving no more outstanding than
the original, and hazards are padded by :func:`asmevo.operators.rules.common.seal`,
which also runs the verifier's static gate.

Why it can be faster: one instruction issue and one memory request instead of
two (VMEM/LDS issue slots, TA/TD address processing, one ``vmcnt`` step
fewer), and the second load's latency overlaps the first's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from asmevo.edits import Edit
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.cfg import build_cfg
from asmevo.targets.amdgpu.analysis.effects import Effects, effects
from asmevo.targets.amdgpu.analysis.liveness import Liveness
from asmevo.targets.amdgpu.analysis.waitcnt import recompute_waitcnts, window_states
from asmevo.targets.amdgpu.program import Function, Program
from asmevo.operator import OperatorContext, Rejected, mutation
from asmevo.operators.rules.common import Refuse, candidate_windows, is_wait, pinned_waits, seal
from asmevo.operators.rules.registers import allocation_limit, fmt_range, reg_bit, reg_mask

_GLOBAL = {"global_load_dword": 1, "global_load_dwordx2": 2, "global_load_dwordx3": 3,
           "global_load_dwordx4": 4}
_GLOBAL_BY_WIDTH = {1: "global_load_dword", 2: "global_load_dwordx2",
                    3: "global_load_dwordx3", 4: "global_load_dwordx4"}
_SMEM = {"s_load_dword": 1, "s_load_dwordx2": 2, "s_load_dwordx4": 4}
_SMEM_BY_WIDTH = {2: "s_load_dwordx2", 4: "s_load_dwordx4", 8: "s_load_dwordx8"}
_DS = {"ds_read_b32": 1, "ds_read_b64": 2}
_GLOBAL_FLAGS = {"glc", "slc", "nt", "sc0", "sc1", "dlc"}
_RANGE = re.compile(r"(?<![\w.])([sva])(?:\[(\d+)(?::(\d+))?\]|(\d+))(?![\w])")
MAX_DISTANCE = 48          # instructions between the two loads


# --- parsing -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Load:
    """One mergeable load: its family, width in dwords, destination and address."""

    index: int
    family: str            # "global" | "smem" | "ds"
    width: int             # dwords
    kind: str              # "v" | "s": destination register file
    dest: int              # first destination register
    addr: tuple[str, ...]  # address operands, verbatim
    offset: int            # bytes
    flags: tuple[str, ...]
    effects: Effects

    @property
    def regs(self) -> range:
        return range(self.dest, self.dest + self.width)


def _single_range(operand: str) -> tuple[str, int, int] | None:
    ms = list(_RANGE.finditer(operand))
    if len(ms) != 1 or ms[0].group(0) != operand.strip():
        return None
    m = ms[0]
    if m.group(4) is not None:
        return m.group(1), int(m.group(4)), 1
    first = int(m.group(2))
    last = int(m.group(3)) if m.group(3) is not None else first
    return m.group(1), first, last - first + 1


def parse_load(index: int, text: str) -> Load | None:
    """The load at ``index`` if it is of a mergeable form, else None."""
    e = effects(text)
    m = e.mnemonic
    if e.unknown or not e.mem_load or e.mem_store:
        return None
    ops, mods = list(e.operands), list(e.modifiers)
    offset = 0
    flags = []
    for w in mods:
        if w.startswith("offset:"):
            offset = int(w[7:], 0)
        else:
            flags.append(w)
    if m in _GLOBAL:
        if len(ops) != 3 or any(f not in _GLOBAL_FLAGS for f in flags):
            return None
        family, addr = "global", tuple(ops[1:])
    elif m in _SMEM:
        if len(ops) != 3 or any(f not in ("glc",) for f in flags):
            return None
        try:
            offset = int(ops[2], 0)
        except ValueError:
            return None               # an SGPR offset: nothing to prove contiguity with
        family, addr = "smem", (ops[1],)
    elif m in _DS:
        if len(ops) != 2 or flags:
            return None
        family, addr = "ds", (ops[1],)
    else:
        return None
    dest = _single_range(ops[0])
    if dest is None:
        return None
    kind, first, n = dest
    width = {"global": _GLOBAL, "smem": _SMEM, "ds": _DS}[family][m]
    if n != width or kind != ("s" if family == "smem" else "v"):
        return None
    return Load(index, family, width, kind, first, addr, offset, tuple(flags), e)


# --- the merged instruction --------------------------------------------------------------

def merged_text(a: Load, b: Load, dest_first: int) -> tuple[str, list[tuple[Load, int]]] | None:
    """(text of the wide load, [(load, position of its dwords in the destination)]),
    or None when ``a`` and ``b`` (``a`` first in program order) cannot form one."""
    if a.family != b.family or a.addr != b.addr or a.flags != b.flags:
        return None
    flags = (" " + " ".join(a.flags)) if a.flags else ""
    if a.family in ("global", "smem"):
        lo, hi = (a, b) if a.offset <= b.offset else (b, a)
        if hi.offset != lo.offset + 4 * lo.width:
            return None
        total = lo.width + hi.width
        if a.family == "global":
            if total not in _GLOBAL_BY_WIDTH or total < 2:
                return None
            off = f" offset:{lo.offset}" if lo.offset else ""
            text = (f"{_GLOBAL_BY_WIDTH[total]} {fmt_range('v', dest_first, total)}, "
                    f"{a.addr[0]}, {a.addr[1]}{off}{flags}")
        else:
            if lo.width != hi.width or total not in _SMEM_BY_WIDTH or lo.offset % (4 * total):
                return None
            text = (f"{_SMEM_BY_WIDTH[total]} {fmt_range('s', dest_first, total)}, "
                    f"{a.addr[0]}, 0x{lo.offset:x}{flags}")
        return text, [(lo, 0), (hi, lo.width)]
    # LDS: ds_read2 with each half at its own offset (a -> offset0, b -> offset1)
    if a.width != b.width:
        return None
    unit = 4 * a.width
    name = "ds_read2_b32" if a.width == 1 else "ds_read2_b64"
    if a.offset % unit or b.offset % unit:
        return None
    o0, o1 = a.offset // unit, b.offset // unit
    if not (o0 <= 255 and o1 <= 255):
        if a.offset % (64 * unit) or b.offset % (64 * unit):
            return None
        o0, o1 = a.offset // (64 * unit), b.offset // (64 * unit)
        if not (o0 <= 255 and o1 <= 255):
            return None
        name = name.replace("read2", "read2st64")
    text = f"{name} {fmt_range('v', dest_first, 2 * a.width)}, {a.addr[0]} " \
           f"offset0:{o0} offset1:{o1}"
    return text, [(a, 0), (b, a.width)]


def dest_alignment(family: str, total: int) -> int:
    if family == "smem":
        return 2 if total == 2 else 4
    return 2                      # gfx90a+: VGPR tuples are 64-bit aligned


# --- renaming ----------------------------------------------------------------------------

def rename_text(text: str, mapping: dict[int, int], kind: str) -> str:
    """``text`` with the registers of ``kind`` in ``mapping`` renamed in its *source*
    operands. Raises Refuse when a read cannot be renamed (an implicit read through
    a destination operand, or a tuple only partly renamed or misaligned)."""
    e = effects(text)
    mask = reg_mask(kind, mapping)
    if not e.reads & mask:
        return text
    if e.unknown:
        raise Refuse(f"unknown instruction reads a renamed register: {text}")
    if e.reads & mask & ~e.use_mask:
        raise Refuse(f"reads a renamed register through its destination: {text}")
    ops = list(e.operands)
    for k in range(e.ndefs, len(ops)):
        ops[k] = _rename_operand(ops[k], mapping, kind, text)
    out = e.mnemonic + (" " + ", ".join(ops) if ops else "")
    if e.modifiers:
        out += " " + " ".join(e.modifiers)
    return out


def _rename_operand(op: str, mapping: dict[int, int], kind: str, text: str) -> str:
    def sub(m: re.Match) -> str:
        if m.group(1) != kind:
            return m.group(0)
        if m.group(4) is not None:
            first = last = int(m.group(4))
        else:
            first = int(m.group(2))
            last = int(m.group(3)) if m.group(3) is not None else first
        hit = [r in mapping for r in range(first, last + 1)]
        if not any(hit):
            return m.group(0)
        if not all(hit):
            raise Refuse(f"a tuple is only partly renamed in {text}")
        new = [mapping[r] for r in range(first, last + 1)]
        if new != list(range(new[0], new[0] + len(new))):
            raise Refuse(f"renaming splits a tuple in {text}")
        n = len(new)
        if n >= 2 and new[0] % (2 if kind == "v" or n == 2 else 4):
            raise Refuse(f"renamed tuple would be misaligned in {text}")
        return fmt_range(kind, new[0], n)
    return _RANGE.sub(sub, op)


# --- planning one merge ------------------------------------------------------------------

def between_ok(fn: Function, a: Load, j: int) -> str | None:
    """Why the load at ``j`` may not move up to ``a`` (None: it may)."""
    addr_mask = 0
    for op in a.addr:
        addr_mask |= R.operand_mask(op)
    if a.effects.writes & addr_mask:
        return "the first load overwrites the shared address"
    space = "L" if a.family == "ds" else "G"
    for k in range(a.index + 1, j):
        e = effects(fn.instructions[k].text)
        if e.klass in ("WAITCNT", "NOP"):
            continue
        if e.unknown or e.fence or e.is_branch or e.klass in ("END", "BRANCH", "BARRIER", "MSG"):
            return f"{e.mnemonic} at {k} is a fence"
        if e.mem_store and (space in e.spaces or not e.spaces):
            return f"{e.mnemonic} at {k} may write the loaded memory"
        if e.writes & addr_mask:
            return f"{e.mnemonic} at {k} rewrites the address"
        if a.kind == "v" and e.writes & R.EXEC_MASK:
            return f"{e.mnemonic} at {k} changes EXEC"
    return None


def value_ends(fn: Function, load: Load, end: int) -> dict[int, int | None] | None:
    """For each destination register: the first later instruction (before ``end``)
    that overwrites it, or None when the loaded value survives to ``end``. None
    overall when some register is only partly overwritten (its value cannot be
    followed, so it is not renamed)."""
    out: dict[int, int | None] = {}
    for r in load.regs:
        bit = reg_bit(load.kind, r)
        out[r] = None
        for k in range(load.index + 1, end):
            e = effects(fn.instructions[k].text)
            if e.writes & bit:
                if not e.kills & bit:
                    return None
                out[r] = k
                break
    return out


def plan_merge(fn: Function, program: Program, i: int, j: int, live: Liveness,
               cfg) -> tuple[int, list[str], str]:
    """(end, new lines for ``[i, end)``, note) merging the loads at ``i`` and ``j``;
    raises Refuse."""
    texts = [ins.text for ins in fn.instructions]
    a, b = parse_load(i, texts[i]), parse_load(j, texts[j])
    if a is None or b is None:
        raise Refuse("not a mergeable pair")
    if set(a.regs) & set(b.regs):
        raise Refuse("the two loads write overlapping registers")
    probe = merged_text(a, b, 0)
    if probe is None:
        raise Refuse("offsets, bases or flags do not combine")
    why = between_ok(fn, a, j)
    if why:
        raise Refuse(why)
    end = cfg.blocks[cfg.block_of[i]].end
    if cfg.block_of[j] != cfg.block_of[i]:
        raise Refuse("the loads are in different blocks")
    parts = probe[1]
    total = a.width + b.width
    kind = a.kind
    ends = {x.index: value_ends(fn, x, end) for x in (a, b)}
    live_out = live.after(end - 1)
    live_value = {x.index: ends[x.index] is None or any(
        ends[x.index][r] is None and live_out & reg_bit(kind, r) for r in x.regs)
        for x in (a, b)}
    free = live.free(i, end, kind)
    limit = allocation_limit(fn, program, kind)
    align = dest_alignment(a.family, total)

    starts: list[int] = []
    for x, pos in parts:
        s = x.dest - pos
        if s >= 0 and s % align == 0 and s not in starts:
            starts.append(s)
    starts += [s for s in range(0, limit - total + 1, align)
               if s not in starts and all(free & reg_bit(kind, s + t) for t in range(total))]
    reasons = []
    for s in starts:
        try:
            lines = _rewrite(texts, a, b, parts, s, end, ends, live_value, free, limit)
            return end, lines, f"{texts[i]} + {texts[j]} -> {lines[0]}"
        except Refuse as exc:
            reasons.append(str(exc))
    raise Refuse(reasons[0] if reasons else "no aligned destination range is free")


def _rewrite(texts, a: Load, b: Load, parts, s: int, end: int, ends, live_value, free,
             limit) -> list[str]:
    kind = a.kind
    total = a.width + b.width
    if s + total > max(limit, max(a.dest + a.width, b.dest + b.width)):
        raise Refuse("destination beyond the kernel's allocation")
    renames: list[tuple[Load, dict[int, int]]] = []
    for x, pos in parts:
        sub = range(s + pos, s + pos + x.width)
        if list(sub) == list(x.regs):
            if x is b:                      # moves up to i: its registers must be idle
                m = reg_mask(kind, x.regs)
                for k in range(a.index + 1, b.index):
                    e = effects(texts[k])
                    if (e.reads | e.writes) & m:
                        raise Refuse(f"{texts[k]} uses {fmt_range(kind, x.dest, x.width)} "
                                     "before the second load")
            continue
        if live_value[x.index]:
            raise Refuse(f"{fmt_range(kind, x.dest, x.width)} is live out of the block "
                         "or partly overwritten: it keeps its registers")
        if not all(free & reg_bit(kind, r) for r in sub):
            raise Refuse(f"{fmt_range(kind, sub.start, x.width)} is not free")
        renames.append((x, {r: sub.start + (r - x.dest) for r in x.regs}))
    new = list(texts[a.index:end])
    new[0] = merged_text(a, b, s)[0]
    for x, mapping in renames:
        for k in range(x.index + 1, end):
            if k == b.index:
                continue
            active = {r: t for r, t in mapping.items()
                      if ends[x.index][r] is None or k <= ends[x.index][r]}
            if active:
                new[k - a.index] = rename_text(new[k - a.index], active, kind)
    del new[b.index - a.index]
    return new


def with_waits(fn: Function, start: int, end: int, lines: list[str]) -> list[str]:
    """``lines`` (new text of ``[start, end)``) with waits recomputed: release waits
    before barriers/fences kept, every other one re-derived from the counters."""
    pinned = pinned_waits(lines)
    kept = [t for k, t in enumerate(lines) if not is_wait(t) or k in pinned]
    entry, exit_ = window_states(fn, start, end)
    return recompute_waitcnts(kept, entry, exit_, keep=True)


def candidate_pairs(fn: Function, windows, cfg) -> list[tuple[int, int]]:
    """(i, j): a load in a window and a later one of its block that may combine."""
    texts = [ins.text for ins in fn.instructions]
    out: list[tuple[int, int]] = []
    seen = set()
    for _, start, stop in windows:
        for i in range(start, stop):
            a = parse_load(i, texts[i])
            if a is None:
                continue
            end = min(cfg.blocks[cfg.block_of[i]].end, i + 1 + MAX_DISTANCE)
            for j in range(i + 1, end):
                b = parse_load(j, texts[j])
                if b is not None and (i, j) not in seen and merged_text(a, b, 0) is not None:
                    seen.add((i, j))
                    out.append((i, j))
    return out


@mutation("merge_loads", targets=("amdgpu",))
class MergeLoads:
    """Merge two narrow loads of one base at combinable offsets (see the module doc)."""

    def __init__(self, tries: int = 8, top_windows: int = 16):
        if tries < 1 or top_windows < 1:
            raise ValueError("tries and top_windows must be >= 1")
        self.tries = tries
        self.top_windows = top_windows

    def mutate(self, individual, context: OperatorContext) -> Edit | Rejected:
        program, fn = context.kernel_of(individual)
        windows = candidate_windows(context, individual, top=self.top_windows, min_len=2)
        cfg = build_cfg(fn)
        pairs = candidate_pairs(fn, windows, cfg)
        if not pairs:
            return context.reject("no two loads of one base at combinable offsets "
                                  "in the hot windows")
        context.rng.shuffle(pairs)
        live = Liveness(fn, cfg)
        reasons = []
        for i, j in pairs[:self.tries]:
            try:
                end, lines, note = plan_merge(fn, program, i, j, live, cfg)
                lines = with_waits(fn, i, end, lines)
            except Refuse as exc:
                reasons.append(f"[{i},{j}] {exc}")
                continue
            result = seal(program, context.kernel, i, end, lines, operator=self.name,
                          note=note)
            if isinstance(result, Edit):
                return result
            reasons.append(f"[{i},{j}] {result}")
        return context.reject("; ".join(reasons[:3]))
