"""Devices by name: the one place that knows every Device.

A new device is one module with a :class:`~asmevo.runtime.device.Device` subclass and
one line in :data:`REGISTRY`. The entries import :mod:`asmevo.runtime.device`, never
this module; hip-python and cuda-bindings are imported only when a GPU device is
constructed, so every class here is importable on any machine.
"""
from __future__ import annotations

from asmevo.runtime.cuda import CudaDevice
from asmevo.runtime.device import Device, DeviceError
from asmevo.runtime.emulator import EmulatorDevice
from asmevo.runtime.hip import HipDevice

REGISTRY: dict[str, type[Device]] = {"emulator": EmulatorDevice, "hip": HipDevice,
                                     "cuda": CudaDevice}
DEFAULT_DEVICE = "emulator"      # runs everywhere: the one place that picks it


def device_class(name: str) -> type[Device]:
    """The class of the device called ``name``: what it can do, without starting it."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise DeviceError(f"unknown device {name!r}; known: {', '.join(REGISTRY)}") from None


def default_timing(name: str) -> str:
    """The timing a command uses on device ``name`` unless told: measured on a device
    that measures, else the timing model."""
    return "measured" if device_class(name).measured else "modeled"


def get_device(name: str, **options) -> Device:
    """The device called ``name``; a device unusable here raises one clear DeviceError."""
    return device_class(name)(**options)
