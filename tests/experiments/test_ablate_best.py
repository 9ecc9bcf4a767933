"""ablate_best: an operator's edits left out of a history, the later windows rebased."""
from __future__ import annotations

import sys
from pathlib import Path

from asmevo.edits import Edit
from asmevo.targets.amdgpu import load, recover
from asmevo.targets.amdgpu.edits import apply_edits

ROOT = Path(__file__).resolve().parents[2]
MATMUL = ROOT / "experiments" / "kernels_naive" / "matmul" / "matmul.gfx942.co"


def _ablate():
    sys.path.insert(0, str(ROOT / "experiments"))
    import ablate_best
    return ablate_best


def _texts(prog):
    return [i.text for i in prog.function("matmul").instructions]


def _json(e: Edit, op: str) -> dict:
    return dict(e.to_json(), operator=op)


def test_left_out_edits_give_what_the_others_do_alone():
    """Leaving out a deletion and an insertion lands the kept edits on the same
    instructions they changed in the full history."""
    a = _ablate()
    k0 = recover(load(MATMUL.read_bytes()))
    n = len(_texts(k0))
    # full history: delete 2 lines at 4, insert 3 nops at 10 (current indices), then
    # rewrite the instruction at 20 and at n - 3 (current indices)
    hist = [Edit("matmul", 4, 6, (), "d"), Edit("matmul", 10, 10, ("s_nop 1",) * 3, "i"),
            Edit("matmul", 20, 21, ("s_nop 2",), "k"), Edit("matmul", n - 3, n - 2,
                                                            ("s_nop 3",), "k")]
    ops = ["gone", "gone", "kept", "kept"]
    rest = a.without([_json(e, o) for e, o in zip(hist, ops)], "gone")
    assert rest is not None and len(rest) == 2
    full = _texts(apply_edits(k0, hist))
    only = _texts(apply_edits(k0, [Edit.from_json(r) for r in rest]))
    # the kept rewrites replaced the same K0 instructions: index 20 of the full history is
    # K0's 19 (2 deleted before it, 3 inserted), n - 3 is K0's n - 4
    assert only[19] == "s_nop 2" and only[n - 4] == "s_nop 3"
    assert full[20] == "s_nop 2" and full[n - 3] == "s_nop 3"
    k0t = _texts(k0)
    assert only[:19] == k0t[:19] and only[20:n - 4] == k0t[20:n - 4]


def test_an_edit_on_top_of_left_out_lines_is_not_separable():
    a = _ablate()
    ins = _json(Edit("matmul", 10, 10, ("s_nop 1",) * 3, "i"), "gone")
    on_top = _json(Edit("matmul", 11, 12, ("s_nop 2",), "k"), "kept")
    assert a.without([ins, on_top], "gone") is None
    # a descriptor-only edit (empty window at 0) leaves every window where it was
    desc = _json(Edit("matmul", 0, 0, (), "lds"), "gone")
    rest = a.without([desc, on_top], "gone")
    assert [(r["start"], r["end"]) for r in rest] == [(11, 12)]
