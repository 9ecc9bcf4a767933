"""The NVIDIA :class:`asmevo.targets.Target`: sm_90 cubins, edited in place.

Its state is the instance's: K0's recovered programs (nvdisasm is not free), the
programs of PTX rebuilds and which cubins came from one. So what an edit list
may do depends on the target object it is applied with, never on what else the
process built before.

A missing nvdisasm or ptxas (:class:`~asmevo.targets.nvidia.tools.ToolMissing`)
is a configuration error: it leaves the stages as the exception it is, so the
command stops once with one line (exit 2) instead of rejecting every candidate.
"""
from __future__ import annotations

from typing import Sequence

from asmevo.edits import Edit
from asmevo.errors import AsmevoError
from asmevo.verdict import Verdict


class NvidiaTarget:
    """sm_90 cubins: load, recover (nvdisasm), edit and build in place, ABI diff."""

    name = "nvidia"
    timing_model = False         # no sm_90 timing model: timing = "measured" on the GPU
    provable = False             # no SASS semantics: verdicts say tested

    def __init__(self):
        self._k0: dict[int, tuple[object, object]] = {}   # id(cubin) -> (cubin, program)
        self._ptx: dict[tuple[str, object], object] = {}  # (K0 sha, options) -> program
        self._from_ptx: set[str] = set()   # cubins made by a PTX rebuild (not a K0 of their own)

    def load(self, data: bytes, *, path: str | None = None):
        from asmevo.targets.nvidia.cubin import load
        return load(data, path=path)

    def recover(self, code_object):
        from asmevo.targets.nvidia.program import recover
        return recover(code_object)

    def apply_edits(self, program, edits: Sequence):
        """Window edits (or Move / Retime) in order; each one passes the legality rules.

        A PTX rebuild edit (:func:`asmevo.targets.nvidia.ptx.ptx_edit`) may come first
        only: it replaces the program with K0's PTX compiled under other ptxas
        options, and the edits after it apply to (and are checked against) that."""
        from asmevo.targets.nvidia.edit import IllegalEdit, apply, apply_edit
        from asmevo.targets.nvidia.ptx import is_ptx_edit
        for n, e in enumerate(edits):
            if isinstance(e, Edit) and is_ptx_edit(e):
                if n or any(k.edited for k in program.kernels) or \
                        program.source.sha256 in self._from_ptx:
                    raise IllegalEdit("a PTX rebuild replaces the whole cubin: it can only be "
                                      "an individual's first edit", kernel=e.function)
                program = self._rebuilt_program(program, e)
            else:
                program = apply_edit(program, e) if isinstance(e, Edit) else apply(program, e)
        return program

    def apply(self, k0, edits: Sequence):
        """The pipeline's apply stage: edits legal step by step, or the verdict."""
        from asmevo.targets.nvidia.edit import IllegalEdit
        from asmevo.targets.nvidia.tools import ToolMissing
        try:
            return self.apply_edits(k0, edits)
        except IllegalEdit as exc:
            return Verdict("unsafe", exc.message)
        except ToolMissing:
            raise
        except AsmevoError as exc:
            return Verdict("invalid", str(exc))

    def build(self, k0, program) -> bytes | Verdict:
        """The pipeline's build stage: the edited words written into K0's bytes, each
        changed word re-disassembled (it must read as its K0 word does)."""
        from asmevo.targets.nvidia.edit import build
        from asmevo.targets.nvidia.tools import ToolMissing
        try:
            return build(program)
        except ToolMissing:
            raise
        except AsmevoError as exc:     # IllegalEdit (re-disassembly differs), ToolError
            return Verdict("build", str(exc))

    def static_gate(self, program, code_object, *, kernel: str | None = None) -> Verdict | None:
        """The legality rules once more, each edited kernel against K0, block by block.

        Labels and terminators never move, so K0's blocks hold and every block's
        permutation is checked on its own (the rules' distances reach the block start,
        and what crosses a block boundary is checked there). ``code_object``: K0's cubin.
        Only programs whose instructions keep their K0 origins can be checked (edited
        through this target); a ready-made cubin has no such proof and relies on the
        differential run alone.
        """
        from asmevo.targets.nvidia.legality import check

        # the cubin the program's instruction origins refer to: K0, or K0 rebuilt from PTX
        k0 = self._recovered(code_object if program.source.data == code_object.data
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

    def code_gate(self, data: bytes, code_object, *, kernel: str | None = None) -> Verdict | None:
        """A cubin built elsewhere carries no K0 origins, so no legality proof: the
        differential run alone judges it (the ABI gate still applies)."""
        return None

    def abi_diff(self, a, b) -> list:
        from asmevo.targets.nvidia.abi import abi_diff
        return abi_diff(a, b)

    def synchronizes(self, program, kernel: str) -> bool:
        return any(i.base == "BAR" for i in program.kernel(kernel).instructions)

    def restrict_buffers(self, code_object, kernel: str, spec) -> frozenset[str]:
        """A cubin records no aliasing facts about its parameters."""
        return frozenset()

    def k0_problems(self, program, kernel: str) -> list[str]:
        """The legality rules judge edits against K0, so K0 has none by construction."""
        return []

    def listing(self, program, function: str) -> list[str]:
        return [i.line for i in program.kernel(function).instructions]

    def describe(self, code_object, program, kernel: str) -> dict:
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

    def _rebuilt_program(self, program, edit):
        """K0's PTX under the edit's ptxas options, recovered (once per target)."""
        from asmevo.targets.nvidia.cubin import load
        from asmevo.targets.nvidia.program import recover
        from asmevo.targets.nvidia.ptx import options_of, rebuilt
        try:
            options = options_of(edit)
        except ValueError as exc:
            from asmevo.targets.nvidia.edit import IllegalEdit
            raise IllegalEdit(str(exc), kernel=edit.function) from exc
        key = (program.source.sha256, options)
        hit = self._ptx.get(key)
        if hit is None:
            data = rebuilt(program.source, options)
            hit = self._ptx[key] = recover(load(data, path=program.source.path))
            if hit.source.sha256 != program.source.sha256:
                self._from_ptx.add(hit.source.sha256)
        return hit

    def _recovered(self, code_object):
        """K0's recovered program, once per cubin object (nvdisasm is not free)."""
        hit = self._k0.get(id(code_object))
        if hit is None or hit[0] is not code_object:
            from asmevo.targets.nvidia.program import recover
            if len(self._k0) > 8:
                self._k0.clear()
            hit = self._k0[id(code_object)] = (code_object, recover(code_object))
        return hit[1]
