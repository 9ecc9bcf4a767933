"""Code objects for processors asmevo does not read: one line naming the file and the
processor, exit 2, from every command that loads one."""
from __future__ import annotations

import pytest

from asmevo.cli import main
from asmevo.targets.amdgpu.toolchain import ToolchainError, find_toolchain
from tests.conftest import KERNELS

KERNEL = """.amdgcn_target "amdgcn-amd-amdhsa--{cpu}"
.text
.globl k
.p2align 8
.type k,@function
k:
  s_endpgm
.rodata
.p2align 6
.amdhsa_kernel k
  .amdhsa_next_free_vgpr 1
  .amdhsa_next_free_sgpr 1
.end_amdhsa_kernel
.amdgpu_metadata
---
amdhsa.kernels:
  - .name: k
    .symbol: k.kd
    .kernarg_segment_size: 0
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .kernarg_segment_align: 4
    .wavefront_size: 32
    .sgpr_count: 1
    .vgpr_count: 1
    .max_flat_workgroup_size: 256
amdhsa.version: [1, 2]
...
.end_amdgpu_metadata
"""


def _built(tmp_path, cpu: str):
    """A one-instruction kernel for ``cpu``, assembled and linked by a real LLVM."""
    try:
        tc = find_toolchain(cpu)
    except ToolchainError as exc:
        pytest.skip(str(exc))
    src, obj, out = tmp_path / f"{cpu}.s", tmp_path / f"{cpu}.o", tmp_path / f"{cpu}.co"
    src.write_text(KERNEL.format(cpu=cpu))
    tc.run("llvm-mc", ["-triple=amdgcn-amd-amdhsa", f"--mcpu={cpu}", "-filetype=obj",
                       str(src), "-o", str(obj)])
    tc.run("ld.lld", ["-shared", str(obj), "-o", str(out)])
    return out


def _made_up(tmp_path):
    """vector_ops with EF_AMDGPU_MACH = 0xEE, a value no processor has."""
    data = bytearray((KERNELS / "vector_add" / "vector_ops.gfx942.co").read_bytes())
    data[48] = 0xEE                       # e_flags, lowest byte (64-bit ELF header)
    out = tmp_path / "madeup.co"
    out.write_bytes(bytes(data))
    return out


CASES = [("gfx1100", "processor gfx1100 (EF_AMDGPU_MACH=0x41) is not supported"),
         ("gfx1250", "processor gfx1250 (EF_AMDGPU_MACH=0x49) is not supported"),
         ("madeup", "unknown AMDGPU processor (EF_AMDGPU_MACH=0xee)")]


def _file(tmp_path, which):
    return _made_up(tmp_path) if which == "madeup" else _built(tmp_path, which)


def _one_line(capsys, path, what) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert str(path) in err and what in err, err
    return err


@pytest.mark.parametrize("which, what", CASES, ids=[c[0] for c in CASES])
def test_inspect_and_roundtrip(tmp_path, capsys, which, what):
    path = _file(tmp_path, which)
    assert main(["inspect", str(path)]) == 2
    _one_line(capsys, path, what)
    assert main(["roundtrip", str(path)]) == 2
    err = _one_line(capsys, path, what)
    assert err.count(str(path)) == 1


@pytest.mark.parametrize("which, what", CASES, ids=[c[0] for c in CASES])
def test_verify(tmp_path, capsys, which, what):
    path = _file(tmp_path, which)
    assert main(["verify", str(KERNELS / "vector_add"), str(path), str(path)]) == 2
    _one_line(capsys, path, what)


def test_run(tmp_path, capsys):
    path = _built(tmp_path, "gfx1250")
    cfg = tmp_path / "run.toml"
    cfg.write_text(f'''[run]
name = "gfx1250"
spec = "{KERNELS / 'vector_add'}"
code_object = "{path}"
size = "small"
[engine]
islands = 1
population = 2
generations = 1
[operators]
schedule = 1.0
[budget]
evaluations = 2
[parallel]
n_jobs = 1
''')
    assert main(["run", str(cfg), "--run-dir", str(tmp_path / "rd")]) == 2
    _one_line(capsys, path, "processor gfx1250")
