"""The Device base class: where a code object runs. Chosen by name, never by code.

Three kinds: ``emulator`` (the CPU emulator, always available), ``hip`` (an AMD
GPU through hip-python) and ``cuda`` (an NVIDIA GPU through cuda-bindings). Verification talks only to this
class, so the same differential run and timing protocol serve all of them.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from asmevo.errors import AsmevoError
from asmevo.launch.spec import LaunchSpec


class DeviceError(AsmevoError):
    """A device that cannot be used here (missing runtime, no GPU), or a failed call."""


@dataclass
class BufferImage:
    """One buffer after a launch: its data and the guard bytes around it."""

    data: np.ndarray
    guard_before: bytes = b""
    guard_after: bytes = b""


@dataclass
class RunResult:
    """What one launch did. ``status``: ok | fault | timeout | unsupported."""

    status: str
    message: str = ""
    buffers: dict[str, BufferImage] = field(default_factory=dict)
    details: dict = field(default_factory=dict)
    profile: object | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class Device(ABC):
    """Where a code object runs. Every attribute and method a caller uses is declared
    here; a device that lacks a capability keeps the default (False, or a method that
    does nothing), so callers never probe. A new device is one module with a subclass
    and one line in :data:`asmevo.runtime.registry.REGISTRY`."""

    name: str
    targets: tuple[str, ...] = ()   # the ISA families (asmevo.targets.REGISTRY) it runs
    measured: bool = False    # True: times are wall-clock measurements; False: modeled
    overlaps: bool = False    # run() takes ``aliases``: buffers laid over each other
    orders: bool = False      # run() takes ``order``: workgroups one at a time in that order
    diagnoses: bool = False   # run() takes ``diagnose``: which undefined state a run read
    forks: bool = False       # a process that has set it up may fork workers that use it
    batches: bool = False     # run_many makes one pass; prepare_like keeps K0's passes

    @classmethod
    def check_launch(cls, spec: LaunchSpec) -> None:
        """Raise where this device cannot run ``spec``'s launch at all (before a run
        directory exists); by default every launch is runnable."""

    @abstractmethod
    def run(self, code: bytes, spec: LaunchSpec, buffers: dict[str, np.ndarray], *,
            guard_bytes: int, guard_pattern: int, variant: int = 0,
            approx_variant: int = 0, aliases: dict | None = None,
            order: str | None = None) -> RunResult:
        """Launch ``spec.kernel`` of ``code`` once on fresh allocations filled from
        ``buffers`` (every buffer arg), each surrounded by ``guard_bytes`` bytes of
        ``guard_pattern``; return every buffer's final contents and guards.

        ``variant`` > 0 asks for an adversarial but legal execution where the
        device has freedom (the emulator: other garbage in uninitialised
        registers, waves run one by one between barriers); a GPU ignores it.
        ``approx_variant`` picks the member of every approximate instruction's
        function family (the emulator: :mod:`asmevo.emu.numerics.approx`; 0 = correctly
        rounded); a GPU is one fixed member and ignores it.
        ``aliases`` (buffer -> (other buffer, byte offset)): the buffer starts that many
        bytes into the other one instead of in an allocation of its own (devices with
        ``overlaps``). ``order``: the workgroups run one at a time, each to its end, in
        this order ("ascending", "descending", "shuffle:<seed>"; devices with
        ``orders``: a GPU starts its workgroups in an order of its own)."""

    @abstractmethod
    def time(self, codes: list[bytes], spec: LaunchSpec, buffers: dict[str, np.ndarray], *,
             warmup: int, repetitions: int) -> list[list[float]]:
        """Per code object, ``repetitions`` timings (seconds or modeled cycles), the
        objects interleaved run by run so drift hits all of them alike."""

    def run_many(self, code: bytes, spec: LaunchSpec, runs: list[dict], *,
                 like: bytes | None = None) -> list[RunResult] | None:
        """``[self.run(code, r.pop("spec", spec), **r) for r in runs]`` in one pass, or
        None where the device makes no such pass (then the caller runs them one by one).
        ``like``: a code object ``code`` differs from in a few rows (K0), whose pass the
        device may have kept (:meth:`prepare_like`); the results are the same."""
        return None

    def prepare_like(self, code: bytes, spec: LaunchSpec, runs: list[dict]) -> None:
        """Ahead of the candidates of ``code`` (K0): what :meth:`run_many` with
        ``like=code`` may keep of K0's pass over these runs. Nothing a verdict depends on."""
