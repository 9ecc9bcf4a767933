"""A modeled profile: an emulator run of one launch plus the CDNA timing model.

Cycles are issue + stall cycles on the busiest CU
(:func:`asmevo.timing.model.model_launch`); executions and lanes cover the whole
launch. This is the profile the search ranks windows by where no GPU is.
"""
from __future__ import annotations

from asmevo.profile.model import FunctionCosts, Profile


def profile_launch(code, spec, values: dict) -> Profile:
    """A modeled profile of one launch (``code``: bytes, path, CodeObject or Program)."""
    from asmevo.timing.model import model_launch

    res = model_launch(code, spec, values)
    fns = {}
    for name, fp in res.profile.items():
        issue = res.issue[name]
        stalls = res.stalls[name]
        fns[name] = FunctionCosts(name, fp.counts.copy(), fp.lanes.copy(), issue + stalls,
                                  stalls.copy())
    return Profile("modeled", fns, float(res.cycles), "cycles",
                   {"occupancy": res.occupancy, "target": res.target,
                    "cu_cycles": res.cu_cycles, "cu_workgroups": res.cu_workgroups,
                    "workgroups": res.workgroups, "seconds": res.seconds})
