"""``structural_crossover``: give parent ``a`` a structural rewrite parent ``b`` found,
re-derived (and so re-proven) on ``a``'s own code.

``window_crossover`` and ``block_crossover`` copy ``b``'s text of one region and
prove it equivalent region by region; a structural rewrite moves code between
regions (hoisting, renaming across blocks), so no single region of it is
equivalent alone and those crossovers refuse it. Copying the edits themselves
would be unsound too: their proof was about ``b``'s code, not ``a``'s.

This crossover takes one proposal of ``b``'s history that ``a`` lacks -- the
consecutive edits of one structural operator with one note -- finds the label
regions (label to label, the same in both parents) its windows touched in the
program it was applied to, and runs that same operator on ``a`` with those
regions as its hot windows. The operator's own analysis proves the rewrite on
``a`` (or refuses with its reason), so the child is as sound as any mutation:
two parents that improved different loops or blocks combine into one child
over generations, each improvement re-established where the other parent's
code differs.
"""
from __future__ import annotations

import random

from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.targets.amdgpu.program import Function, Label
from asmevo.operator import OperatorContext, Rejected, crossover, get_operator

STRUCTURAL = ("licm", "scalarize", "dead_code", "gcse", "strength_reduce", "address_fold",
              "occupancy_rename")


def proposals(edits) -> list[tuple[int, int]]:
    """``[start, end)`` index ranges of ``edits`` made by one proposal (consecutive edits
    of one operator with one note)."""
    out, k = [], 0
    while k < len(edits):
        j = k + 1
        while j < len(edits) and (edits[j].operator, edits[j].note) == \
                (edits[k].operator, edits[k].note):
            j += 1
        out.append((k, j))
        k = j
    return out


def region_of(fn: Function, index: int) -> str | None:
    """The label whose region holds instruction ``index`` (None: before the first label)."""
    label, idx = None, 0
    for item in fn.items:
        if isinstance(item, Label):
            if idx > index:
                break
            label = item.name
        else:
            if idx == index:
                return label
            idx += 1
    return label


def region_window(fn: Function, label: str | None) -> tuple[int, int] | None:
    """``[start, end)`` of ``label``'s region in ``fn`` (None: the label is not there)."""
    start = 0 if label is None else None
    idx = 0
    for item in fn.items:
        if isinstance(item, Label):
            if start is not None and item.name != label:
                return (start, idx) if idx > start else None
            if item.name == label:
                start = idx
        else:
            idx += 1
    return (start, idx) if start is not None and idx > start else None


@crossover("structural_crossover", targets=("amdgpu",))
class StructuralCrossover:
    """Re-derive one of ``b``'s structural rewrites on ``a`` (see the module doc)."""

    def __init__(self, tries: int = 4):
        if tries < 1:
            raise ValueError("tries must be >= 1")
        self.tries = tries

    def crossover(self, a, b, context: OperatorContext):
        have = {e.key for e in a.edits}
        cands = [(s, e) for s, e in proposals(b.edits)
                 if b.edits[s].operator in STRUCTURAL
                 and any(x.key not in have for x in b.edits[s:e])]
        if not cands:
            return context.reject("the mate has no structural rewrite the parent lacks")
        context.rng.shuffle(cands)
        fa = context.program(a).function(context.kernel)
        reasons = []
        for s, e in cands[:self.tries]:
            op_name = b.edits[s].operator
            before = apply_edits(context.k0, b.edits[:s]).function(context.kernel)
            labels = []
            for x in b.edits[s:e]:
                lab = region_of(before, x.start)
                if lab not in labels:
                    labels.append(lab)
            windows = [(context.kernel,) + w for w in
                       (region_window(fa, lab) for lab in labels) if w is not None]
            if not windows:
                reasons.append(f"{op_name}: its regions are not in the parent")
                continue
            sub = OperatorContext(k0=context.k0, kernel=context.kernel,
                                  rng=random.Random(context.rng.random()),
                                  program_of=context.program_of,
                                  windows_of=lambda ind, w=windows: list(w),
                                  notebook=context.notebook, spend=context.spend,
                                  where=dict(context.where))
            result = get_operator(op_name).mutate(a, sub)
            if not isinstance(result, Rejected):
                return result
            reasons.append(f"{op_name} on the parent: {(sub.reasons or ['no reason'])[-1]}")
        return context.reject("; ".join(reasons[:3]))
