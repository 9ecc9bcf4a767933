"""Hand-written kernels for the structural operators' tests.

Assembly text with labels becomes a real one-kernel code object (llvm-mc and
ld.lld through tests/emu/asmdsl.py); its recovered program is what an
operator sees, and :func:`same_results` runs K0 and the edited program on the
emulator on identical inputs (and complementary garbage in undefined
registers) and compares every output buffer bit for bit.

The kernel ``k`` receives the kernarg pointer in s[0:1] (buffer ``i``'s address
at offset ``8 i``), the workgroup id in s2 and the work-item id in v0.
"""
from __future__ import annotations

import random
from functools import lru_cache
from pathlib import Path

import numpy as np

from asmevo.emu import run_launch
from asmevo.targets.amdgpu import load, recover
from asmevo.targets.amdgpu.build import build_program
from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.launch.spec import ArgSpec, LaunchSpec, load_spec
from asmevo.operator import OperatorContext
from tests.emu.asmdsl import build_kernel


# a one-block counted loop (8 trips) over x, accumulating into v2, stored to y; a test puts
# the loop's first instructions between the two
LOOP_HEAD = """
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_lshlrev_b32_e32 v1, 2, v0
  v_mov_b32_e32 v2, 0
  s_mov_b32 s8, 0
  s_waitcnt lgkmcnt(0)
.Lloop:
"""
LOOP_TAIL = """
  global_load_dword v3, v1, s[4:5]
  v_add_u32_e32 v1, 0x100, v1
  s_add_u32 s8, s8, 1
  s_cmp_lt_u32 s8, 8
  s_waitcnt vmcnt(0)
  v_fmac_f32_e32 v2, v3, v5
  s_cbranch_scc1 .Lloop
  v_lshlrev_b32_e32 v1, 2, v0
  global_store_dword v1, v2, s[6:7]
"""


class Individual:
    def __init__(self, edits=()):
        self.edits = tuple(edits)


def program(body: str, *, buffers: int = 2, nv: int = 32, proc: str = "gfx942", lds: int = 0):
    """The recovered program of kernel ``k`` with ``body`` (s_endpgm appended)."""
    return recover(load(build_kernel(body, buffers=buffers, nv=nv, acc=nv, proc=proc, lds=lds)))


def context(prog, seed: int = 0, windows=None) -> OperatorContext:
    kw = {} if windows is None else {"windows_of": lambda ind: list(windows)}
    return OperatorContext(k0=prog, kernel="k", rng=random.Random(seed),
                           program_of=lambda ind: apply_edits(prog, ind.edits), **kw)


@lru_cache(maxsize=None)
def corpus_program(root, name: str):
    """(kernel name, recovered K0) of the spec folder ``root/name``."""
    spec = load_spec(Path(root) / name)
    return spec.kernel, recover(load(spec.code_object))


def corpus_context(root, name: str, seed: int = 0) -> OperatorContext:
    kname, prog = corpus_program(root, name)
    return OperatorContext(k0=prog, kernel=kname, rng=random.Random(seed),
                           program_of=lambda ind: apply_edits(prog, ind.edits))


def texts(prog) -> list[str]:
    return [i.text for i in prog.function("k").instructions]


def run(prog, inputs: dict[str, np.ndarray], *, block: int = 64, grid: int = 1,
        garbage_seed: int | None = None) -> dict[str, np.ndarray]:
    """Output buffers (every buffer is compared) after one launch of ``prog``."""
    args = tuple(ArgSpec(name=n, kind="buffer", dtype=str(a.dtype), count=a.size, output=True)
                 for n, a in inputs.items())
    spec = LaunchSpec(name="t", kernel="k", code_object=None, grid=(grid, 1, 1),
                      block=(block, 1, 1), args=args)
    res = run_launch(load(build_program(prog)), spec, {k: v.copy() for k, v in inputs.items()},
                     garbage_seed=garbage_seed, max_instructions=1_000_000)
    assert res.status == "ok", res.message
    return res.outputs


def same_results(prog, edits, inputs: dict[str, np.ndarray], **kw) -> None:
    """K0 and K0 + ``edits`` write the same bits to every buffer (two garbage seeds)."""
    new = apply_edits(prog, tuple(edits))
    for seed in (1, 2):
        a = run(prog, inputs, garbage_seed=seed, **kw)
        b = run(new, inputs, garbage_seed=seed, **kw)
        for name in a:
            assert a[name].tobytes() == b[name].tobytes(), f"{name} differs (garbage {seed})"
