"""A tiny assembly DSL for instruction tests: a few lines of gfx942 asm become a
one-kernel code object (real llvm-mc + ld.lld), run on the emulator with
chosen register values, and the final registers come back.

    out = run_asm("v_add_f32_e32 v2, v0, v1", v={0: a, 1: b})
    out.v(2)          # (64,) uint32 of wave 0
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asmevo.emu.run.dispatch import initial_state, setup
from asmevo.emu.run.image import decoded_image
from asmevo.emu.run.scheduler import Budget, run_batch
from asmevo.emu.machine.state import EXEC
from asmevo.targets.amdgpu.assemble import build_asm
from asmevo.targets.amdgpu.codeobject import load
from asmevo.targets.amdgpu.elf import TargetId
from asmevo.targets.amdgpu.recover import recover
from asmevo.launch.spec import ArgSpec, LaunchSpec

_TEMPLATE = """.amdgcn_target "amdgcn-amd-amdhsa--{proc}"
.amdhsa_code_object_version 5
.text
.globl k
.p2align 8
.type k,@function
k:
{body}
    s_endpgm
.Lk_end:
.size k, .Lk_end - k
.rodata
.p2align 6
.amdhsa_kernel k
{directives}
    .amdhsa_user_sgpr_kernarg_segment_ptr 1
    .amdhsa_user_sgpr_count {usc}
    .amdhsa_system_sgpr_workgroup_id_x 1
    .amdhsa_system_vgpr_workitem_id {vid}
    .amdhsa_kernarg_size {ksize}
    .amdhsa_group_segment_fixed_size {lds}
    .amdhsa_next_free_vgpr {nv}
    .amdhsa_next_free_sgpr 96
    .amdhsa_accum_offset {acc}
    .amdhsa_float_denorm_mode_32 {den32}
    .amdhsa_reserve_vcc 1
.end_amdhsa_kernel
.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.target: amdgcn-amd-amdhsa--{proc}
amdhsa.kernels:
  - .name: k
    .symbol: k.kd
    .kernarg_segment_size: {ksize}
    .kernarg_segment_align: 8
    .group_segment_fixed_size: {lds}
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 96
    .vgpr_count: {nv}
    .agpr_count: 0
    .max_flat_workgroup_size: 1024
    .args:
{args}
...
.end_amdgpu_metadata
"""


def build_kernel(body: str, *, buffers: int = 0, lds: int = 0, nv: int = 64, acc: int = 64,
                 den32: int = 3, vid: int = 0, proc: str = "gfx942", directives: str = "",
                 user_sgprs: int = 2) -> bytes:
    args = "\n".join(f"      - {{ .offset: {8 * i}, .size: 8, .value_kind: global_buffer, "
                     f".address_space: global }}" for i in range(buffers)) or "      []"
    if buffers == 0:
        args = "      []"
    text = _TEMPLATE.format(body=body, proc=proc, ksize=max(8 * buffers, 8), lds=lds, nv=nv,
                            acc=acc, den32=den32, vid=vid, args=args,
                            directives=directives, usc=user_sgprs)
    text = text.replace(".args:\n      []", ".args: []")
    return build_asm(text, TargetId(processor=proc))


@dataclass
class Out:
    st: object
    launch: object
    result_buffers: dict

    def v(self, r: int, wave: int = 0) -> np.ndarray:
        return self.st.v[r, wave].copy()

    def vf(self, r: int, wave: int = 0) -> np.ndarray:
        return self.v(r, wave).view(np.float32)

    def s(self, r: int, wave: int = 0) -> int:
        return int(self.st.s[r, wave])

    def scc(self, wave: int = 0) -> bool:
        return bool(self.st.scc[wave])

    def buf(self, name: str) -> np.ndarray:
        return self.result_buffers[name]


def run_asm(body: str, *, v: dict | None = None, s: dict | None = None, exec_mask: int | None = None,
            buffers: dict[str, np.ndarray] | None = None, ptrs: dict[str, int] | None = None,
            block: int = 64, grid: int = 1, lds: int = 0, den32: int = 3,
            max_instructions: int = 100_000, proc: str = "gfx942", directives: str = "",
            approx_variant: int = 0, user_sgprs: int = 2) -> Out:
    """Run ``body`` (asm lines; s_endpgm appended) and return the final state.

    ``v``/``s`` set registers after dispatch (a VGPR value may be a scalar or 64 lanes),
    ``buffers`` are allocated (contents copied in) and ``ptrs`` puts a buffer's address in
    an SGPR pair; the kernarg segment holds the buffers' addresses in order.
    ``directives`` go into the kernel descriptor (e.g. ``.amdhsa_ieee_mode 0``);
    ``approx_variant`` selects the approximate-instruction family member.
    """
    buffers = buffers or {}
    co = load(build_kernel(body, buffers=len(buffers), lds=lds, den32=den32, proc=proc,
                           directives=directives, user_sgprs=user_sgprs))
    prog = recover(co, verify=False)
    img = decoded_image(prog)
    args = tuple(ArgSpec(name=n, kind="buffer", dtype=str(a.dtype), count=a.size)
                 for n, a in buffers.items())
    spec = LaunchSpec(name="t", kernel="k", code_object=None, grid=(grid, 1, 1),
                      block=(block, 1, 1), args=args)
    ln = setup(co, co.kernel("k"), spec, dict(buffers))
    ln.approx_variant = approx_variant
    st = initial_state(ln, 0, grid, 128)
    for r, val in (v or {}).items():
        st.v[r] = np.asarray(val, dtype=np.asarray(val).dtype).view(np.uint32) \
            if np.asarray(val).dtype.itemsize == 4 else np.asarray(val).astype(np.uint32)
    for r, val in (s or {}).items():
        st.s[r] = np.uint32(val & 0xFFFFFFFF) if isinstance(val, int) else \
            np.asarray(val).view(np.uint32)
    for name, reg in (ptrs or {}).items():
        base = ln.buffers[name].base
        st.s[reg], st.s[reg + 1] = base & 0xFFFFFFFF, base >> 32
    if exec_mask is not None:
        st.s[EXEC], st.s[EXEC + 1] = exec_mask & 0xFFFFFFFF, exec_mask >> 32
        st.refresh_exec(slice(None))
    n = len(img.code)
    run_batch(img, st, ln, img.entry_index("k"), np.zeros(n, np.int64), np.zeros(n, np.int64),
              Budget(max_instructions, None))
    outs = {name: ln.mem.view(ln.buffers[name]).copy().view(buffers[name].dtype)
            for name in buffers}
    return Out(st, ln, outs)
