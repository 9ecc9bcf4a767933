"""``gcse``: an instruction that recomputes, in a dominated block, what an earlier one
computed -- common-subexpression and redundant-load elimination across blocks.

``J`` repeats ``I`` when both have the same text apart from the destination and:

- ``I`` dominates ``J`` (its block dominates ``J``'s, or it comes first in one block);
- on every path from ``I`` to ``J`` nothing writes what ``I`` reads (implicit reads
  such as EXEC, VCC, M0 included: a vector ``J`` then runs under ``I``'s EXEC) nor
  ``I``'s destination (it still holds the value), and ``I`` does not read its own
  destination;
- ``I`` is pure ALU, or a load: SMEM, global/buffer or LDS, without ``glc``/``slc``/
  ``sc0``/``sc1``/``nt`` (no coherence request), and no store, atomic, barrier, cache
  fence, message or unknown instruction lies on any path between them (a write by
  another wave can only be ordered before ``J`` through a barrier; without one it is
  a race K0 already has);
- what ``J`` writes besides its destination (SCC, a carry) is dead after it.

Rewrites: ``J`` is deleted when it writes ``I``'s destination; otherwise its
readers in its block (up to where its destination is overwritten, the
destination dead after that) read ``I``'s destination and ``J`` is deleted; or, for
a load or a quarter-rate op, ``J`` becomes moves from ``I``'s destination. A
full-rate ALU op whose readers cannot be renamed is refused (a move costs what it
saves). Waits are re-derived for the edited block where a deleted load leaves a
wait short; the static gate decides.

Why faster: a load not issued again (memory latency, bandwidth) or a multiply
not repeated.
"""
from __future__ import annotations

from asmevo.edits import Edit
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.waitcnt import recompute_waitcnts, window_states
from asmevo.operator import OperatorContext, Rejected, mutation
from asmevo.operators.rules.common import is_wait, pinned_waits, seal
from asmevo.operators.rules.structure import (PLAIN_SGPRS, Flow, StructuralMutation, assembles,
                                       between, first_result, parts, pure_alu, render)

_VOLATILE = {"glc", "slc", "sc0", "sc1", "nt", "dlc"}
_QUARTER = ("v_mul_lo_u32", "v_mul_hi_u32", "v_mul_hi_i32", "v_mul_lo_i32", "v_mad_u64_u32",
            "v_mad_i64_i32")
_BARRIERS = ("BARRIER", "MSG", "END", "OTHER")


def repeatable_load(e) -> bool:
    """A plain load (no coherence bits, writes all of its destination, no store part)."""
    return (e.mem_load and not e.mem_store and not e.unknown and e.ndefs == 1
            and e.kills == e.writes and not _VOLATILE & set(e.modifiers)
            and e.mem in ("smem", "global", "buffer", "lds"))


def _key(e):
    return (e.mnemonic, tuple(e.operands[e.ndefs:]), e.modifiers)


def repeats(flow: Flow, i: int, j: int) -> str | None:
    """None when ``j`` provably recomputes ``i``'s value (see the module doc), else why not."""
    cfg = flow.cfg
    ei, ej = cfg.effects[i], cfg.effects[j]
    if not flow.dom.instruction_dominates(i, j):
        return "the first does not dominate the second"
    if ei.writes & ei.reads & ~R.EXEC_MASK:
        return "the first reads its own destination"
    if ej.writes & ~ej.op_masks[0] & flow.live.after(j):
        return "the second's side writes (SCC, carry) are read later"
    load = ei.mem_load
    guard = ei.reads | ei.writes
    for k in between(flow, i, j):
        e = cfg.effects[k]
        if e.writes & guard:
            return f"{cfg.texts[k]!r} (#{k}) writes what the first reads or wrote"
        if e.unknown:
            return f"{cfg.texts[k]!r} (#{k}) is not understood"
        if load and (e.mem_store or e.fence and e.klass != "WAITCNT" or e.klass in _BARRIERS
                     or e.mem in ("msg", "gds", "unknown")):
            return f"{cfg.texts[k]!r} (#{k}) may change memory between the loads"
    return None


def moves(dst: str, src: str, e) -> list[str] | None:
    """Lines copying register tuple ``src`` into ``dst`` (same width), or None."""
    dm, sm = R.operand_mask(dst), R.operand_mask(src)
    n = R.count(dm)
    if n != R.count(sm) or n == 0:
        return None
    vector = bool(dm & R.VGPR_MASK)
    first_d = (dm & -dm).bit_length() - 1
    first_s = (sm & -sm).bit_length() - 1
    kind, base = ("v", R.VGPR_BASE) if vector else ("s", 0)
    if not vector and (dm | sm) & ~PLAIN_SGPRS:
        return None
    out = []
    for k in range(n):
        out.append(f"{'v_mov_b32_e32' if vector else 's_mov_b32'} {kind}{first_d - base + k}, "
                   f"{kind}{first_s - base + k}")
    return out


