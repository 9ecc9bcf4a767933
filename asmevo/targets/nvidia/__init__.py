"""NVIDIA sm_90 cubins, edited in place at the SASS level.

No public assembler exists for SASS, so this target never re-encodes an
instruction: it permutes K0's 128-bit words inside a region and changes their
control fields (stall, yield, reuse), after :mod:`legality` proves the result
equivalent; or it recompiles the kernel's PTX with other ptxas options
(:mod:`ptx`). ``NvidiaTarget`` is the :class:`asmevo.targets.Target` for "nvidia".
"""
from __future__ import annotations


class NvidiaTarget:
    """sm_90 cubins: load, recover (nvdisasm), build/patch in place, ABI diff."""

    name = "nvidia"
    devices = ("cuda",)
    timing_model = False         # no sm_90 timing model: timing = "measured" on the GPU

    def load(self, data, *, path=None):
        from asmevo.targets.nvidia.cubin import load
        return load(data, path=path)

    def recover(self, code_object):
        from asmevo.targets.nvidia.program import recover
        return recover(code_object)

    def build(self, program) -> bytes:
        from asmevo.targets.nvidia.edit import build
        return build(program)

    def patch(self, program, patch) -> bytes:
        """``patch``: an :class:`asmevo.edits.Edit` (window lines) or a Move / Retime."""
        from asmevo.edits import Edit
        from asmevo.targets.nvidia.edit import apply, apply_edit, build
        new = apply_edit(program, patch) if isinstance(patch, Edit) else apply(program, patch)
        return build(new)

    def abi_diff(self, a, b) -> list:
        from asmevo.targets.nvidia.abi import abi_diff
        return abi_diff(a, b)

    def apply_edits(self, program, edits):
        """Window edits (or Move / Retime) in order; each one passes the legality rules.

        A PTX rebuild edit (:func:`asmevo.targets.nvidia.ptx.ptx_edit`) may come first
        only: it replaces the program with K0's PTX compiled under other ptxas
        options, and the edits after it apply to (and are checked against) that."""
        from asmevo.edits import Edit
        from asmevo.targets.nvidia.edit import IllegalEdit, apply, apply_edit
        from asmevo.targets.nvidia.ptx import is_ptx_edit
        for n, e in enumerate(edits):
            if isinstance(e, Edit) and is_ptx_edit(e):
                if n or any(k.edited for k in program.kernels) or \
                        program.source.sha256 in _FROM_PTX:
                    raise IllegalEdit("a PTX rebuild replaces the whole cubin: it can only be "
                                      "an individual's first edit", kernel=e.function)
                program = _rebuilt_program(program, e)
            else:
                program = apply_edit(program, e) if isinstance(e, Edit) else apply(program, e)
        return program

    def candidate(self, program, edits, code_object, *, kernel=None):
        """Edits (legal step by step), the legality gate against K0, then the in-place build."""
        from asmevo.errors import AsmevoError
        from asmevo.targets.nvidia.edit import IllegalEdit, build
        from asmevo.verdict import Verdict

        try:
            program = self.apply_edits(program, edits)
        except IllegalEdit as exc:
            return None, None, Verdict("unsafe", exc.message)
        except AsmevoError as exc:
            return None, None, Verdict("invalid", str(exc))
        gate = self.static_gate(program, code_object)
        if gate is not None:
            return program, None, gate
        try:
            data = build(program)
        except AsmevoError as exc:     # IllegalEdit (re-disassembly differs), ToolError
            return program, None, Verdict("build", str(exc))
        return program, data, None

    def static_gate(self, program, code_object, *, kernel=None):
        """The legality rules once more, each edited kernel against K0, block by block.

        Labels and terminators never move, so K0's blocks hold and every block's
        permutation is checked on its own (the rules' distances reach the block start,
        and what crosses a block boundary is checked there). ``code_object``: K0's cubin.
        Only programs whose instructions keep their K0 origins can be checked (edited
        through this target); a ready-made cubin has no such proof and relies on the
        differential run alone.
        """
        from asmevo.targets.nvidia.legality import check
        from asmevo.verdict import Verdict

        # the cubin the program's instruction origins refer to: K0, or K0 rebuilt from PTX
        k0 = _recovered(code_object if program.source.data == code_object.data
                        else program.source)
        for code in program.kernels:
            if not code.edited:
                continue
            base = k0.kernel(code.name)
            for blk in base.blocks():
                a = base.instructions[blk.start:blk.end]
                b = code.instructions[blk.start:blk.end]
                if a == b:
                    continue
                seq = base.instructions[:blk.start] + b + base.instructions[blk.end:]
                reasons = check(base, base.with_instructions(seq))
                if reasons:
                    return Verdict("unsafe", f"{code.name}: {reasons[0]}",
                                   {"reasons": reasons[:8], "block": [blk.start, blk.end]})
        return None

    def code_gate(self, data, code_object, *, kernel=None):
        """A cubin built elsewhere carries no K0 origins, so no legality proof: the
        differential run alone judges it (the ABI gate still applies)."""
        return None

    def synchronizes(self, program, kernel) -> bool:
        return any(i.base == "BAR" for i in program.kernel(kernel).instructions)

    def k0_problems(self, program, kernel) -> list[str]:
        """The legality rules judge edits against K0, so K0 has none by construction."""
        return []

    def listing(self, program, function) -> list[str]:
        return [i.line for i in program.kernel(function).instructions]

    def describe(self, code_object, program, kernel) -> dict:
        k = code_object.kernel(kernel)
        return {"name": k.name, "target": f"sm_{code_object.sm}", "registers": k.regcount,
                "shared_bytes": k.shared_size, "frame_bytes": k.frame_size,
                "param_bytes": k.param_size, "max_threads": k.max_threads,
                "params": [{"ordinal": p.ordinal, "offset": p.offset, "size": p.size}
                           for p in k.params],
                "instructions": len(program.kernel(kernel).instructions),
                "code_bytes": len(k.code)}

    def assembly(self, program) -> str:
        """Every kernel's SASS in the replayable ``[control] text`` form."""
        out = []
        for code in program.kernels:
            out.append(f"// {code.name}")
            out += [f"{ins.line}   // K0 #{ins.origin}" for ins in code.instructions]
        return "\n".join(out) + "\n"


_K0: dict[int, object] = {}
_PTX: dict[tuple[str, object], object] = {}
_FROM_PTX: set[str] = set()      # cubins made by a PTX rebuild (not a K0 of their own)


def _rebuilt_program(program, edit):
    """K0's PTX under the edit's ptxas options, recovered (cached per process)."""
    from asmevo.targets.nvidia.cubin import load
    from asmevo.targets.nvidia.program import recover
    from asmevo.targets.nvidia.ptx import options_of, rebuilt
    try:
        options = options_of(edit)
    except ValueError as exc:
        from asmevo.targets.nvidia.edit import IllegalEdit
        raise IllegalEdit(str(exc), kernel=edit.function) from exc
    key = (program.source.sha256, options)
    hit = _PTX.get(key)
    if hit is None:
        data = rebuilt(program.source, options)
        hit = _PTX[key] = recover(load(data, path=program.source.path))
        if hit.source.sha256 != program.source.sha256:
            _FROM_PTX.add(hit.source.sha256)
    return hit


def _recovered(code_object):
    """K0's recovered program, once per cubin object (nvdisasm is not free)."""
    hit = _K0.get(id(code_object))
    if hit is None or hit[0] is not code_object:
        from asmevo.targets.nvidia.program import recover
        if len(_K0) > 8:
            _K0.clear()
        hit = _K0[id(code_object)] = (code_object, recover(code_object))
    return hit[1]
