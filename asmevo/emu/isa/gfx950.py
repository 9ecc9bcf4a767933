"""What the emulator runs of a gfx950 (CDNA4) code object: its gfx942 part.

gfx950 keeps gfx942's ISA and adds to it. The emulator implements gfx942, so
on a gfx950 object it executes every instruction whose gfx942 semantics are
gfx950's too, and refuses the rest (:class:`UnsupportedInstruction`, with the
reason), never approximates them:

- gfx950-only instructions (``v_mfma_scale_*``, ``v_mfma_*_f8f6f4``,
  ``v_cvt_scalef32_*``, ``v_permlane16/32_swap``, ``ds_read_b64_tr_*``,
  ``v_cvt_pk_bf16_f32``, ...) have no builder: refused as on any target;
- instructions gfx942 has too but whose fp8/bf8 operands or results are in
  another format on gfx950 (OCP E4M3/E5M2 there, FNUZ on gfx942): conversions,
  MFMA/SMFMAC and dot products with ``fp8``/``bf8`` in their name; refused here.

A gfx950 object made only of the rest runs, with gfx950's LDS size
(160 KiB per workgroup). Timing (the CDNA3 model) has no gfx950 parameters.
"""
from __future__ import annotations

import re

from asmevo.targets.amdgpu import processors as P


_OCP = re.compile(r"(?:^|_)(?:fp8|bf8)(?:_|$)")


def lds_limit(processor: str) -> int:
    """Bytes of LDS one workgroup may allocate."""
    return P.processor(processor).lds_bytes


def refusal(mnemonic: str, processor: str) -> str | None:
    """Why ``mnemonic`` cannot run as gfx942 code on ``processor`` (None: it can)."""
    if P.processor(processor).ocp_fp8 and _OCP.search(mnemonic):
        return (f"on {processor} its fp8/bf8 values are OCP E4M3/E5M2; the emulator "
                f"implements {P.DEFAULT}'s FNUZ formats")
    return None


def missing(processor: str) -> str:
    """The detail for an instruction without a builder."""
    return f"the emulator runs {processor} code where it is {P.DEFAULT}'s ISA" \
        if P.family(processor) == P.CDNA4 else ""
