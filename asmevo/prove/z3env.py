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


def available() -> bool:
    return z3 is not None


def missing_reason() -> str:
    return "the solver is not installed (pip install 'asmevo[prove]' for z3-solver)"
