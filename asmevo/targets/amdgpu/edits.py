"""Applying :class:`~asmevo.edits.Edit` values to an AMDGPU :class:`Program`.

Edit lines are untrusted: each passes the sanitizer's shape check, and may not
introduce a privileged instruction, before it becomes an :class:`Instruction`
(llvm-mc then rejects anything that does not assemble when the candidate is built).

A generated label line (``.Lae_<hex>:``, :data:`asmevo.edits.GENERATED_LABEL`)
becomes a :class:`Label` at its place. It must be new to the whole program
(labels are names of one assembly file) and unique in the edit, and every branch
an edit line holds must target a label of the edited function, unless the
replaced window held that very branch line already: an edit cannot jump into
another function.
"""
from __future__ import annotations

from dataclasses import replace

from asmevo.edits import Edit, label_of
from asmevo.targets.amdgpu.descriptor import DescriptorError
from asmevo.targets.amdgpu.program import EditError, Instruction, Label, Program
from asmevo.targets.amdgpu.sanitize import check_introduced, check_lines

# descriptor fields an edit may set (the kernel's own resources only):
# register counts, where AGPRs start (gfx90a+; the rebuild keeps it above the VGPRs
# the code uses: see asmevo.targets.amdgpu.assembly.required_blocks), and the static LDS
# a workgroup gets (an operator that changes it proves every LDS access in bounds;
# the rebuild writes the metadata's copy to match)
EDITABLE_DESCRIPTOR = {"granulated_workitem_vgpr_count", "granulated_wavefront_sgpr_count",
                       "accum_offset_field", "group_segment_fixed_size"}


def edit_items(lines) -> list[Instruction | Label]:
    """Checked edit lines as program items: generated label lines become Labels."""
    out: list[Instruction | Label] = []
    for t in lines:
        name = label_of(t)
        out.append(Label(name) if name is not None else Instruction(text=t))
    return out


def _check_labels(program: Program, edit: Edit, items, window) -> None:
    """New labels are fresh and unique; branches stay inside the function."""
    new = [i.name for i in items if isinstance(i, Label)]
    if len(set(new)) != len(new):
        raise EditError("an edit defines one label twice", kernel=edit.function)
    taken = {f.name for f in program.functions}
    for f in program.functions:
        taken.update(f.labels)
    clash = sorted(set(new) & taken)
    if clash:
        raise EditError(f"edit label {clash[0]} already exists in the program",
                        kernel=edit.function)
    own = set(program.function(edit.function).labels) | set(new) | {edit.function}
    kept = {i.text for i in window if i.is_branch}
    for i in items:
        if isinstance(i, Instruction) and i.is_branch and i.text not in kept \
                and i.branch_target not in own:
            raise EditError(f"edit branches to {i.branch_target!r}, which is not a label of "
                            f"{edit.function}", kernel=edit.function)


def apply_edit(program: Program, edit: Edit) -> Program:
    lines = check_lines(list(edit.lines), labels=True)
    window = program.function(edit.function).instructions[edit.start:edit.end]
    check_introduced([t for t in lines if label_of(t) is None], [i.text for i in window])
    items = edit_items(lines)
    _check_labels(program, edit, items, window)
    program = program.replace_window(edit.function, edit.start, edit.end, items)
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
