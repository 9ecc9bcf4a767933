import struct

import pytest

from asmevo.targets.amdgpu.kernargs import KernargError, pack, slots
from asmevo.targets.amdgpu import load
from asmevo.launch.spec import load_spec, make_inputs
from tests.conftest import KERNELS, corpus_specs


@pytest.mark.parametrize("path", corpus_specs(), ids=lambda p: p.parent.name)
def test_pack_places_every_argument_at_its_metadata_offset(path):
    spec = load_spec(path, "small")
    k = load(spec.code_object).kernel(spec.kernel)
    values = make_inputs(spec, 0)
    ptrs = {a.name: 0x1000_0000 * (i + 1) for i, a in enumerate(spec.args)}
    blob = pack(k, spec, values, ptrs)
    assert len(blob) >= k.kernarg_size
    for s, a in zip(slots(k, spec), spec.args):
        raw = blob[s.offset:s.offset + s.size]
        if a.kind == "buffer":
            assert struct.unpack("<Q", raw)[0] == ptrs[a.name]
        elif a.kind == "null":
            assert raw == bytes(s.size)
    for m in (k.meta.args if k.meta else ()):
        if m.value_kind == "hidden_block_count_x":
            assert int.from_bytes(blob[m.offset:m.offset + 4], "little") == spec.grid[0]
        if m.value_kind == "hidden_group_size_x":
            assert int.from_bytes(blob[m.offset:m.offset + 2], "little") == spec.block[0]


def test_arg_count_mismatch_is_an_error():
    spec = load_spec(KERNELS / "vector_add", "small")
    k = load(spec.code_object).kernel("vector_scale")
    if len(k.meta.explicit_args) != len(spec.args):
        with pytest.raises(KernargError, match="explicit arguments"):
            slots(k, spec)
