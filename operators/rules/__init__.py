"""Deterministic rule operators (no LLM, no key): AMDGPU assembly, and SASS (``sass``).

Each module registers its operators by name on import. Shared analysis
(register effects, liveness, dependency DAG, waitcnt and hazard models)
comes from :mod:`asmevo.targets.amdgpu.analysis`, never re-derived here.
"""
import importlib

_MODULES = ("schedule", "waitcnt_relax", "peephole", "merge", "occupancy", "crossover", "sass",
            "unroll", "pipeline", "licm", "scalarize", "dce", "gcse", "strength",
            "address", "pressure", "rederive")

for _name in _MODULES:
    try:
        importlib.import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as _exc:   # a module not written yet; a broken one still fails
        if _exc.name != f"{__name__}.{_name}":
            raise
