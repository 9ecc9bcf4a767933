import json
import struct

from asmevo.cli import main
from asmevo.targets.amdgpu import load, recover
from asmevo.targets.amdgpu.abi import abi_diff
from asmevo.targets.amdgpu.build import build_program
from asmevo.targets.amdgpu.occupancy import occupancy
from tests.conftest import KERNELS, corpus_objects

CO = KERNELS / "vector_add" / "vector_ops.gfx942.co"


def test_identical_rebuild_has_identical_abi():
    for path in corpus_objects():
        co = load(path)
        assert abi_diff(co, load(build_program(recover(co)))) == []


def test_abi_diff_names_the_field():
    co = load(CO)
    k = co.kernels[0]
    ro = next(s for s in co.sections.values() if s.addr <= k.kd_address < s.addr + s.size)
    data = bytearray(co.data)
    struct.pack_into("<I", data, ro.offset + (k.kd_address - ro.addr) + 8, 4096)  # kernarg_size
    diffs = abi_diff(co, load(bytes(data)))
    assert [d.field for d in diffs] == ["descriptor.kernarg_size"]
    assert diffs[0].kernel == k.name and "4096" in str(diffs[0])


def test_abi_diff_other_object():
    a = load(CO)
    b = load(KERNELS / "vector_add" / "vector_ops.gfx90a.co")
    fields = {d.field for d in abi_diff(a, b)}
    assert "target id" in fields


def test_occupancy_matches_register_use():
    co = load(KERNELS / "tri_matmul_fp16" / "tri_matmul_fp16.gfx942.co")
    occ = occupancy(co.kernels[0], co.target)
    assert 1 <= occ.waves_per_simd <= 8
    assert occ.vgprs >= co.kernels[0].meta.vgpr_count
    big = occupancy(co.kernels[0], co.target, workgroup_size=1024, dynamic_lds=60000)
    assert big.limited_by == "lds" and big.waves_per_simd == 4


def test_cli_inspect_text_and_json(capsys):
    assert main(["inspect", str(CO)]) == 0
    out = capsys.readouterr().out
    assert "kernel vector_add" in out and "kernel vector_scale" in out and "waves/SIMD" in out
    assert main(["inspect", str(CO), "--kernel", "vector_scale", "--json"]) == 0
    [s] = json.loads(capsys.readouterr().out)
    assert s["name"] == "vector_scale" and s["target"] == "gfx942"
    assert s["instructions"] > 5 and s["basic_blocks"] >= 2
    assert s["args"][0]["kind"] == "global_buffer"


def _agpr_kernel(with_count: bool) -> bytes:
    from asmevo.targets.amdgpu.assemble import build_asm
    from asmevo.targets.amdgpu.elf import TargetId
    from tests.emu import asmdsl
    text = asmdsl._TEMPLATE.format(
        body="v_accvgpr_write_b32 a5, 0\nv_mov_b32 v3, 0", proc="gfx942", ksize=8, lds=0, nv=24,
        acc=8, den32=3, vid=0, args="      []", directives="", usc=2)
    text = text.replace(".args:\n      []", ".args: []")
    if not with_count:
        text = text.replace("    .agpr_count: 0\n", "")
    return build_asm(text, TargetId(processor="gfx942"))


def test_inspect_derives_agprs_when_metadata_lacks_them():
    from asmevo.targets.amdgpu.summary import kernel_summaries, render
    co = load(_agpr_kernel(with_count=False))
    [s] = kernel_summaries(co, recover(co, verify=False))
    # a5 is the highest AGPR: 6; the descriptor allocates 24 VGPRs, AGPRs from accum_offset 8
    assert (s["agprs"], s["agprs_from"], s["agprs_allocated"]) == (6, "code and descriptor", 16)
    assert "agpr 6 [no .agpr_count" in render([s])
    co = load(_agpr_kernel(with_count=True))
    [s] = kernel_summaries(co, recover(co, verify=False))
    assert (s["agprs"], s["agprs_from"]) == (0, "metadata")
