// asm_copy: dst[i] = src[i] for i < n (dwords). Hand-written gfx942 assembly in the AITer style.
// Kernarg layout (the metadata lists NO args, like AITer objects; the spec gives offsets):
//   0: src (u64 pointer)   8: dst (u64 pointer)   16: n (u32)   20: pad   -> 24 bytes
// Labels are named label_XXXX after their byte offset from the kernel entry (kept in .symtab).
// Launch: block = 64 work-items (one wave), grid = cdiv(n, 256) workgroups.
// Each workgroup copies 256 dwords in 4 iterations of 64 (one dword per lane per iteration).
.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.amdhsa_code_object_version 5
.include "../asm_kernel.s"   // asm_kernel_begin, asm_kernel_end

asm_kernel_begin asm_copy
    s_load_dwordx2 s[4:5], s[0:1], 0x0          // src
    s_load_dwordx2 s[6:7], s[0:1], 0x8          // dst
    s_load_dword   s8, s[0:1], 0x10             // n
    v_and_b32      v0, 0x3ff, v0                // workitem id x (packed ids on gfx942)
    s_lshl_b32     s9, s2, 8                    // s9 = workgroup_id * 256 (first element)
    s_mov_b32      s10, 0                       // s10 = iteration counter
    s_waitcnt      lgkmcnt(0)
label_002C:
    v_add_u32      v1, s9, v0                   // v1 = element index
    v_cmp_gt_u32   s[12:13], s8, v1             // VALU writes SGPR pair: lane active if idx < n
    s_nop          1                            // hazard padding before the SALU read
    s_and_saveexec_b64 s[14:15], s[12:13]
    s_cbranch_execz label_0070
    v_lshlrev_b32  v2, 2, v1                    // byte offset
    v_mov_b32      v3, 0
    v_lshl_add_u64 v[4:5], s[4:5], 0, v[2:3]    // src + off
    v_lshl_add_u64 v[6:7], s[6:7], 0, v[2:3]    // dst + off
    global_load_dword v8, v[4:5], off
    s_waitcnt      vmcnt(0)
    global_store_dword v[6:7], v8, off
label_0070:
    s_or_b64       exec, exec, s[14:15]         // restore exec
    s_add_u32      s9, s9, 64                   // next 64 elements
    s_add_u32      s10, s10, 1
    s_cmp_lt_u32   s10, 4
    s_cbranch_scc1 label_002C
    s_waitcnt      vmcnt(0)
    s_endpgm
asm_kernel_end asm_copy, 9
