"""Deterministic rule operators (no LLM, no key): AMDGPU assembly, and SASS (``sass``).

Each module registers its operators by name on import. Shared analysis
(register effects, liveness, dependency DAG, waitcnt and hazard models)
comes from :mod:`asmevo.targets.amdgpu.analysis`, never re-derived here.
"""
# each module registers its operators on import; a missing or broken one is an ImportError
from asmevo.operators.rules import (address, crossover, dce, fold, gcse, kernarg, lds, licm,  # noqa: F401
                             mfma,
                             merge,
                             occupancy,
                             peephole, pipeline, pressure, rederive, sass, scalarize,
                             schedule, strength, unroll, waitcnt_relax)
