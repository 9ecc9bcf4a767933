"""The one control-flow graph: blocks cut once (Function.blocks), exits marked once."""
from __future__ import annotations

from asmevo.targets.amdgpu.analysis.cfg import build_cfg
from asmevo.targets.amdgpu.program import Label
from tests.targets.amdgpu.analysis.helpers import corpus_functions, make_fn


def _check_partition(name, f):
    ins = f.instructions
    cfg = build_cfg(f)
    blocks = cfg.blocks
    assert blocks[0].start == 0 and blocks[-1].end == len(ins), name
    assert all(a.end == b.start for a, b in zip(blocks, blocks[1:])), name
    label_at, idx = {}, 0
    for item in f.items:
        if isinstance(item, Label):
            label_at[item.name] = idx
        else:
            idx += 1
    assert {b.label: b.start for b in blocks if b.label is not None} == label_at, name
    for bi, b in enumerate(blocks):
        assert not any(i.ends_block for i in ins[b.start:b.end - 1]), (name, bi)
        assert b.end == b.start or b.label is not None or bi == 0 \
            or ins[b.start - 1].ends_block, (name, bi)
        assert all(cfg.block_of[k] == bi for k in range(b.start, b.end)), (name, bi)
        for s in cfg.succs[bi]:
            assert bi in cfg.preds[s], (name, bi, s)


def test_blocks_partition_the_corpus_functions():
    """Every corpus function: the blocks tile its instructions in order, every label
    starts one, a block starts only at a label or after an instruction that ends one,
    only a block's last instruction may end it, and the CFG's predecessors and
    block_of agree with the blocks."""
    for name, co, prog, f in corpus_functions():
        _check_partition(name, f)
    fn = make_fn("v_mov_b32_e32 v1, 0\ns_endpgm\nend:\nlast:")     # labels at the very end
    _check_partition("made", fn)
    assert [(b.label, b.start, b.end, b.successors) for b in fn.blocks()] == [
        (None, 0, 2, ()), ("end", 2, 2, ("last",)), ("last", 2, 2, ())]


def test_successors_and_exits():
    fn = make_fn("""
        s_cbranch_scc1 far
        s_cbranch_vccz near
        v_mov_b32_e32 v1, 0
    near:
        s_branch out
    out:
        s_swappc_b64 s[30:31], s[4:5]
        v_mov_b32_e32 v2, 0
        s_setpc_b64 s[30:31]
    done:
        s_endpgm
    tail:
        v_mov_b32_e32 v3, 0""")
    cfg = build_cfg(fn)
    got = [(b.label, b.start, b.end, b.successors) for b in cfg.blocks]
    assert got == [(None, 0, 1, ("far", "#1")), (None, 1, 2, ("near", "#2")),
                   (None, 2, 3, ("near",)), ("near", 3, 4, ("out",)), ("out", 4, 5, ()),
                   (None, 5, 7, ()), ("done", 7, 8, ()), ("tail", 8, 9, ())]
    assert cfg.succs == [[1], [3, 2], [3], [4], [], [], [], []]
    # a branch outside the function, a call (no edge to its return point), a return,
    # running off the end: exits; s_endpgm is not one
    assert cfg.exits == [True, False, False, False, True, True, False, True]
    assert cfg.reachable == [True, True, True, True, True, False, False, False]
