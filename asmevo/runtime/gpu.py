"""What the two GPU devices (:mod:`asmevo.runtime.hip`, :mod:`asmevo.runtime.cuda`) share.

hip-python and cuda-bindings answer every call the same way, ``(err, *values)``;
both devices start their runtime the same way (init, then pick a GPU out of a
visible count), keep allocations as (pointer, size), and time candidates by the
same protocol. One home for these keeps the two devices' return-code checks,
start-up errors and timing identical; each device says only what its runtime is
called and how a user gets it (:class:`Runtime`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from asmevo.runtime.device import Device, DeviceError


def check_status(result, what: str):
    """A binding's ``(err, *values)`` (or a bare ``err``): raise :class:`DeviceError` naming
    ``what`` on any nonzero code; else return the one value, a tuple of several, or None."""
    if not isinstance(result, tuple):
        result = (result,)
    err, *rest = result
    code = int(getattr(err, "value", err))
    if code != 0:
        name = getattr(err, "name", str(code))
        raise DeviceError(f"{what} failed: {name} ({code})")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else tuple(rest)


def require_gpu(count: int, device_index: int, none_visible: str) -> None:
    """Refuse a ``device_index`` out of the ``count`` GPUs visible; ``none_visible`` is the
    message when there are none (it says which runtime found none)."""
    if count < 1:
        raise DeviceError(none_visible)
    if device_index >= count:
        raise DeviceError(f"GPU {device_index} requested, {count} visible")


@dataclass(frozen=True)
class Runtime:
    """How one GPU runtime starts and what to tell a user it fails for.

    ``load`` imports the Python binding (a :class:`DeviceError` saying how to
    install it when it is absent); ``init`` and ``count`` name its calls (``hipInit(0)``,
    ``hipGetDeviceCount()``); ``needs`` and ``remedy`` make the message when the
    runtime library cannot be loaded (``absent``: the exceptions the binding raises
    then); ``none_visible`` is the message when no GPU is visible; ``unusable``,
    where given, prefixes a nonzero code from ``init`` (a driver present but broken).
    """

    load: Callable[[], object]
    init: str
    count: str
    needs: str
    remedy: str
    none_visible: str
    absent: tuple[type[BaseException], ...] = (RuntimeError,)
    unusable: str | None = None


class GpuDevice(Device):
    """What a GPU device is, whichever its runtime: its times are measured, it lays no
    buffers over each other (each is an allocation of its own: aliasing runs are the
    emulator's) and it starts workgroups in an order of its own (no ``order``)."""

    measured = True
    overlaps = False
    orders = False


def start(runtime: Runtime, device_index: int):
    """Load and initialise ``runtime``'s binding, check that GPU ``device_index`` is
    visible and return the binding; every failure is one :class:`DeviceError` that says
    what is missing."""
    binding = runtime.load()
    try:
        check_status(getattr(binding, runtime.init)(0), runtime.init)
    except DeviceError as exc:
        if runtime.unusable is None:
            raise
        raise DeviceError(f"{runtime.unusable}: {exc}") from exc
    except runtime.absent as exc:
        raise DeviceError(f"{runtime.needs}, which is not installed here ({exc}); "
                          f"{runtime.remedy}") from exc
    count = check_status(getattr(binding, runtime.count)(), runtime.count)
    require_gpu(count, device_index, runtime.none_visible)
    return binding


@dataclass
class Alloc:
    """One device allocation: its pointer (as the binding returns it) and size in bytes."""

    ptr: object
    nbytes: int


def interleaved_times(n: int, warmup: int, repetitions: int,
                      timed_run: Callable[[int, int], float]) -> list[list[float]]:
    """The timing protocol: ``warmup + repetitions`` rounds, each running all ``n`` code
    objects in turn (``timed_run(round, i)`` -> seconds), so drift hits all of them alike;
    the warm-up rounds are dropped. Per code object, ``repetitions`` timings."""
    times: list[list[float]] = [[] for _ in range(n)]
    for rep in range(warmup + repetitions):
        for i in range(n):
            t = timed_run(rep, i)
            if rep >= warmup:
                times[i].append(t)
    return times
