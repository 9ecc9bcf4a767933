"""The AMDGPU :class:`asmevo.targets.Target`: gfx90a / gfx942 / gfx950 code objects.

Candidates are rebuilt with llvm-mc + ld.lld, or, for a K0 the rebuild cannot
reproduce byte for byte (route "patch", :mod:`asmevo.targets.amdgpu.route`),
written into K0's own bytes. The methods are the target's stages of the candidate
pipeline (:mod:`asmevo.verify.pipeline`) and what the engine, the dashboard and
``asmevo verify`` ask of a K0; they import their modules lazily, so choosing a
target by name costs nothing.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from asmevo.edits import Edit
from asmevo.verdict import Verdict


class AmdgpuTarget:
    """gfx90a / gfx942 / gfx950 code objects (HSA ABI, GFX9 family)."""

    name = "amdgpu"
    timing_model = True
    provable = True              # translation validation (asmevo.prove)

    def load(self, data: bytes, *, path: str | None = None):
        from asmevo.targets.amdgpu.codeobject import load
        return load(data, path=path)

    def recover(self, code_object):
        """K0's program, with the route its candidates take (rebuild or patch)."""
        from asmevo.targets.amdgpu.recover import recover
        from asmevo.targets.amdgpu.route import with_route
        return with_route(recover(code_object))

    def apply_edits(self, program, edits: Sequence[Edit]):
        """``program`` with ``edits`` applied; an edit that cannot apply raises."""
        from asmevo.targets.amdgpu.edits import apply_edits
        return apply_edits(program, tuple(edits))

    def apply(self, k0, edits: Sequence[Edit]):
        """The pipeline's apply stage: the edited program, or the verdict refusing the edits
        (``unsafe``: the sanitizer; ``invalid``: an edit that does not fit K0)."""
        from asmevo.targets.amdgpu.descriptor import DescriptorError
        from asmevo.targets.amdgpu.errors import Refused
        from asmevo.targets.amdgpu.route import with_route
        try:
            return self.apply_edits(with_route(k0), edits)
        except Refused as exc:          # UnsafeEdit: unsafe; EditError: invalid
            return exc.verdict()
        except DescriptorError as exc:
            return Verdict("invalid", str(exc))

    def build(self, k0, program) -> bytes | Verdict:
        """The pipeline's build stage: llvm-mc + ld.lld, or, on K0's patch route, the
        edits written into K0's bytes."""
        from asmevo.targets.amdgpu.build import build_program
        from asmevo.targets.amdgpu.descriptor import DescriptorError
        from asmevo.targets.amdgpu.errors import Refused
        from asmevo.targets.amdgpu.route import with_route
        k0 = with_route(k0)
        if k0.route.patch:
            return _patched(k0, program)
        try:
            return build_program(program)
        except Refused as exc:          # BuildError: build
            return exc.verdict()
        except DescriptorError as exc:
            return Verdict("build", f"descriptor cannot be reassembled: {exc.message}")

    def static_gate(self, program, code_object, *, kernel: str | None = None) -> Verdict | None:
        """Hazard wait states and waitcnt sufficiency of the kernel and its callees
        (or, without a kernel, every edited function): problems K0 lacks."""
        from asmevo.targets.amdgpu.analysis.gate import k0_program, static_gate
        return static_gate(program, code_object.target, kernel=kernel,
                           k0=k0_program(code_object))

    def code_gate(self, data: bytes, code_object, *, kernel: str | None = None) -> Verdict | None:
        """A ready-built object: the kernel and its callees (every function without a
        kernel) against K0's problems."""
        from asmevo.targets.amdgpu.recover import recover
        program = recover(self.load(data, path="candidate"))     # no route: never rebuilt
        if kernel is None:
            program = replace(program, functions=tuple(replace(f, edited=True)
                                                       for f in program.functions))
        return self.static_gate(program, code_object, kernel=kernel)

    def abi_diff(self, a, b) -> list:
        from asmevo.targets.amdgpu.abi import abi_diff
        return abi_diff(a, b)

    def synchronizes(self, program, kernel: str) -> bool:
        """Whether the kernel (or what it calls) has barriers."""
        from asmevo.targets.amdgpu.analysis.gate import callees
        return any(i.mnemonic == "s_barrier" for name in callees(program, kernel)
                   for i in program.function(name).instructions)

    def restrict_buffers(self, code_object, kernel: str, spec) -> frozenset[str]:
        """Buffers whose metadata argument has ``.is_restrict`` (matched by offset)."""
        from asmevo.targets.amdgpu.kernargs import KernargError, slots
        k = code_object.kernel(kernel)
        raw = k.meta.raw.get(".args", []) if k.meta else []
        offsets = {a.get(".offset") for a in raw if isinstance(a, dict) and a.get(".is_restrict")}
        if not offsets:
            return frozenset()
        try:
            by_offset = {s.offset: s.name for s in slots(k, spec)}
        except KernargError:
            return frozenset()
        return frozenset(by_offset[o] for o in offsets if o in by_offset)

    def k0_problems(self, program, kernel: str) -> list[str]:
        from asmevo.targets.amdgpu.analysis.gate import k0_problems
        return k0_problems(program, kernel=kernel)

    def assembly(self, program) -> str:
        from asmevo.targets.amdgpu.assembly import to_asm, with_register_counts
        return to_asm(with_register_counts(program))

    def listing(self, program, function: str) -> list[str]:
        return [i.text for i in program.function(function).instructions]

    def describe(self, code_object, program, kernel: str) -> dict:
        from asmevo.targets.amdgpu.summary import kernel_summaries
        return kernel_summaries(code_object, program, kernel)[0]


def _patched(k0, program) -> bytes | Verdict:
    """The patch route: K0's bytes with the edits written in, or the verdict against it."""
    from asmevo.targets.amdgpu.patch import PatchError, patch_program
    from asmevo.targets.amdgpu.sanitize import UnsafeEdit

    why = {"route": "patch", "route_reason": k0.route.reason}
    try:
        return patch_program(k0, program)
    except PatchError as exc:
        return exc.verdict("patch route: ", why)
    except UnsafeEdit as exc:     # a new line llvm-mc does not encode
        return Verdict("build", f"patch route: {exc.message}", why)
