"""``kernarg_hoist``: issue a guarded block's kernel-argument loads in the entry block.

A first HIP port of an elementwise kernel compiles to two scalar-memory round trips
before its one global load: the entry block loads what the bounds check needs
(``n``, the block size), waits, narrows EXEC and branches; the guarded block then
loads the buffer pointers from the kernarg segment and waits *again* before it can
form the address. An ISA expert issues every kernel-argument load at once, so that
one wait covers them all. This operator moves the scalar loads of one block
(``s_load_dword{,x2,x4,x8,x16}`` from the kernarg segment pointer at an immediate
offset) into the entry block, just before its first ``s_waitcnt ... lgkmcnt(0)``,
into SGPRs no instruction of the kernel uses, and puts ``s_mov`` copies of them where
the loads were. The guarded block's own ``lgkmcnt(0)`` wait is deleted when nothing
that counts on LGKM can be outstanding there any more.

Exact by construction, each condition checked on the current program:

- the kernarg segment is read-only for the whole dispatch (HSA: kernarg memory is
  set up before the dispatch and constant during it; AMDGPUUsage, "Kernarg
  Segment"), so a load issued earlier returns the same bits;
- the base is the hardware-initialized kernarg pointer (its user-SGPR slot from the
  kernel descriptor) and nothing writes it on any path from the entry to the load
  (``reaching_writes``), so the address is the same;
- offset + width <= the descriptor's kernarg size: the earlier load, which now also
  runs on paths that skipped the block (EXEC all off, a loop not entered), reads
  only what the launch provides;
- the destinations are SGPRs no instruction of the kernel reads or writes (and not
  the kernarg pointer), aligned as SMEM requires, within the allocation that keeps
  the occupancy; the entry block has no predecessor and its ``lgkmcnt(0)`` wait
  comes after the inserted loads, so the copies (in a block the entry dominates,
  after that wait on every path) read the loaded values;
- between the original load and its block's next ``lgkmcnt(0)`` wait nothing reads
  or writes the load's destination (the original's value there would be a race:
  refused rather than defined);
- the block's wait is deleted only when it is a plain ``s_waitcnt lgkmcnt(0)`` and
  no LGKM-counting instruction lies on any path from the entry's wait to it.

Why faster (modeled and on hardware): one scalar-cache round trip (50-200 cycles)
fewer on every wave's critical path before its first global load; for latency-bound
one-thread-per-element kernels with many waves per CU that shortens each wave.
"""
from __future__ import annotations

import re

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.operator import OperatorContext, mutation
from asmevo.operators.rules.loops import SGPR_SOFT_LIMIT
from asmevo.operators.rules.registers import allocation_limit
from asmevo.operators.rules.structure import Flow, StructuralMutation, between, first_result, \
    reaching_writes, seal_edits

_WIDTH = {"s_load_dword": 4, "s_load_dwordx2": 8, "s_load_dwordx4": 16,
          "s_load_dwordx8": 32, "s_load_dwordx16": 64}
_INT = re.compile(r"(?:0x[0-9a-fA-F]+|\d+)\Z")
_LGKM0 = re.compile(r"\blgkmcnt\(0\)")


def kernarg_pointer(kernel) -> int | None:
    """The first SGPR of the kernarg segment pointer (user SGPRs in their fixed order:
    private segment buffer 4, dispatch ptr 2, queue ptr 2, kernarg ptr 2), or None."""
    d = kernel.descriptor
    if not d.enable_sgpr_kernarg_segment_ptr:
        return None
    return (4 * d.enable_sgpr_private_segment_buffer + 2 * d.enable_sgpr_dispatch_ptr
            + 2 * d.enable_sgpr_queue_ptr)


def _entry_wait(flow: Flow) -> int | str:
    """Index of the entry block's first ``lgkmcnt(0)`` wait, or why there is none usable."""
    cfg = flow.cfg
    if cfg.preds[0]:
        return "the entry block has a predecessor (a loop back to it)"
    b = cfg.blocks[0]
    for k in range(b.start, b.end):
        t = cfg.texts[k]
        if t.startswith("s_waitcnt") and _LGKM0.search(t):
            return k
        if t.startswith("s_waitcnt") and "lgkmcnt" in t:
            return f"the entry block's first LGKM wait {t!r} is not lgkmcnt(0)"
    return "the entry block has no s_waitcnt lgkmcnt(0)"


def _kernarg_loads(flow: Flow, ptr: int, size: int, block: int) -> tuple[list[int], str]:
    """Loads of ``block`` that may be hoisted, and the reason for the first one not."""
    cfg = flow.cfg
    b = cfg.blocks[block]
    base = f"s[{ptr}:{ptr + 1}]"
    out, why = [], "no scalar load from the kernarg pointer"
    for i in range(b.start, b.end):
        e = cfg.effects[i]
        if e.mnemonic not in _WIDTH:
            continue
        ops = [o.strip() for o in e.operands]
        if len(ops) != 3 or ops[1] != base or e.modifiers:
            why = f"{cfg.texts[i]!r}: not a plain load from the kernarg pointer {base}"
            continue
        if not _INT.match(ops[2]):
            why = f"{cfg.texts[i]!r}: offset is not an immediate"
            continue
        if int(ops[2], 0) + _WIDTH[e.mnemonic] > size:
            why = f"{cfg.texts[i]!r}: reads past the kernarg segment ({size} bytes)"
            continue
        found, _ = reaching_writes(flow, i, R.operand_mask(base))
        if found:
            why = f"{cfg.texts[i]!r}: {base} is written before it"
            continue
        race = _race(flow, i, e.writes)
        if race:
            why = race
            continue
        out.append(i)
    return out, why


