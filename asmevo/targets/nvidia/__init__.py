"""NVIDIA sm_90 cubins, edited in place at the SASS level.

No public assembler exists for SASS, so this target never re-encodes an
instruction: it permutes K0's 128-bit words inside a region and changes their
control fields (stall, yield, reuse), after :mod:`legality` proves the result
equivalent; or it recompiles the kernel's PTX with other ptxas options
(:mod:`ptx`). :class:`~asmevo.targets.nvidia.target.NvidiaTarget` is the
:class:`asmevo.targets.Target` for "nvidia".
"""
from __future__ import annotations

from asmevo.targets.nvidia.target import NvidiaTarget

__all__ = ["NvidiaTarget"]
