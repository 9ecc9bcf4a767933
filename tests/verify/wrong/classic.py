"""The classes issue 15 found accepted (the verifier-coverage findings), each shown
wrong at the size under check: on inputs the verifier never sees, or with other
garbage in undefined state.

Classes:

* ``neg_inf_constant``: the -inf a max-reduction starts from becomes -FLT_MAX, a
  change only a whole row (or group) of -inf reaches.
* ``scalar_branch``: a scalar argument's register replaced by the spec's value,
  so the kernel is right only at that one value.
* ``canonicalize``: an LLVM canonicalize (``v_max_f32 x, y, y``) dropped; only a
  signalling NaN input tells.
* ``kernarg_tail``: a value read past the end of the kernarg segment folded into a
  scalar argument (a no-op while those bytes read as zeros).
* ``uninit_vgpr``: a never-written VGPR folded into the stored value.
* ``uninit_lds``: an LDS slot read before anything wrote it, folded into the value
  then written there.
"""
from __future__ import annotations

import re

import numpy as np

from asmevo.edits import Edit
from tests.verify.wrong.base import (Wrong, first_reader, free_sgpr, kernarg_pair, readers,
                                     scalar_registers)


# -- the classes ------------------------------------------------------------------------

def neg_inf_constant(fn, spec, **_) -> Wrong | None:
    for k, ins in enumerate(fn.instructions):
        if "0xff800000" in ins.text:
            new = ins.text.replace("0xff800000", "0xff7fffff")
            return Wrong("neg_inf_constant", (Edit(fn.name, k, k + 1, (new,)),),
                         f"#{k}: -inf -> -FLT_MAX", "inputs", _filled(spec))
    return None


def _filled(spec) -> tuple:
    """Witness inputs: every float input a whole buffer of -inf (then +inf, NaN), at
    the spec's scalar values and at other values of their domains."""
    from asmevo.launch.dtypes import is_float, path_values
    from asmevo.launch.spec import make_inputs
    out = []
    for seed in (0, 1, 2, 3):
        for j, label in enumerate(("all -inf", "all +inf", "all NaN")):
            vals = make_inputs(spec, seed)
            for a in spec.buffers:
                if not a.output and a.special and is_float(a.dtype):
                    vals[a.name] = np.full(a.count, path_values(a.dtype)[j],
                                           vals[a.name].dtype)
            out.append((f"{label}, scalars of seed {seed}", vals))
    return tuple(out)


def scalar_branch(fn, spec, kd, slots, **_) -> Wrong | None:
    """The first comparison that reads the scalar (else its first reader) takes the
    spec's value as a literal instead."""
    by_name = {a.name: a for a in spec.args}
    for name, r, load in scalar_registers(fn, kd, slots):
        a = by_name[name]
        if a.domain is None or a.dtype not in ("int32", "uint32"):
            continue
        found = [k for k in readers(fn, r, load) if "_e64" not in fn.instructions[k].text]
        if not found:
            continue
        cmps = [k for k in found if fn.instructions[k].mnemonic.startswith(("v_cmp", "s_cmp"))]
        k = (cmps or found)[0]
        t = fn.instructions[k].text
        lit = f"0x{int(a.value) & 0xFFFFFFFF:x}"
        new = re.sub(rf"(?<![\w\[:])s{r}(?![\w\]:])", lit, t, count=1)
        return Wrong("scalar_branch", (Edit(fn.name, k, k + 1, (new,)),),
                     f"#{k}: {name} (s{r}) -> {lit} in {fn.instructions[k].mnemonic}",
                     "inputs", _other_scalars(spec, name))
    return None


def _other_scalars(spec, name: str) -> tuple:
    from asmevo.launch.spec import make_inputs, scalar_values
    out = []
    for seed in (1, 2, 3, 4):
        vals = make_inputs(spec, 0)
        v = scalar_values(spec, seed)[name]
        if v != vals[name]:
            vals[name] = v
            out.append((f"{name}={v}", vals))
    return tuple(out)


def canonicalize(fn, spec, **_) -> Wrong | None:
    for k, ins in enumerate(fn.instructions):
        m = re.match(r"v_max_f32_e32 (v\d+), (v\d+), (v\d+)$", ins.text)
        if m and m.group(2) == m.group(3):
            new = () if m.group(1) == m.group(2) else (f"v_mov_b32_e32 {m.group(1)}, {m.group(2)}",)
            return Wrong("canonicalize", (Edit(fn.name, k, k + 1, new),),
                         f"#{k}: dropped {ins.text}", "inputs", _snan(spec))
    return None


