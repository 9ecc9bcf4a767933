// asm_scale: y[i] = alpha * x[i] for i < n (float32). Hand-written gfx942 assembly in the AITer style.
// Kernarg layout (the metadata lists NO args, like AITer objects; the spec gives offsets):
//   0: x (u64 pointer)   8: y (u64 pointer)   16: alpha (f32)   20: n (u32)   -> 24 bytes
// Labels are named label_XXXX after their byte offset from the kernel entry (kept in .symtab).
// Launch: block = 64 work-items (one wave), grid = cdiv(n, 512) workgroups.
// Each workgroup handles 512 floats in 4 iterations of 128 (two floats per lane via dwordx2).
// n must be even (the kernel processes pairs; the tail pair is masked as a whole).
.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.amdhsa_code_object_version 5
.include "../asm_kernel.s"   // asm_kernel_begin, asm_kernel_end

asm_kernel_begin asm_scale
    s_load_dwordx2 s[4:5], s[0:1], 0x0          // x
    s_load_dwordx2 s[6:7], s[0:1], 0x8          // y
    s_load_dword   s8, s[0:1], 0x10             // alpha
    s_load_dword   s9, s[0:1], 0x14             // n
    v_and_b32      v0, 0x3ff, v0                // workitem id x
    v_lshlrev_b32  v0, 1, v0                    // 2 elements per lane
    s_lshl_b32     s10, s2, 9                   // s10 = workgroup_id * 512 (first element)
    s_mov_b32      s11, 4                       // s11 = remaining iterations
    s_waitcnt      lgkmcnt(0)
label_0038:
    v_add_u32      v1, s10, v0                  // v1 = first element of this lane's pair
    v_cmp_gt_u32   s[12:13], s9, v1             // VALU writes SGPR pair
    s_nop          1                            // hazard padding before the SALU read
    s_and_saveexec_b64 s[14:15], s[12:13]
    s_cbranch_execz label_0084
    v_lshlrev_b32  v2, 2, v1
    v_mov_b32      v3, 0
    v_lshl_add_u64 v[4:5], s[4:5], 0, v[2:3]
    v_lshl_add_u64 v[6:7], s[6:7], 0, v[2:3]
    global_load_dwordx2 v[8:9], v[4:5], off
    s_waitcnt      vmcnt(0)
    v_mul_f32      v8, s8, v8
    v_mul_f32      v9, s8, v9
    global_store_dwordx2 v[6:7], v[8:9], off
label_0084:
    s_or_b64       exec, exec, s[14:15]
    s_add_u32      s10, s10, 0x80               // next 128 elements
    s_sub_u32      s11, s11, 1
    s_cmp_gt_u32   s11, 0
    s_cbranch_scc1 label_0038
    s_waitcnt      vmcnt(0)
    s_endpgm
asm_kernel_end asm_scale, 10
