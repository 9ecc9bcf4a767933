"""In-place patching: a candidate written straight into K0's ``.text`` bytes.

The route for K0s the rebuild cannot reproduce (:mod:`asmevo.targets.amdgpu.route`):
an edited function is laid out over K0's own bytes instead of being rebuilt.

- Every label keeps its K0 address, so every branch, from inside or outside
  the edited code, lands on the instruction the edited program puts after
  that label. Between two labels, the instructions that still match K0 at
  the start and at the end stay where they are; the rest (the patched range)
  is written over K0's bytes of that range and padded with ``s_nop 0``.
- K0 instructions keep their exact bytes, also when an edit moved them; a new
  line with the text of a K0 instruction takes that instruction's bytes (its
  text may not reassemble to them), and is refused when K0 has several
  encodings for that text. Other lines are encoded by llvm-mc.
- Branches (``s_branch``, ``s_cbranch_*``) in a patched range get their simm16
  recomputed for where they and their label lie.
- Any other operand that names a symbol (``x.incbin``, ``.``, ``a-b`` over labels) is
  refused: the assembler resolves it only against a whole file's symbols. Constant
  expressions (``1+2``, ``~0``, ``(1<<4)|1``) fold to the same bytes either way.

Descriptor, metadata and every byte outside the patched ranges stay K0's, so
the ABI is identical by construction. Refused, with the reason
(:class:`PatchError`): a patched range whose new code is longer than K0's
bytes for it, code that needs more registers than K0's descriptor allocates,
a descriptor change, a moved ``s_getpc_b64``/``s_swappc_b64``/``s_call_b64``
(they read their own address), a branch out of simm16 range.
"""
from __future__ import annotations

from dataclasses import dataclass

from asmevo.targets.amdgpu.errors import Refused
from asmevo.targets.amdgpu.assembly import UNIFIED_VGPR, required_blocks
from asmevo.targets.amdgpu.program import Function, Instruction, Label, Program
from asmevo.targets.amdgpu.sanitize import check_introduced, check_lines, encode_lines
from asmevo.targets.amdgpu.toolchain import Toolchain

S_NOP_0 = (0xBF800000).to_bytes(4, "little")
_POSITIONAL = ("s_getpc_b64", "s_swappc_b64", "s_call_b64")


class PatchError(Refused):
    """A candidate that cannot be written in place, with the reason."""


@dataclass(frozen=True)
class Patch:
    """Replace instructions ``[start, end)`` of ``kernel`` with ``lines``."""

    kernel: str
    start: int
    end: int
    lines: tuple[str, ...]


def patch(program: Program, p: Patch, *, tc: Toolchain | None = None) -> bytes:
    """K0's bytes with ``p`` applied in place (``program``: K0's recovery)."""
    co = program.source
    fn = program.function(p.kernel)
    ins = fn.instructions
    if not 0 <= p.start < p.end <= len(ins):
        raise PatchError(f"window [{p.start}, {p.end}) is outside the kernel's "
                         f"{len(ins)} instructions", kernel=p.kernel, path=co.path)
    inside = _labels_inside(fn, p.start, p.end)
    if inside:
        raise PatchError(f"window holds branch target(s) {', '.join(inside)}: patching "
                         "would move a label", kernel=p.kernel, address=ins[p.start].address)
    lines = check_lines(list(p.lines))
    check_introduced(lines, [i.text for i in ins[p.start:p.end]])
    new = [Instruction(text=t) for t in lines]
    return patch_program(program, program.replace_window(p.kernel, p.start, p.end, new), tc=tc)


def _labels_inside(fn: Function, start: int, end: int) -> list[str]:
    out, idx = [], 0
    for item in fn.items:
        if isinstance(item, Label):
            if start < idx < end:
                out.append(item.name)
        else:
            idx += 1
    return out


