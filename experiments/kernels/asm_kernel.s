// Shared by the hand-written gfx942 kernels (asm_copy, asm_scale): what follows a kernel's
// code, written once. `.include "../asm_kernel.s"` (build_corpus.py assembles in the kernel's
// folder); `asm_kernel_begin NAME` opens NAME's code (a global function, 256-byte aligned),
// then `asm_kernel_end NAME, VGPRS` after the last instruction: the end label and
// .size of NAME, its kernel descriptor (kernarg pointer in s[0:1], workgroup id x in s2,
// workitem ids packed in v0, 24 kernarg bytes, 16 SGPRs, VGPRS VGPRs) and its code object
// metadata (no args listed, like AITer objects: the spec gives the kernarg offsets).
.macro asm_kernel_begin name
.text
.globl \name
.p2align 8
.type \name,@function
\name\():
.endm

.macro asm_kernel_end name, vgprs
.L\name\()_end:
.size \name, .L\name\()_end - \name

.rodata
.p2align 6
.amdhsa_kernel \name
    .amdhsa_user_sgpr_kernarg_segment_ptr 1
    .amdhsa_user_sgpr_count 2
    .amdhsa_system_sgpr_workgroup_id_x 1
    .amdhsa_system_vgpr_workitem_id 0
    .amdhsa_kernarg_size 24
    .amdhsa_next_free_vgpr \vgprs
    .amdhsa_next_free_sgpr 16
    .amdhsa_accum_offset 12
    .amdhsa_reserve_vcc 0
    .amdhsa_reserve_xnack_mask 1
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - .name: \name
    .symbol: \name\().kd
    .kernarg_segment_size: 0
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 22
    .vgpr_count: \vgprs
    .agpr_count: 0
    .max_flat_workgroup_size: 256
    .args: []
...
.end_amdgpu_metadata
.endm
