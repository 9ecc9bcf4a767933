"""Devices by name: the one place that knows every Device.

The registry imports its entries (lazily: hip-python and cuda-bindings are only
needed by the device that uses them); the entries import :mod:`asmevo.runtime.device`
for the protocol's values, never this module.
"""
from __future__ import annotations

from asmevo.runtime.device import Device, DeviceError


def _emulator(**kw):
    from asmevo.runtime.emulator import EmulatorDevice
    return EmulatorDevice(**kw)


def _hip(**kw):
    from asmevo.runtime.hip import HipDevice
    return HipDevice(**kw)


def _cuda(**kw):
    from asmevo.runtime.cuda import cuda_device
    return cuda_device(**kw)


REGISTRY = {"emulator": _emulator, "hip": _hip, "cuda": _cuda}


def get_device(name: str, **options) -> Device:
    """The device called ``name``; a device unusable here raises one clear DeviceError."""
    try:
        factory = REGISTRY[name]
    except KeyError:
        raise DeviceError(f"unknown device {name!r}; known: {', '.join(REGISTRY)}") from None
    return factory(**options)
