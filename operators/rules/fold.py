"""``fold_moves``: a move into a register read once, folded into its reader.

Compilers leave ``v_mov_b32 v21, 0x7f800000`` before ``v_cndmask_b32 v12, v21, v20,
vcc`` (a constant materialized for one select), ``s_mov_b32 s4, 0x3fb8aa3b`` before one
``v_fma_f32``, copies ``v_mov_b32 v5, v4`` read once. Where the reader can take the
move's source directly, the move goes and the reader names the source: one issue slot
fewer (a VALU one for a vector move).

Exact: the reader gets the same 32 bits. The move is the only definition its reader
sees (the reader is the first instruction after it, in its block, to touch the
destination) and the destination is dead after the reader in every lane (lane-aware
liveness for VGPRs); nothing between writes the source register or EXEC (a vector
move writes the active lanes only, so the reader must run under the same EXEC). The
substitution is textual on an operand that names exactly the destination; a constant
goes only into a 32-bit operand (an inline float constant is sized by its operand:
``1.0`` in an f16 operand is not the f32 bits the move wrote), never behind a source
modifier (``-``, ``|..|``, ``neg_lo``...), never into packed, mixed, DPP or SDWA
forms or conversions; a lane-crossing reader (``v_readfirstlane``, ``v_readlane``,
permutes) is refused, since it reads lanes the move did not write. The new line must
assemble for the target (llvm-mc decides the operand and constant-bus rules; a VOP2
reader is tried as VOP3 too). Hazards are re-padded and the static gate runs.
"""
from __future__ import annotations

import re

from asmevo.edits import Edit
from asmevo.operator import OperatorContext, Rejected, mutation
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.targets.amdgpu.analysis.lanes import cross_lane
from asmevo.operators.rules.common import candidate_windows, positive, seal
from asmevo.operators.rules.structure import Flow, assembles, parts, render

_MOVES = ("v_mov_b32_e32", "v_mov_b32_e64", "s_mov_b32")
_SINGLE = re.compile(r"^(?:v|s)\d+$")
_CONST = re.compile(r"^(?:-?\d+|0x[0-9a-fA-F]+|-?\d+\.\d+)$")
_WIDE_OK = re.compile(r"_(?:f32|u32|i32|b32)(?:_e32|_e64)?$")
_NO_CONST = ("v_pk_", "v_cvt_", "v_dot", "v_mfma", "v_smfmac", "v_fma_mix", "v_mad_mix",
             "v_mov_", "v_readlane", "v_writelane", "v_readfirstlane")
_MODIFIER = re.compile(r"^(?:op_sel|op_sel_hi|neg_lo|neg_hi|abs|neg|dpp|sdwa|sel|dst_sel|"
                       r"src0_sel|src1_sel|row_|quad_perm|bank_mask|row_mask)")


def _source_ok(src: str) -> bool:
    return bool(_SINGLE.match(src) or _CONST.match(src))


def substitute(text: str, dest: str, src: str) -> str | None:
    """``text`` reading ``src`` where it read ``dest`` (module doc), or None."""
    got = parts(text)
    if got is None:
        return None
    m, ops, mods = got
    e = effects(text)
    uses = [k for k in range(e.ndefs, len(ops)) if ops[k].strip() == dest]
    if not uses or any(R.operand_mask(o) & R.operand_mask(dest) for k, o in enumerate(ops)
                       if k not in uses and k >= e.ndefs):
        return None                 # not read as itself alone (a tuple, a modifier)
    if not src.startswith("v"):          # an SGPR or a constant: no lane or half selects
        if e.dpp or e.sdwa or any(_MODIFIER.match(w) for w in mods):
            return None
        if not src.startswith("s") and (m.startswith(_NO_CONST) or not _WIDE_OK.search(m)):
            return None
    new = render(m, [src if k in uses else o for k, o in enumerate(ops)], mods)
    if effects(new).reads & R.operand_mask(dest):
        return None                 # it still reads the register (an accumulator, a d16 load)
    return new


def _candidates(flow: Flow, a: int, b: int):
    """(move index, reader index) pairs in ``[a, b)`` (one block) worth folding."""
    cfg = flow.cfg
    for i in range(a, b):
        e = cfg.effects[i]
        if e.mnemonic not in _MOVES or len(e.operands) != 2 or e.modifiers:
            continue
        dest, src = (o.strip() for o in e.operands)
        if not _SINGLE.match(dest) or not _source_ok(src) or dest == src:
            continue
        dmask, smask = R.operand_mask(dest), R.operand_mask(src)
        for j in range(i + 1, b):
            ej = cfg.effects[j]
            if ej.reads & dmask:
                yield i, j, dest, src
                break
            if ej.writes & (dmask | smask) or (dest.startswith("v") and
                                               ej.writes & R.EXEC_MASK):
                break


def _dead_after(flow: Flow, j: int, dest: str) -> bool:
    dmask = R.operand_mask(dest)
    ej = flow.cfg.effects[j]
    if dest.startswith("s"):
        return not flow.live.after(j) & dmask or bool(ej.kills & dmask)
    if not flow.lanes.after(j) & dmask:
        return True
    return bool(ej.kills & dmask) and not flow.lanes.split_after(j)[1] & dmask


def fold_block(flow: Flow, a: int, b: int, target) -> tuple[list[str], list[str]]:
    """The block ``[a, b)`` with every foldable move folded (new lines, what was folded)."""
    cfg = flow.cfg
    lines = {k: cfg.texts[k] for k in range(a, b)}
    done: list[str] = []
    used: set[int] = set()
    for i, j, dest, src in _candidates(flow, a, b):
        if i in used or j in used or cross_lane(cfg.effects[j]) \
                or cfg.effects[j].unknown or not _dead_after(flow, j, dest):
            continue
        new = _assembling(substitute(lines[j], dest, src), target)
        if new is None:
            continue
        lines[i] = None
        lines[j] = new
        used |= {i, j}
        done.append(f"{cfg.texts[i]} -> #{j}")
    return [t for k, t in sorted(lines.items()) if t is not None], done


def _assembling(text: str | None, target) -> str | None:
    """``text``, or its VOP3 form, when it assembles for ``target``."""
    if text is None:
        return None
    tries = [text]
    m = text.split(" ", 1)[0]
    if m.endswith("_e32"):
        tries.append(m[:-4] + "_e64" + text[len(m):])
    for t in tries:
        if assembles([t], target) is None:
            return t
    return None


@mutation("fold_moves", targets=("amdgpu",))
class FoldMoves:
    """Fold moves into registers read once into their readers, in one hot block."""

    def __init__(self, tries: int = 6, top_windows: int = 8):
        self.tries, self.top_windows = positive(tries=tries, top_windows=top_windows)

    def mutate(self, individual, context: OperatorContext) -> Edit | Rejected:
        program, fn = context.kernel_of(individual)
        flow = Flow(program, fn.name)
        target = program.source.target
        reasons: list[str] = []
        for name, a, b in candidate_windows(context, individual, top=self.top_windows)[
                :self.tries]:
            blk = flow.cfg.blocks[flow.cfg.block_of[a]]
            new, done = fold_block(flow, blk.start, blk.end, target)
            if not done:
                reasons.append(f"[{blk.start}:{blk.end}] no move read once that folds")
                continue
            result = seal(program, name, blk.start, blk.end, new, operator=self.name,
                          note=f"fold {len(done)} move(s): " + "; ".join(done)[:300])
            if isinstance(result, Edit):
                return result
            reasons.append(f"[{blk.start}:{blk.end}] {result}")
        return context.reject("; ".join(reasons[:3]) or "no hot block")
