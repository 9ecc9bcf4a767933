"""Operators for the NVIDIA sm_90 target: legal SASS moves, re-timing, PTX rebuilds.

The operators themselves live beside their target
(:mod:`asmevo.targets.nvidia.mutations`); this module only gives them their
registry names. Both need an nvidia program (``run.target = "nvidia"``).
"""
from asmevo.targets.nvidia.mutations import PtxRebuild, SassMove, SassRetime
from operators.registry import register

register("sass_move")(SassMove)
register("sass_retime")(SassRetime)
register("ptx_rebuild")(PtxRebuild)
