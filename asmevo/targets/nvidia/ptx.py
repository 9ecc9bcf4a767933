"""The PTX route: rebuild a kernel's PTX with ``ptxas`` under option variants.

Triton (and nvcc) keep the PTX a cubin was made from; recompiling it with
another ``-O`` level or ``--maxrregcount`` gives a differently scheduled and
register-allocated cubin of the *same* ABI, which :func:`rebuild` proves with
:func:`asmevo.targets.nvidia.abi.abi_diff` before returning it. The default
options are what the corpus cubins record in .note.nv.tkinfo (``-lineinfo
-suppress-debug-info -v``), so the default variant reproduces Triton's cubin byte
for byte when the same ptxas is used.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from asmevo.targets.nvidia import tools
from asmevo.targets.nvidia.abi import abi_diff
from asmevo.targets.nvidia.cubin import Cubin, CubinError, load

TRITON_FLAGS = ("-lineinfo", "-suppress-debug-info", "-v")


@dataclass(frozen=True)
class PtxOptions:
    """One ptxas variant. ``opt_level`` None keeps ptxas's default (-O3)."""

    opt_level: int | None = None
    maxrregcount: int | None = None
    fmad: bool = True
    arch: str = "sm_90a"

    def __post_init__(self):
        if self.opt_level is not None and self.opt_level not in (0, 1, 2, 3):
            raise ValueError(f"opt_level {self.opt_level} is not 0..3")
        if self.maxrregcount is not None and not 16 <= self.maxrregcount <= 255:
            raise ValueError(f"maxrregcount {self.maxrregcount} is not 16..255")

    def args(self) -> list[str]:
        out = list(TRITON_FLAGS)
        if not self.fmad:
            out.append("--fmad=false")
        if self.opt_level is not None:
            out += ["--opt-level", str(self.opt_level)]
        if self.maxrregcount is not None:
            out.append(f"--maxrregcount={self.maxrregcount}")
        return out + [f"--gpu-name={self.arch}"]


# The variants a search tries first: every -O level, and register caps.
VARIANTS = tuple([PtxOptions(opt_level=o) for o in (0, 1, 2, 3)]
                 + [PtxOptions(maxrregcount=r) for r in (32, 64, 128, 255)])


def ptxas_tool() -> str:
    """Triton ships ``ptxas-blackwell`` (the newer one it uses for sm_90 too)."""
    try:
        tools.find("ptxas-blackwell")
        return "ptxas-blackwell"
    except tools.ToolError:
        return "ptxas"


def compile_ptx(ptx: str, options: PtxOptions = PtxOptions()) -> bytes:
    """The cubin ptxas makes of ``ptx`` under ``options``."""
    with tempfile.TemporaryDirectory(prefix="asmevo_ptxas_") as tmp:
        src, out = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        src.write_text(ptx)
        tools.run(ptxas_tool(), [*options.args(), str(src), "-o", str(out)],
                  what=f"PTX with {' '.join(options.args())}")
        return out.read_bytes()


def rebuild(k0: Cubin, ptx: str, options: PtxOptions = PtxOptions()) -> bytes:
    """A cubin of K0's ABI compiled from ``ptx``; CubinError if the ABI differs."""
    data = compile_ptx(ptx, options)
    diff = abi_diff(k0, load(data, path=f"<ptxas {' '.join(options.args())}>"))
    if diff:
        raise CubinError("PTX rebuild changes the ABI: " + "; ".join(map(str, diff)),
                         path=k0.path)
    return data
