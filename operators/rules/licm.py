"""``licm``: hoist loop-invariant scalar and vector ALU work into the loop's preheader.

An instruction ``I`` of a natural loop moves to the end of the loop's preheader
(the one block entering the loop, whose only successor is the header) when all
of these hold, checked on the current program:

- ``I`` is pure ALU (no memory, counters, EXEC write, fixed point, lane access
  such as ``v_readlane``), not raw, not PC-relative;
- its block dominates every latch and every exiting block, so that every trip
  through the loop (the first one included) runs ``I`` before anything leaves
  the loop or goes around again;
- nothing in the loop writes what ``I`` reads (``I`` itself included), except
  instructions hoisted with it (a chain of invariant work moves together, in
  its order);
- every register ``I`` writes that is live after it is written by nothing
  else in the loop and is not live into the header (lane-aware liveness, so no
  read of the pre-loop value exists on any lane); a register it writes that is
  dead after it (SCC, a carry) need only be dead into the header;
- a vector ``I`` (VALU): the loop writes no EXEC, so every execution of ``I``
  ran under the EXEC the preheader has; a scalar ``I`` may not read EXEC then;
- the preheader's terminator (if any) reads nothing the hoisted code writes.

Then the hoisted code computes, once, the values ``I`` recomputed identically
on every trip, into registers nothing else in the loop touches: every read sees
the same bits. The rewrite is one proposal of several edits (each loop block
that loses code, and the preheader's tail), hazard-padded and gated together.

Why faster: the loop issues fewer instructions per trip (a VALU op is 4+
cycles of the SIMD for every trip; a quarter-rate one 16).
"""
from __future__ import annotations

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.dominance import Loop, reverse_postorder
from asmevo.operator import OperatorContext, mutation
from asmevo.operators.rules.structure import (PLAIN_SGPRS, Flow, StructuralMutation, first_result,
                                       pure_alu, reaching_writes, seal_edits)

_PC_RELATIVE = ("s_getpc", "s_setpc", "s_swappc")


def must_blocks(flow: Flow, loop: Loop) -> set[int]:
    """Body blocks that dominate every latch and every exiting block: they run on every
    trip, before anything leaves the loop or goes around again."""
    need = set(loop.latches) | set(loop.exiting)
    return {b for b in loop.body if all(flow.dom.dominates(b, x) for x in need)}


_NARROW = ("s_and_saveexec_b64", "v_cmpx_")
_SAVES = ("s_and_saveexec_b64", "s_or_saveexec_b64", "s_andn2_saveexec_b64")


def exec_monotone(flow: Flow, loop: Loop, body: list[int]) -> str | None:
    """None when every EXEC value inside the loop is a subset of the EXEC it was entered
    with: each EXEC write narrows (``s_and_saveexec``, ``v_cmpx``, ``s_and``/``s_andn2``
    of EXEC) or restores a mask saved from EXEC inside the loop (``s_or_b64 exec, exec,
    sX`` / ``s_mov_b64 exec, sX`` where every write of sX that reaches it lies in the loop
    and saves EXEC). Else the first EXEC write that breaks it."""
    cfg = flow.cfg
    for i in body:
        e = cfg.effects[i]
        if not e.writes & R.EXEC_MASK:
            continue
        m, ops = e.mnemonic, [o.strip() for o in e.operands]
        if m.startswith(_NARROW):
            continue
        if m in ("s_and_b64", "s_andn2_b64") and ops[:2] == ["exec", "exec"] or \
                m == "s_and_b64" and len(ops) == 3 and ops[0] == "exec" and ops[2] == "exec":
            continue
        saved = None
        if m == "s_or_b64" and len(ops) == 3 and ops[0] == "exec" and "exec" in ops[1:]:
            saved = ops[2] if ops[1] == "exec" else ops[1]
        elif m == "s_mov_b64" and len(ops) == 2 and ops[0] == "exec":
            saved = ops[1]
        mask = R.operand_mask(saved) if saved else 0
        if not mask or mask & ~PLAIN_SGPRS:
            return f"{cfg.texts[i]!r} may widen EXEC"
        defs, outside = reaching_writes(flow, i, mask, loop.body)
        if outside:
            return f"{cfg.texts[i]!r} restores {saved}, which may hold a mask from before the loop"
        for k in defs:
            ek = cfg.effects[k]
            if not (ek.mnemonic in _SAVES and ek.op_masks[0] == mask or
                    ek.mnemonic == "s_mov_b64" and
                    [o.strip() for o in ek.operands] == [saved, "exec"]):
                return f"{cfg.texts[i]!r} restores {saved}, which {cfg.texts[k]!r} sets"
    return None


def loop_exit_live(flow: Flow, loop: Loop) -> int:
    """Registers live (lane-aware) on some edge leaving the loop."""
    out = 0
    for _, s in loop.exits:
        out |= flow.lanes.block_in(s)
    for b in loop.body:
        if flow.cfg.exits[b]:
            out |= R.ALL
    return out


