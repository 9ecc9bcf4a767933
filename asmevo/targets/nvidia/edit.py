"""Edits applied straight to the cubin bytes: moves, re-timing, replayable window edits.

Every edit is a permutation of one region's words plus control-field changes,
checked by :func:`asmevo.targets.nvidia.legality.check`; :func:`build` writes
the words back over K0's ``.text.<name>`` bytes and rewrites the code offsets
that ``EIATTR_*_INSTR_OFFSETS`` list, keeping every other byte of K0. A no-op
edit reproduces K0 byte for byte.

The printable form is :class:`asmevo.edits.Edit` with ``lines`` such as
``[B------:R-:W2:-:S01] @!P5 LDG.E R6, desc[UR4][R2.64+0x80]``: the window's
instructions in their new order, each with its control field in CuAssembler's
notation. A line matches a window instruction by text (``.reuse`` ignored);
dropping a ``.reuse`` clears that flag, adding one is refused.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from asmevo.memo import Memo
from asmevo.edits import Edit
from asmevo.targets.nvidia.errors import NvidiaError
from asmevo.targets.nvidia import legality
from asmevo.targets.nvidia.cubin import WORD_BYTES
from asmevo.targets.nvidia.program import Instruction, KernelCode, Program
from asmevo.targets.nvidia.sass import Control, disassemble_words, max_stall


class IllegalEdit(NvidiaError):
    """An edit the legality rules refuse, or one that does not fit the program."""


@dataclass(frozen=True)
class Move:
    """Move instruction ``index`` of ``kernel`` to position ``to`` (same region)."""

    kernel: str
    index: int
    to: int
    compensate: bool = True    # add its stall to its old predecessor: nothing else speeds up


@dataclass(frozen=True)
class Retime:
    """Set the stall count and/or yield bit of instruction ``index``."""

    kernel: str
    index: int
    stall: int | None = None
    yield_bit: int | None = None


def _clear_stale_reuse(old: KernelCode, seq: list[Instruction]) -> list[Instruction]:
    """Reuse flags are a hint for the next instruction: drop them where it changed."""
    succ_old = {ins.origin: (old.instructions[k + 1].origin if k + 1 < len(old.instructions)
                             else None) for k, ins in enumerate(old.instructions)}
    out = []
    for k, ins in enumerate(seq):
        nxt = seq[k + 1].origin if k + 1 < len(seq) else None
        if ins.control.reuse and nxt != succ_old[ins.origin] and ins.ops.reuse:
            ins = ins.with_control(ins.control.with_(reuse=0))
        out.append(ins)
    return out


def _checked(old: KernelCode, seq: list[Instruction]) -> KernelCode:
    new = old.with_instructions(seq)
    reasons = legality.check(old, new)
    if reasons:
        raise IllegalEdit("; ".join(reasons[:3]) + (f" (+{len(reasons) - 3} more)"
                                                    if len(reasons) > 3 else ""),
                          kernel=old.name)
    return new


def move(code: KernelCode, index: int, to: int, *, compensate: bool = True) -> KernelCode:
    """``code`` with instruction ``index`` moved to ``to``; IllegalEdit if unsafe."""
    n = len(code.instructions)
    if not (0 <= index < n and 0 <= to < n):
        raise IllegalEdit(f"move {index} -> {to} is outside the kernel's {n} instructions",
                          kernel=code.name)
    seq = list(code.instructions)
    x = seq.pop(index)
    if compensate and index > 0 and index - 1 >= code.block_of(index).start:
        p = index - 1          # the old predecessor keeps the old successor's timing
        c = seq[p].control
        seq[p] = seq[p].with_control(
            c.with_(stall=min(max_stall(c.yield_bit), c.stall + x.control.stall)))
    seq.insert(to, x)
    return _checked(code, _clear_stale_reuse(code, seq))


def retime(code: KernelCode, index: int, *, stall: int | None = None,
           yield_bit: int | None = None) -> KernelCode:
    """``code`` with one instruction's stall count / yield bit changed."""
    if not 0 <= index < len(code.instructions):
        raise IllegalEdit(f"instruction {index} does not exist", kernel=code.name)
    seq = list(code.instructions)
    c = seq[index].control
    try:
        c = c.with_(stall=c.stall if stall is None else stall,
                    yield_bit=c.yield_bit if yield_bit is None else yield_bit)
        seq[index] = seq[index].with_control(c)
    except ValueError as exc:
        raise IllegalEdit(str(exc), kernel=code.name) from exc
    return _checked(code, seq)


def legal_moves(code: KernelCode, index: int, *, max_distance: int = 32,
                compensate: bool = True) -> list[int]:
    """Every position within ``max_distance`` the instruction at ``index`` may move to."""
    ins = code.instructions[index]
    if not ins.ops.movable:
        return []
    lo, hi = code.region_of(index)
    lo, hi = max(lo, index - max_distance), min(hi, index + max_distance + 1)
    guards = legality.guarded(code)
    out = []
    for step, stop in ((-1, lo - 1), (1, hi)):
        k = index + step
        while k != stop:
            other = code.instructions[k]
            first, second = (other, ins) if step < 0 else (ins, other)
            if legality.conflict(first, second, guards):
                break
            try:
                move(code, index, k, compensate=compensate)
                out.append(k)
            except IllegalEdit:
                pass
            k += step
    return sorted(out)