def _snan(spec) -> tuple:
    from asmevo.launch.dtypes import bits_dtype, is_float, special_values
    from asmevo.launch.spec import make_inputs
    vals = make_inputs(spec, 0)
    hit = False
    for a in spec.buffers:
        if not a.output and a.special and is_float(a.dtype):
            sv = special_values(a.dtype)
            snan = next((v for v in sv.view(bits_dtype(a.dtype)) if _is_snan(int(v), a.dtype)),
                        None)
            if snan is not None:
                arr = vals[a.name].copy()
                arr.view(bits_dtype(a.dtype))[::2] = snan
                vals[a.name] = arr
                hit = True
    return (("sNaN in every other element", vals),) if hit else ()


def _is_snan(bits: int, dtype: str) -> bool:
    from asmevo.launch.dtypes import FLOATS
    f = FLOATS[dtype]
    if f.kind != "ieee":
        return False
    e = (bits >> f.man) & ((1 << f.exp) - 1)
    m = bits & ((1 << f.man) - 1)
    return e == (1 << f.exp) - 1 and m != 0 and not m >> (f.man - 1)


def kernarg_tail(fn, spec, kd, slots, segment: int, **_) -> Wrong | None:
    """Right after K0 loads a scalar, load the dword past the segment too (the kernarg
    pointer is still in place); just before the scalar's first use, fold its low bit
    in. Reading zeros there (the old emulator) leaves the scalar unchanged."""
    from asmevo.targets.amdgpu.analysis import regs as R
    from asmevo.targets.amdgpu.analysis.liveness import liveness
    f = free_sgpr(fn)
    if f is None:
        return None
    live = liveness(fn)
    kp = kernarg_pair(kd)
    for name, r, load in scalar_registers(fn, kd, slots):
        k = first_reader(fn, r, load)
        if k is None or live.before(k) & R.SCC_MASK:
            continue
        first = Edit(fn.name, load + 1, load + 1,
                     (f"s_load_dword s{f}, s[{kp}:{kp + 1}], 0x{segment:x}",))
        fold = Edit(fn.name, k + 1, k + 2, (
            "s_waitcnt lgkmcnt(0)", f"s_and_b32 s{f}, s{f}, 1", f"s_xor_b32 s{r}, s{r}, s{f}",
            fn.instructions[k].text))
        return Wrong("kernarg_tail", (first, fold),
                     f"#{k}: {name} ^= (kernarg byte {segment} & 1)", "garbage")
    return None


def _free_vgpr(fn) -> int:
    return fn.register_usage().vgprs


def uninit_vgpr(fn, spec, **_) -> Wrong | None:
    v = _free_vgpr(fn)
    for k, ins in enumerate(fn.instructions):
        m = re.match(r"global_store_dword (v\[\d+:\d+\]|v\d+), (v\d+), ", ins.text)
        if m:
            d = m.group(2)
            return Wrong("uninit_vgpr", (Edit(fn.name, k, k + 1, (
                "s_nop 4", f"v_max_f32_e32 {d}, {d}, v{v}", ins.text)),),
                f"#{k}: stored value max'ed with never-written v{v}", "garbage")
    return None


def uninit_lds(fn, spec, **_) -> Wrong | None:
    v = _free_vgpr(fn)
    for k, ins in enumerate(fn.instructions):
        m = re.match(r"ds_write_b32 (v\d+), (v\d+)$", ins.text)
        if m:
            addr, d = m.group(1), m.group(2)
            return Wrong("uninit_lds", (Edit(fn.name, k, k + 1, (
                f"ds_read_b32 v{v}, {addr}", "s_waitcnt lgkmcnt(0)",
                f"v_add_u32_e32 {d}, {d}, v{v}", ins.text)),),
                f"#{k}: LDS slot read before its first write, added in", "garbage")
    return None


CLASSES = {"neg_inf_constant": neg_inf_constant, "scalar_branch": scalar_branch,
           "canonicalize": canonicalize, "kernarg_tail": kernarg_tail,
           "uninit_vgpr": uninit_vgpr, "uninit_lds": uninit_lds}
