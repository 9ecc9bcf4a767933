"""The prover's tests need the solver (the ``prove`` extra); without it they skip."""
from __future__ import annotations

import pytest

pytest.importorskip("z3", reason="z3-solver is not installed (the prove extra)")
