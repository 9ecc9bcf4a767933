"""The machine state instructions act on, below the instruction semantics.

- :mod:`~asmevo.emu.machine.state`: register files of many waves at once (VGPRs,
  AGPRs, SGPRs, EXEC, VCC, M0), and :class:`~asmevo.emu.machine.state.Ctx`, the waves
  sharing one PC.
- :mod:`~asmevo.emu.machine.memory`: checked global memory (allocations, guards,
  apertures).
- :mod:`~asmevo.emu.machine.racecheck`: LDS and global access tracking that proves a
  serial launch may run in lockstep.
"""