def _renamed_readers(flow: Flow, j: int, dj: int, di_text: str):
    """Lines of ``j``'s block after ``j`` with reads of ``dj`` reading ``di_text``, up to
    ``dj``'s full overwrite (``dj`` dead after it or at the block end), or None."""
    cfg = flow.cfg
    b = cfg.blocks[cfg.block_of[j]]
    vector = bool(dj & R.VECTOR_MASK)
    out = {}
    for k in range(j + 1, b.end):
        e = cfg.effects[k]
        if e.unknown or (vector and (e.writes & R.EXEC_MASK or e.dpp)):
            return None
        if e.reads & dj:
            got = parts(cfg.texts[k])
            if got is None:
                return None
            m, ops, mods = got
            named = 0
            for idx in range(e.ndefs, len(ops)):
                mk = R.operand_mask(ops[idx])
                if mk & dj:
                    if mk != dj:
                        return None
                    ops[idx] = di_text
                    named |= mk
            if e.reads & dj & ~named:
                return None
            out[k] = render(m, ops, mods)
        if e.writes & dj:
            if e.kills & dj != dj or e.dpp or e.sdwa:
                return None
            return out
    if flow.lanes.after(b.end - 1) & dj:
        return None
    return out


def rewrite(flow: Flow, i: int, j: int) -> tuple[int, int, list[str], str] | str:
    """``(start, end, lines, note)`` removing the repeat ``j``, or why not."""
    cfg = flow.cfg
    ei, ej = cfg.effects[i], cfg.effects[j]
    b = cfg.blocks[cfg.block_of[j]]
    di, dj = ei.op_masks[0], ej.op_masks[0]
    lines = list(cfg.texts[b.start:b.end])
    pos = j - b.start
    if di == dj:
        del lines[pos]
        how = "delete it"
    elif di & dj:
        return "the destinations overlap"
    else:
        renamed = _renamed_readers(flow, j, dj, ei.operands[0])
        if renamed is not None and assembles(list(renamed.values()),
                                             flow.program.source.target) is None:
            for k, t in renamed.items():
                lines[k - b.start] = t
            del lines[pos]
            how = f"its readers read {ei.operands[0]}"
        elif ei.mem_load or ei.mnemonic.startswith(_QUARTER):
            mv = moves(ej.operands[0], ei.operands[0], ej)
            if mv is None:
                return "cannot copy the result"
            lines[pos:pos + 1] = mv
            how = f"copy {ei.operands[0]}"
        else:
            return "a full-rate repeat whose readers cannot be renamed: a copy saves nothing"
    if ej.mem_load:
        entry, exit_ = window_states(flow.fn, b.start, b.end)
        pinned = pinned_waits(lines)
        lines = recompute_waitcnts([t for k, t in enumerate(lines)
                                    if not is_wait(t) or k in pinned], entry, exit_, keep=True)
    note = f"#{j} {cfg.texts[j]} repeats #{i}: {how}"
    return b.start, b.end, lines, note[:300]


def candidates(flow: Flow) -> list[tuple[int, int]]:
    """(first, repeat) pairs with equal text apart from the destination, nearest first."""
    cfg = flow.cfg
    seen: dict[tuple, list[int]] = {}
    out = []
    for j, e in enumerate(cfg.effects):
        if not cfg.reachable[cfg.block_of[j]] or flow.fn.instructions[j].raw:
            continue
        if not (e.ndefs == 1 and (pure_alu(e) and not e.dpp and not e.sdwa
                                  and e.kills == e.writes or repeatable_load(e))):
            continue
        key = _key(e)
        for i in reversed(seen.get(key, [])):
            if flow.dom.instruction_dominates(i, j):
                out.append((i, j))
                break
        seen.setdefault(key, []).append(j)
    return out


@mutation("gcse", targets=("amdgpu",))
class GlobalCse(StructuralMutation):
    """Remove a recomputation or reload across blocks (see the module doc)."""

    def __init__(self, tries: int = 8):
        super().__init__(tries)

    def mutate(self, individual, context: OperatorContext) -> Edit | Rejected:
        program = context.program(individual)
        flow = Flow(program, context.kernel)
        pairs = candidates(flow)
        if not pairs:
            return context.reject("no instruction repeats a dominating one")
        hot = set()
        for name, s, e in context.windows(individual)[:8]:
            if name == flow.fn.name:
                hot.update(range(s, e))
        context.rng.shuffle(pairs)
        pairs.sort(key=lambda p: (p[1] not in hot, not flow.cfg.effects[p[1]].mem_load))
        return first_result(context, ((f"#{j} vs #{i}", self._seal(program, flow, i, j))
                                      for i, j in pairs[:self.tries]))

    def _seal(self, program, flow: Flow, i: int, j: int):
        got = repeats(flow, i, j) or rewrite(flow, i, j)
        if isinstance(got, str):
            return got
        start, end, lines, note = got
        return seal(program, flow.fn.name, start, end, lines, operator=self.name, note=note)
