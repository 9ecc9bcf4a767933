"""ISA families behind one small Protocol, chosen by name.

The engine only ever talks to a :class:`Target`: load bytes, recover a
program, apply edits, build it back, patch in place, compare ABIs, and turn an
edit list into a candidate's bytes or the verdict that stopped it
(:meth:`Target.candidate`: the family's own static gate included). A second ISA
family adds a module here and one registry entry; nothing above this layer
changes.
"""
from __future__ import annotations

from typing import Any, Protocol

from asmevo.errors import AsmevoError


class Target(Protocol):
    name: str
    devices: tuple[str, ...]     # asmevo.runtime.registry.REGISTRY names that run its code
    timing_model: bool           # whether timing = "modeled" is available

    def load(self, data: bytes, *, path: str | None = None) -> Any: ...
    def recover(self, code_object: Any) -> Any: ...
    def build(self, program: Any) -> bytes: ...
    def patch(self, program: Any, patch: Any) -> bytes: ...
    def abi_diff(self, a: Any, b: Any) -> list: ...
    def apply_edits(self, program: Any, edits) -> Any: ...

    def candidate(self, program: Any, edits, code_object: Any, *,
                  kernel: str | None = None) -> tuple[Any, bytes | None, Any]:
        """``(program, bytes, None)`` for a candidate that builds and passes the
        family's static gate, else ``(program or None, None, Verdict)``."""
        ...

    def static_gate(self, program: Any, code_object: Any, *, kernel: str | None = None) -> Any:
        """A Verdict when ``program`` (edited functions marked) is provably unsafe in a
        way K0 (``code_object``) is not; ``kernel`` names the kernel under search."""
        ...

    def code_gate(self, data: bytes, code_object: Any, *, kernel: str | None = None) -> Any:
        """The static gate of a ready-built object (``asmevo verify``), K0 being ``code_object``."""
        ...

    def synchronizes(self, program: Any, kernel: str) -> bool:
        """Whether the kernel (or what it calls) has barriers (race-exposing variants
        are worth running)."""
        ...

    def k0_problems(self, program: Any, kernel: str) -> list[str]:
        """What the static checks report in K0 itself (candidates are not refused for it)."""
        ...

    def assembly(self, program: Any) -> str:
        """The program as text (stored beside each accepted candidate)."""
        ...

    def listing(self, program: Any, function: str) -> list[str]:
        """One line per instruction of ``function``, indexed as windows and edits index it."""
        ...

    def describe(self, code_object: Any, program: Any, kernel: str) -> dict:
        """The kernel's ABI and resources as plain JSON-ready values (inspect, dashboard)."""
        ...


