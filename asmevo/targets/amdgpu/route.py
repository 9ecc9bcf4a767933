"""Which way a K0's candidates are built: rebuilt from text, or patched into K0's bytes.

Decided once per K0, at recovery (:meth:`asmevo.targets.amdgpu.target.AmdgpuTarget.recover`):
the recovered program is rebuilt unedited and compared with K0 part by part
(:mod:`asmevo.targets.amdgpu.roundtrip`). Candidates are rebuilt (edits may
grow or shrink code) only when the rebuild is identical *from the text*.
Otherwise they are written into K0's bytes in place
(:mod:`asmevo.targets.amdgpu.patch`):

- the rebuild fails, or differs from K0 (a descriptor field no directive sets,
  metadata the printer cannot reproduce): every rebuilt candidate would carry
  that difference;
- some instructions' text does not reassemble to their bytes (gfx950 MXfp4
  kernels: LLVM prints ``v_mfma_scale_*`` without the op_sel bits of their
  ``v_mfma_ld_scale_b32`` half). The rebuild reproduces K0 only by emitting
  them as ``.long`` words, which operators cannot move and whose text an edit
  cannot restate. Patching keeps every K0 instruction's bytes, also when moved,
  so on this route they are plain instructions again.

The route covers every kernel of the object: a rebuild regenerates them all.
"""
from __future__ import annotations

from dataclasses import replace

from asmevo.targets.amdgpu.assemble import BuildError
from asmevo.targets.amdgpu.build import build_program
from asmevo.targets.amdgpu.codeobject import load
from asmevo.targets.amdgpu.descriptor import DescriptorError
from asmevo.targets.amdgpu.elf import CodeObjectError
from asmevo.targets.amdgpu.program import Instruction, Program, Route
from asmevo.targets.amdgpu.roundtrip import Comparison, compare
from asmevo.targets.amdgpu.toolchain import Toolchain


def decide(program: Program, *, tc: Toolchain | None = None,
           cache: bool = True) -> tuple[Route, Comparison | None]:
    """The route for ``program`` (an unedited recovery of K0), and the comparison of
    its rebuild with K0 (None when the rebuild fails)."""
    co = program.source
    try:
        rebuilt = load(build_program(program, cache=cache, tc=tc),
                       path=f"{co.path} (rebuilt)")
    except (BuildError, DescriptorError, CodeObjectError) as exc:
        return Route("patch", f"the rebuild fails: {exc.message}"), None
    cmp = compare(co, rebuilt)
    if not cmp.identical:
        return Route("patch", f"the rebuild differs from K0: {cmp.differences[0]}"), cmp
    lossy = [i for fn in program.functions for i in fn.instructions if _lossy(i)]
    if lossy:
        first = lossy[0]
        return Route("patch", f"{len(lossy)} instructions' text does not reassemble to their "
                     f"bytes (first {first.text!r} at 0x{first.address:x}); the rebuild is "
                     "identical only with them as words", words=len(lossy)), cmp
    words = sum(i.raw for fn in program.functions for i in fn.instructions)
    return Route("rebuild", words=words), cmp


def _lossy(ins: Instruction) -> bool:
    """Kept as words although it has disassembled text (not ``<unknown>`` or a directive)."""
    return ins.raw and ins.address is not None and not ins.text.startswith(("<", "."))


def with_route(program: Program, *, tc: Toolchain | None = None) -> Program:
    """``program`` with its route decided (kept as it is when already decided)."""
    if program.route is not None:
        return program
    return attach(program, decide(program, tc=tc)[0])


def attach(program: Program, route: Route) -> Program:
    """``program`` on ``route``: on the patch route, instructions kept as words only for
    the rebuild are text again."""
    if route.patch:
        program = replace(program, functions=tuple(
            replace(fn, items=tuple(replace(i, raw=False) if isinstance(i, Instruction)
                                    and _lossy(i) else i for i in fn.items))
            for fn in program.functions))
    return replace(program, route=route)
