"""The CDNA timing model: modeled cycles of one launch, from the emulator's wave traces.

- :mod:`~asmevo.timing.model`: the entry points (``model_launch``, ``trace_launch``,
  instruction records); see ``docs/timing_model.md``.
- :mod:`~asmevo.timing.cu`: the per-CU issue simulation.
- :mod:`~asmevo.timing.memory`: coalescing, LDS banks, the cache model.
- :mod:`~asmevo.timing.parameters`: the per-family parameter tables (``params/*.toml``).
- :mod:`~asmevo.timing.trace`: per-wave traces recorded while the emulator runs.
- :mod:`~asmevo.timing.sample`: workgroup subsets of a launch at GPU sizes.

It imports the emulator (:mod:`asmevo.emu`); the emulator never imports it.
"""
