import re
import subprocess

import pytest

from asmevo.targets.amdgpu import load
from asmevo.targets.amdgpu.descriptor import decode, encode
from tests.conftest import KERNELS, corpus_objects


@pytest.mark.parametrize("path", corpus_objects(), ids=lambda p: p.name)
def test_every_corpus_object_loads(path):
    co = load(path)
    assert co.kernels
    assert co.target.processor in ("gfx942", "gfx90a")
    assert co.code_object_version in (4, 5, 6)
    for k in co.kernels:
        assert encode(k.descriptor) == k.kd_bytes          # lossless decode
        assert decode(k.kd_bytes) == k.descriptor
        assert co.text.addr <= k.entry < k.code_end <= co.text.addr + co.text.size
        assert k.entry % 256 == 0


def _llvm_kd_directives(toolchain, path):
    out = toolchain.run("llvm-objdump", ["-D", "-j", ".rodata", str(path)]).stdout.decode()
    kds, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"\.amdhsa_kernel (\S+)", line.strip())
        if m:
            cur = kds.setdefault(m.group(1), {})
        m = re.match(r"\.amdhsa_(\w+) (\d+)$", line.strip())
        if m and cur is not None:
            cur[m.group(1)] = int(m.group(2))
    return kds


@pytest.mark.parametrize("path", corpus_objects(), ids=lambda p: p.name)
def test_descriptor_fields_agree_with_llvm_objdump(path, toolchain):
    """Differential test: our field decoding against LLVM's own kd disassembler."""
    co = load(path)
    theirs = _llvm_kd_directives(toolchain, path)
    mapping = {
        "group_segment_fixed_size": "group_segment_fixed_size",
        "private_segment_fixed_size": "private_segment_fixed_size",
        "kernarg_size": "kernarg_size",
        "float_denorm_mode_32": "float_denorm_mode_32",
        "float_denorm_mode_16_64": "float_denorm_mode_16_64",
        "dx10_clamp": "enable_dx10_clamp", "ieee_mode": "enable_ieee_mode",
        "system_sgpr_workgroup_id_x": "enable_sgpr_workgroup_id_x",
        "system_sgpr_workgroup_id_y": "enable_sgpr_workgroup_id_y",
        "system_vgpr_workitem_id": "enable_vgpr_workitem_id",
        "user_sgpr_kernarg_segment_ptr": "enable_sgpr_kernarg_segment_ptr",
        "user_sgpr_dispatch_ptr": "enable_sgpr_dispatch_ptr",
        "user_sgpr_kernarg_preload_length": "kernarg_preload_spec_length",
        "accum_offset": "accum_offset", "tg_split": "tg_split",
    }
    for k in co.kernels:
        d = theirs[k.name]
        for directive, field in mapping.items():
            if directive in d:
                assert getattr(k.descriptor, field) == d[directive], (k.name, directive)
        # granulated counts: LLVM prints next_free_* as (granule + 1) * block size
        assert d["next_free_sgpr"] == (k.descriptor.granulated_wavefront_sgpr_count + 1) * 8


def test_multi_kernel_object():
    co = load(KERNELS / "vector_add" / "vector_ops.gfx942.co")
    assert sorted(co.kernel_names) == ["vector_add", "vector_scale"]
    a, b = co.kernel("vector_add"), co.kernel("vector_scale")
    assert a.code_end <= b.entry or b.code_end <= a.entry


def test_handwritten_object_with_label_symbols_and_no_metadata_args():
    co = load(KERNELS / "asm_copy" / "asm_copy.gfx942.co")
    k = co.kernel("asm_copy")
    assert k.meta is not None and k.meta.kernarg_segment_size == 0 and not k.meta.args
    assert k.kernarg_size == k.descriptor.kernarg_size > 0
    assert any(name.startswith("label_") for name in co.labels.values())


def test_target_ids():
    co = load(KERNELS / "vector_add" / "vector_ops.gfx90a.co")
    assert co.target.processor == "gfx90a"
    assert co.target.triple_target.startswith("amdgcn-amd-amdhsa--gfx90a")


HIP_SRC = r'''
extern "C" __attribute__((global)) void k(float* p, int n) {
  int i = __builtin_amdgcn_workitem_id_x();
  if (i < n) p[i] = p[i] * 2.0f;
}
'''


@pytest.mark.parametrize("cov", [4, 5, 6])
def test_code_object_versions(cov, tmp_path, toolchain):
    from asmevo.targets.amdgpu.toolchain import find_clang
    clang = find_clang("gfx942")
    src = tmp_path / "k.hip"
    src.write_text(HIP_SRC)
    out = tmp_path / f"k{cov}.co"
    arch = "gfx942"
    subprocess.run([str(clang), "-x", "hip", f"--offload-arch={arch}", "-nogpulib", "-nogpuinc",
                    "--cuda-device-only", "--no-gpu-bundle-output", "-O2",
                    f"-mcode-object-version={cov}", str(src), "-o", str(out)], check=True)
    co = load(out)
    assert co.code_object_version == cov
    assert co.kernel_names == ["k"]
    assert co.kernel("k").meta.explicit_args[0].size == 8
    # and it rebuilds identically, like the corpus
    from asmevo.targets.amdgpu import recover
    from asmevo.targets.amdgpu.build import build_program
    from asmevo.targets.amdgpu.roundtrip import compare
    assert compare(co, load(build_program(recover(co)))).identical
