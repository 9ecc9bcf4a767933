"""Deliberately wrong candidates, one builder per class, for any corpus kernel.

Each builder looks at K0's recovered kernel and returns the edits of one wrong
candidate of its class (or None where the class does not apply), plus a
*witness*: how to show, independently of the verifier, that the candidate is
not the same function as K0. The verifier never sees the witness; a candidate
counts as wrong only when its witness shows a difference
(``tests/verify/test_wrong_candidates.py``, ``experiments/bench_false_accepts.py``).

The classes, by module:

* :mod:`.classic`: what issue 15 found accepted, each wrong at the size under check
  (a constant only a row of -inf reaches, a branch right only at the spec's scalar
  value, a dropped canonicalize, a read past the kernarg segment, uninitialised
  VGPR and LDS reads);
* :mod:`.sizes`: wrong only at other launches of the family (remainder, partial
  tile, grid dimension, scalar path, 24/32-bit index overflow);
* :mod:`.memory`: wrong only where buffers overlap, workgroups run in another order,
  lanes of a wave store to one address, or special values sit in one layout.

A witness of kind "launches" names the launches (:class:`Probe`) that show it: a
family member, a workgroup order, an overlap of buffers, an input layout; K0 and the
candidate run there directly (:mod:`.witness`).
"""
from __future__ import annotations

from tests.verify.wrong import classic, memory, sizes
from tests.verify.wrong.base import Kernel, Probe, Wrong
from tests.verify.wrong.witness import witnessed

CLASSIC = dict(classic.CLASSES)
NEW = {"remainder": sizes.remainder, "partial_tile": sizes.partial_tile,
       "grid_dimension": sizes.grid_dimension, "scalar_path": sizes.scalar_path,
       "alias": memory.alias, "workgroup_order": memory.workgroup_order,
       "same_address_lanes": memory.same_address_lanes,
       "special_layout": memory.special_layout, "index_overflow": sizes.index_overflow}
CLASSES = {**CLASSIC, **NEW}

__all__ = ["CLASSES", "CLASSIC", "NEW", "Kernel", "Probe", "Wrong", "build_wrong",
           "witnessed"]


def build_wrong(ctx, cls: str) -> Wrong | None:
    """The class's wrong candidate for the kernel of ``ctx`` (an EvalContext)."""
    from asmevo.verify.evaluate import k0_state
    k = Kernel(ctx, k0_state(ctx))
    return CLASSES[cls](k.fn, k.spec, kd=k.kd, slots=k.slots, segment=k.segment, kernel=k)
