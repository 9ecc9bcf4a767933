import pytest

from asmevo.targets.amdgpu import load, recover
from asmevo.targets.amdgpu.abi import abi_diff
from asmevo.targets.amdgpu.disasm import disassemble
from asmevo.targets.amdgpu.patch import Patch, PatchError, patch
from asmevo.targets.amdgpu.sanitize import UnsafeEdit
from tests.conftest import KERNELS

CO = KERNELS / "vector_add" / "vector_ops.gfx942.co"


def _window(program, name, mnemonic_prefix, length):
    fn = program.function(name)
    ins = fn.instructions
    for i in range(len(ins) - length):
        if ins[i].mnemonic.startswith(mnemonic_prefix):
            return i, ins[i:i + length]
    raise AssertionError("no window")


def test_patch_in_place_pads_with_nops(toolchain):
    co = load(CO)
    program = recover(co)
    start, window = _window(program, "vector_add", "v_add_f32", 1)
    # v_add_f32_e32 is 4 bytes; replace a 2-instruction window by one instruction
    fn = program.function("vector_add")
    two = fn.instructions[start:start + 2]
    size = sum(len(i.encoding) for i in two)
    new = "v_sub_f32_e32 " + two[0].operands
    out = patch(program, Patch("vector_add", start, start + 2, (new,)))
    k1 = load(out)
    assert abi_diff(co, k1) == []
    assert len(out) == len(co.data)
    lines = {ln.address: ln for ln in disassemble(toolchain, out, co.target)}
    a = two[0].address
    assert lines[a].text.startswith("v_sub_f32_e32")
    pad = [ln.text for addr, ln in sorted(lines.items()) if a < addr < a + size]
    assert pad == ["s_nop 0"] * ((size - 4) // 4)
    # everything else unchanged
    text = co.text
    off = text.offset + a - text.addr
    assert out[:off] == co.data[:off] and out[off + size:] == co.data[off + size:]


def test_patch_refuses_longer_replacement():
    co = load(CO)
    program = recover(co)
    start, _ = _window(program, "vector_add", "v_add_f32", 1)
    with pytest.raises(PatchError, match="bytes, the window only"):
        patch(program, Patch("vector_add", start, start + 1,
                             ("v_add_f32_e32 v1, v2, v3", "v_add_f32_e32 v1, v2, v3")))


def test_patch_refuses_window_holding_a_branch_target():
    co = load(CO)
    program = recover(co)
    fn = program.function("vector_add")
    # find a label and take a window straddling it
    idx = 0
    for item in fn.items:
        if hasattr(item, "encoding"):
            idx += 1
        elif idx > 0:
            break
    with pytest.raises(PatchError, match="branch target"):
        patch(program, Patch("vector_add", idx - 1, idx + 1, ("s_nop 0",)))


def test_patch_refuses_directives_and_garbage():
    co = load(CO)
    program = recover(co)
    start, _ = _window(program, "vector_add", "v_add_f32", 1)
    for bad in ('.incbin "/etc/passwd"', "label_1:", "v_add_f32 v1, v2, v3; s_endpgm",
                "v_not_an_instruction v1"):
        with pytest.raises(UnsafeEdit):
            patch(program, Patch("vector_add", start, start + 1, (bad,)))


def test_patch_with_branch_keeps_target():
    co = load(KERNELS / "asm_copy" / "asm_copy.gfx942.co")
    program = recover(co)
    fn = program.function("asm_copy")
    ins = fn.instructions
    b = next(i for i, x in enumerate(ins) if x.is_branch)
    out = patch(program, Patch("asm_copy", b, b + 1, (ins[b].text,)))
    assert out == co.data   # re-encoding the same branch gives the same bytes


def test_unknown_kernel_is_a_clear_error():
    program = recover(load(CO))
    from asmevo.errors import AsmevoError
    with pytest.raises(AsmevoError, match="no kernel named 'nope'"):
        patch(program, Patch("nope", 0, 1, ("s_nop 0",)))
