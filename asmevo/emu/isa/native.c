/* Float32 VALU arithmetic with the emulator's NaN rule, one pass per instruction.
 *
 * The compiled counterpart of asmevo/emu/isa/valu.py's float rows (a + b, a - b,
 * b - a, a * b, fma(a, b, c)) followed by asmevo.emu.numerics.approx.nan_result /
 * nan_by_member: where the result is NaN, the first NaN operand in source order
 * comes back quieted (payload and sign kept); where two or more operands are NaN,
 * a member k >= 1 of the NaN-choice family takes the one a hash of
 * (k, opcode, operand bits) picks; where none is, the default NaN 0xffc00000.
 * Built with -ffp-contract=off (no a*b+c fused behind our back) and loaded by
 * asmevo/emu/isa/native.py only after a self-test against the numpy path.
 *
 * Operands are 2-D views of uint32 bits: element (i, j) of operand x is
 * x[i * rs + j * cs] (strides in elements; 0 for a broadcast dimension); float
 * arithmetic reads them through float pointers (built with -fno-strict-aliasing).
 */
#include <math.h>
#include <stdint.h>

enum { OP_ADD = 0, OP_SUB = 1, OP_SUBREV = 2, OP_MUL = 3, OP_FMA = 4 };

static inline int isnan32(uint32_t x) { return (x & 0x7fffffffu) > 0x7f800000u; }

