"""From a :class:`CodeObject` to an editable :class:`Program`.

Disassemble ``.text``, split it into functions at kernel entries and function
symbols, turn every branch offset into a label, then prove the listing
reassembles to K0's exact ``.text``: any instruction whose text does not
reproduce its bytes is kept as raw words (and reported by ``roundtrip``).
Symbol names are untrusted: they pass through :class:`~asmevo.targets.amdgpu.names.Namer`
(placeholders for names the assembler cannot take, restored after linking).
"""
from __future__ import annotations

import re
from dataclasses import replace

from asmevo.targets.amdgpu.assembly import to_asm
from asmevo.targets.amdgpu.assemble import BuildError, assemble_object
from asmevo.targets.amdgpu.codeobject import CodeObject
from asmevo.targets.amdgpu.disasm import RawLine, disassemble
from asmevo.targets.amdgpu.elf import CodeObjectError, read_elf
from asmevo.targets.amdgpu.names import Namer
from asmevo.targets.amdgpu.program import BRANCH_PREFIXES, Function, Instruction, Label, Program
from asmevo.targets.amdgpu.sanitize import instruction_shaped
from asmevo.targets.amdgpu.toolchain import Toolchain, find_toolchain


def _branch_target(line: RawLine) -> int:
    simm = int.from_bytes(line.encoding[0:2], "little", signed=True)
    return line.address + 4 + simm * 4


def recover(co: CodeObject, *, tc: Toolchain | None = None, verify: bool = True) -> Program:
    """The Program of every function in ``co``; ``verify`` checks the encodings."""
    tc = tc or find_toolchain(co.target.processor)
    lines = disassemble(tc, co.data, co.target, path=co.path)
    text = co.text
    namer = Namer({s.name for s in co.symbols} | set(co.kernel_names), path=co.path)
    starts: dict[int, tuple[str, object]] = {}
    for k in co.kernels:
        starts[k.entry] = (namer.kernel(k.name), k)
    for s in co.symbols:
        if s.section == ".text" and s.type == "STT_FUNC" and s.name and s.value not in starts:
            starts[s.value] = (namer.local(s.name), None)
    by_addr = {ln.address: ln for ln in lines}
    labels = {addr: namer.local(name) for addr, name in sorted(co.labels.items())}
    for ln in lines:
        if ln.text.split(None, 1)[0].startswith(BRANCH_PREFIXES):
            tgt = _branch_target(ln)
            if tgt not in by_addr:
                raise CodeObjectError(f"branch to 0x{tgt:x} is not an instruction boundary",
                                      path=co.path, address=ln.address)
            if tgt not in labels:   # a function's start is already named by its symbol
                labels[tgt] = starts[tgt][0] if tgt in starts else namer.fresh(f".LBB_{tgt:x}")
    order = sorted(starts)
    if not order:
        raise CodeObjectError("no function symbols in .text", path=co.path)
    prefix = text.data[:order[0] - text.addr]
    functions = []
    for i, start in enumerate(order):
        end = order[i + 1] if i + 1 < len(order) else text.addr + text.size
        name, kernel = starts[start]
        items: list = []
        for ln in lines:
            if not start <= ln.address < end:
                continue
            if ln.address in labels and ln.address != start:
                items.append(Label(labels[ln.address], ln.address))
            items.append(_instruction(ln, labels))
        functions.append(Function(name=name, items=tuple(items), kernel=kernel, entry=start))
    program = Program(source=co, functions=tuple(functions), prefix=prefix,
                      metadata=co.metadata, renamed=namer.renamed)
    return _verify_encodings(program, tc) if verify else program


def _instruction(ln: RawLine, labels: dict[int, str]) -> Instruction:
    """One disassembled line; kept as raw words unless its text is a plain instruction
    (the disassembler's text is K0-derived, so it is printed only if it is shaped like one)."""
    mnemonic = ln.text.split(None, 1)[0] if ln.text else ""
    raw = not ln.text or ln.text.startswith("<unknown>") or ln.text.startswith(".")
    text = ln.text
    if mnemonic.startswith(BRANCH_PREFIXES) and not raw:
        text = f"{mnemonic} {labels[_branch_target(ln)]}"
    raw = raw or not _shaped(text)
    return Instruction(text=text, address=ln.address, encoding=ln.encoding, raw=raw)


_shaped = instruction_shaped     # memoized there: a pure function of the text


def _text_of(obj: bytes) -> bytes:
    img = read_elf(obj)
    return img.sections[".text"].data


def _verify_encodings(program: Program, tc: Toolchain, rounds: int = 3) -> Program:
    """Mark as raw every instruction whose printed text does not give K0's bytes.

    The listing is assembled whole; when its ``.text`` differs from K0's, each
    instruction's reassembled encoding (``llvm-mc -show-encoding``) names the
    ones to keep as words, all in one round (gfx950 MXfp4 kernels have several:
    their ``v_mfma_scale_*`` op_sel bits do not survive the text).
    """
    co = program.source
    want = co.text.data
    for _ in range(rounds):
        try:
            got = _text_of(assemble_object(to_asm(program, text_only=True), co.target, tc))
        except BuildError as exc:
            raise CodeObjectError(f"recovered assembly does not reassemble: {exc.message}",
                                  path=co.path) from exc
        if got == want:
            return program
        bad = _lossy(program, tc) or _first_mismatches(program, got)
        if not bad:
            break
        program = replace(program, functions=tuple(
            replace(fn, items=tuple(replace(i, raw=True) if isinstance(i, Instruction)
                                    and i.address in bad else i for i in fn.items))
            for fn in program.functions))
    return program


_ENCODING = re.compile(r";\s*encoding:\s*\[([^\]]*)\]")


def _lossy(program: Program, tc: Toolchain) -> set[int]:
    """Addresses of the instructions whose text reassembles to other bytes (branch
    offsets, left to the linker, are not compared); empty when the listing cannot
    be matched line for line."""
    co = program.source
    out = tc.run("llvm-mc", ["-triple=amdgcn-amd-amdhsa", *co.target.mc_args(), "-show-encoding"],
                 input=to_asm(program, text_only=True).encode()).stdout.decode(errors="replace")
    encodings = [[None if b.strip().startswith("A") else int(b, 16)
                  for b in m.group(1).split(",") if b.strip()]
                 for m in _ENCODING.finditer(out)]
    printed = [i for fn in program.functions for i in fn.instructions if not i.raw]
    if len(encodings) != len(printed):
        return set()
    return {ins.address for ins, enc in zip(printed, encodings)
            if len(enc) != len(ins.encoding)
            or any(b is not None and b != k for b, k in zip(enc, ins.encoding))}


def _first_mismatches(program: Program, got: bytes) -> set[int]:
    """The first instruction of each function whose bytes differ (everything after a
    size change also moves, so only the first is certain)."""
    base = program.source.text.addr
    bad = set()
    for fn in program.functions:
        for ins in fn.instructions:
            if ins.raw or ins.address is None:
                continue
            off = ins.address - base
            if got[off:off + len(ins.encoding)] != ins.encoding:
                bad.add(ins.address)
                break
    return bad
