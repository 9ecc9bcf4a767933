"""What every rule operator shares: choosing a window, the fixed points nothing
moves across, pinned release waits, hazard padding, and sealing an edit.

A rule operator builds new lines for one window and hands them to :func:`seal`,
which pads hazards with the fewest ``s_nop`` wait states, runs the same static
gate the verifier runs, and returns an :class:`~asmevo.edits.Edit` or the
reason there is none. The engine is therefore never handed an edit the gate is
known to reject.

The API, in the order an operator uses it:

- :func:`candidate_windows` -- the individual's hot windows, cut to single
  reachable basic blocks without raw instructions, top ones shuffled by the
  context's rng.
- :func:`is_fixed_point` / :func:`regions` -- instructions a reordering keeps
  in place (barriers, branches, EXEC writes, ``s_setprio``...), and the
  movable stretches between them.
- :func:`pinned_waits` -- ``s_waitcnt`` lines that directly precede a barrier
  or a cache fence; they are the memory-model half of a release and are kept
  verbatim (the counter model only knows register dependences).
- :func:`pad_hazards` -- insert the minimal ``s_nop`` before each consumer the
  hazard checker flags that K0 does not already ship (the gate's criterion).
- :func:`seal` -- pad, check for a no-op, gate, and make the Edit (or a
  :class:`~asmevo.operator.Rejected` saying why not).
- :func:`liveness_of` -- a function's CFG and the analysis layer's liveness
  over it (one CFG shared).
"""
from __future__ import annotations


from asmevo.edits import Edit, label_of
from asmevo.errors import AsmevoError
from asmevo.operator import Rejected
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.cfg import build_cfg
from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.targets.amdgpu.analysis.hazards import check_hazards
from asmevo.targets.amdgpu.analysis.liveness import Liveness
from asmevo.memo import IdentityMemo, Memo
from asmevo.targets.amdgpu.analysis.gate import baseline, k0_program, new_problems, static_gate
from asmevo.targets.amdgpu.edits import apply_edit, edit_items
from asmevo.targets.amdgpu.errors import Refused
from asmevo.targets.amdgpu.program import Function, Program
from asmevo.targets.amdgpu.sanitize import MAX_LINES

Window = tuple[str, int, int]

# instructions with an effect on the wave or on timing that the DAG does not model
_FIXED_MNEMONICS = ("s_memtime", "s_memrealtime", "s_getreg_", "s_setreg_", "s_icache_",
                    "s_dcache_", "s_sendmsg", "s_ttracedata", "s_setprio", "s_sleep",
                    "s_barrier", "s_trap", "s_setkill", "s_set_gpr_idx", "s_setvskip",
                    "buffer_wbl2", "buffer_inv", "buffer_wbinvl1", "s_movrel", "v_movrel",
                    "s_rfe", "s_code_end")
# PC-relative code: its offsets assume the exact distance to the s_getpc
_PC_RELATIVE = ("s_getpc", "s_setpc", "s_swappc")
# fixed points whose preceding waits are part of a release (kept verbatim)
_RELEASE = ("s_barrier", "buffer_wbl2", "buffer_inv", "buffer_wbinvl1", "s_dcache_wb",
            "s_sendmsg", "s_icache_inv", "s_dcache_inv")

MAX_NOP = 7          # s_nop 7 = 8 wait states; more are chained
MAX_WINDOW = 192     # instructions one rule edit rewrites (room for waits and NOPs)


# instructions that read the destination they write (not in the analysis layer's model)
class SealError(Refused):
    """Internal: a window whose hazards cannot be padded from inside it."""


class Refuse(Refused):
    """A rewrite a rule operator's planning refuses (merge a pair of loads, rename
    registers), the reason saying why: caught inside the operator, which proposes
    nothing for it. A kind of the target's :class:`Refused`, so every refusal has one
    root and carries its reason."""


