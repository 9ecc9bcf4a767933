"""The solver, an optional extra (``pip install asmevo[prove]``): ``z3`` or None.

Every module that builds terms imports ``z3`` from here; :mod:`asmevo.prove`
imports none of them until :func:`available` says the solver is there, so without
it verification works as before and says ``tested``.
"""
from __future__ import annotations

try:                                    # pragma: no cover - depends on the install
    import z3
except ImportError:                     # pragma: no cover
    z3 = None

if z3 is not None:
    from asmevo import knobs
    # a question past the bound comes back unknown ("out of memory"); without it one
    # region's terms grew past 8 GB on gelu_tanh and the OOM killer took the process
    z3.set_param("memory_max_size", knobs.prover_memory_mb())


def available() -> bool:
    return z3 is not None


def missing_reason() -> str:
    return "the solver is not installed (pip install 'asmevo[prove]' for z3-solver)"
