"""ISA families behind one small Protocol, chosen by name.

The engine only ever talks to a :class:`Target`: load bytes, recover a
program, build it back, patch in place, compare ABIs. A second ISA family adds
a module here and one registry entry; nothing above this layer changes.
"""
from __future__ import annotations

from typing import Any, Protocol

from asmevo.errors import AsmevoError


class Target(Protocol):
    name: str

    def load(self, data: bytes, *, path: str | None = None) -> Any: ...
    def recover(self, code_object: Any) -> Any: ...
    def build(self, program: Any) -> bytes: ...
    def patch(self, program: Any, patch: Any) -> bytes: ...
    def abi_diff(self, a: Any, b: Any) -> list: ...


class AmdgpuTarget:
    """gfx90a / gfx942 code objects, rebuilt with llvm-mc + ld.lld."""

    name = "amdgpu"

    def load(self, data, *, path=None):
        from asmevo.targets.amdgpu.codeobject import load
        return load(data, path=path)

    def recover(self, code_object):
        from asmevo.targets.amdgpu.recover import recover
        return recover(code_object)

    def build(self, program) -> bytes:
        from asmevo.targets.amdgpu.build import build_program
        return build_program(program)

    def patch(self, program, patch) -> bytes:
        from asmevo.targets.amdgpu.patch import patch as apply
        return apply(program, patch)

    def abi_diff(self, a, b) -> list:
        from asmevo.targets.amdgpu.abi import abi_diff
        return abi_diff(a, b)


REGISTRY: dict[str, type] = {"amdgpu": AmdgpuTarget}


def get_target(name: str) -> Target:
    try:
        return REGISTRY[name]()
    except KeyError:
        raise AsmevoError(f"unknown target {name!r}; known: {', '.join(REGISTRY)}") from None
