"""Running launches: dispatch, scheduling and the batched passes over decoded programs.

- :mod:`~asmevo.emu.run.image`, :mod:`~asmevo.emu.run.wavewrap`: a Program decoded
  for execution (above the decoder: index-mode copies are decoded from text).
- :mod:`~asmevo.emu.run.dispatch`: memory, kernargs and initial registers as the
  hardware dispatches a kernel; :mod:`~asmevo.emu.run.launchcache` reuses that
  set-up across candidates.
- :mod:`~asmevo.emu.run.scheduler`: groups of waves sharing a PC, barriers, budgets.
- :mod:`~asmevo.emu.run.launch`: :class:`~asmevo.emu.run.launch.Emulator`,
  :func:`~asmevo.emu.run.launch.run_launch` (re-exported by :mod:`asmevo.emu`).
- :mod:`~asmevo.emu.run.batch`, :mod:`~asmevo.emu.run.converge`: many launches in one
  pass, and a candidate's pass finished as K0's where the two meet.
- :mod:`~asmevo.emu.run.shadow`: the definedness shadow that explains a result
  depending on garbage.
"""
