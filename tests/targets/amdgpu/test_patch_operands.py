"""The patch route's operands: each kind builds to the rebuild route's bytes, or is refused.

The patch route assembles every new line alone; the rebuild assembles the whole
file. Where an operand's value does not depend on anything but the line
(registers, inline and literal constants, constant expressions, modifiers,
offsets), both must give the same bytes. Where it does (a symbol, the location
counter, a difference of labels), the line alone leaves placeholder bytes to a
linker: those were once read as hex (``x.incbin`` built as ``0x0a0a0a0a``), and
are now refused, naming the operand.
"""
from __future__ import annotations

import pytest

from asmevo.targets.amdgpu import Instruction, load, recover
from asmevo.targets.amdgpu.build import build_program
from asmevo.targets.amdgpu.patch import Patch, PatchError, patch
from asmevo.targets.amdgpu.sanitize import encode_lines
from tests.conftest import KERNELS

CO = KERNELS / "asm_copy" / "asm_copy.gfx942.co"
KERNEL = "asm_copy"
WINDOW = (13, 15)          # v_mov_b32 v3, 0 and a v_lshl_add_u64: 12 bytes, no label inside

SAME_BYTES = {
    "registers": "v_mov_b32_e32 v3, v1",
    "inline integer": "v_mov_b32_e32 v3, 64",
    "negative inline integer": "v_mov_b32_e32 v3, -16",
    "inline float": "v_mov_b32_e32 v3, -4.0",
    "hex literal": "v_mov_b32_e32 v3, 0x12345678",
    "decimal literal": "s_mov_b32 s11, 123456",
    "negative literal": "s_mov_b32 s11, -123456",
    "float literal": "v_mov_b32_e32 v3, 1.5",
    "constant expression": "s_mov_b32 s11, (1<<4)|1",
    "constant expression to a literal": "s_mov_b32 s11, 3*4000+2",
    "complement": "s_mov_b32 s11, ~0",
    "xor and subtraction": "s_mov_b32 s11, (5^3)-100",
    "expression folding to an inline constant": "s_mov_b32 s11, 60+4",
    "source modifiers": "v_add_f32_e64 v3, -v1, |v2|",
    "output modifiers": "v_mul_f32_e64 v3, v1, v2 clamp mul:2",
    "global offset": "global_load_dword v3, v[4:5], off offset:16",
    "smem offset": "s_load_dword s11, s[0:1], 0x14",
    "dpp": "v_mov_b32_dpp v3, v1 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf",
    "sdwa": "v_mov_b32_sdwa v3, v1 dst_sel:WORD_1 dst_unused:UNUSED_PAD src0_sel:BYTE_0",
    "counter operand": "s_waitcnt vmcnt(1) lgkmcnt(0)",
}

SYMBOLIC = {
    "symbol": ("s_mov_b32 s11, x.incbin", "x.incbin"),
    "location counter": ("s_mov_b32 s11, .", ".Ltmp0"),
    "label difference": ("s_mov_b32 s11, label_0070-label_002C", "label_0070-label_002C"),
    "kernel symbol": ("s_mov_b32 s11, asm_copy", "asm_copy"),
    "symbol in an expression": ("v_mov_b32_e32 v3, x+4", "x+4"),
}


@pytest.fixture(scope="module")
def k0():
    return recover(load(CO))


def _patched_and_rebuilt(k0, line: str) -> tuple[bytes, bytes, int]:
    """The new line's bytes in the patch route's object and in the rebuild's."""
    fn = k0.function(KERNEL)
    at = fn.instructions[WINDOW[0]].address
    size = len(encode_lines([line], k0.source.target)[0].encoding)
    patched = load(patch(k0, Patch(KERNEL, *WINDOW, (line,))))
    edited = k0.replace_window(KERNEL, *WINDOW, [Instruction(text=line)])
    rebuilt = load(build_program(edited, cache=False))
    off = at - patched.text.addr
    assert rebuilt.text.addr == patched.text.addr
    return patched.text.data[off:off + size], rebuilt.text.data[off:off + size], size


@pytest.mark.parametrize("kind", sorted(SAME_BYTES))
def test_operand_kind_builds_the_rebuild_routes_bytes(k0, kind):
    got, want, size = _patched_and_rebuilt(k0, SAME_BYTES[kind])
    assert size in (4, 8) and got == want


@pytest.mark.parametrize("kind", sorted(SYMBOLIC))
def test_symbolic_operand_is_refused_naming_it(k0, kind):
    line, operand = SYMBOLIC[kind]
    with pytest.raises(PatchError) as err:
        patch(k0, Patch(KERNEL, *WINDOW, (line,)))
    assert f"operand {operand!r}" in err.value.message
    assert "patch route cannot resolve" in err.value.message


def test_a_symbol_is_not_read_as_its_placeholder(k0):
    """The bug itself: the fixup's placeholder bytes A,A,A,A are never 0x0a0a0a0a."""
    enc = encode_lines(["s_mov_b32 s11, x.incbin"], k0.source.target)[0]
    literal = encode_lines(["s_mov_b32 s11, 0x0a0a0a0a"], k0.source.target)[0]
    assert enc.fixups == ("x.incbin",)
    assert enc.encoding[:4] == literal.encoding[:4] and enc.encoding[4:] == bytes(4)
    assert encode_lines(["s_mov_b32 s11, 0x0a0a0a0a"], k0.source.target)[0].fixups == ()


def test_the_rebuild_route_refuses_an_undefined_symbol_too(k0):
    """Where the patch route refuses a symbol, the rebuild has no bytes for it either."""
    from asmevo.errors import AsmevoError
    edited = k0.replace_window(KERNEL, *WINDOW, [Instruction(text="s_mov_b32 s11, x.incbin")])
    with pytest.raises(AsmevoError, match="x.incbin"):
        build_program(edited, cache=False)
