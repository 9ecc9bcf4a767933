"""Rebuilding a recovered program into code object bytes.

Above :mod:`~asmevo.targets.amdgpu.assemble` (the tools) and
:mod:`~asmevo.targets.amdgpu.splice` (an edit written into K0's rebuild, which
recovers K0 itself), so recovery, splicing and rebuilding import only downwards.
"""
from __future__ import annotations

from asmevo.targets.amdgpu.assemble import build_asm
from asmevo.targets.amdgpu.assembly import to_asm, with_register_counts
from asmevo.targets.amdgpu.names import restore
from asmevo.targets.amdgpu import splice
from asmevo.targets.amdgpu.toolchain import Toolchain, find_toolchain

def build_program(program, *, cache: bool = True, tc: Toolchain | None = None) -> bytes:
    """Rebuild a :class:`~asmevo.targets.amdgpu.program.Program` into code object bytes.

    Sections are pinned to K0's addresses
    (see :func:`~asmevo.targets.amdgpu.assemble.link`): ``.text``, and ``.rodata``
    (where the printed descriptors go) at the address of the section that holds
    K0's descriptors, whatever K0 named it (no section name from the input
    reaches the linker). The metadata's register counts are raised where
    edited code needs more registers. Symbols printed under a placeholder get
    their K0 names back (:func:`~asmevo.targets.amdgpu.names.restore`). An edit of a
    layout the tools have built (K0's, or an earlier candidate's) is written into
    that build instead, when that is exact (:mod:`asmevo.targets.amdgpu.splice`, which
    learns from each tool build; ``cache=False`` always runs the tools).
    """
    co = program.source
    starts = {".text": co.text.addr}
    kd_names = {f"{k.name}.kd" for k in co.kernels}
    for s in co.symbols:
        if s.name in kd_names and s.section in co.sections:
            starts.setdefault(".rodata", co.sections[s.section].addr)
    asm = to_asm(with_register_counts(program))
    data = None
    edited = cache and any(f.edited for f in program.functions)
    if edited:
        tc = tc or find_toolchain()
        key = (tc.version, co.target.triple_target, tuple(sorted(starts.items())))
        data = splice.spliced(program, asm, lambda text: build_asm(
            text, co.target, section_starts=starts, tc=tc), key)
        if data is None:
            data = build_asm(asm, co.target, section_starts=starts, tc=tc)
            splice.learn(program, asm, data, key)
    if data is None:
        data = build_asm(asm, co.target, section_starts=starts, cache=cache, tc=tc)
    return restore(data, program.renamed)