static inline uint64_t mix(uint64_t z) {   /* splitmix64's finalizer */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint32_t nan_choice(const uint32_t *in, int n, int64_t variant, uint32_t opcode) {
    int count = 0;
    for (int k = 0; k < n; k++) count += isnan32(in[k]);
    if (count == 0) return 0xFFC00000u;
    int pick = 0;
    if (variant != 0 && count >= 2) {
        uint64_t h = mix(((uint64_t)(variant & 0xFFFFFFFF) << 32) | opcode);
        for (int k = 0; k < n; k++) h = mix(h ^ (uint64_t)in[k]);
        pick = (int)(h % (uint64_t)count);
    }
    for (int k = 0, seen = 0; k < n; k++) {
        if (isnan32(in[k])) {
            if (seen == pick) return in[k] | 0x00400000u;
            seen++;
        }
    }
    return 0xFFC00000u;   /* not reached */
}

#define CHUNK 256

/* One chunk of an operation on contiguous operands: plain loops the compiler vectorizes. */
static void add_n(float *o, const float *x, const float *y, int64_t n)
{ for (int64_t j = 0; j < n; j++) o[j] = x[j] + y[j]; }
static void sub_n(float *o, const float *x, const float *y, int64_t n)
{ for (int64_t j = 0; j < n; j++) o[j] = x[j] - y[j]; }
static void subrev_n(float *o, const float *x, const float *y, int64_t n)
{ for (int64_t j = 0; j < n; j++) o[j] = y[j] - x[j]; }
static void mul_n(float *o, const float *x, const float *y, int64_t n)
{ for (int64_t j = 0; j < n; j++) o[j] = x[j] * y[j]; }
static void fma_sw(float *o, const float *x, const float *y, const float *z, int64_t n)
{ for (int64_t j = 0; j < n; j++) o[j] = fmaf(x[j], y[j], z[j]); }

#if defined(__x86_64__) && defined(__GNUC__)
/* x86-64 without the FMA extension calls libm's (correctly rounded) fmaf per element;
   with it, the fused instruction: the same single rounding, many lanes at a time */
__attribute__((target("fma"))) static void fma_hw(float *o, const float *x, const float *y,
                                                  const float *z, int64_t n)
{ for (int64_t j = 0; j < n; j++) o[j] = __builtin_fmaf(x[j], y[j], z[j]); }
static int have_fma(void) { __builtin_cpu_init(); return __builtin_cpu_supports("fma"); }
#else
static void fma_hw(float *o, const float *x, const float *y, const float *z, int64_t n)
{ fma_sw(o, x, y, z, n); }
static int have_fma(void) { return 1; }
#endif

/* operand row chunk: a pointer into the operand where it is contiguous, else a copy */
static const float *chunk_of(const uint32_t *row, int64_t cs, int64_t j0, int64_t n,
                             float *tmp) {
    const float *p = (const float *)row;
    if (cs == 1) return p + j0;
    for (int64_t j = 0; j < n; j++) tmp[j] = p[(j0 + j) * cs];
    return tmp;
}

static inline uint32_t all_if(int c) { return -(uint32_t)(c != 0); }

/* ``op`` on n contiguous elements, then member 0's NaN rule on them, branch-free:
   where the result is NaN, the first NaN operand quieted, else the default NaN */
static void run_chunk(int op, int fma_kind, const float *x, const float *y, const float *z,
                      float *o, int64_t n) {
    switch (op) {
    case OP_ADD: add_n(o, x, y, n); break;
    case OP_SUB: sub_n(o, x, y, n); break;
    case OP_SUBREV: subrev_n(o, x, y, n); break;
    case OP_MUL: mul_n(o, x, y, n); break;
    default:
        if (fma_kind) fma_hw(o, x, y, z, n); else fma_sw(o, x, y, z, n);
        break;
    }
    uint32_t *ob = (uint32_t *)o;
    const uint32_t *xb = (const uint32_t *)x, *yb = (const uint32_t *)y;
    if (op != OP_FMA) {
        for (int64_t j = 0; j < n; j++) {
            uint32_t mx = all_if(isnan32(xb[j])), my = all_if(isnan32(yb[j])) & ~mx;
            uint32_t pick = (mx & (xb[j] | 0x00400000u)) | (my & (yb[j] | 0x00400000u)) |
                            (~(mx | my) & 0xFFC00000u);
            uint32_t mr = all_if(isnan32(ob[j]));
            ob[j] = (mr & pick) | (~mr & ob[j]);
        }
    } else {
        const uint32_t *zb = (const uint32_t *)z;
        for (int64_t j = 0; j < n; j++) {
            uint32_t mx = all_if(isnan32(xb[j])), my = all_if(isnan32(yb[j])) & ~mx;
            uint32_t mz = all_if(isnan32(zb[j])) & ~(mx | my);
            uint32_t pick = (mx & (xb[j] | 0x00400000u)) | (my & (yb[j] | 0x00400000u)) |
                            (mz & (zb[j] | 0x00400000u)) | (~(mx | my | mz) & 0xFFC00000u);
            uint32_t mr = all_if(isnan32(ob[j]));
            ob[j] = (mr & pick) | (~mr & ob[j]);
        }
    }
}

/* a member k != 0 differs from member 0 only where two or more operands are NaN */
static void other_member(int n_in, const uint32_t *xb, const uint32_t *yb,
                         const uint32_t *zb, uint32_t *ob, int64_t n, int64_t v,
                         uint32_t opcode) {
    for (int64_t j = 0; j < n; j++) {
        if (!isnan32(ob[j])) continue;
        uint32_t in[3] = {xb[j], yb[j], n_in == 3 ? zb[j] : 0};
        if (isnan32(in[0]) + isnan32(in[1]) + (n_in == 3 && isnan32(in[2])) >= 2)
            ob[j] = nan_choice(in, n_in, v, opcode);
    }
}

int asmevo_f32_arith(int op, int64_t rows, int64_t cols,
                     const uint32_t *a, int64_t ars, int64_t acs,
                     const uint32_t *b, int64_t brs, int64_t bcs,
                     const uint32_t *c, int64_t crs, int64_t ccs,
                     uint32_t *out, const int64_t *variants, int64_t variant,
                     uint32_t opcode) {
    static int fma_kind = -1;
    if (fma_kind < 0) fma_kind = have_fma();
    int n_in = op == OP_FMA ? 3 : 2;
    float ta[CHUNK], tb[CHUNK], tc[CHUNK];
    /* every operand one C-ordered block: the rows as one run of elements */
    int flat = acs == 1 && ars == cols && bcs == 1 && brs == cols &&
               (n_in == 2 || (ccs == 1 && crs == cols));
    int64_t nrows = flat ? 1 : rows, ncols = flat ? rows * cols : cols;
    for (int64_t i = 0; i < nrows; i++) {
        for (int64_t j0 = 0; j0 < ncols; j0 += CHUNK) {
            int64_t n = ncols - j0 < CHUNK ? ncols - j0 : CHUNK;
            const float *x = chunk_of(a + i * ars, acs, j0, n, ta);
            const float *y = chunk_of(b + i * brs, bcs, j0, n, tb);
            const float *z = n_in == 3 ? chunk_of(c + i * crs, ccs, j0, n, tc) : x;
            float *o = (float *)(out + i * ncols + j0);
            run_chunk(op, fma_kind, x, y, z, o, n);
            if (variants == 0 && variant == 0) continue;
            if (variants == 0 || !flat) {
                int64_t v = variants ? variants[i] : variant;
                if (v != 0)
                    other_member(n_in, (const uint32_t *)x, (const uint32_t *)y,
                                 (const uint32_t *)z, (uint32_t *)o, n, v, opcode);
                continue;
            }
            /* per-row members over a flat run: the chunk row by row, each row's own */
            for (int64_t k = 0; k < n; ) {
                int64_t r = (j0 + k) / cols, end = (r + 1) * cols - j0;
                if (end > n) end = n;
                if (variants[r] != 0)
                    other_member(n_in, (const uint32_t *)x + k, (const uint32_t *)y + k,
                                 (const uint32_t *)z + k, (uint32_t *)o + k, end - k,
                                 variants[r], opcode);
                k = end;
            }
        }
    }
    return 0;
}

/* -- the same rows, and LDS's dword accesses, straight on the register file ------------
 *
 * ``v`` is the batch's VGPR file, register r of wave w at v[r * rstride + w * 64]
 * (State.v: registers x waves x 64 lanes, C order); a group's waves are waves[0..nw)
 * (sorted), or w0 .. w0 + nw - 1 where ``waves`` is NULL; ``mask`` its EXEC lanes
 * (nw x 64 bytes, one per lane), or NULL where every lane is on. Only EXEC lanes are
 * written, as Ctx.vw writes them. */

static inline int64_t wave_at(const int64_t *waves, int64_t w0, int64_t i)
{ return waves ? waves[i] : w0 + i; }

/* A float row on registers: source k is VGPR r[k] (kind k[k] 0), SGPR r[k] of each wave
   (kind 1: s[r * sstride + w], State.s: registers x waves) or the constant bits r[k]
   (kind 2); the result goes to VGPR ``dst``. ``variants``: each wave's member, or NULL
   (then ``variant``). The numbers asmevo_f32_arith gives for the gathered operands. */
int asmevo_f32_regs(int op, int64_t nw, const int64_t *waves, int64_t w0,
                    uint32_t *v, int64_t rstride, const uint32_t *s, int64_t sstride,
                    int k0, int64_t r0, int k1, int64_t r1, int k2, int64_t r2,
                    int64_t dst, const uint8_t *mask, const int64_t *variants,
                    int64_t variant, uint32_t opcode) {
    static int fma_kind = -1;
    if (fma_kind < 0) fma_kind = have_fma();
    int n_in = op == OP_FMA ? 3 : 2;
    const int kind[3] = {k0, k1, k2};
    const int64_t reg[3] = {r0, r1, r2};
    uint32_t tmp[3][64], out[64];
    for (int k = 0; k < n_in; k++)
        if (kind[k] == 2)
            for (int j = 0; j < 64; j++) tmp[k][j] = (uint32_t)reg[k];
    for (int64_t i = 0; i < nw; i++) {
        int64_t w = wave_at(waves, w0, i);
        const uint32_t *src[3];
        for (int k = 0; k < n_in; k++) {
            if (kind[k] == 0) {
                src[k] = v + reg[k] * rstride + w * 64;
            } else {
                if (kind[k] == 1) {
                    uint32_t x = s[reg[k] * sstride + w];
                    for (int j = 0; j < 64; j++) tmp[k][j] = x;
                }
                src[k] = tmp[k];
            }
        }
        if (n_in == 2) src[2] = src[0];
        run_chunk(op, fma_kind, (const float *)src[0], (const float *)src[1],
                  (const float *)src[2], (float *)out, 64);
        int64_t m = variants ? variants[i] : variant;
        if (m != 0)
            other_member(n_in, src[0], src[1], src[2], out, 64, m, opcode);
        uint32_t *d = v + dst * rstride + w * 64;
        const uint8_t *on = mask ? mask + i * 64 : 0;
        for (int j = 0; j < 64; j++)
            if (!on || on[j]) d[j] = out[j];
    }
    return 0;
}

/* Whether every active lane's access is in bounds and aligned: VGPR ``vaddr`` + offs[k]
   (bytes, k < noffs), ``nbytes`` long, within the workgroup's ``lds_bytes``, address and
   offset multiples of 4 (the numpy path's test, on the lanes' largest address and their
   or-reduce), and ``nact`` lanes active. 0: yes; 1: the caller takes the element-wise
   path, which names the first bad address. A workgroup's LDS starts at dword
   wg_of_wave[w] * stride / 4 of the batch's (stride a multiple of 4). */
static int lds_check(int64_t nw, const int64_t *waves, int64_t w0, const uint32_t *v,
                     int64_t rstride, int64_t vaddr, const uint8_t *mask, int noffs,
                     const int64_t *offs, int64_t nbytes, int64_t lds_bytes,
                     int64_t nact) {
    int64_t top = 0;
    for (int k = 0; k < noffs; k++) {
        if (offs[k] % 4 || offs[k] < 0) return 1;
        if (offs[k] > top) top = offs[k];
    }
    uint32_t hi = 0, bits = 0;
    int64_t n = 0;
    for (int64_t i = 0; i < nw; i++) {
        const uint32_t *a = v + vaddr * rstride + wave_at(waves, w0, i) * 64;
        const uint8_t *on = mask ? mask + i * 64 : 0;
        if (!on) {
            for (int j = 0; j < 64; j++) { hi = a[j] > hi ? a[j] : hi; bits |= a[j]; }
            n += 64;
        } else {
            for (int j = 0; j < 64; j++) {
                uint32_t x = on[j] ? a[j] : 0;
                hi = x > hi ? x : hi;
                bits |= x;
                n += on[j] != 0;
            }
        }
    }
    return n != nact || (bits & 3u) || (int64_t)hi + top + nbytes > lds_bytes;
}

/* The race tracker's note of one LDS access (asmevo.emu.machine.racecheck.LdsTracker): every
   dword each active lane of a tracked wave touches (lds_check's indices, ``ndw`` from
   each) with the wave's slot. Returns 0, or 1 where a read meets a dword another slot
   wrote in this interval, 2 where a write meets a dword another slot touched (or two
   slots write one dword). Otherwise each dword's owner becomes: on a write, the
   writer's slot (and it is marked written); on a read, the reader's slot where the
   dword had none or was that slot's, else MANY (read by several slots): what the numpy
   tracker's vectorized update gives, in any order of the lanes. Call it only after
   lds_check passed (the indices are in bounds), before the access (it reads the
   addresses, which a read may overwrite). */
static int lds_track(int64_t nw, const int64_t *waves, int64_t w0, const uint32_t *v,
                     int64_t rstride, int64_t vaddr, const uint8_t *mask, int noffs,
                     const int64_t *offs, int64_t ndw, const int64_t *wg_of_wave,
                     int64_t stride, const uint8_t *tracked, const int8_t *slot,
                     int8_t *owner, uint8_t *written, int write) {
    const int8_t NONE = -1, MANY = -2;
    for (int64_t i = 0; i < nw; i++) {
        int64_t w = wave_at(waves, w0, i);
        if (!tracked[w]) continue;
        const uint32_t *a = v + vaddr * rstride + w * 64;
        const uint8_t *on = mask ? mask + i * 64 : 0;
        int8_t s = slot[w];
        for (int k = 0; k < noffs; k++) {
            int64_t base = (wg_of_wave[w] * stride + offs[k]) >> 2;
            for (int j = 0; j < 64; j++) {
                if (on && !on[j]) continue;
                int64_t d0 = base + (a[j] >> 2);
                for (int64_t q = 0; q < ndw; q++) {
                    int64_t d = d0 + q;
                    int8_t cur = owner[d];
                    if (write) {
                        if (cur != NONE && cur != s) return 2;
                        owner[d] = s;
                        written[d] = 1;
                    } else {
                        if (written[d] && cur != s) return 1;
                        owner[d] = (cur == NONE || cur == s) ? s : MANY;
                    }
                }
            }
        }
    }
    return 0;
}

/* lds_check, then (``tracked`` not NULL) the tracker's note: 0, 1 (the numpy path
   runs), or 2 / 3 (the tracker's conflict on a read / a write). */
static int lds_begin(int64_t nw, const int64_t *waves, int64_t w0, const uint32_t *v,
                     int64_t rstride, int64_t vaddr, const uint8_t *mask, int noffs,
                     const int64_t *offs, int64_t ndw, int64_t nbytes, int64_t lds_bytes,
                     const int64_t *wg_of_wave, int64_t stride, int64_t nact,
                     const uint8_t *tracked, const int8_t *slot, int8_t *owner,
                     uint8_t *written, int write) {
    if (lds_check(nw, waves, w0, v, rstride, vaddr, mask, noffs, offs, nbytes, lds_bytes,
                  nact))
        return 1;
    if (!tracked) return 0;
    int t = lds_track(nw, waves, w0, v, rstride, vaddr, mask, noffs, offs, ndw, wg_of_wave,
                      stride, tracked, slot, owner, written, write);
    return t ? 1 + t : 0;
}

/* ds_read_b32..b128 (noffs 1: off0) and ds_read2_b32/b64 (noffs 2: off0, off1):
   ``ndw`` dwords at each offset, into VGPRs dst, dst + 1, ... (offset-major). Returns lds_check's answer; on
   1 nothing is written. With ``tracked`` (else NULL), the race tracker's note
   (lds_track) comes between the check and the access: 2 or 3 for its conflicts (the
   pass is abandoned). The lanes' addresses are copied first: a destination may be the
   address register. */
int asmevo_lds_read(int64_t nw, const int64_t *waves, int64_t w0, uint32_t *v,
                    int64_t rstride, int64_t vaddr, const uint8_t *mask, int noffs,
                    int64_t off0, int64_t off1, int64_t ndw, int64_t nbytes, int64_t lds_bytes,
                    const int64_t *wg_of_wave, int64_t stride, const uint32_t *lds32,
                    int64_t dst, int64_t nact, const uint8_t *tracked,
                    const int8_t *slot, int8_t *owner, uint8_t *written) {
    const int64_t offs[2] = {off0, off1};
    int begun = lds_begin(nw, waves, w0, v, rstride, vaddr, mask, noffs, offs, ndw, nbytes,
                          lds_bytes, wg_of_wave, stride, nact, tracked, slot, owner, written, 0);
    if (begun) return begun;
    for (int64_t i = 0; i < nw; i++) {
        int64_t w = wave_at(waves, w0, i);
        const uint8_t *on = mask ? mask + i * 64 : 0;
        uint32_t ad[64];
        const uint32_t *a = v + vaddr * rstride + w * 64;
        for (int j = 0; j < 64; j++) ad[j] = a[j] >> 2;
        for (int k = 0; k < noffs; k++) {
            for (int64_t q = 0; q < ndw; q++) {
                const uint32_t *src = lds32 + ((wg_of_wave[w] * stride + offs[k]) >> 2) + q;
                uint32_t *o = v + (dst + k * ndw + q) * rstride + w * 64;
                if (!on) {
                    for (int j = 0; j < 64; j++) o[j] = src[ad[j]];
                } else {
                    for (int j = 0; j < 64; j++)
                        if (on[j]) o[j] = src[ad[j]];
                }
            }
        }
    }
    return 0;
}

/* ds_write_b32..b128 (noffs 1, data VGPRs src0, src0 + 1, ...) and ds_write2_b32/b64
   (noffs 2, data src0.. at off0, then src1.. at off1): offset by offset, dword by dword, lanes in order
   (the last write wins), as the numpy path assigns them; returns as asmevo_lds_read. */
int asmevo_lds_write(int64_t nw, const int64_t *waves, int64_t w0, const uint32_t *v,
                     int64_t rstride, int64_t vaddr, const uint8_t *mask, int noffs,
                     int64_t off0, int64_t off1, int64_t ndw, int64_t nbytes,
                     int64_t lds_bytes, const int64_t *wg_of_wave, int64_t stride,
                     uint32_t *lds32, int64_t src0, int64_t src1, int64_t nact,
                     const uint8_t *tracked, const int8_t *slot, int8_t *owner,
                     uint8_t *written) {
    const int64_t offs[2] = {off0, off1}, srcs[2] = {src0, src1};
    int begun = lds_begin(nw, waves, w0, v, rstride, vaddr, mask, noffs, offs, ndw, nbytes,
                          lds_bytes, wg_of_wave, stride, nact, tracked, slot, owner, written, 1);
    if (begun) return begun;
    for (int k = 0; k < noffs; k++) {
        for (int64_t q = 0; q < ndw; q++) {
            for (int64_t i = 0; i < nw; i++) {
                int64_t w = wave_at(waves, w0, i);
                const uint32_t *a = v + vaddr * rstride + w * 64;
                const uint32_t *s = v + (srcs[k] + q) * rstride + w * 64;
                const uint8_t *on = mask ? mask + i * 64 : 0;
                uint32_t *dstp = lds32 + ((wg_of_wave[w] * stride + offs[k]) >> 2) + q;
                if (!on) {
                    for (int j = 0; j < 64; j++) dstp[a[j] >> 2] = s[j];
                } else {
                    for (int j = 0; j < 64; j++)
                        if (on[j]) dstp[a[j] >> 2] = s[j];
                }
            }
        }
    }
    return 0;
}


/* -- integer rows on registers ---------------------------------------------------------
 * The numpy path's uint32 (uint64) arithmetic, wrapping, shift counts masked as there:
 * source k as in asmevo_f32_regs (kind 0 VGPR, 1 SGPR, 2 constant bits), a 64-bit
 * source a VGPR or SGPR pair (lo, hi) or the 64-bit constant; the result to VGPR dst
 * (dst and dst + 1 for the 64-bit rows), EXEC lanes only. */
enum { I_ADD, I_SUB, I_SUBREV, I_ADD3, I_LSHL_ADD, I_LSHL_OR, I_AND_OR, I_OR3, I_AND, I_OR,
       I_XOR, I_LSHLREV, I_LSHRREV, I_ASHRREV, I_MOV, I_LSHL_ADD64, I_LSHLREV64 };

/* source k of wave w as 64 lanes: its uint32 values (lo) and, for a 64-bit source, its
   high halves (hi); a pointer into the register file where it is one */
static const uint32_t *src_lanes(int kind, int64_t r, int hi, const uint32_t *v,
                                 int64_t rstride, const uint32_t *s, int64_t sstride,
                                 int64_t w, uint32_t *tmp) {
    if (kind == 0) return v + (r + hi) * rstride + w * 64;
    uint32_t x = kind == 1 ? s[(r + hi) * sstride + w]
                           : (uint32_t)(hi ? (uint64_t)r >> 32 : (uint64_t)r);
    for (int j = 0; j < 64; j++) tmp[j] = x;
    return tmp;
}

int asmevo_int_regs(int op, int64_t nw, const int64_t *waves, int64_t w0, uint32_t *v,
                    int64_t rstride, const uint32_t *s, int64_t sstride, int k0, int64_t r0,
                    int k1, int64_t r1, int k2, int64_t r2, int64_t dst,
                    const uint8_t *mask) {
    int wide = op == I_LSHL_ADD64 || op == I_LSHLREV64;
    int three = op == I_ADD3 || op == I_LSHL_ADD || op == I_LSHL_OR || op == I_AND_OR ||
                op == I_OR3 || op == I_LSHL_ADD64;
    uint32_t t[6][64], lo[64], hi[64];
    for (int64_t i = 0; i < nw; i++) {
        int64_t w = wave_at(waves, w0, i);
        const uint32_t *x = src_lanes(k0, r0, 0, v, rstride, s, sstride, w, t[0]);
        const uint32_t *y = op == I_MOV ? x : src_lanes(k1, r1, 0, v, rstride, s, sstride, w, t[1]);
        const uint32_t *z = three ? src_lanes(k2, r2, 0, v, rstride, s, sstride, w, t[2]) : x;
        switch (op) {
        case I_ADD: for (int j = 0; j < 64; j++) lo[j] = x[j] + y[j]; break;
        case I_SUB: for (int j = 0; j < 64; j++) lo[j] = x[j] - y[j]; break;
        case I_SUBREV: for (int j = 0; j < 64; j++) lo[j] = y[j] - x[j]; break;
        case I_ADD3: for (int j = 0; j < 64; j++) lo[j] = x[j] + y[j] + z[j]; break;
        case I_LSHL_ADD: for (int j = 0; j < 64; j++) lo[j] = (x[j] << (y[j] & 31u)) + z[j]; break;
        case I_LSHL_OR: for (int j = 0; j < 64; j++) lo[j] = (x[j] << (y[j] & 31u)) | z[j]; break;
        case I_AND_OR: for (int j = 0; j < 64; j++) lo[j] = (x[j] & y[j]) | z[j]; break;
        case I_OR3: for (int j = 0; j < 64; j++) lo[j] = x[j] | y[j] | z[j]; break;
        case I_AND: for (int j = 0; j < 64; j++) lo[j] = x[j] & y[j]; break;
        case I_OR: for (int j = 0; j < 64; j++) lo[j] = x[j] | y[j]; break;
        case I_XOR: for (int j = 0; j < 64; j++) lo[j] = x[j] ^ y[j]; break;
        case I_LSHLREV: for (int j = 0; j < 64; j++) lo[j] = y[j] << (x[j] & 31u); break;
        case I_LSHRREV: for (int j = 0; j < 64; j++) lo[j] = y[j] >> (x[j] & 31u); break;
        case I_ASHRREV:
            for (int j = 0; j < 64; j++) lo[j] = (uint32_t)((int32_t)y[j] >> (x[j] & 31u));
            break;
        case I_MOV: for (int j = 0; j < 64; j++) lo[j] = x[j]; break;
        case I_LSHL_ADD64: {
            const uint32_t *xh = src_lanes(k0, r0, 1, v, rstride, s, sstride, w, t[3]);
            const uint32_t *zh = src_lanes(k2, r2, 1, v, rstride, s, sstride, w, t[4]);
            for (int j = 0; j < 64; j++) {
                uint64_t r = ((((uint64_t)xh[j] << 32) | x[j]) << (y[j] & 7u)) +
                             (((uint64_t)zh[j] << 32) | z[j]);
                lo[j] = (uint32_t)r;
                hi[j] = (uint32_t)(r >> 32);
            }
            break;
        }
        default: {   /* I_LSHLREV64 */
            const uint32_t *yh = src_lanes(k1, r1, 1, v, rstride, s, sstride, w, t[4]);
            for (int j = 0; j < 64; j++) {
                uint64_t r = (((uint64_t)yh[j] << 32) | y[j]) << (x[j] & 63u);
                lo[j] = (uint32_t)r;
                hi[j] = (uint32_t)(r >> 32);
            }
            break;
        }
        }
        const uint8_t *on = mask ? mask + i * 64 : 0;
        uint32_t *d = v + dst * rstride + w * 64;
        if (!on) {
            for (int j = 0; j < 64; j++) d[j] = lo[j];
        } else {
            for (int j = 0; j < 64; j++) if (on[j]) d[j] = lo[j];
        }
        if (wide) {
            uint32_t *dh = v + (dst + 1) * rstride + w * 64;
            for (int j = 0; j < 64; j++)
                if (!on || on[j]) dh[j] = hi[j];
        }
    }
    return 0;
}

/* -- global dword loads ------------------------------------------------------------------
 * global_load_dword[xN] of one launch's waves: each active lane's address (SGPR pair
 * ``saddr`` + its VGPR ``vaddr`` (uint32) + ``offset``, or where saddr < 0 its VGPR pair
 * ``vaddr`` + ``offset``, wrapping at 2^64) and ``ndw`` dwords from there into VGPRs
 * dst, dst + 1, ... (EXEC lanes). Only the case Memory.check passes without a word:
 * every address a multiple of 4, the lanes' lowest and highest within one allocation
 * (allocation k spans bounds[4k] .. bounds[4k + 1], its contract bounds[4k + 2] ..
 * bounds[4k + 3], heap addresses from ``heap_base``); 0: done, 1: nothing done (the
 * numpy path faults, notes the read, or splits it by allocation). With ``track_r`` (a
 * serial launch run in lockstep: asmevo.emu.machine.racecheck.MemoryTracker's bytes read, and
 * ``track_w`` written, ``wrote`` whether any is) its note first: 2 where a lane's bytes
 * meet the private segment (``priv``: npriv heap ranges), 3 where one was written
 * before (its conflicts: the pass is abandoned); else its bytes marked read. */
/* the 64 lanes' addresses of wave w: its SGPR pair ``saddr`` + VGPR ``vaddr`` (uint32),
   or where saddr < 0 its VGPR pair, + ``offset`` (wrapping at 2^64) */
static void global_addrs(int64_t w, const uint32_t *v, int64_t rstride, const uint32_t *s,
                         int64_t sstride, int64_t vaddr, int64_t saddr, uint64_t offset,
                         uint64_t *at) {
    const uint32_t *a = v + vaddr * rstride + w * 64;
    if (saddr >= 0) {
        uint64_t base = ((uint64_t)s[(saddr + 1) * sstride + w] << 32 |
                         s[saddr * sstride + w]) + offset;
        for (int j = 0; j < 64; j++) at[j] = base + a[j];
    } else {
        const uint32_t *ah = v + (vaddr + 1) * rstride + w * 64;
        for (int j = 0; j < 64; j++) at[j] = ((uint64_t)ah[j] << 32 | a[j]) + offset;
    }
}

int asmevo_global_load(int64_t nw, const int64_t *waves, int64_t w0, uint32_t *v,
                       int64_t rstride, const uint32_t *s, int64_t sstride,
                       const uint8_t *mask, int64_t vaddr, int64_t saddr, uint64_t offset,
                       int64_t ndw, int64_t dst, const uint32_t *heap32, uint64_t heap_base,
                       const uint64_t *bounds, int64_t nalloc, uint8_t *track_r,
                       const uint8_t *track_w, int wrote, const int64_t *priv,
                       int64_t npriv) {
    uint64_t lo = UINT64_MAX, hi = 0, bits = 0, at[64];
    int any = 0;
    for (int64_t i = 0; i < nw; i++) {
        const uint8_t *on = mask ? mask + i * 64 : 0;
        global_addrs(wave_at(waves, w0, i), v, rstride, s, sstride, vaddr, saddr, offset, at);
        for (int j = 0; j < 64; j++) {
            if (on && !on[j]) continue;
            lo = at[j] < lo ? at[j] : lo;
            hi = at[j] > hi ? at[j] : hi;
            bits |= at[j];
            any = 1;
        }
    }
    if (!any || (bits & 3u)) return 1;
    int64_t k = -1;
    for (int64_t q = 0; q < nalloc; q++)
        if (bounds[4 * q] <= lo) k = q;
    uint64_t span = 4 * (uint64_t)ndw;
    if (k < 0 || hi + span > bounds[4 * k + 1] || lo < bounds[4 * k + 2] ||
        hi + span > bounds[4 * k + 3] || hi + span < hi)
        return 1;
    int64_t sp = (int64_t)span;
    /* a serial launch's MemoryTracker (asmevo.emu.machine.racecheck): the private segment is
       never read through here; a byte written earlier is a read after a write; else
       the bytes are marked read */
    for (int pass = 0; track_r && pass < 3; pass++) {
        for (int64_t i = 0; i < nw; i++) {
            const uint8_t *on = mask ? mask + i * 64 : 0;
            global_addrs(wave_at(waves, w0, i), v, rstride, s, sstride, vaddr, saddr, offset,
                         at);
            for (int j = 0; j < 64; j++) {
                if (on && !on[j]) continue;
                int64_t o = (int64_t)(at[j] - heap_base);
                if (pass == 0) {
                    for (int64_t q = 0; q < npriv; q++)
                        if (o < priv[2 * q + 1] && o + sp > priv[2 * q]) return 2;
                } else if (pass == 1) {
                    for (int64_t b = 0; wrote && b < sp; b++)
                        if (track_w[o + b]) return 3;
                } else {
                    for (int64_t b = 0; b < sp; b++) track_r[o + b] = 1;
                }
            }
        }
    }
    for (int64_t i = 0; i < nw; i++) {
        int64_t w = wave_at(waves, w0, i);
        const uint8_t *on = mask ? mask + i * 64 : 0;
        global_addrs(w, v, rstride, s, sstride, vaddr, saddr, offset, at);
        for (int j = 0; j < 64; j++)    /* every address read before any is written */
            at[j] = (at[j] - heap_base) >> 2;
        for (int64_t q = 0; q < ndw; q++) {
            uint32_t *o = v + (dst + q) * rstride + w * 64;
            for (int j = 0; j < 64; j++)
                if (!on || on[j]) o[j] = heap32[at[j] + q];
        }
    }
    return 0;
}
