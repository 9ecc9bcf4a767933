"""In-place patching: new instructions written straight into K0's ``.text`` bytes.

Used when a rebuild cannot reproduce K0 (a descriptor field no directive
controls, an instruction llvm-mc encodes differently). The replacement may not
be longer than the window; the rest is padded with ``s_nop 0``. Descriptor,
metadata and every other byte of K0 stay untouched, so the ABI is identical by
construction. Refused, with the reason: a longer replacement, a window that
holds a branch target (a label would move or vanish), a window outside a
function.
"""
from __future__ import annotations

from dataclasses import dataclass

from asmevo.errors import AsmevoError
from asmevo.targets.amdgpu.program import BRANCH_PREFIXES, Program
from asmevo.targets.amdgpu.sanitize import check_introduced, check_lines, encode_lines
from asmevo.targets.amdgpu.toolchain import Toolchain

S_NOP_0 = (0xBF800000).to_bytes(4, "little")


class PatchError(AsmevoError):
    """A replacement that cannot be written in place, with the reason."""


@dataclass(frozen=True)
class Patch:
    """Replace instructions ``[start, end)`` of ``kernel`` with ``lines``."""

    kernel: str
    start: int
    end: int
    lines: tuple[str, ...]


def _label_addresses(program: Program) -> dict[str, int]:
    out = {}
    for fn in program.functions:
        out[fn.name] = fn.entry
        pending = []
        for item in fn.items:
            if hasattr(item, "encoding"):
                for name in pending:
                    out[name] = item.address
                pending = []
            else:
                pending.append(item.name)
    return out


def patch(program: Program, p: Patch, *, tc: Toolchain | None = None) -> bytes:
    """K0's bytes with ``p`` applied in place."""
    co = program.source
    fn = program.function(p.kernel)
    ins = fn.instructions
    if not 0 <= p.start < p.end <= len(ins):
        raise PatchError(f"window [{p.start}, {p.end}) is outside the kernel's "
                         f"{len(ins)} instructions", kernel=p.kernel, path=co.path)
    window = ins[p.start:p.end]
    if any(i.address is None for i in window):
        raise PatchError("window holds instructions that are not in K0", kernel=p.kernel)
    begin, finish = window[0].address, window[-1].address + len(window[-1].encoding)
    labels = _label_addresses(program)
    inside = sorted(n for n, a in labels.items() if begin < a < finish)
    if inside:
        raise PatchError(f"window holds branch target(s) {', '.join(inside)}: patching "
                         "would move a label", kernel=p.kernel, address=begin)
    lines = check_lines(list(p.lines))
    check_introduced(lines, [i.text for i in window])
    # Two passes: sizes first, then branch offsets from final addresses.
    sized = encode_lines([_numeric_branch(ln, 0) for ln in lines], co.target, tc=tc)
    addr, final = begin, []
    for ln, enc in zip(lines, sized):
        final.append(_numeric_branch(ln, addr, labels) if _is_branch(ln) else ln)
        addr += len(enc.encoding)
    encoded = encode_lines(final, co.target, tc=tc) if any(map(_is_branch, lines)) else sized
    blob = b"".join(e.encoding for e in encoded)
    room = finish - begin
    if len(blob) > room:
        raise PatchError(f"replacement is {len(blob)} bytes, the window only {room}",
                         kernel=p.kernel, address=begin)
    blob += S_NOP_0 * ((room - len(blob)) // 4)
    text = co.text
    off = text.offset + (begin - text.addr)
    return co.data[:off] + blob + co.data[off + room:]


def _is_branch(line: str) -> bool:
    return line.split(None, 1)[0].startswith(BRANCH_PREFIXES)


def _numeric_branch(line: str, addr: int, labels: dict[str, int] | None = None) -> str:
    """Branch lines with their label turned into the SOPP word offset from ``addr``."""
    if not _is_branch(line):
        return line
    mnemonic, _, target = line.partition(" ")
    target = target.strip()
    if labels is None:
        return f"{mnemonic} 0"
    if target not in labels:
        raise PatchError(f"branch to unknown label {target!r}")
    delta = labels[target] - (addr + 4)
    if delta % 4 or not -(1 << 15) <= delta // 4 < (1 << 15):
        raise PatchError(f"branch to {target} is out of range from 0x{addr:x}")
    return f"{mnemonic} {delta // 4}"