def apply(program: Program, edit: Move | Retime) -> Program:
    code = program.kernel(edit.kernel)
    if isinstance(edit, Move):
        return program.with_kernel(move(code, edit.index, edit.to, compensate=edit.compensate))
    return program.with_kernel(retime(code, edit.index, stall=edit.stall,
                                      yield_bit=edit.yield_bit))


# -- the printable, replayable form ------------------------------------------------
def to_edit(before: Program, after: Program, kernel: str, *, operator: str = "",
            note: str = "") -> Edit:
    """The window edit that turns ``before`` into ``after`` (one kernel)."""
    a, b = before.kernel(kernel).instructions, after.kernel(kernel).instructions
    diff = [k for k in range(len(a)) if a[k].origin != b[k].origin or a[k].word != b[k].word]
    if not diff:
        return Edit(kernel, 0, 0, (), operator=operator, note=note)
    lo, hi = min(diff), max(diff) + 1
    return Edit(kernel, lo, hi, tuple(ins.line for ins in b[lo:hi]), operator=operator,
                note=note)


def apply_edit(program: Program, edit: Edit) -> Program:
    """Apply a window edit whose lines are the window's instructions, reordered/re-timed."""
    code = program.kernel(edit.function)
    ins = code.instructions
    if not 0 <= edit.start <= edit.end <= len(ins):
        raise IllegalEdit(f"window [{edit.start}, {edit.end}) is outside the kernel's "
                          f"{len(ins)} instructions", kernel=code.name)
    window = list(ins[edit.start:edit.end])
    if len(edit.lines) != len(window):
        raise IllegalEdit(f"the window holds {len(window)} instructions, the edit gives "
                          f"{len(edit.lines)} lines: only reordering and re-timing are "
                          "possible in place", kernel=code.name)
    free = list(range(len(window)))
    new = []
    for line in edit.lines:
        ctrl_text, _, text = line.strip().partition("] ")
        text = " ".join(text.strip().rstrip(";").split())
        key = text.replace(".reuse", "")
        match = next((f for f in free if window[f].clean_text == key), None)
        if match is None:
            raise IllegalEdit(f"line {line!r} is not one of the window's instructions",
                              kernel=code.name)
        free.remove(match)
        src = window[match]
        keep_reuse = src.control.reuse if ".reuse" in text else 0
        if ".reuse" in text and text != src.text:
            raise IllegalEdit(f"line {line!r}: .reuse may only be dropped, never added",
                              kernel=code.name)
        try:
            c = Control.parse(ctrl_text + "]", reuse=keep_reuse)
        except ValueError as exc:
            raise IllegalEdit(f"line {line!r}: {exc}", kernel=code.name) from exc
        new.append(src.with_control(c))
    seq = list(ins[:edit.start]) + new + list(ins[edit.end:])
    return program.with_kernel(_checked(code, seq))


# -- bytes --------------------------------------------------------------------------
def build(program: Program, *, verify: bool = True) -> bytes:
    """The cubin bytes of ``program``: K0 with each edited kernel's words written back."""
    data = bytearray(program.source.data)
    for code in program.kernels:
        k = code.kernel
        words = [ins.word for ins in code.instructions]
        if words == list(k.words) and all(i.origin == n for n, i in
                                           enumerate(code.instructions)):
            continue
        blob = b"".join(w.to_bytes(WORD_BYTES, "little") for w in words)
        data[k.file_offset:k.file_offset + len(blob)] = blob
        new_offset = {ins.origin * WORD_BYTES: n * WORD_BYTES
                      for n, ins in enumerate(code.instructions)}
        for _name, positions, values in k.offset_lists:
            remapped = sorted(new_offset[v] for v in values)
            for pos, v in zip(positions, remapped):
                struct.pack_into("<I", data, pos, v)
        if verify:
            _verify_text(code)
    return bytes(data)


# (word, its K0 word) -> True: checked already
_READ_ALIKE: Memo[bool] = Memo("nvidia.edit.read_alike", 65537)


def _alike(ins: Instruction, text: str, want: str) -> bool:
    return text == (want if ins.control.reuse else want.replace(".reuse", ""))


def _verify_text(code: KernelCode) -> None:
    """Re-disassemble the changed words: each must read as its K0 word does (reuse aside).

    Only words whose bits differ from their K0 origin's (a stall, a cleared reuse
    flag) are checked, each (word, K0 word) pair once per process: candidates
    inherit their parents' edits, so most pairs recur. Both lists are
    disassembled raw, word i at the same address, so PC-relative branch targets
    print alike."""
    k0 = code.kernel.words
    todo = [(n, ins) for n, ins in enumerate(code.instructions)
            if ins.word != k0[ins.origin] and (ins.word, k0[ins.origin]) not in _READ_ALIKE]
    if not todo:
        return
    news, olds = [ins.word for _, ins in todo], [k0[ins.origin] for _, ins in todo]
    both = disassemble_words(news + olds)      # one nvdisasm call for the common case
    differ = [j for j in range(len(todo)) if not _alike(todo[j][1], both[j], both[len(todo) + j])]
    if differ:
        # a PC-relative operand prints differently at another address: compare those
        # two at the same address before calling them different
        texts = disassemble_words([news[j] for j in differ])
        wants = disassemble_words([olds[j] for j in differ])
        for j, text, want in zip(differ, texts, wants):
            n, ins = todo[j]
            if not _alike(ins, text, want):
                raise IllegalEdit(f"word at 0x{n * WORD_BYTES:x} disassembles as {text!r}, "
                                  f"expected {want!r}", kernel=code.name)
    for _, ins in todo:
        _READ_ALIKE.put((ins.word, k0[ins.origin]), True)