def option_subset(given, allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    """``given`` as a tuple, if it is a non-empty subset of ``allowed`` (an operator's
    configuration: rules, modes)."""
    given = tuple(given)
    if not given or any(g not in allowed for g in given):
        raise ValueError(f"{what} must be a non-empty subset of {allowed}")
    return given


def positive(**counts: int) -> tuple[int, ...]:
    """Every count (tries, top_windows, ...) is >= 1; the counts, in the order given (an
    operator's ``self.tries, self.top_windows = positive(tries=..., top_windows=...)``)."""
    bad = [k for k, v in counts.items() if v < 1]
    if bad:
        raise ValueError(f"{' and '.join(bad)} must be >= 1")
    return tuple(counts.values())


def is_wait(text: str) -> bool:
    return text.split(None, 1)[0] == "s_waitcnt"


def is_nop(text: str) -> bool:
    return text.split(None, 1)[0] == "s_nop"


def is_fixed_point(text: str) -> bool:
    """An instruction no reordering may move or move anything across: barriers,
    branches and program end, EXEC writers, priority/sleep/messages, cache
    maintenance, hardware-register and clock reads, unknown instructions."""
    e = effects(text)
    if e.klass in ("WAITCNT", "NOP"):
        return False
    return (e.unknown or e.fence or e.is_branch or e.klass in ("END", "BRANCH", "BARRIER",
                                                              "MSG", "OTHER")
            or bool(e.writes & R.EXEC_MASK) or e.mnemonic.startswith(_FIXED_MNEMONICS))


def pinned_waits(texts: list[str]) -> set[int]:
    """Indices of the ``s_waitcnt`` lines directly before a barrier or cache fence
    (only other waits and ``s_nop`` between)."""
    pinned: set[int] = set()
    for k, t in enumerate(texts):
        if not t.split(None, 1)[0].startswith(_RELEASE):
            continue
        j = k - 1
        while j >= 0 and (is_wait(texts[j]) or is_nop(texts[j])):
            if is_wait(texts[j]):
                pinned.add(j)
            j -= 1
    return pinned


def regions(texts: list[str]) -> list[tuple[int, int]]:
    """Maximal ``[a, b)`` stretches of ``texts`` without a fixed point or pinned wait."""
    pinned = pinned_waits(texts)
    out: list[tuple[int, int]] = []
    a = 0
    for k, t in enumerate(texts):
        if k in pinned or is_fixed_point(t):
            if k > a:
                out.append((a, k))
            a = k + 1
    if len(texts) > a:
        out.append((a, len(texts)))
    return out


def liveness_of(fn: Function):
    """(cfg, Liveness) of ``fn``, sharing one CFG."""
    cfg = build_cfg(fn)
    return cfg, Liveness(fn, cfg)


# --- windows --------------------------------------------------------------------------

def block_pieces(fn: Function, start: int, end: int, cfg=None) -> list[tuple[int, int]]:
    """``[start, end)`` cut at basic-block boundaries, reachable pieces only."""
    cfg = cfg or build_cfg(fn)
    pieces: list[tuple[int, int]] = []
    i = start
    while i < end:
        bi = cfg.block_of[i]
        b_end = min(cfg.blocks[bi].end, end)
        if cfg.reachable[bi]:
            pieces.append((i, b_end))
        i = b_end
    return pieces


def candidate_windows(context, individual, *, top: int = 8, min_len: int = 2,
                      max_len: int = MAX_WINDOW) -> list[Window]:
    """The individual's windows as single reachable basic-block pieces of at least
    ``min_len`` instructions, no raw (non-reassemblable) instruction and no
    PC-relative sequence (``s_getpc``/``s_setpc``/``s_swappc``); the
    ``top`` best-ranked come first in an rng-shuffled order, the rest after. A
    piece longer than ``max_len`` is cut to an rng-chosen ``max_len`` stretch
    (an edit may carry at most the sanitizer's MAX_LINES lines)."""
    program, fn = context.kernel_of(individual)
    cfg = build_cfg(fn)
    seen: set[tuple[int, int]] = set()
    out: list[Window] = []
    for name, start, end in context.windows(individual):
        if name != context.kernel:
            continue
        for a, b in block_pieces(fn, start, end, cfg):
            if b - a < min_len or (a, b) in seen:
                continue
            if any(ins.raw or ins.mnemonic.startswith(_PC_RELATIVE)
                   for ins in fn.instructions[a:b]):
                continue
            seen.add((a, b))
            if b - a > max_len:
                a = context.rng.randrange(a, b - max_len + 1)
                b = a + max_len
            out.append((name, a, b))
    head, tail = out[:top], out[top:]
    context.rng.shuffle(head)
    return head + tail


# --- hazards and the gate -----------------------------------------------------------------

def nops(wait_states: int) -> list[str]:
    """``s_nop`` lines giving exactly ``wait_states`` wait states (N+1 each)."""
    out = []
    while wait_states > 0:
        k = min(wait_states, MAX_NOP + 1)
        out.append(f"s_nop {k - 1}")
        wait_states -= k
    return out


def _tail_slot(lines: list[str]) -> int:
    """Where padding for a consumer after the window goes: before a final branch, or
    after a final label (every path into the next instruction then passes it)."""
    if lines:
        if label_of(lines[-1]) is not None:
            return len(lines)
        e = effects(lines[-1])
        if e.is_branch or e.klass in ("BRANCH", "END"):
            return len(lines) - 1
    return len(lines)


def _k0_hazards(program: Program, function: str, target) -> dict:
    """K0's hazards in ``function`` (the gate's baseline), {} when K0 has none."""
    k0 = k0_program(program.source)
    base = baseline(k0, target, [function])
    return {k: v for k, v in base.items() if k[1] == "hazard"}


def _items(lines: list[str]) -> list:
    """:func:`~asmevo.targets.amdgpu.edits.edit_items` of ``lines``, one item per distinct
    line made once: items are immutable values, and an Instruction caches what the block
    cutting asks of it (mnemonic, whether it ends a block), so padding's rounds over nearly
    the same lines, and the next window's, do not decode them again."""
    out = []
    for t in lines:
        item = _ITEMS.get(t)
        if item is None:
            item = _ITEMS.put(t, edit_items([t])[0])
        out.append(item)
    return out


_ITEMS: Memo[object] = Memo("rules.items", 65536)


def _new_hazards(program: Program, function: str, target, k0_base: dict) -> list:
    """The hazards of ``function`` that K0 does not have (as the gate counts them)."""
    if not k0_base:
        return check_hazards(program.function(function), target)
    return [p for _, p in new_problems(program, target, [function], k0_base)
            if p.kind == "hazard"]


def pad_hazards(program: Program, function: str, start: int, end: int, lines: list[str],
                target=None, *, max_rounds: int = 32) -> list[str]:
    """``lines`` (the new text of ``[start, end)``, generated label lines allowed) with
    the fewest ``s_nop`` wait states inserted so that ``check_hazards`` reports no hazard
    K0 lacks (the static gate's criterion: a hazard K0 ships is K0's while its wait
    states are kept): before each flagged consumer inside the window (after any label
    in front of it, so every path into it is padded), or at the window's tail (before a
    final branch) for a consumer after it. Raises SealError when a problem lies before
    the window and is not fixed by padding, or the rounds run out.

    Remembered per program object and request: an operator that comes back to a parent
    (an elite, generation after generation) pads the same rewrites of its windows
    again, and the answer is a function of the (immutable) program and the request."""
    target = target if target is not None else program.source.target
    request = (function, start, end, tuple(lines), target, max_rounds)
    hit = _PADDED.get(program, request)
    if hit is None:
        try:
            hit = (tuple(_pad(program, function, start, end, lines, target, max_rounds)), None)
        except SealError as exc:
            hit = ((), str(exc))
        _PADDED.put(program, hit, request)
    padded, error = hit
    if error is not None:
        raise SealError(error)
    return list(padded)


# per program object and request: (padded lines, SealError message or None)
_PADDED: IdentityMemo[tuple[tuple[str, ...], str | None]] = IdentityMemo(1024,
                                                                   "rules.padded")


def _pad(program: Program, function: str, start: int, end: int, lines, target,
         max_rounds: int) -> list[str]:
    """:func:`pad_hazards`, computed: pad, check again, until no new hazard is left."""
    lines = list(lines)
    k0_base = _k0_hazards(program, function, target)
    for _ in range(max_rounds):
        edited = program.replace_window(function, start, end, _items(lines))
        problems = _new_hazards(edited, function, target, k0_base)
        if not problems:
            return lines
        slots = [k for k, t in enumerate(lines) if label_of(t) is None]
        n = len(slots)
        deficit: dict[int, int] = {}
        for p in problems:
            need = (p.required or 1) - (p.actual or 0)
            if need <= 0:
                continue
            if start <= p.index < start + n:
                slot = slots[p.index - start]
            elif p.producer is not None and start <= p.producer < start + n \
                    or p.index >= start + n:
                slot = _tail_slot(lines)
            else:
                raise SealError(f"hazard outside the window: {p}")
            deficit[slot] = max(deficit.get(slot, 0), need)
        if not deficit:
            raise SealError(f"hazard the padding cannot address: {problems[0]}")
        for slot in sorted(deficit, reverse=True):
            lines[slot:slot] = nops(deficit[slot])
    raise SealError("hazard padding did not converge")


def seal(program: Program, function: str, start: int, end: int, lines, *, operator: str,
         note: str, pad: bool = True, trim: bool = True) -> Edit | Rejected:
    """The Edit replacing ``[start, end)`` with ``lines`` (hazard-padded), or a
    Rejected saying why not: no change, unpaddable hazard, an edit the program refuses
    (:func:`~asmevo.targets.amdgpu.edits.apply_edit`, as the engine applies it), or
    the static gate's verdict. With ``trim`` the edit covers only the lines that
    differ."""
    lines = [str(t).strip() for t in lines]
    old = [i.text for i in program.function(function).instructions[start:end]]
    try:
        if pad:
            lines = pad_hazards(program, function, start, end, lines)
    except SealError as exc:
        return Rejected(str(exc))
    if lines == old:
        return Rejected("the rewrite reproduces the window unchanged")
    if trim:
        start, end, lines = trim_window(start, end, old, lines)
    if len(lines) > MAX_LINES:
        return Rejected(f"the rewrite has {len(lines)} lines, more than an edit may carry "
                        f"({MAX_LINES})")
    edit = Edit(function, start, end, tuple(lines), operator=operator, note=note)
    try:
        edited = apply_edit(program, edit)
    except AsmevoError as exc:
        return Rejected(f"the program refuses the edit: {exc}")
    verdict = static_gate(edited, program.source.target)
    if verdict is not None:
        return Rejected(f"static gate rejects the rewrite: {verdict}")
    return edit


def trim_window(start: int, end: int, old: list[str], new: list[str]):
    """The smallest ``(start, end, lines)`` with the same effect: the common
    prefix and suffix of ``old`` and ``new`` dropped (one old line kept)."""
    if not old:                    # nothing to trim: a pure insertion at ``start``
        return start, end, list(new)
    p = 0
    while p < len(old) and p < len(new) and old[p] == new[p]:
        p += 1
    s = 0
    while s < len(old) - p and s < len(new) - p and old[-1 - s] == new[-1 - s]:
        s += 1
    if p + s >= len(old):          # a pure insertion: keep one old line in the window
        if p > 0:
            p -= 1
        else:
            s -= 1
    return start + p, end - s, list(new[p:len(new) - s])

