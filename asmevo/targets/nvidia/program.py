"""The recovered, editable form of a cubin: kernels of instructions, blocks and labels.

A :class:`Program` is plain data. An instruction keeps its ``origin`` (its index
in K0) and its current 128-bit word, so an edit is a permutation plus control
field changes, and :func:`asmevo.targets.nvidia.edit.build` writes the words
back in place. Blocks start at labels (branch targets) and after branches and
exits; a *region* is a run inside a block between fences, the span a move may
never leave.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, replace

from asmevo.memo import Memo
from asmevo.targets.nvidia.cubin import WORD_BYTES, Cubin, Kernel
from asmevo.targets.nvidia.operands import Operands, parse
from asmevo.targets.nvidia.sass import Control, disassemble

TERMINATORS = frozenset({"BRA", "BRX", "JMP", "JMX", "EXIT", "RET", "CALL", "KILL", "BPT",
                         "BREAK"})


@dataclass(frozen=True)
class Instruction:
    origin: int            # index in K0
    text: str              # nvdisasm's text in K0 (with .reuse markers)
    word: int              # current 128-bit word
    ops: Operands

    @property
    def control(self) -> Control:
        return Control.decode(self.word)

    @property
    def base(self) -> str:
        return self.ops.base

    @property
    def clean_text(self) -> str:
        """The text with ``.reuse`` markers dropped (they live in the control field)."""
        return self.text.replace(".reuse", "")

    @property
    def line(self) -> str:
        """Printable, replayable form: ``[control] text`` with reuse as now encoded."""
        text = self.text if self.control.reuse else self.clean_text
        return f"{self.control} {text}"

    def with_control(self, control: Control) -> Instruction:
        return replace(self, word=control.encode(self.word))


@dataclass(frozen=True)
class Block:
    start: int           # index of the first instruction
    end: int             # one past the last
    label: str | None


@dataclass(frozen=True)
class KernelCode:
    name: str
    kernel: Kernel
    instructions: tuple[Instruction, ...]
    labels: dict[int, str]       # instruction index -> label (fixed positions)

    @property
    def edited(self) -> bool:
        return any(i.origin != n or i.word != w for n, (i, w)
                   in enumerate(zip(self.instructions, self.kernel.words)))

    def blocks(self) -> list[Block]:
        """Basic blocks; labels and terminators never move, so K0's blocks hold throughout."""
        key = (self.kernel.name, self.kernel.code)
        hit = _BLOCKS.get(key)
        if hit is None:
            hit = _BLOCKS.put(key, self._blocks())
        return hit

    def _blocks(self) -> list[Block]:
        starts = {0} | set(self.labels)
        for n, ins in enumerate(self.instructions):
            if ins.base in TERMINATORS and n + 1 < len(self.instructions):
                starts.add(n + 1)
        edges = sorted(s for s in starts if s < len(self.instructions))
        return [Block(s, e, self.labels.get(s))
                for s, e in zip(edges, edges[1:] + [len(self.instructions)])]

    def block_of(self, index: int) -> Block:
        blocks = self.blocks()
        k = bisect.bisect_right([b.start for b in blocks], index) - 1
        if k < 0 or not blocks[k].start <= index < blocks[k].end:
            raise IndexError(index)
        return blocks[k]

    def region_of(self, index: int) -> tuple[int, int]:
        """``[start, end)``: the fence-free span of the block holding ``index``."""
        b = self.block_of(index)
        lo = index
        while lo > b.start and not self.instructions[lo - 1].ops.fence:
            lo -= 1
        hi = index + 1
        while hi < b.end and not self.instructions[hi].ops.fence:
            hi += 1
        return lo, hi

    def with_instructions(self, instructions) -> KernelCode:
        return replace(self, instructions=tuple(instructions))


_BLOCKS: Memo[list[Block]] = Memo("nvidia.program.blocks", 257)


@dataclass(frozen=True)
class Program:
    source: Cubin
    kernels: tuple[KernelCode, ...]

    def kernel(self, name: str) -> KernelCode:
        for k in self.kernels:
            if k.name == name:
                return k
        self.source.kernel(name)   # the uniform unknown-kernel error
        raise AssertionError("unreachable")

    def with_kernel(self, code: KernelCode) -> Program:
        return replace(self, kernels=tuple(code if k.name == code.name else k
                                           for k in self.kernels))


def recover(cubin: Cubin) -> Program:
    """Disassemble every kernel and pair each word with its parsed text."""
    sass = disassemble(cubin)
    kernels = []
    for k in cubin.kernels:
        ks = sass[k.name]
        ins = tuple(Instruction(n, ln.text, ln.word, parse(ln.text))
                    for n, ln in enumerate(ks.lines))
        labels = {off // WORD_BYTES: name for off, name in ks.labels.items()}
        kernels.append(KernelCode(k.name, k, ins, labels))
    return Program(cubin, tuple(kernels))
