"""`asmevo verify` on a K0 that cannot be a reference: one line naming it, exit 2."""
from __future__ import annotations

from asmevo.cli import main
from asmevo.edits import Edit
from asmevo.targets.amdgpu import load, recover
from asmevo.targets.amdgpu.build import build_program
from asmevo.targets.amdgpu.edits import apply_edit
from tests.conftest import KERNELS

SPEC = KERNELS / "asm_copy" / "spec.toml"
K0 = KERNELS / "asm_copy" / "asm_copy.gfx942.co"


def test_a_k0_that_faults_on_every_input_set_is_bad_input(tmp_path, capsys):
    """A K0 that stores through a null pointer first: every reference run faults
    (a plain ValueError and a traceback before)."""
    program = recover(load(K0))
    null_store = ("v_mov_b32 v6, 0", "v_mov_b32 v7, 0", "global_store_dword v[6:7], v0, off",
                  "s_endpgm")
    bad = tmp_path / "faulting.co"
    bad.write_bytes(build_program(apply_edit(program, Edit("asm_copy", 0, 0, null_store))))
    assert main(["verify", str(SPEC), str(bad), str(K0), "--seeds", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(bad) in err
    assert "K0 itself fails on every input set" in err and "fault" in err


def test_a_missing_or_foreign_k1_is_bad_input_not_a_verdict(tmp_path, capsys):
    assert main(["verify", str(SPEC), str(K0), str(tmp_path / "none.co")]) == 2
    assert capsys.readouterr().err == (f"asmevo verify: error: {tmp_path / 'none.co'}: cannot read "
                                       "code object (No such file or directory)\n")
    text = tmp_path / "k1.co"
    text.write_text("not a code object")
    assert main(["verify", str(SPEC), str(K0), str(text)]) == 2
    assert "not an ELF file" in capsys.readouterr().err


def test_an_input_set_where_k0s_outputs_change_with_garbage_is_k0s_not_the_candidates(
        tmp_path, capsys):
    """tri_rotary with ``special = false`` taken off ``positions``: the special-value sets
    index outside its cos/sin caches, so K0's own outputs change with the garbage around
    them. Those sets are ones K0 itself fails (a note names them), not a nondeterministic
    verdict for every candidate, K0 itself included (as its stale sm_90 spec gave on the
    GPU)."""
    import shutil
    src = KERNELS / "tri_rotary"
    for f in ("spec.toml", "reference.py", "tri_rotary.gfx942.co"):
        shutil.copy(src / f, tmp_path / f)
    spec = tmp_path / "spec.toml"
    text = spec.read_text()
    assert text.count("special = false\n") == 1
    spec.write_text(text.replace("special = false\n", ""))
    k0 = tmp_path / "tri_rotary.gfx942.co"
    assert main(["verify", str(spec), str(k0), str(k0), "--seeds", "0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("verdict: equal"), out[:300]
    assert "K0 itself fails small, special_rows_inner (nondeterministic: K0's own outputs " \
           "change with the garbage" in out
