"""Operators for the NVIDIA sm_90 target: legal SASS moves, re-timing, PTX rebuilds.

The operators themselves live beside their target
(:mod:`asmevo.targets.nvidia.mutations`); this module only registers them by
name. Both need an nvidia program (``run.target = "nvidia"``).
"""
from asmevo.targets.nvidia.mutations import PtxRebuild, SassMove, SassRetime
from asmevo.operator import mutation

mutation("sass_move")(SassMove)
mutation("sass_retime")(SassRetime)
mutation("ptx_rebuild")(PtxRebuild)
