"""Workgroup subsets of a launch: what timing and checks at GPU sizes can afford.

A launch at a GPU size (a 4096^3 matmul: 65,536 workgroups; a million waves) is more than
the emulator should run whole for every candidate (``ASMEVO_EMU_MAX_WAVES``). Workgroups
that do not communicate through memory can be run alone, each as one batch on the
launch's full memory, and that is what this module does: the timing model emulates the
busiest CU's workgroups (:func:`run_workgroups` with a trace recorder), and a check at
such a size compares K0 and a candidate on a spread of workgroups
(:func:`sampled_workgroups`, :func:`subset_outputs`) instead of refusing the size, which
would read as K0 itself failing. What a subset check covers is said in its verdict.
"""
from __future__ import annotations

import numpy as np


def run_workgroups(emu, spec, values: dict, wgs: list[int], rec=None, *,
                   outputs: bool = False):
    """Emulate only workgroups ``wgs`` of the launch (one batch each, on the launch's
    memory) with the trace hook ``rec`` (None: none); (status, message, profile, and with
    ``outputs`` the output buffers' bytes)."""
    from asmevo.emu.run.dispatch import initial_state, setup
    from asmevo.emu.errors import EmulatorError
    from asmevo.emu.run.launch import (DEFAULT_BUDGET_MIN, DEFAULT_BUDGET_PER_WAVE, FunctionProfile,
                                   _vgpr_file_size)
    from asmevo.emu.run.scheduler import Budget, run_batch

    co = emu.program.source
    k = co.kernel(spec.kernel)
    img = emu.image_for(k)
    entry = img.entry_index(spec.kernel)
    ln = setup(co, k, spec, values)
    wpg = ln.waves_per_wg
    budget = Budget(max(DEFAULT_BUDGET_MIN, DEFAULT_BUDGET_PER_WAVE * len(wgs) * wpg), None)
    counts = np.zeros(len(img.code), np.int64)
    lanes = np.zeros(len(img.code), np.int64)
    nv = _vgpr_file_size(img, k)
    status, message = "ok", "ok"
    try:
        for g in wgs:
            st = initial_state(ln, g, g + 1, nv)
            if rec is not None:
                rec.next_batch_base(g * wpg)
            run_batch(img, st, ln, entry, counts, lanes, budget, rec)
    except EmulatorError as exc:
        status, message = exc.status, str(exc)
    except (FloatingPointError, OverflowError, ZeroDivisionError) as exc:
        status, message = "fault", f"internal arithmetic error: {exc}"
    profile = {name: FunctionProfile(name, counts[sp.start:sp.end].copy(),
                                     lanes[sp.start:sp.end].copy())
               for name, sp in img.functions.items()}
    if not outputs:
        return status, message, profile
    data = {a.name: ln.mem.view(ln.buffers[a.name]).tobytes() for a in spec.outputs}
    return status, message, profile, data


def sampled_workgroups(nwg: int, wpg: int, max_waves: int) -> list[int]:
    """Workgroups spread evenly over the grid, the first and the last among them, at most
    ``max_waves`` waves in all."""
    n = max(1, min(nwg, max_waves // max(1, wpg)))
    if n >= nwg:
        return list(range(nwg))
    return sorted({int(round(i * (nwg - 1) / max(1, n - 1))) for i in range(n)})


def subset_outputs(code, spec, values: dict, wgs: list[int]) -> tuple[str, str, dict]:
    """(status, message, output bytes) of running only ``wgs`` of ``code``'s launch."""
    from asmevo.emu.run.launch import emulator_for

    status, message, _, data = run_workgroups(emulator_for(bytes(code)), spec, values, wgs,
                                              outputs=True)
    return status, message, data
