"""ISA families behind one small Protocol, chosen by name.

The candidate pipeline (:mod:`asmevo.verify.pipeline`) asks a :class:`Target`
for its stages: load and recover K0, apply edits, the family's static gate,
build (or patch in place), compare ABIs. The engine, the dashboard and
``asmevo verify`` ask it for the rest (a program as text, a listing, a summary,
K0's own problems). Each family lives in its package (``amdgpu/target.py``,
``nvidia/target.py``) with its state on the instance; a second ISA family adds
a package and one registry entry, and nothing above this layer changes.
"""
from __future__ import annotations

from typing import Protocol, Sequence, TypeVar

from asmevo.edits import Edit
from asmevo.errors import AsmevoError
from asmevo.verdict import Verdict
from asmevo.targets.amdgpu.target import AmdgpuTarget
from asmevo.targets.nvidia.target import NvidiaTarget

C = TypeVar("C")     # the family's loaded code object (AMDGPU CodeObject, NVIDIA Cubin)
P = TypeVar("P")     # its recovered, editable program


class Target(Protocol[C, P]):
    name: str
    timing_model: bool           # whether timing = "modeled" is available
    provable: bool               # whether asmevo.prove can judge its candidates

    # -- the pipeline's stages -------------------------------------------------------
    def load(self, data: bytes, *, path: str | None = None) -> C: ...
    def recover(self, code_object: C) -> P: ...

    def apply(self, k0: P, edits: Sequence[Edit]) -> P | Verdict:
        """Stage apply: K0's program with ``edits``, or the verdict refusing them."""
        ...

    def static_gate(self, program: P, code_object: C, *,
                    kernel: str | None = None) -> Verdict | None:
        """Stage gate: a verdict when ``program`` (edited functions marked) is provably
        unsafe in a way K0 (``code_object``) is not; ``kernel``: the kernel under search."""
        ...

    def build(self, k0: P, program: P) -> bytes | Verdict:
        """Stage build: the candidate's bytes (rebuilt, or K0's patched), or the verdict."""
        ...

    def abi_diff(self, a: C, b: C) -> list:
        """Stage abi: the differences of ``b``'s kernel ABI from ``a``'s (empty: identical)."""
        ...

    def code_gate(self, data: bytes, code_object: C, *,
                  kernel: str | None = None) -> Verdict | None:
        """The static gate of a ready-built object (``asmevo verify``), K0 being ``code_object``."""
        ...

    def synchronizes(self, program: P, kernel: str) -> bool:
        """Whether the kernel (or what it calls) has barriers (the differential run then
        adds race-exposing variants)."""
        ...

    def restrict_buffers(self, code_object: C, kernel: str, spec) -> frozenset[str]:
        """The spec's buffer arguments the code object declares never to alias another
        (C's ``__restrict__``): verification lays no other buffer over them."""
        ...

    # -- what the engine, the dashboard and the reports ask ---------------------------
    def apply_edits(self, program: P, edits: Sequence[Edit]) -> P:
        """``program`` with ``edits`` (incrementally, by the engine); raises on a bad edit."""
        ...

    def k0_problems(self, program: P, kernel: str) -> list[str]:
        """What the static checks report in K0 itself (candidates are not refused for it)."""
        ...

    def assembly(self, program: P) -> str:
        """The program as text (stored beside each accepted candidate)."""
        ...

    def listing(self, program: P, function: str) -> list[str]:
        """One line per instruction of ``function``, indexed as windows and edits index it."""
        ...

    def describe(self, code_object: C, program: P, kernel: str) -> dict:
        """The kernel's ABI and resources as plain JSON-ready values (inspect, dashboard)."""
        ...


REGISTRY: dict[str, type] = {"amdgpu": AmdgpuTarget, "nvidia": NvidiaTarget}
DEFAULT_TARGET = "amdgpu"      # the one place that picks the ISA family a command defaults to
ARCHIVED_BEFORE_TARGETS = "amdgpu"   # what a run archived before run.target existed ran on


def get_target(name: str) -> Target:
    try:
        return REGISTRY[name]()
    except KeyError:
        raise AsmevoError(f"unknown target {name!r}; known: {', '.join(REGISTRY)}") from None
