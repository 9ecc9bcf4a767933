/* Float32 VALU arithmetic with the emulator's NaN rule, one pass per instruction.
 *
 * The compiled counterpart of asmevo/emu/valu.py's float rows (a + b, a - b,
 * b - a, a * b, fma(a, b, c)) followed by asmevo.emu.approx.nan_result /
 * nan_by_member: where the result is NaN, the first NaN operand in source order
 * comes back quieted (payload and sign kept); where two or more operands are NaN,
 * a member k >= 1 of the NaN-choice family takes the one a hash of
 * (k, opcode, operand bits) picks; where none is, the default NaN 0xffc00000.
 * Built with -ffp-contract=off (no a*b+c fused behind our back) and loaded by
 * asmevo/emu/native.py only after a self-test against the numpy path.
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
