"""What every ISA family's loaded object shares: kernels looked up by name, an ABI difference.

An AMDGPU code object and an NVIDIA cubin are different files, but a caller asks
both the same questions (their content hash, their kernels' names, one kernel by
name) and their ABI comparisons report differences of the same shape. This one
home keeps those answers identical across families; each family keeps its own
error type (:class:`~asmevo.targets.amdgpu.elf.CodeObjectError`,
:class:`~asmevo.targets.nvidia.cubin.CubinError`).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import ClassVar, Iterator

from asmevo.errors import AsmevoError


class KernelSet:
    """Mixin of a loaded object with ``data`` (its exact bytes), ``path`` and ``kernels``
    (each with a ``name``); ``lookup_error`` is the family's error for an unknown name."""

    lookup_error: ClassVar[type[AsmevoError]] = AsmevoError

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def kernel_names(self) -> list[str]:
        return [k.name for k in self.kernels]

    def kernel(self, name: str):
        for k in self.kernels:
            if k.name == name:
                return k
        raise self.lookup_error(f"no kernel named {name!r}; it has: {', '.join(self.kernel_names)}",
                                path=self.path, kernel=name)


@dataclass(frozen=True)
class AbiDifference:
    """One way ``b``'s ABI differs from ``a``'s; ``kernel`` is None for the whole object."""

    kernel: str | None
    field: str
    expected: object
    got: object

    def __str__(self) -> str:
        who = f"{self.kernel}: " if self.kernel else ""
        return f"{who}{self.field} differs: expected {self.expected!r}, got {self.got!r}"


def kernel_name_difference(a: KernelSet, b: KernelSet) -> list[AbiDifference]:
    """The difference of the two objects' kernel names (order aside); empty when they match."""
    if sorted(a.kernel_names) != sorted(b.kernel_names):
        return [AbiDifference(None, "kernel names", sorted(a.kernel_names), sorted(b.kernel_names))]
    return []


def common_kernels(a: KernelSet, b: KernelSet) -> Iterator[tuple[object, object]]:
    """``(kernel of a, kernel of b)`` for each kernel of ``a`` that ``b`` has too, in a's order."""
    names_b = set(b.kernel_names)
    for ka in a.kernels:
        if ka.name in names_b:
            yield ka, b.kernel(ka.name)
