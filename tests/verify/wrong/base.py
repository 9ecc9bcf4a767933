"""What every class shares: the candidate value (:class:`Wrong`), the launches its
witness runs (:class:`Probe`), K0's kernel as the builders see it (:class:`Kernel`),
and small readers of K0's instructions."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from asmevo.edits import Edit


@dataclass(frozen=True)
class Probe:
    """One launch a witness runs K0 and the candidate on, directly on the emulator.

    ``member``: family parameter values ((name, value), ...) the launch is resolved at
    (empty: the size under check); ``seed``: its input set (:func:`make_inputs`), unless
    ``values`` gives the inputs; ``order``: workgroups one at a time in that order;
    ``aliases``: ((buffer, base, byte offset), ...) overlapping buffers, where K0 must
    give one result in lockstep, with workgroups one at a time in ascending and
    descending order, and with waves one at a time (lowest or highest first): else the
    launch is outside the kernel's contract and shows nothing; ``lanes``: the difference is the
    candidate's stores where lanes of one wave write one address with different values
    (K0 making none)."""

    label: str
    member: tuple = ()
    seed: int = 0
    values: object = field(default=None, compare=False, repr=False)
    order: str | None = None
    aliases: tuple = ()
    lanes: bool = False


@dataclass(frozen=True)
class Wrong:
    cls: str
    edits: tuple[Edit, ...]
    note: str
    witness: str                 # "inputs" | "garbage" | "launches"
    inputs: tuple = field(default=())   # for "inputs": (label, values) pairs
    probes: tuple[Probe, ...] = field(default=())   # for "launches"


@dataclass
class Kernel:
    """K0's kernel of one evaluation context, as the builders read it."""

    ctx: object
    state: object

    @property
    def fn(self):
        return self.state.program.function(self.state.spec.kernel)

    @property
    def spec(self):
        return self.state.spec

    @property
    def program(self):
        return self.state.program

    @cached_property
    def code(self):
        return self.state.code_object.kernel(self.spec.kernel)

    @property
    def kd(self):
        return self.code.descriptor

    @cached_property
    def slots(self) -> list[tuple[str, int, int]]:
        from asmevo.targets.amdgpu import kernargs
        return [(s.name, s.offset, s.size) for s in kernargs.slots(self.code, self.spec)]

    @cached_property
    def segment(self) -> int:
        from asmevo.targets.amdgpu import kernargs
        return kernargs.segment_size(self.code, self.spec)

    @cached_property
    def space(self):
        from asmevo.launch.spec import family_space
        return family_space(self.ctx.spec_path, self.ctx.size)

    @cached_property
    def liveness(self):
        from asmevo.targets.amdgpu.analysis.liveness import liveness
        return liveness(self.fn)

    @property
    def gfx942(self) -> bool:
        return "gfx94" in self.program.source.target.processor

    def texts(self) -> list[str]:
        return [i.text for i in self.fn.instructions]


# -- K0's registers ---------------------------------------------------------------------

def kernarg_pair(kd) -> int:
    """First SGPR of the kernarg segment pointer (AMDGPUUsage user SGPR order)."""
    return (4 * kd.enable_sgpr_private_segment_buffer + 2 * kd.enable_sgpr_dispatch_ptr
            + 2 * kd.enable_sgpr_queue_ptr)


def workgroup_id_sgprs(kd) -> dict[int, int]:
    """Grid dimension -> the SGPR the dispatch puts its workgroup id in (system SGPRs
    follow the user SGPRs: x, then y, then z, each where enabled)."""
    out, r = {}, kd.user_sgpr_count
    for d, on in enumerate((kd.enable_sgpr_workgroup_id_x, kd.enable_sgpr_workgroup_id_y,
                            kd.enable_sgpr_workgroup_id_z)):
        if on:
            out[d] = r
            r += 1
    return out


_SLOAD = re.compile(r"s_load_dword(x\d+)?\s+s(?:\[(\d+):\d+\]|(\d+)),\s*s\[(\d+):\d+\],\s*(0x[0-9a-f]+|\d+)$")


