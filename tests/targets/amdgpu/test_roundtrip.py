import json

import pytest

from asmevo.cli import main
from asmevo.targets.amdgpu import Instruction, load, recover
from asmevo.targets.amdgpu.assembly import to_asm
from asmevo.targets.amdgpu.build import build_program
from asmevo.targets.amdgpu.roundtrip import compare
from tests.conftest import corpus_objects


@pytest.mark.parametrize("path", corpus_objects(), ids=lambda p: p.name)
def test_corpus_rebuilds_byte_identical(path):
    co = load(path)
    program = recover(co)
    assert not any(i.raw for fn in program.functions for i in fn.instructions)
    cmp = compare(co, load(build_program(program, cache=False)))
    assert cmp.identical, [str(d) for d in cmp.differences]


@pytest.mark.parametrize("path", corpus_objects(), ids=lambda p: p.name)
def test_noop_edit_through_the_program_model(path):
    """parse -> print -> re-parse every line -> rebuild: what every edit goes through."""
    co = load(path)
    program = recover(co)
    for fn in program.functions:
        for block in fn.blocks():   # windows never cross a label
            cur = program.function(fn.name).instructions
            fresh = [Instruction(text=i.text) for i in cur[block.start:block.end]]
            program = program.replace_window(fn.name, block.start, block.end, fresh)
        assert program.function(fn.name).edited
    assert all(i.address is None for fn in program.functions for i in fn.instructions)
    cmp = compare(co, load(build_program(program, cache=False)))
    assert cmp.identical, [str(d) for d in cmp.differences]


def test_window_across_a_label_is_refused():
    from asmevo.targets.amdgpu.program import EditError
    program = recover(load(corpus_objects()[0]))
    fn, b = next((f, b) for f in program.functions for b in f.blocks()[1:]
                 if b.label and b.start > 0)
    with pytest.raises(EditError, match="crosses label"):
        program.replace_window(fn.name, b.start - 1, b.start + 1, [])


def test_difference_is_reported_with_offset():
    path = corpus_objects()[0]
    co = load(path)
    program = recover(co)
    fn = program.kernels[0]
    idx = next(i for i, ins in enumerate(fn.instructions) if ins.mnemonic == "s_endpgm")
    program = program.replace_window(fn.name, idx, idx, [Instruction("s_nop 3")])
    cmp = compare(co, load(build_program(program)))
    assert not cmp.identical
    d = next(d for d in cmp.differences if d.part == ".text")
    assert d.offset == fn.instructions[idx].address - co.text.addr
    assert d.got.startswith("0300")  # s_nop 3 = 0xbf800003, little endian


def test_printed_asm_is_self_contained():
    co = load(corpus_objects()[0])
    asm = to_asm(recover(co))
    assert asm.startswith('.amdgcn_target "amdgcn-amd-amdhsa--')
    assert ".amdhsa_kernel" in asm and ".amdgpu_metadata" in asm
    assert ".incbin" not in asm and ".include" not in asm


def test_cli_roundtrip_all_corpus(capsys):
    files = [str(p) for p in corpus_objects()]
    assert main(["roundtrip", "--json", *files]) == 0
    res = json.loads(capsys.readouterr().out)
    assert len(res) == len(files) and all(r["identical"] for r in res)


def test_cli_roundtrip_fails_on_bad_file(tmp_path, capsys):
    """Bad input is exit 2 with one stderr line naming the file (once); the good
    file's result still goes to stdout."""
    bad = tmp_path / "x.co"
    bad.write_bytes(b"not an elf")
    assert main(["roundtrip", str(corpus_objects()[0]), str(bad)]) == 2
    cap = capsys.readouterr()
    assert "IDENTICAL" in cap.out and str(bad) not in cap.out
    assert cap.err == f"asmevo roundtrip: error: {bad}: not an ELF file (bad magic)\n"
    assert main(["roundtrip", str(tmp_path / "missing.co")]) == 2
    assert "missing.co: cannot read file (No such file" in capsys.readouterr().err


TOP_SGPR_KERNEL = """
.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.amdhsa_code_object_version 5
.text
.globl hi
.p2align 8
.type hi,@function
hi:
  s_mov_b32 s101, 0
  s_mov_b64 vcc, 0
  s_endpgm
.rodata
.p2align 6
.amdhsa_kernel hi
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 102
  .amdhsa_reserve_vcc 1
  .amdhsa_accum_offset 8
.end_amdhsa_kernel
.amdgpu_metadata
---
amdhsa.kernels:
  - .name: hi
    .symbol: hi.kd
    .kernarg_segment_size: 0
    .kernarg_segment_align: 4
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 106
    .vgpr_count: 8
    .max_flat_workgroup_size: 64
amdhsa.version:
  - 1
  - 2
...
.end_amdgpu_metadata
"""


def test_top_sgpr_granule_reassembles():
    """106 SGPRs (granule 13) only fit with VCC reserved on top of next_free_sgpr 102."""
    from asmevo.targets.amdgpu.assemble import build_asm
    from asmevo.targets.amdgpu.elf import TargetId
    co = load(build_asm(TOP_SGPR_KERNEL, TargetId("gfx942")))
    assert co.kernels[0].descriptor.granulated_wavefront_sgpr_count == 13
    cmp = compare(co, load(build_program(recover(co), cache=False)))
    assert cmp.identical, [str(d) for d in cmp.differences]
