import pytest

from asmevo.targets.amdgpu import Instruction, load, recover
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
    with pytest.raises(PatchError, match=r"needs 8 bytes, K0 has 4 there"):
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


# --- the patch route, wired ------------------------------------------------------

import json  # noqa: E402

from asmevo.cli import main  # noqa: E402
from asmevo.edits import Edit  # noqa: E402
from asmevo.targets import get_target  # noqa: E402
from asmevo.targets.amdgpu.sanitize import encode_lines  # noqa: E402
from asmevo.verify.pipeline import candidate  # noqa: E402
from tests.conftest import ROOT  # noqa: E402

MXFP4 = ROOT / "tests" / "data" / "aiter_gfx950" / \
    "fmoe_bf16_pertokenMXfp4_g1u1_flat_novs_silu_16x128.co"


def _mxfp4():
    t = get_target("amdgpu")
    co = t.load(MXFP4.read_bytes(), path=str(MXFP4))
    return t, co, t.recover(co)


def _text_off(co, addr):
    return co.text.offset + addr - co.text.addr


def test_mxfp4_text_does_not_reassemble_to_its_bytes():
    """The problem itself: llvm-mc drops op_sel bits of the v_mfma_ld_scale_b32 half."""
    co = load(MXFP4)
    program = recover(co)
    scale = [i for i in program.kernels[0].instructions if i.mnemonic.startswith("v_mfma_scale")]
    assert len(scale) == 80 and all(i.raw for i in scale)      # kept as words for the rebuild
    lost = [i for i in scale if encode_lines([i.text], co.target)[0].encoding != i.encoding]
    assert len(lost) == 80
    first = lost[0]
    got = encode_lines([first.text], co.target)[0].encoding
    assert len(got) == len(first.encoding) == 16 and got[8:] == first.encoding[8:]
    assert got[:8] != first.encoding[:8]                       # the ld_scale word differs


def test_mxfp4_roundtrip_and_inspect_report_the_patch_route(capsys):
    assert main(["roundtrip", "--json", str(MXFP4)]) == 0     # identical with words...
    res = json.loads(capsys.readouterr().out)[0]
    assert res["identical"] and res["raw_instructions"] == 80
    assert res["route"].startswith("patch: 80 instructions' text does not reassemble")
    assert set(res["kernels"].values()) == {res["route"]}
    assert "LLVM" in res["llvm"]
    assert main(["inspect", str(MXFP4)]) == 0
    out = capsys.readouterr().out
    assert "  route       patch: 80 instructions' text does not reassemble" in out
    t, co, k0 = _mxfp4()
    assert k0.route.patch and not any(i.raw for i in k0.kernels[0].instructions)


def test_mxfp4_edit_is_patched_in_place():
    """Moving an MFMA keeps its exact bytes; nothing outside the two instructions changes."""
    t, co, k0 = _mxfp4()
    fn = k0.kernels[0]
    ins = fn.instructions
    i = next(k for k in range(len(ins) - 1) if ins[k].mnemonic.startswith("v_mfma_scale")
             and ins[k + 1].mnemonic == "s_mul_i32")
    a, b = ins[i], ins[i + 1]
    program, data, verdict = candidate(t, k0, [Edit(fn.name, i, i + 2, (b.text, a.text))], co)
    assert verdict is None and data is not None and len(data) == len(co.data)
    lo, hi = _text_off(co, a.address), _text_off(co, b.address) + len(b.encoding)
    assert data[:lo] == co.data[:lo] and data[hi:] == co.data[hi:]
    assert data[lo:hi] == b.encoding + a.encoding              # the MFMA's own 16 bytes
    assert t.abi_diff(co, t.load(data, path="K1")) == []
    swapped = recover(load(data)).function(fn.name).instructions
    assert [x.text for x in swapped[i:i + 2]] == [b.text, a.text]


def test_mxfp4_edit_too_large_is_refused_with_the_reason():
    t, co, k0 = _mxfp4()
    fn = k0.kernels[0]
    ins = fn.instructions
    j = next(k for k, x in enumerate(ins) if x.mnemonic == "s_nop" and k > 10)
    _, data, verdict = candidate(t, k0, [Edit(fn.name, j, j + 1, ("s_nop 0", "s_nop 1"))], co)
    assert data is None and verdict.status == "invalid"
    assert "patch route" in verdict.reason and "needs 8 bytes, K0 has 4" in verdict.reason
    assert verdict.details["route"] == "patch"


def test_moved_ambiguous_text_is_refused():
    """When two K0 encodings print the same text (AITer's larger MXfp4 kernels have
    three such pairs; here one is made by giving a second MFMA the first one's text),
    a line with that text is refused: which bytes it means is unknown."""
    from dataclasses import replace
    from asmevo.targets.amdgpu.patch import patch_program
    t, co, k0 = _mxfp4()
    fn = k0.kernels[0]
    ins = fn.instructions
    a, b = [x for x in ins if x.mnemonic.startswith("v_mfma_scale")][:2]
    assert a.encoding != b.encoding
    twin = replace(b, text=a.text)
    k0 = k0.with_function(replace(fn, items=tuple(twin if x is b else x for x in fn.items)))
    i = ins.index(a)
    edited = k0.replace_window(fn.name, i, i + 1, [Instruction(text=a.text)])
    with pytest.raises(PatchError, match="stands for 2 different encodings in K0"):
        patch_program(k0, edited)


def _with_priority(tmp_path):
    """vector_ops with wave priority 1 in vector_add's descriptor: a setting no
    assembler directive writes, so the rebuild cannot reproduce K0."""
    co = load(CO)
    k = co.kernel("vector_add")
    sec = next(s for s in co.sections.values() if s.addr <= k.kd_address < s.addr + s.size
               and s.size >= 64 and s.name != ".text")
    data = bytearray(co.data)
    data[sec.offset + k.kd_address - sec.addr + 49] |= 0x04   # COMPUTE_PGM_RSRC1.PRIORITY
    path = tmp_path / "vector_ops.priority.co"
    path.write_bytes(bytes(data))
    return path


def test_evaluation_takes_the_patch_route_automatically(tmp_path):
    from asmevo.verify.evaluate import EvalContext, build_candidate, evaluate_candidate
    k0_path = _with_priority(tmp_path)
    assert load(k0_path).kernel("vector_add").descriptor.priority == 1
    t = get_target("amdgpu")
    k0 = t.recover(t.load(k0_path.read_bytes(), path=str(k0_path)))
    assert k0.route.patch and "priority=1" in k0.route.reason
    ins = k0.function("vector_add").instructions
    i = next(k for k in range(len(ins) - 1) if ins[k].mnemonic == "v_lshl_add_u64"
             and ins[k + 1].mnemonic == "v_lshl_add_u64")
    edits = (Edit("vector_add", i, i + 2, (ins[i + 1].text, ins[i].text)),)
    ctx = EvalContext(spec_path=str(KERNELS / "vector_add"), code_object=str(k0_path),
                      seeds=(0,), special_values=False, runs=1, isolate=False,
                      timing="none")
    data, verdict = build_candidate(ctx, edits)
    assert verdict is None
    k0_bytes = k0_path.read_bytes()
    lo, hi = (load(k0_bytes).text.offset + ins[k].address - load(k0_bytes).text.addr
              for k in (i, i + 2))
    assert data != k0_bytes and data[:lo] == k0_bytes[:lo] and data[hi:] == k0_bytes[hi:]
    ev = evaluate_candidate(ctx, edits)
    assert ev.verdict.equal, ev.verdict