def patch_program(k0: Program, edited: Program, *, tc: Toolchain | None = None) -> bytes:
    """K0's bytes with every edited function of ``edited`` laid out in place.

    ``k0`` is K0's recovered program; ``edited`` is it after edits (the text-level
    program the static gate checked).
    """
    co = k0.source
    labels = _label_addresses(k0)
    data = bytearray(co.data)
    pending: list[tuple[Function, list[_Range]]] = []
    for fn in edited.functions:
        if not fn.edited:
            continue
        base = k0.function(fn.name)
        _check_resources(base, fn, co)
        pending.append((fn, _ranges(base, fn)))
    known = {fn.name: _k0_encodings(k0.function(fn.name)) for fn, _ in pending}
    texts = sorted({_norm(i.text) for fn, rs in pending for r in rs for i in r.new
                    if i.encoding is None and not i.is_branch
                    and _norm(i.text) not in known[fn.name]})
    encoded = _encode(texts, co, tc)
    for fn, ranges in pending:
        for r in ranges:
            blob = _lay_out(r, labels, known[fn.name], encoded, fn.name, co, tc)
            off = co.text.offset + (r.begin - co.text.addr)
            data[off:off + len(blob)] = blob
    return bytes(data)


@dataclass(frozen=True)
class _Range:
    """K0's bytes ``[begin, end)`` get the instructions ``new``."""

    begin: int
    end: int
    new: tuple[Instruction, ...]


def _segments(fn: Function, start: int, end: int) -> list[tuple[int, int, list[Instruction]]]:
    """(K0 address where it starts, where the next one starts, instructions) per
    stretch between labels (a label keeps its K0 address)."""
    out: list[tuple[int, int, list[Instruction]]] = []
    cur_start, cur = start, []
    for item in fn.items:
        if isinstance(item, Label):
            if item.address is None:
                raise PatchError(f"label {item.name} is not in K0", kernel=fn.name)
            out.append((cur_start, item.address, cur))
            cur_start, cur = item.address, []
        else:
            cur.append(item)
    out.append((cur_start, end, cur))
    return out


def _same(a: Instruction, b: Instruction) -> bool:
    return a.address == b.address and a.encoding == b.encoding and a.text == b.text


def _ranges(base: Function, fn: Function) -> list[_Range]:
    """The patched ranges of ``fn``: per stretch between labels, from the first to the
    last instruction that differs from K0's."""
    ins = base.instructions
    end = ins[-1].address + len(ins[-1].encoding) if ins else base.entry
    old = _segments(base, base.entry, end)
    new = _segments(fn, base.entry, end)
    if [(a, b) for a, b, _ in old] != [(a, b) for a, b, _ in new]:
        raise PatchError("the edit moves a label", kernel=fn.name)
    out = []
    for (begin, stop, was), (_, _, now) in zip(old, new):
        p = 0
        while p < min(len(was), len(now)) and _same(was[p], now[p]):
            p += 1
        s = 0
        while s < min(len(was), len(now)) - p and _same(was[-1 - s], now[-1 - s]):
            s += 1
        if p == len(was) == len(now):
            continue
        lo = was[p].address if p < len(was) else stop
        hi = was[len(was) - s].address if s else stop
        out.append(_Range(lo, hi, tuple(now[p:len(now) - s])))
    return out


def _label_addresses(program: Program) -> dict[str, int]:
    out = {}
    for fn in program.functions:
        out[fn.name] = fn.entry
        for item in fn.items:
            if isinstance(item, Label) and item.address is not None:
                out[item.name] = item.address
    return out


def _norm(text: str) -> str:
    return " ".join(text.split())


def _k0_encodings(fn: Function) -> dict[str, set[bytes]]:
    """Text -> the encodings K0 has for it (branches excluded: their bytes hold an offset)."""
    out: dict[str, set[bytes]] = {}
    for i in fn.instructions:
        if i.encoding is not None and not i.is_branch:
            out.setdefault(_norm(i.text), set()).add(i.encoding)
    return out


