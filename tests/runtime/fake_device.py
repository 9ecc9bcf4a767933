"""A device that is not one of asmevo's: the whole of what adding a device takes.

A subclass of :class:`asmevo.runtime.device.Device` in a module of its own (this one)
plus one line in :data:`asmevo.runtime.registry.REGISTRY` (the test adds it). It runs
every launch on the emulator and counts the launches, keeping every other capability
at the base class's defaults (no batched passes, no diagnosis, no overlaps)."""
from __future__ import annotations

from asmevo.runtime.device import Device
from asmevo.runtime.emulator import EmulatorDevice


class FakeDevice(Device):
    targets = ("amdgpu",)
    forks = True          # plain memory: a forked isolation child keeps it
    launches = 0          # across instances of this process

    def __init__(self):
        self.name = "fake"
        self._emulator = EmulatorDevice()

    def run(self, code, spec, buffers, *, guard_bytes=256, guard_pattern=0x5A, variant=0,
            approx_variant=0, aliases=None, order=None):
        FakeDevice.launches += 1
        return self._emulator.run(code, spec, buffers, guard_bytes=guard_bytes,
                                  guard_pattern=guard_pattern, variant=variant,
                                  approx_variant=approx_variant)

    def time(self, codes, spec, buffers, *, warmup=0, repetitions=1):
        return self._emulator.time(codes, spec, buffers, warmup=warmup,
                                   repetitions=repetitions)
