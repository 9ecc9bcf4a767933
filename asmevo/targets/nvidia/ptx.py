"""The PTX route: rebuild a kernel's PTX with ``ptxas`` under option variants.

Triton (and nvcc) keep the PTX a cubin was made from; recompiling it with
another ``-O`` level or ``--maxrregcount`` gives a differently scheduled and
register-allocated cubin of the *same* ABI, which :func:`rebuild` proves with
:func:`asmevo.targets.nvidia.abi.abi_diff` before returning it. It also refuses a
rebuild whose floating-point arithmetic differs from K0's (:func:`arithmetic`):
ptxas contracts multiplies and adds into FFMA by optimization level, and a
different contraction rounds differently (seen on the H200: tri_layernorm under
``-O0`` is not bit-equal to K0). The default
options are what the corpus cubins record in .note.nv.tkinfo (``-lineinfo
-suppress-debug-info -v``), so the default variant reproduces Triton's cubin byte
for byte when the same ptxas is used.
"""
from __future__ import annotations

import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from asmevo.memo import Memo
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

    def describe(self) -> str:
        """The options that differ from Triton's, as a ptxas command line would say them."""
        out = [] if self.fmad else ["--fmad=false"]
        if self.opt_level is not None:
            out.append(f"-O{self.opt_level}")
        if self.maxrregcount is not None:
            out.append(f"--maxrregcount={self.maxrregcount}")
        return " ".join(out) or "(Triton's options)"

    def args(self) -> list[str]:
        out = list(TRITON_FLAGS)
        if not self.fmad:
            out.append("--fmad=false")
        if self.opt_level is not None:
            out += ["--opt-level", str(self.opt_level)]
        if self.maxrregcount is not None:
            out.append(f"--maxrregcount={self.maxrregcount}")
        return out + [f"--gpu-name={self.arch}"]


# The variants a search tries: -O levels and register caps. Not -O0: ptxas does not
# contract there, so it changes the floating-point arithmetic of 10 of the 14 corpus
# kernels (and :func:`rebuild` refuses those); it is never the fast one anyway.
VARIANTS = tuple([PtxOptions(opt_level=o) for o in (1, 2, 3)]
                 + [PtxOptions(maxrregcount=r) for r in (32, 64, 128, 255)])


def compile_ptx(ptx: str, options: PtxOptions = PtxOptions()) -> bytes:
    """The cubin ptxas makes of ``ptx`` under ``options`` (a ptxas that accepts the
    module's PTX version: :func:`~asmevo.targets.nvidia.tools.ptxas_for`)."""
    exe = tools.ptxas_for(ptx)
    with tempfile.TemporaryDirectory(prefix="asmevo_ptxas_") as tmp:
        src, out = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        src.write_text(ptx)
        tools.run_exe(exe, [*options.args(), str(src), "-o", str(out)],
                      what=f"PTX with {' '.join(options.args())}")
        return out.read_bytes()


# Instructions that round: their multiset (full opcode with modifiers) is what a
# rebuild must keep. Moves spelled as arithmetic (`HFMA2.MMA R6, -RZ, RZ, 0, 0`)
# read no register and do not count.
ROUNDING = frozenset({"FFMA", "FMUL", "FADD", "FFMA2", "FMUL2", "FADD2", "DFMA", "DMUL",
                      "DADD", "HFMA2", "HMUL2", "HADD2"})


_ARITHMETIC: Memo[Counter] = Memo("nvidia.ptx.arithmetic", None)   # per K0: a few


def arithmetic(cubin: Cubin) -> Counter:
    """opcode -> count of the rounding floating-point instructions of every kernel
    (cached per cubin: K0's is asked once per variant)."""
    hit = _ARITHMETIC.get(cubin.sha256)
    if hit is None:
        from asmevo.targets.nvidia.program import recover
        hit = Counter()
        for code in recover(cubin).kernels:
            for ins in code.instructions:
                if ins.base in ROUNDING and ins.ops.reads - {ins.ops.guard, "RZ"}:
                    hit[ins.ops.opcode] += 1
        _ARITHMETIC.put(cubin.sha256, hit)
    return Counter(hit)