def _encode(texts: list[str], co, tc) -> dict[str, bytes]:
    """Each new line's bytes, assembled alone. A symbol operand, or an expression over
    one, is refused: alone the assembler leaves its bytes to the linker, and only a
    rebuild, which has every symbol, gives them as the assembler would."""
    out = {}
    for e in encode_lines(texts, co.target, tc=tc) if texts else ():
        if e.fixups:
            raise PatchError(f"{e.text!r}: operand {e.fixups[0]!r} is a symbol or an expression "
                             "over one, which the patch route cannot resolve (it assembles "
                             "each line alone)", path=co.path)
        out[e.text] = e.encoding
    return out


def _lay_out(r: _Range, labels, known, encoded, kernel: str, co, tc) -> bytes:
    """The bytes of one patched range, padded to its K0 size."""
    out = bytearray()
    for ins in r.new:
        at = r.begin + len(out)
        if ins.mnemonic.startswith(_POSITIONAL) and ins.address != at:
            raise PatchError(f"{ins.mnemonic} would move from "
                             f"{_where(ins.address)} to 0x{at:x}: it reads its own address",
                             kernel=kernel, path=co.path, address=at)
        if ins.is_branch:
            out += _branch(ins, at, labels, kernel, co, tc)
        elif ins.encoding is not None:
            out += ins.encoding
        elif _norm(ins.text) in known:
            encs = known[_norm(ins.text)]
            if len(encs) > 1:
                raise PatchError(f"{ins.text!r} stands for {len(encs)} different encodings in "
                                 "K0 (its text does not say which)", kernel=kernel,
                                 path=co.path, address=at)
            out += next(iter(encs))
        else:
            out += encoded[_norm(ins.text)]
    room = r.end - r.begin
    if len(out) > room:
        raise PatchError(f"the new code of 0x{r.begin:x}..0x{r.end:x} needs {len(out)} bytes, "
                         f"K0 has {room} there (labels and unchanged code on both sides "
                         "stay put)", kernel=kernel, path=co.path, address=r.begin)
    return bytes(out + S_NOP_0 * ((room - len(out)) // 4))


def _where(addr: int | None) -> str:
    return f"0x{addr:x}" if addr is not None else "nowhere (a new line)"


def _branch(ins: Instruction, at: int, labels, kernel: str, co, tc) -> bytes:
    """A SOPP branch at ``at`` to its label: K0's opcode word with a new simm16."""
    target = ins.branch_target or ""
    if target not in labels:
        raise PatchError(f"branch to unknown label {target!r}", kernel=kernel, path=co.path)
    delta = labels[target] - (at + 4)
    if delta % 4 or not -(1 << 15) <= delta // 4 < (1 << 15):
        raise PatchError(f"branch to {target} is out of range from 0x{at:x}", kernel=kernel,
                         path=co.path, address=at)
    word = ins.encoding
    if word is None:
        word = encode_lines([f"{ins.mnemonic} 0"], co.target, tc=tc)[0].encoding
    w = int.from_bytes(word[:4], "little")
    if len(word) != 4 or w >> 23 != 0x17F:        # SOPP: bits 31:23 = 0b101111111
        raise PatchError(f"{ins.text!r} is not a SOPP branch", kernel=kernel, address=at)
    return ((w & 0xFFFF0000) | ((delta // 4) & 0xFFFF)).to_bytes(4, "little")


def _check_resources(base: Function, fn: Function, co) -> None:
    """The patch keeps K0's descriptor: it must already cover the edited code."""
    if base.kernel is None:
        return
    if fn.kernel is not None and fn.kernel.descriptor != base.kernel.descriptor:
        raise PatchError("the patch route keeps K0's descriptor: descriptor edits need a "
                         "rebuild", kernel=fn.name, path=co.path)
    kd = base.kernel.descriptor
    need = required_blocks(kd, fn.register_usage(), co.target)
    have = (kd.granulated_workitem_vgpr_count, kd.granulated_wavefront_sgpr_count,
            kd.accum_offset if co.target.processor in UNIFIED_VGPR else 0)
    if need != have:
        raise PatchError("the edited code needs more registers than K0's descriptor "
                         f"allocates (granules v{need[0]} s{need[1]}, accum_offset {need[2]}; "
                         f"K0: v{have[0]} s{have[1]}, accum_offset {kd.accum_offset})",
                         kernel=fn.name, path=co.path)
