"""Bad input never escapes as a raw traceback: pyelftools-style corrupt-file tests."""
import random
import struct
import sys

import pytest

from asmevo.cli import main
from asmevo.errors import AsmevoError
from asmevo.targets.amdgpu import CodeObjectError, load, recover
from tests.conftest import KERNELS, corpus_objects

SAMPLE = KERNELS / "vector_add" / "vector_ops.gfx942.co"


def _expect_clear_error(data, path="fuzz.co"):
    try:
        co = load(data, path=path)
    except CodeObjectError as exc:
        assert path in str(exc)
        return "error"
    except AsmevoError as exc:   # e.g. a DescriptorError/MetadataError subclass
        assert path in str(exc)
        return "error"
    assert co.kernels
    return "loaded"


def test_not_an_elf():
    with pytest.raises(CodeObjectError, match="not an ELF"):
        load(b"hello world" * 10, path="x.co")


def test_empty_and_missing_file(tmp_path):
    with pytest.raises(CodeObjectError, match="not an ELF"):
        load(b"", path="empty.co")
    with pytest.raises(CodeObjectError, match="cannot read"):
        load(tmp_path / "missing.co")


def test_host_executable_is_refused():
    data = open(sys.executable, "rb").read()
    with pytest.raises(CodeObjectError, match="not an AMDGPU code object"):
        load(data, path=sys.executable)


@pytest.mark.parametrize("machine,what", [(62, "x86-64"), (190, "NVIDIA cubin")])
def test_foreign_machines(machine, what):
    data = bytearray(SAMPLE.read_bytes())
    struct.pack_into("<H", data, 18, machine)
    with pytest.raises(CodeObjectError, match=what):
        load(bytes(data), path="foreign.co")


def test_corrupt_note_is_reported():
    co = load(SAMPLE)
    note = co.sections[".note"]
    data = bytearray(co.data)
    # smash the msgpack payload (after the 12-byte header and the 8-byte "AMDGPU\0\0" name)
    start = note.offset + 20
    data[start:start + 16] = b"\xc1" * 16   # 0xc1 is never valid msgpack
    with pytest.raises(AsmevoError, match="metadata"):
        load(bytes(data), path="badnote.co")


def test_corrupt_descriptor_entry_is_reported():
    co = load(SAMPLE)
    k = co.kernels[0]
    ro = next(s for s in co.sections.values() if s.addr <= k.kd_address < s.addr + s.size)
    data = bytearray(co.data)
    off = ro.offset + (k.kd_address - ro.addr) + 16      # kernel_code_entry_byte_offset
    struct.pack_into("<q", data, off, 1 << 40)
    with pytest.raises(CodeObjectError, match="entry .* outside .text"):
        load(bytes(data), path="badkd.co")


def test_hundreds_of_truncations_and_bit_flips():
    rng = random.Random(1234)
    outcomes = {"error": 0, "loaded": 0}
    for path in corpus_objects():
        data = path.read_bytes()
        for _ in range(12):
            cut = rng.randrange(0, len(data))
            outcomes[_expect_clear_error(data[:cut])] += 1
        for _ in range(12):
            flipped = bytearray(data)
            for _ in range(rng.choice([1, 4, 32])):
                i = rng.randrange(len(flipped))
                flipped[i] ^= 1 << rng.randrange(8)
            outcomes[_expect_clear_error(bytes(flipped))] += 1
    assert sum(outcomes.values()) >= 500
    assert outcomes["error"] > 100 and outcomes["loaded"] > 10


def test_bit_flips_through_the_whole_pipeline():
    """Flipped files that still load must recover or fail with our error, never crash."""
    rng = random.Random(99)
    data = SAMPLE.read_bytes()
    co = load(data)
    text = co.text
    for _ in range(25):
        flipped = bytearray(data)
        i = rng.randrange(text.offset, text.offset + text.size)   # inside .text
        flipped[i] ^= 1 << rng.randrange(8)
        try:
            recover(load(bytes(flipped), path="flip.co"))
        except AsmevoError as exc:
            assert "flip.co" in str(exc)


def test_cli_exit_code_2_on_bad_input(tmp_path, capsys):
    bad = tmp_path / "trunc.co"
    bad.write_bytes(SAMPLE.read_bytes()[:300])
    assert main(["inspect", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "Traceback" not in err
    assert main(["inspect", str(SAMPLE), "--kernel", "missing"]) == 2
    assert "no kernel named 'missing'" in capsys.readouterr().err
