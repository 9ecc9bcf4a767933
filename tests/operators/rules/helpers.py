"""Shared by the rule-operator tests: a corpus kernel's program and a context on it."""
from __future__ import annotations

import random
from functools import lru_cache
from pathlib import Path

from asmevo.targets.amdgpu import load, recover
from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.launch.spec import load_spec
from asmevo.operator import OperatorContext

KERNELS = Path(__file__).resolve().parents[3] / "experiments" / "kernels"


class Individual:
    """K0 plus an edit history: all an operator looks at."""

    def __init__(self, edits=()):
        self.edits = tuple(edits)


@lru_cache(maxsize=None)
def kernel(name: str):
    """(kernel name, recovered K0 program) of corpus kernel ``name``."""
    spec = load_spec(KERNELS / name)
    return spec.kernel, recover(load(spec.code_object))


def context(name: str, seed: int, windows=None) -> OperatorContext:
    kname, program = kernel(name)
    kw = {} if windows is None else {"windows_of": lambda ind: list(windows)}
    return OperatorContext(k0=program, kernel=kname, rng=random.Random(seed),
                           program_of=lambda ind: apply_edits(program, ind.edits), **kw)
