"""Where a kernel spends its time, per instruction, and the hot windows operators edit.

- :mod:`~asmevo.profile.model`: the :class:`~asmevo.profile.model.Profile` value
  (per function and instruction: executions, lanes, cycles, stalls) and the
  package's error.
- :mod:`~asmevo.profile.modeled`: a profile from an emulator run and the CDNA
  timing model (``source="modeled"``).
- :mod:`~asmevo.profile.rocprof`: a profile from rocprofv3 CSV, PC sampling or
  a thread-trace aggregate, through one column-mapped reader (``source="measured"``).
- :mod:`~asmevo.profile.windows`: the hot windows ranked from either, with the
  live registers at their edges, and their rendering.

AMDGPU only for now: the profile maps onto an AMDGPU program by instruction
index and address, and the windows are cut by its control-flow graph.
"""