def rebuild(k0: Cubin, ptx: str, options: PtxOptions = PtxOptions()) -> bytes:
    """A cubin of K0's ABI and floating-point arithmetic compiled from ``ptx``;
    CubinError if either differs."""
    data = compile_ptx(ptx, options)
    k1 = load(data, path=f"<ptxas {' '.join(options.args())}>")
    diff = abi_diff(k0, k1)
    if diff:
        raise CubinError("PTX rebuild changes the ABI: " + "; ".join(map(str, diff)),
                         path=k0.path)
    if data != k0.data:
        a0, a1 = arithmetic(k0), arithmetic(k1)
        if a0 != a1:
            moved = ", ".join(f"{op} {a1[op] - a0[op]:+d}" for op in sorted(set(a0) | set(a1))
                              if a1[op] != a0[op])
            raise CubinError(f"PTX rebuild ({options.describe()}) changes the floating-point "
                             f"arithmetic ({moved}): a different contraction rounds "
                             "differently, so it cannot be bit-equal", path=k0.path)
    return data


# -- the PTX rebuild as an edit --------------------------------------------------------
# An Edit whose operator is ``ptx_rebuild``, with an empty window, carries the
# variant in its ``descriptor`` pairs (ints only, so it stays a plain Edit with a
# content key). It replaces the whole cubin, so it can only be an individual's
# first edit; SASS moves may follow and are then checked against the rebuilt cubin.
PTX_OPERATOR = "ptx_rebuild"


def ptx_edit(kernel: str, options: PtxOptions):
    from asmevo.edits import Edit
    pairs = [("ptxas_fmad", int(options.fmad))]
    if options.opt_level is not None:
        pairs.append(("ptxas_opt_level", options.opt_level))
    if options.maxrregcount is not None:
        pairs.append(("ptxas_maxrregcount", options.maxrregcount))
    return Edit(kernel, 0, 0, (), operator=PTX_OPERATOR, note=f"ptxas {options.describe()}",
                descriptor=tuple(sorted(pairs)))


def is_ptx_edit(edit) -> bool:
    return any(k.startswith("ptxas_") for k, _ in edit.descriptor)


def options_of(edit) -> PtxOptions:
    d = dict(edit.descriptor)
    unknown = set(d) - {"ptxas_fmad", "ptxas_opt_level", "ptxas_maxrregcount"}
    if unknown or edit.lines or edit.start or edit.end:
        raise ValueError(f"not a PTX rebuild edit: {sorted(unknown) or 'it has a window'}")
    return PtxOptions(opt_level=d.get("ptxas_opt_level"),
                      maxrregcount=d.get("ptxas_maxrregcount"),
                      fmad=bool(d.get("ptxas_fmad", 1)))


def ptx_path(k0: Cubin) -> Path | None:
    """The PTX K0 was compiled from: ``<cubin stem>.ptx`` beside it (the corpus and
    Triton's cache keep it there), or None."""
    if not k0.path:
        return None
    p = Path(k0.path).with_suffix(".ptx")
    return p if p.is_file() else None


_REBUILT: Memo[bytes] = Memo("nvidia.ptx.rebuilt", None)   # per K0 and options: a few


def rebuilt(k0: Cubin, options: PtxOptions) -> bytes:
    """:func:`rebuild` of K0's own PTX, cached per process (ptxas takes ~1 s)."""
    key = (k0.sha256, options)
    hit = _REBUILT.get(key)
    if hit is None:
        src = ptx_path(k0)
        if src is None:
            raise CubinError("no PTX beside K0 (expected "
                             f"{Path(k0.path or 'K0.cubin').with_suffix('.ptx').name})",
                             path=k0.path)
        hit = _REBUILT.put(key, rebuild(k0, src.read_text(), options))
    return hit