def _race(flow: Flow, i: int, dest: int) -> str | None:
    """Why the copies at ``i`` would differ from the load: something touches its
    destination before the block's next lgkmcnt(0) wait, or there is no such wait."""
    cfg = flow.cfg
    end = cfg.blocks[cfg.block_of[i]].end
    for k in range(i + 1, end):
        t = cfg.texts[k]
        if t.startswith("s_waitcnt") and _LGKM0.search(t):
            return None
        if (cfg.effects[k].reads | cfg.effects[k].writes) & dest:
            return f"{t!r} touches {cfg.texts[i]!r}'s destination before its wait"
    return f"{cfg.texts[i]!r}: no lgkmcnt(0) wait after it in its block"


def _free_sgprs(flow: Flow, program, ptr: int) -> set[int]:
    used = R.operand_mask(f"s[{ptr}:{ptr + 1}]")
    for e in flow.cfg.effects:
        used |= e.reads | e.writes
    limit = max(allocation_limit(flow.fn, program, "s"), SGPR_SOFT_LIMIT)
    return {r for r in range(limit) if not used >> (R.SGPR_BASE + r) & 1}


def _take(free: set[int], n: int, align: int) -> int | None:
    for s in range(0, 102 - n + 1, align):
        if all(r in free for r in range(s, s + n)):
            free.difference_update(range(s, s + n))
            return s
    return None


def _copies(dst: str, first: int, n: int) -> list[str]:
    """``s_mov`` lines copying s[first:first+n) into ``dst`` (its first register even
    for 64-bit moves, as the original SMEM destination is aligned)."""
    m = re.match(r"s(?:\[(\d+)(?::\d+)?\]|(\d+))\Z", dst)
    d = int(m.group(1) or m.group(2))
    lines, k = [], 0
    while k < n:
        if n - k >= 2 and (d + k) % 2 == 0:
            lines.append(f"s_mov_b64 s[{d + k}:{d + k + 1}], s[{first + k}:{first + k + 1}]")
            k += 2
        else:
            lines.append(f"s_mov_b32 s{d + k}, s{first + k}")
            k += 1
    return lines


def _redundant_wait(flow: Flow, w0: int, block: int, gone: set[int]) -> int | None:
    """The block's first plain ``s_waitcnt lgkmcnt(0)`` when nothing counting on LGKM but
    the hoisted loads lies on a path from the entry's wait ``w0`` to it."""
    cfg = flow.cfg
    b = cfg.blocks[block]
    w = next((k for k in range(b.start, b.end) if cfg.texts[k] == "s_waitcnt lgkmcnt(0)"), None)
    if w is None:
        return None
    for k in between(flow, w0, w):
        if k not in gone and "lgkm" in cfg.effects[k].counters:
            return None
    return w


@mutation("kernarg_hoist", targets=("amdgpu",))
class KernargHoist(StructuralMutation):
    """Issue one block's kernarg loads with the entry block's (see the module doc)."""

    def mutate(self, individual, context: OperatorContext):
        program = context.program(individual)
        flow = Flow(program, context.kernel)
        kernel = flow.fn.kernel
        if kernel is None:
            return context.reject("not a kernel entry (no descriptor)")
        ptr = kernarg_pointer(kernel)
        if ptr is None:
            return context.reject("the kernel has no kernarg segment pointer")
        w0 = _entry_wait(flow)
        if isinstance(w0, str):
            return context.reject(w0)
        cfg = flow.cfg
        blocks = [b for b in range(1, len(cfg.blocks)) if cfg.reachable[b]]
        context.rng.shuffle(blocks)
        return first_result(context, ((f"block {b}", self._hoist(program, flow, ptr, w0, b))
                                      for b in blocks[:max(self.tries, 16)]))

    def _hoist(self, program, flow: Flow, ptr: int, w0: int, block: int):
        loads, why = _kernarg_loads(flow, ptr, flow.fn.kernel.kernarg_size, block)
        if not loads:
            return why
        cfg = flow.cfg
        free = _free_sgprs(flow, program, ptr)
        hoisted, windows = [], []
        for i in loads:
            e = cfg.effects[i]
            n = _WIDTH[e.mnemonic] // 4
            first = _take(free, n, min(n, 4))
            if first is None:
                return f"no {n} free aligned SGPR(s) for {cfg.texts[i]!r}"
            dst = e.operands[0].strip()
            fresh = f"s{first}" if n == 1 else f"s[{first}:{first + n - 1}]"
            hoisted.append(f"{e.mnemonic} {fresh}, {e.operands[1].strip()}, "
                           f"{e.operands[2].strip()}")
            windows.append((i, i + 1, _copies(dst, first, n)))
        w = _redundant_wait(flow, w0, block, set(loads))
        if w is not None:
            windows.append((w, w + 1, []))
        windows.append((w0, w0 + 1, hoisted + [cfg.texts[w0]]))
        note = (f"hoist {len(loads)} kernarg load(s) of block {block} to the entry"
                f"{', its wait deleted' if w is not None else ''}: "
                + "; ".join(cfg.texts[i] for i in loads))
        return seal_edits(program, flow.fn.name, windows, operator=self.name, note=note[:300])
