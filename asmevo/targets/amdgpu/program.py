"""The recovered, editable form of a code object: functions of labels and instructions.

A :class:`Program` is plain data. Every edit produces a new Program; printing
it (:func:`asmevo.targets.amdgpu.assembly.to_asm`) gives one ``.s`` file that
rebuilds the code object. Branch targets are labels, never offsets, so code may
grow or shrink between them.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

from asmevo.targets.amdgpu.errors import Refused
from asmevo.targets.amdgpu.codeobject import CodeObject, Kernel
from asmevo.targets.amdgpu.registers import RegisterUsage, usage


class EditError(Refused):
    """An edit that does not fit the program (window out of range, crosses a label)."""


BRANCH_PREFIXES = ("s_branch", "s_cbranch_")
# Instructions after which control never falls through to the next one.
TERMINATORS = ("s_endpgm", "s_branch", "s_setpc_b64", "s_trap")


@dataclass(frozen=True)
class Instruction:
    """One machine instruction. ``address``/``encoding`` are set for code from K0."""

    text: str
    address: int | None = None
    encoding: bytes | None = None
    raw: bool = False          # print as .long words: the text does not reassemble exactly

    @cached_property
    def mnemonic(self) -> str:
        # cached (an Instruction never changes): the analyses ask it of every line often
        return self.text.split(None, 1)[0] if self.text else ""

    @property
    def operands(self) -> str:
        parts = self.text.split(None, 1)
        return parts[1] if len(parts) > 1 else ""

    @property
    def size(self) -> int | None:
        return len(self.encoding) if self.encoding is not None else None

    @property
    def is_branch(self) -> bool:
        return self.mnemonic.startswith(BRANCH_PREFIXES)

    @property
    def branch_target(self) -> str | None:
        """The label a direct branch jumps to."""
        return self.operands.strip() if self.is_branch else None

    @cached_property
    def ends_block(self) -> bool:
        m = self.mnemonic
        return m.startswith(BRANCH_PREFIXES) or m in TERMINATORS or \
            m.startswith(("s_setpc", "s_swappc"))


@dataclass(frozen=True)
class Label:
    name: str
    address: int | None = None


Item = Instruction | Label


@dataclass(frozen=True)
class BasicBlock:
    """A maximal straight-line run; ``start``/``end`` index :attr:`Function.instructions`."""

    label: str | None
    start: int
    end: int
    successors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Function:
    """The code of one kernel (or other function) in ``.text``."""

    name: str
    items: tuple[Item, ...]
    kernel: Kernel | None
    entry: int                      # address in K0
    symbol_type: str = "function"   # emitted with .type NAME,@function
    edited: bool = False            # set by edits: register counts are then recomputed

    @cached_property
    def instructions(self) -> list[Instruction]:
        """The instructions in order (cached: a Function never changes; treat as read-only)."""
        return [i for i in self.items if isinstance(i, Instruction)]

    @property
    def labels(self) -> list[str]:
        return [i.name for i in self.items if isinstance(i, Label)]

    def register_usage(self) -> RegisterUsage:
        # a raw instruction with disassembled text (kept as words only because the text
        # does not reassemble exactly) still names its registers
        return usage(i.operands for i in self.instructions
                     if not i.raw or not i.text.startswith(("<", ".")))

    def blocks(self) -> list[BasicBlock]:
        """Basic blocks (cached): a label, or the instruction after one that ends a block
        (:attr:`Instruction.ends_block`), starts one. A label with no instruction after it
        is an empty block; a branch's target comes first among the successors, then the
        fall-through. The only place a function is cut into blocks: the control-flow
        graph (:mod:`asmevo.targets.amdgpu.analysis.cfg`) is built over these."""
        cached = self.__dict__.get("_blocks")
        if cached is None:
            cached = self.__dict__["_blocks"] = self._blocks()
        return list(cached)

    def _spans(self) -> list[tuple[str | None, int, int]]:
        """(label, start, end) of each block, in one pass over the items."""
        spans: list[tuple[str | None, int, int]] = []
        label: str | None = None
        start = idx = 0
        prev: Instruction | None = None
        for item in self.items:
            if isinstance(item, Label):
                if idx > start or label is not None:
                    spans.append((label, start, idx))
                label, start, prev = item.name, idx, None
                continue
            if prev is not None and prev.ends_block:
                if idx > start or label is not None:
                    spans.append((label, start, idx))
                label, start = None, idx
            prev = item
            idx += 1
        if idx > start or label is not None:
            spans.append((label, start, idx))
        return spans

    def _blocks(self) -> tuple[BasicBlock, ...]:
        instrs = self.instructions
        spans = self._spans()
        out = []
        for i, (lab, s, e) in enumerate(spans):
            succ: list[str] = []
            last = instrs[e - 1] if e > s else None
            if last is not None and last.is_branch:
                succ.append(last.branch_target or "")
            falls = last is None or not last.ends_block or (
                last.is_branch and last.mnemonic != "s_branch")
            if falls and i + 1 < len(spans):
                nxt = spans[i + 1][0]
                succ.append(nxt if nxt is not None else f"#{i + 1}")
            out.append(BasicBlock(lab, s, e, tuple(succ)))
        return tuple(out)


@dataclass(frozen=True)
class Route:
    """How candidates of a K0 are built (:mod:`asmevo.targets.amdgpu.route` decides).

    ``rebuild``: llvm-mc + ld.lld reproduce K0 exactly, so edits are rebuilt
    (``words`` instructions are re-emitted as ``.long`` words: their text does not
    reassemble to their bytes). ``patch``: the rebuild cannot reproduce K0
    (``reason`` says where), so edits are written into K0's bytes in place.
    """

    kind: str                  # "rebuild" | "patch"
    reason: str = ""
    words: int = 0

    @property
    def patch(self) -> bool:
        return self.kind == "patch"

    def __str__(self) -> str:
        if self.patch:
            return f"patch: {self.reason}"
        return "rebuild" + (f" ({self.words} instructions kept as words: their text does "
                            "not reassemble to their bytes)" if self.words else "")


@dataclass(frozen=True)
class Program:
    """Every function in K0's ``.text``, plus K0 itself for descriptors and metadata."""

    source: CodeObject
    functions: tuple[Function, ...]
    prefix: bytes = b""                  # .text bytes before the first function
    metadata: dict = field(default_factory=dict)
    route: Route | None = None           # None: not decided (plain recover())
    renamed: dict = field(default_factory=dict)   # placeholder -> K0's name (names.py)

    @property
    def kernels(self) -> list[Function]:
        return [f for f in self.functions if f.kernel is not None]

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        self.source.kernel(name)  # raises the uniform unknown-kernel error
        raise AssertionError("unreachable")

    def replace_window(self, name: str, start: int, end: int,
                       new: list[Item]) -> "Program":
        """Replace instructions ``[start, end)`` of function ``name`` (labels stay put);
        ``new`` may hold Labels of its own (generated ones, checked by apply_edit)."""
        fn = self.function(name)
        n = len(fn.instructions)
        if not 0 <= start <= end <= n:
            raise EditError(f"window [{start}, {end}) is outside the function's {n} instructions",
                            kernel=name)
        items: list[Item] = []
        idx = 0
        for item in fn.items:
            if isinstance(item, Instruction):
                if idx == start:
                    items.extend(new)
                if not start <= idx < end:
                    items.append(item)
                idx += 1
            else:
                if start < idx < end:
                    raise EditError(f"window [{start}, {end}) crosses label {item.name}",
                                    kernel=name)
                items.append(item)
        if start == n:
            items.extend(new)
        return self.with_function(replace(fn, items=tuple(items), edited=True))

    def with_function(self, fn: Function) -> "Program":
        return replace(self, functions=tuple(fn if f.name == fn.name else f
                                             for f in self.functions))