def invariant_set(flow: Flow, loop: Loop) -> tuple[list[int], str]:
    """Instruction indices that may be hoisted together (in hoisting order), and the
    reason when there are none."""
    cfg = flow.cfg
    body = loop.instructions(cfg)
    fn = flow.fn
    if any(fn.instructions[i].raw or cfg.texts[i].startswith(_PC_RELATIVE) for i in body):
        return [], "the loop holds raw or PC-relative code"
    exec_in_loop = flow.exec_writes(body)
    monotone = exec_monotone(flow, loop, body) if exec_in_loop else None
    must = must_blocks(flow, loop)
    exit_live = loop_exit_live(flow, loop)
    writes = {i: cfg.effects[i].writes for i in body}
    header_in = flow.lanes.block_in(loop.header)
    rpo = {b: k for k, b in enumerate(reverse_postorder(cfg))}
    order = sorted(body, key=lambda i: (rpo.get(cfg.block_of[i], len(rpo)), i))
    chosen: list[int] = []
    why = "no instruction of the loop is invariant"
    changed = True
    while changed:
        changed = False
        for i in order:
            if i in chosen:
                continue
            e = cfg.effects[i]
            if not pure_alu(e):
                continue
            moving = 0
            for k in body:
                if k not in chosen:
                    moving |= writes[k]
            # a vector op's EXEC read is what the monotone-EXEC condition is about
            if e.reads & moving & ~(R.EXEC_MASK if e.is_valu else 0):
                continue
            if e.is_valu and monotone:
                why = f"a vector value would be hoisted under a wider EXEC: {monotone}"
                continue
            if e.reads & R.EXEC_MASK and exec_in_loop and not e.is_valu:
                why = f"{cfg.texts[i]!r} reads EXEC, which the loop writes"
                continue
            others = 0
            for k in body:
                if k != i:
                    others |= writes[k]
            kept = e.writes & flow.lanes.after(i)
            if kept & others:
                why = f"{cfg.texts[i]!r}: its result is also written elsewhere in the loop"
                continue
            if e.writes & header_in:
                why = f"{cfg.texts[i]!r}: its destination is live into the loop header"
                continue
            if kept & exit_live and (cfg.block_of[i] not in must or
                                     (e.is_valu and exec_in_loop)):
                why = (f"{cfg.texts[i]!r}: its result is live after the loop, and the loop "
                       "may leave without running it (or under another EXEC)")
                continue
            chosen.append(i)
            changed = True
    chosen.sort(key=order.index)
    return chosen, why


def hoist_windows(flow: Flow, loop: Loop, chosen: list[int]) -> list | str:
    """The ``(start, end, lines)`` windows that move ``chosen`` into the preheader."""
    cfg = flow.cfg
    pre = cfg.blocks[loop.preheader]
    if pre.end == pre.start:
        return "the preheader holds no instruction to insert after"
    moved = [cfg.texts[i] for i in chosen]
    wrote = 0
    for i in chosen:
        wrote |= cfg.effects[i].writes
    last = pre.end - 1
    tail = cfg.effects[last]
    if tail.is_branch or tail.klass in ("BRANCH", "END"):
        if tail.reads & wrote:
            return f"the preheader's branch {cfg.texts[last]!r} reads what the hoisted code writes"
        pre_lines = moved + [cfg.texts[last]]
    else:
        pre_lines = [cfg.texts[last]] + moved
    windows = [(last, last + 1, pre_lines)]
    gone = set(chosen)
    for b in sorted({cfg.block_of[i] for i in chosen}):
        blk = cfg.blocks[b]
        windows.append((blk.start, blk.end, [cfg.texts[k] for k in range(blk.start, blk.end)
                                             if k not in gone]))
    return windows


def ranked_loops(flow: Flow, context, individual) -> list[Loop]:
    """Loops with a preheader, those holding a hot window first (rng order among them),
    innermost first otherwise."""
    hot = set()
    for name, s, e in context.windows(individual)[:8]:
        if name == flow.fn.name:
            hot.update(flow.cfg.block_of[k] for k in range(s, min(e, flow.cfg.n)))
    loops = [lp for lp in flow.loops if lp.preheader is not None]
    head = [lp for lp in loops if lp.body & hot]
    context.rng.shuffle(head)
    return head + [lp for lp in loops if not lp.body & hot]


@mutation("licm", targets=("amdgpu",))
class Licm(StructuralMutation):
    """Hoist loop-invariant ALU work into the preheader (see the module doc)."""

    def mutate(self, individual, context: OperatorContext):
        program = context.program(individual)
        flow = Flow(program, context.kernel)
        loops = ranked_loops(flow, context, individual)
        if not loops:
            n = len(flow.loops)
            return context.reject(f"{n} loop(s), none with a preheader" if n else "no loop")
        return first_result(context, (self._hoist(program, flow, lp)
                                      for lp in loops[:self.tries]))

    def _hoist(self, program, flow: Flow, loop: Loop):
        label = f"loop {flow.cfg.blocks[loop.header].label or '#' + str(loop.header)}"
        chosen, why = invariant_set(flow, loop)
        if not chosen:
            return label, why
        windows = hoist_windows(flow, loop, chosen)
        if isinstance(windows, str):
            return label, windows
        texts = "; ".join(flow.cfg.texts[i] for i in chosen)
        return label, seal_edits(program, flow.fn.name, windows, operator=self.name,
                                 note=f"hoist {len(chosen)} from {label}: {texts}"[:300])