class AmdgpuTarget:
    """gfx90a / gfx942 / gfx950 code objects, rebuilt with llvm-mc + ld.lld (or, when
    that cannot reproduce K0, patched in place)."""

    name = "amdgpu"
    devices = ("emulator", "hip")
    timing_model = True

    def load(self, data, *, path=None):
        from asmevo.targets.amdgpu.codeobject import load
        return load(data, path=path)

    def recover(self, code_object):
        """K0's program, with the route its candidates take (rebuild or patch)."""
        from asmevo.targets.amdgpu.recover import recover
        from asmevo.targets.amdgpu.route import with_route
        return with_route(recover(code_object))

    def build(self, program) -> bytes:
        from asmevo.targets.amdgpu.build import build_program
        return build_program(program)

    def patch(self, program, patch) -> bytes:
        from asmevo.targets.amdgpu.patch import patch as apply
        return apply(program, patch)

    def abi_diff(self, a, b) -> list:
        from asmevo.targets.amdgpu.abi import abi_diff
        return abi_diff(a, b)

    def apply_edits(self, program, edits):
        from asmevo.targets.amdgpu.edits import apply_edits
        return apply_edits(program, tuple(edits))

    def candidate(self, program, edits, code_object, *, kernel=None):
        """Edits, then hazard/waitcnt gate, then llm-mc + ld.lld, or, for a K0 the
        rebuild cannot reproduce (route "patch"), the edits written into K0's bytes."""
        from asmevo.targets.amdgpu.assemble import BuildError
        from asmevo.targets.amdgpu.build import build_program
        from asmevo.targets.amdgpu.descriptor import DescriptorError
        from asmevo.targets.amdgpu.program import EditError
        from asmevo.targets.amdgpu.route import with_route
        from asmevo.targets.amdgpu.sanitize import UnsafeEdit
        from asmevo.verdict import Verdict

        k0 = with_route(program)
        try:
            program = self.apply_edits(k0, edits)
        except UnsafeEdit as exc:
            return None, None, Verdict("unsafe", exc.message)
        except (EditError, DescriptorError) as exc:
            return None, None, Verdict("invalid", str(exc))
        gate = self.static_gate(program, code_object, kernel=kernel)
        if gate is not None:
            return program, None, gate
        if k0.route.patch:
            return (program, *self._patched(k0, program))
        try:
            data = build_program(program)
        except BuildError as exc:
            return program, None, Verdict("build", exc.message)
        except DescriptorError as exc:
            return program, None, Verdict("build",
                                          f"descriptor cannot be reassembled: {exc.message}")
        return program, data, None

    def _patched(self, k0, program):
        """(bytes, None) or (None, Verdict) for the patch route."""
        from asmevo.targets.amdgpu.patch import PatchError, patch_program
        from asmevo.targets.amdgpu.sanitize import UnsafeEdit
        from asmevo.verdict import Verdict

        why = {"route": "patch", "route_reason": k0.route.reason}
        try:
            return patch_program(k0, program), None
        except PatchError as exc:
            return None, Verdict("invalid", f"patch route: {exc}", why)
        except UnsafeEdit as exc:     # a new line llvm-mc does not encode
            return None, Verdict("build", f"patch route: {exc.message}", why)

    def static_gate(self, program, code_object, *, kernel=None):
        """Hazard wait states and waitcnt sufficiency of the kernel and its callees
        (or, without a kernel, every edited function): problems K0 lacks."""
        from asmevo.targets.amdgpu.analysis.gate import k0_program, static_gate
        return static_gate(program, code_object.target, kernel=kernel,
                           k0=k0_program(code_object))

    def code_gate(self, data, code_object, *, kernel=None):
        """A ready-built object: the kernel and its callees (every function without a
        kernel) against K0's problems."""
        from dataclasses import replace
        from asmevo.targets.amdgpu.recover import recover
        program = recover(self.load(data, path="candidate"))     # no route: never rebuilt
        if kernel is None:
            program = replace(program, functions=tuple(replace(f, edited=True)
                                                       for f in program.functions))
        return self.static_gate(program, code_object, kernel=kernel)

    def synchronizes(self, program, kernel) -> bool:
        from asmevo.targets.amdgpu.analysis.gate import callees
        return any(i.mnemonic == "s_barrier" for name in callees(program, kernel)
                   for i in program.function(name).instructions)

    def k0_problems(self, program, kernel) -> list[str]:
        from asmevo.targets.amdgpu.analysis.gate import k0_problems
        return k0_problems(program, kernel=kernel)

    def assembly(self, program) -> str:
        from asmevo.targets.amdgpu.assembly import to_asm, with_register_counts
        return to_asm(with_register_counts(program))

    def listing(self, program, function) -> list[str]:
        return [i.text for i in program.function(function).instructions]

    def describe(self, code_object, program, kernel) -> dict:
        from asmevo.targets.amdgpu.summary import kernel_summaries
        return kernel_summaries(code_object, program, kernel)[0]


from asmevo.targets.nvidia import NvidiaTarget  # noqa: E402  (its methods import lazily)

REGISTRY: dict[str, type] = {"amdgpu": AmdgpuTarget, "nvidia": NvidiaTarget}


def get_target(name: str) -> Target:
    try:
        return REGISTRY[name]()
    except KeyError:
        raise AsmevoError(f"unknown target {name!r}; known: {', '.join(REGISTRY)}") from None
