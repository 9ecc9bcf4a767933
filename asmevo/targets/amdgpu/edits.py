"""Applying :class:`~asmevo.edits.Edit` values to an AMDGPU :class:`Program`.

Edit lines are untrusted: each passes the sanitizer's shape check, and may not
introduce a privileged instruction, before it becomes an :class:`Instruction`
(llvm-mc then rejects anything that does not assemble when the candidate is built).
"""
from __future__ import annotations

from dataclasses import replace

from asmevo.edits import Edit
from asmevo.targets.amdgpu.descriptor import DescriptorError
from asmevo.targets.amdgpu.program import Instruction, Program
from asmevo.targets.amdgpu.sanitize import check_introduced, check_lines

# descriptor fields an edit may set (register allocation only)
# register counts, and where AGPRs start (gfx90a+; the rebuild keeps it above the VGPRs
# the code uses: see asmevo.targets.amdgpu.assembly.required_blocks)
EDITABLE_DESCRIPTOR = {"granulated_workitem_vgpr_count", "granulated_wavefront_sgpr_count",
                       "accum_offset_field"}


def apply_edit(program: Program, edit: Edit) -> Program:
    lines = check_lines(list(edit.lines))
    window = program.function(edit.function).instructions[edit.start:edit.end]
    check_introduced(lines, [i.text for i in window])
    program = program.replace_window(edit.function, edit.start, edit.end,
                                     [Instruction(text=t) for t in lines])
    if edit.descriptor:
        fn = program.function(edit.function)
        if fn.kernel is None:
            raise DescriptorError("descriptor change on a function that is not a kernel",
                                  kernel=edit.function)
        bad = [k for k, _ in edit.descriptor if k not in EDITABLE_DESCRIPTOR]
        if bad:
            raise DescriptorError(f"edits may not change descriptor fields {bad}",
                                  kernel=edit.function)
        kd = replace(fn.kernel.descriptor, **dict(edit.descriptor))
        program = program.with_function(replace(fn, kernel=replace(fn.kernel, descriptor=kd)))
    return program


def apply_edits(program: Program, edits) -> Program:
    """``program`` with every edit applied in order."""
    for e in edits:
        program = apply_edit(program, e)
    return program
