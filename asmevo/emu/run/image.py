"""A Program decoded for execution: one flat list of :class:`Decoded` over all of
its functions, labels resolved to indices, addresses mapped back to indices.

Decoding happens once per Program (see :func:`decoded_image`); launches reuse it.
"""
from __future__ import annotations

from dataclasses import dataclass

from asmevo.emu.isa.decode import decode_one
from asmevo.emu.isa.wavemode import needed as wave_modes_needed
from asmevo.emu.run.wavewrap import wrap as with_wave_modes
from asmevo.emu.errors import LaunchError, UnsupportedInstruction
from asmevo.emu.isa.insn import Decoded
from asmevo.memo import Memo
from asmevo.targets.amdgpu.program import Instruction, Label, Program


@dataclass
class FunctionSpan:
    name: str
    start: int          # index of its first instruction in Image.code
    end: int


@dataclass
class Image:
    program: Program
    code: list[Decoded]
    functions: dict[str, FunctionSpan]
    by_address: dict[int, int]
    processor: str

    def entry_index(self, kernel: str) -> int:
        span = self.functions.get(kernel)
        if span is None or span.start == span.end:
            raise LaunchError(f"no code for kernel {kernel!r}; the program has: "
                              f"{', '.join(self.functions)}", kernel=kernel)
        return span.start


def _accum_offset(fn, program, callee_accum_offset: int | None) -> int:
    k = fn.kernel
    if k is not None:
        return k.descriptor.accum_offset
    # a callee runs in its caller's waves: ACCUM_OFFSET is the launching kernel's
    # (Emulator.image_for decodes callees per kernel); without one, the kernels' common
    # offset, and if they disagree -1 makes AGPR operands undecodable rather than wrong
    if callee_accum_offset is not None:
        return callee_accum_offset
    offs = {f.kernel.descriptor.accum_offset for f in program.functions if f.kernel is not None}
    return offs.pop() if len(offs) == 1 else -1


def callees_use_agprs(program: Program) -> bool:
    """Does a non-kernel function name an AGPR? Then where its a[n] live depends on the
    accum_offset of the kernel that launched the wave (see :func:`decoded_image`)."""
    from asmevo.targets.amdgpu.registers import register_ranges
    return any(r.kind == "a" for fn in program.functions if fn.kernel is None
               for i in fn.instructions for r in register_ranges(i.operands))


def build_image(program: Program, callee_accum_offset: int | None = None) -> Image:
    processor = program.source.target.processor
    code: list[Decoded] = []
    spans: dict[str, FunctionSpan] = {}
    pending: list[tuple[int, str, dict[str, int]]] = []
    global_labels: dict[str, int] = {}
    modes = wave_modes_needed(i.text for f in program.functions for i in f.instructions)
    for fn in program.functions:
        start = len(code)
        labels: dict[str, int] = {}
        acc = _accum_offset(fn, program, callee_accum_offset)
        kname = fn.name
        for item in fn.items:
            if isinstance(item, Label):
                labels[item.name] = len(code)
                continue
            assert isinstance(item, Instruction)
            d = decode_one(item.text, index=len(code), address=item.address, kernel=kname,
                           accum_offset=acc, processor=processor)
            if modes:
                d = with_wave_modes(d, modes, accum_offset=acc, processor=processor, kernel=kname)
            if item.raw and d.ctl != "fault":
                pass  # raw means "re-emit as words"; the text still states the semantics
            code.append(d)
            if d.target_label is not None:
                pending.append((len(code) - 1, d.target_label, labels))
        for name, idx in labels.items():
            global_labels.setdefault(name, idx)
        spans[fn.name] = FunctionSpan(fn.name, start, len(code))
    for idx, label, local in pending:
        target = local.get(label, global_labels.get(label))
        d = code[idx]
        if target is None or target >= len(code):
            err = UnsupportedInstruction(d.mnemonic, None, d.address,
                                         f"branch to unknown label {label!r}")
            d.ctl, d.error = "fault", err
            d.fn = _raise(err)
        else:
            d.target = target
    by_address = {d.address: d.index for d in code if d.address is not None}
    return Image(program, code, spans, by_address, processor)


def _rebase_callees(base: Image, callee_accum_offset: int) -> Image:
    """``base`` with the AGPR-naming instructions of non-kernel functions decoded at
    ``callee_accum_offset`` (in ``base`` they may be refused: kernels that disagree on the
    offset); everything else (kernels, branches, labels) is shared."""
    from asmevo.targets.amdgpu.registers import register_ranges
    program = base.program
    code = list(base.code)
    idx = 0
    for fn in program.functions:
        for ins in fn.instructions:
            if fn.kernel is None and any(r.kind == "a" for r in register_ranges(ins.operands)):
                code[idx] = decode_one(ins.text, index=idx, address=ins.address, kernel=fn.name,
                                       accum_offset=callee_accum_offset,
                                       processor=base.processor)
            idx += 1
    return Image(program, code, base.functions, base.by_address, base.processor)


def _raise(err):
    def fn(ctx):
        raise err
    return fn


_CACHE_SIZE = 8
_CACHE: Memo[tuple[Program, Image]] = Memo("emu.image.images", _CACHE_SIZE, evict="lru")


def decoded_image(program: Program, callee_accum_offset: int | None = None) -> Image:
    """The decoded image of ``program``, cached by identity (the cache keeps it alive).

    ACCUM_OFFSET is a property of the wave (the launched kernel's descriptor), so the
    AGPRs a function called from it names sit at that kernel's offset in the unified
    register file: ``callee_accum_offset`` is the one to decode non-kernel functions with.
    """
    key = (id(program), callee_accum_offset)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is program:
        return hit[1]
    if callee_accum_offset is None:
        img = build_image(program)
    else:
        img = _rebase_callees(decoded_image(program), callee_accum_offset)
    _CACHE.put(key, (program, img))
    return img