def scalar_registers(fn, kd, slots) -> list[tuple[str, int, int]]:
    """(argument, SGPR, index of its s_load) for scalar arguments K0 loads straight
    from the kernarg segment."""
    kp = kernarg_pair(kd)
    out = []
    for k, ins in enumerate(fn.instructions):
        m = _SLOAD.match(ins.text)
        if not m or int(m.group(4)) != kp:
            continue
        n = int(m.group(1)[1:]) if m.group(1) else 1
        first = int(m.group(2) if m.group(2) is not None else m.group(3))
        base = int(m.group(5), 0)
        for name, off, size in slots:
            if size == 4 and base <= off < base + 4 * n and (off - base) % 4 == 0:
                out.append((name, first + (off - base) // 4, k))
    return out


def names(op: str, r: int) -> str | None:
    """"exact" when operand ``op`` is s<r>, "range" when a range covers it."""
    op = op.strip()
    if op == f"s{r}":
        return "exact"
    m = re.fullmatch(r"s\[(\d+):(\d+)\]", op)
    if m and int(m.group(1)) <= r <= int(m.group(2)):
        return "range"
    return None


NO_DST = ("s_cmp", "s_bitcmp", "s_cbranch", "s_store", "global_store", "buffer_store",
          "flat_store", "ds_write", "v_cmpx")


def readers(fn, r: int, after: int) -> list[int]:
    """Instructions after ``after`` that read s<r> as a plain operand, up to the first
    that overwrites it or reads it as part of a register range."""
    out = []
    for k in range(after + 1, len(fn.instructions)):
        ins = fn.instructions[k]
        ops = ins.operands.split(",") if ins.operands else []
        no_dst = ins.mnemonic.startswith(NO_DST)
        srcs = ops if no_dst else ops[1:]
        if ins.mnemonic.startswith("v_cmp") and not no_dst and "_e64" not in ins.mnemonic:
            srcs = ops[1:]           # VOPC e32: vcc, src0, src1
        kinds = {names(o, r) for o in srcs} - {None}
        if kinds:
            if kinds != {"exact"}:
                break
            out.append(k)
        if ops and not no_dst and names(ops[0], r):
            break
    return out


def first_reader(fn, r: int, after: int) -> int | None:
    found = readers(fn, r, after)
    return found[0] if found else None


def substitute(text: str, reg: str, new: str, count: int = 1) -> str:
    """``text`` with its first ``count`` uses of the single register ``reg`` replaced."""
    return re.sub(rf"(?<![\w\[:]){reg}(?![\w\]:])", new, text, count=count)


def replace_source(text: str, reg: str, new: str) -> str:
    """``text`` with its first source operand ``reg`` (not a destination) replaced."""
    from asmevo.targets.amdgpu.analysis.effects import effects
    mnem, _, rest = text.partition(" ")
    parts = rest.split(", ")
    nd = effects(text).ndefs
    for j in range(nd, len(parts)):
        new_part = substitute(parts[j], reg, new)
        if new_part != parts[j]:
            parts[j] = new_part
            return f"{mnem} {', '.join(parts)}"
    return text


def free_sgpr(fn) -> int | None:
    n = fn.register_usage().sgprs
    return n if n < 96 else None


def free_vgprs(fn, count: int, align: int = 1) -> list[int]:
    """``count`` VGPRs above every one K0 names (the first aligned to ``align``)."""
    n = fn.register_usage().vgprs
    n += (-n) % align
    return list(range(n, n + count))


def is_vcc_dead(k: Kernel, at: int) -> bool:
    from asmevo.targets.amdgpu.analysis import regs as R
    return not (k.liveness.before(at) & R.VCC_MASK)


def is_scc_dead(k: Kernel, at: int) -> bool:
    from asmevo.targets.amdgpu.analysis import regs as R
    return not (k.liveness.before(at) & R.SCC_MASK)


# -- stores ---------------------------------------------------------------------------------

_STORE = re.compile(r"global_store_(dword|dwordx2|dwordx3|dwordx4|short|byte)\s+"
                    r"(v\[\d+:\d+\]|v\d+),\s*(v\[\d+:\d+\]|v\d+),\s*(off|s\[\d+:\d+\])(.*)$")


@dataclass(frozen=True)
class Store:
    index: int
    text: str
    width: str          # dword, dwordx2, ...
    vaddr: str          # v[a:b] (64-bit address) or vN (offset from saddr)
    vdata: str
    saddr: str          # "off" or s[a:b]
    tail: str           # " offset:N" and cache bits

    @property
    def address_registers(self) -> list[int]:
        return register_list(self.vaddr)

    @property
    def data_registers(self) -> list[int]:
        return register_list(self.vdata)

    def with_(self, vaddr: str | None = None, vdata: str | None = None) -> str:
        return (f"global_store_{self.width} {vaddr or self.vaddr}, {vdata or self.vdata}, "
                f"{self.saddr}{self.tail}")


def register_list(op: str) -> list[int]:
    m = re.fullmatch(r"v\[(\d+):(\d+)\]", op)
    if m:
        return list(range(int(m.group(1)), int(m.group(2)) + 1))
    return [int(op[1:])]


def stores(fn) -> list[Store]:
    out = []
    for k, ins in enumerate(fn.instructions):
        m = _STORE.match(ins.text)
        if m:
            out.append(Store(k, ins.text, *m.groups()))
    return out
