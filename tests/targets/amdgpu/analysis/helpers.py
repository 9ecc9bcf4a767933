"""Small builders shared by the analysis tests."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from asmevo.targets.amdgpu.codeobject import load
from asmevo.targets.amdgpu.program import Function, Instruction, Label
from asmevo.targets.amdgpu.recover import recover
from tests.conftest import corpus_objects


def make_fn(text: str, name: str = "k") -> Function:
    """A Function from assembly lines; ``name:`` lines are labels."""
    items = []
    for line in text.strip().splitlines():
        line = line.split("//")[0].strip()
        if not line:
            continue
        if line.endswith(":"):
            items.append(Label(line[:-1]))
        else:
            items.append(Instruction(line))
    return Function(name, tuple(items), None, 0)


@lru_cache(maxsize=None)
def corpus_program(path: str):
    co = load(path)
    return co, recover(co, verify=False)


def shipped(path) -> bool:
    """A code object shipped as-is by a project (experiments/kernels/aiter_*), not built here:
    hand-written code, so LLVM's hazard NOPs and waits are not there to check rules against."""
    return Path(path).parent.name.startswith("aiter_")


def corpus_functions(*, compiled_only: bool = False):
    """(id, code object, program, function) for every corpus function (``compiled_only``:
    those of the objects built from source)."""
    out = []
    for p in corpus_objects():
        if compiled_only and shipped(p):
            continue
        co, prog = corpus_program(str(p))
        for f in prog.functions:
            out.append((f"{Path(p).name}:{f.name}", co, prog, f))
    return out
