"""Metadata bombs: a code object whose small metadata note asks for far more.

A 20 MB note of empty maps needed more than 4 GB to decode; 2M keys in one map
kept llvm-mc busy for minutes on rebuild (its time grows with the square of a
map's keys). The note is now walked header by header before msgpack builds
anything (``asmevo.targets.amdgpu.metadata.check_shape``): bytes, items, keys per
map and nesting against ``ASMEVO_MAX_METADATA_*``. Each bomb is one line naming
the file and the knob, exit 2, in well under a second of decoding; a map at the
key limit still round-trips, and llvm-mc takes it quickly.
"""
from __future__ import annotations

import resource
import time

import msgpack
import pytest

from asmevo.targets.amdgpu import load, recover
from asmevo.targets.amdgpu.build import build_program
from asmevo.targets.amdgpu.metadata import MetadataError, check_shape
from asmevo.targets.amdgpu.roundtrip import compare
from tests.conftest import KERNELS
from tests.hostile import checked
from tests.targets.amdgpu.elfedit import replace_amdgpu_note

BASE = KERNELS / "asm_copy" / "asm_copy.gfx942.co"
KERNELS_KEY = b"\xaeamdhsa.kernels"                   # fixstr of 14 bytes


def _array32(n: int, item: bytes) -> bytes:
    return b"\xdd" + n.to_bytes(4, "big") + item * n


def _map32_int_keys(n: int) -> bytes:
    """A map of ``n`` keys 0..n-1 (uint32 keys, nil values)."""
    return b"\xdf" + n.to_bytes(4, "big") + b"".join(
        b"\xce" + k.to_bytes(4, "big") + b"\xc0" for k in range(n))


BOMBS = {
    # 20 MB of empty maps: was > 4 GB of Python dicts
    "empty-maps-20MB": (b"\x81" + KERNELS_KEY + _array32(20_000_000, b"\x80"),
                        "metadata note: 20,000,021 bytes is over the limit of 4,194,304 "
                        "(set ASMEVO_MAX_METADATA_BYTES to raise it)"),
    # within the bytes, 1M items
    "empty-maps-1M": (b"\x81" + KERNELS_KEY + _array32(1_000_000, b"\x80"),
                      "metadata: 1,000,002 keys, values and list elements is over the limit "
                      "of 200,000 (set ASMEVO_MAX_METADATA_ITEMS to raise it)"),
    # 400k keys in one map (llvm-mc: minutes on rebuild)
    "keys-400k": (b"\x82" + KERNELS_KEY + b"\x90" + b"\xa1x" + _map32_int_keys(400_000),
                  "metadata: 400,000 keys in one map is over the limit of 4,096 "
                  "(set ASMEVO_MAX_METADATA_MAP_KEYS to raise it)"),
    "nested-100k": (b"\x81" + KERNELS_KEY + b"\x91" * 100_000 + b"\x90",
                    "metadata: 33 levels of nesting is over the limit of 32 "
                    "(set ASMEVO_MAX_METADATA_DEPTH to raise it)"),
    "claims-4G-items": (b"\x81" + KERNELS_KEY + b"\xdd\xff\xff\xff\xff",
                        "metadata: 4,294,967,297 keys, values and list elements is over the "
                        "limit of 200,000 (set ASMEVO_MAX_METADATA_ITEMS to raise it)"),
    "truncated": (b"\x81" + KERNELS_KEY + b"\xdc\x00\x05\x01",
                  "metadata note is not valid msgpack (a container of 5 items in 1 bytes)"),
}


@pytest.mark.parametrize("name", sorted(BOMBS))
@pytest.mark.parametrize("command", ["inspect", "roundtrip"])
def test_a_metadata_bomb_is_one_line_and_costs_nothing(tmp_path, name, command):
    note, message = BOMBS[name]
    path = tmp_path / f"{name}.co"
    path.write_bytes(replace_amdgpu_note(BASE.read_bytes(), note))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.monotonic()
    out = checked([command, str(path)], seconds=20)
    assert time.monotonic() - t0 < 5
    assert out.code == 2 and out.error_lines == [f"asmevo {command}: error: {path}: {message}"]
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before     # KiB
    assert grown < 400 * 1024, grown           # the note's bytes, a few copies; no decoding


def test_the_keys_limit_is_what_the_knob_says(monkeypatch):
    note = b"\x82" + KERNELS_KEY + b"\x90" + b"\xa1x" + _map32_int_keys(5000)
    with pytest.raises(MetadataError, match="5,000 keys in one map"):
        check_shape(note)
    monkeypatch.setenv("ASMEVO_MAX_METADATA_MAP_KEYS", "5000")
    check_shape(note)
    monkeypatch.setenv("ASMEVO_MAX_METADATA_ITEMS", "9999")
    with pytest.raises(MetadataError, match="10,004 keys, values and list elements"):
        check_shape(note)


def test_a_map_at_the_key_limit_still_round_trips_quickly():
    """4,096 extra keys in the top map: accepted, rebuilt identical, llvm-mc fast."""
    co = load(BASE)
    doc = dict(co.metadata, **{f"x.key{k}": k for k in range(4096 - len(co.metadata))})
    bomb = load(replace_amdgpu_note(BASE.read_bytes(), msgpack.packb(doc)), path="limit.co")
    t0 = time.monotonic()
    rebuilt = build_program(recover(bomb), cache=False)
    assert time.monotonic() - t0 < 10
    assert compare(bomb, load(rebuilt)).identical and len(load(rebuilt).metadata) == 4096


def test_real_metadata_is_far_inside_every_limit():
    for path in sorted(KERNELS.glob("*/*.co")):
        check_shape(msgpack.packb(load(path).metadata), path=str(path))
