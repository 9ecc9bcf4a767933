"""Loading sm_90 cubins: kernels, parameters, shared memory, registers, corrupt input."""
from __future__ import annotations

import re
import struct

import pytest

from asmevo.targets.nvidia import tools
from asmevo.targets.nvidia.cubin import WORD_BYTES, CubinError, load
from tests.targets.nvidia.conftest import CUBINS, needs_nvdisasm


def test_corpus_is_built():
    assert len(CUBINS) >= 14, "run experiments/nvidia/build_sm90.py"


@pytest.mark.parametrize("path", CUBINS, ids=lambda p: p.parent.name)
def test_every_cubin_loads(path):
    c = load(path)
    assert c.sm == 90
    (k,) = c.kernels
    assert k.name == path.parent.name
    assert len(k.code) % WORD_BYTES == 0 and len(k.words) == len(k.code) // WORD_BYTES
    assert c.data[k.file_offset:k.file_offset + len(k.code)] == k.code
    assert [p.ordinal for p in k.params] == list(range(len(k.params)))
    assert k.param_size == max(p.offset + p.size for p in k.params)
    # Triton appends two pointer parameters (global and profile scratch)
    assert [p.size for p in k.params[-2:]] == [8, 8]
    assert k.regcount > 0
    for _name, positions, values in k.offset_lists:
        assert all(struct.unpack_from("<I", c.data, p)[0] == v for p, v in zip(positions, values))


def test_tri_add_layout():
    k = load(CUBINS[[p.parent.name for p in CUBINS].index("tri_add")]).kernel("tri_add")
    assert [(p.ordinal, p.offset, p.size) for p in k.params] == [
        (0, 0, 8), (1, 8, 8), (2, 16, 8), (3, 24, 4), (4, 32, 8), (5, 40, 8)]
    assert k.regcount == 26 and k.shared_size == 0 and k.req_ntid == (32, 1, 1)
    assert k.exit_offsets == (0x4D0, 0x4F0)


@needs_nvdisasm
@pytest.mark.parametrize("path", CUBINS[:4], ids=lambda p: p.parent.name)
def test_params_and_regcount_match_cuobjdump(path):
    """Differential check of the .nv.info decoder against cuobjdump -elf."""
    try:
        out = tools.run("cuobjdump", ["-elf", str(path)])
    except tools.ToolError as exc:
        pytest.skip(str(exc))
    k = load(path).kernels[0]
    want = sorted((int(o, 16), int(f, 16), int(s, 16)) for o, f, s in re.findall(
        r"Ordinal\s*:\s*(0x[0-9a-f]+)\s+Offset\s*:\s*(0x[0-9a-f]+)\s+Size\s*:\s*(0x[0-9a-f]+)",
        out))
    assert [(p.ordinal, p.offset, p.size) for p in k.params] == want
    assert f"register count: {k.regcount}" in out


def test_not_a_cubin_is_a_clear_error(tmp_path):
    with pytest.raises(CubinError, match="bad magic"):
        load(b"\0" * 100)
    amd = next((CUBINS[0].parent).glob("*.gfx942.co"), None)
    if amd is not None:
        with pytest.raises(CubinError, match="not an NVIDIA cubin"):
            load(amd)
    with pytest.raises(CubinError, match="cannot read"):
        load(tmp_path / "missing.cubin")


def test_truncated_cubin_is_a_clear_error():
    data = CUBINS[0].read_bytes()
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    for cut in (64, len(data) // 2, shoff + 70):
        with pytest.raises(CubinError):
            load(data[:cut])


def test_corrupt_nv_info_is_a_clear_error():
    from asmevo.targets.nvidia.cubin import parse_info
    with pytest.raises(CubinError, match="unknown record format"):
        parse_info(b"\x09\x17\x00\x00")
    with pytest.raises(CubinError, match="runs past"):
        parse_info(b"\x04\x17\xff\x00\x00\x00")
