// hip/hip_runtime.h for asmevo: the device side of HIP, enough for typical kernels, for
// plain clang without ROCm (clang -x hip --offload-arch=gfx942 -nogpulib -nogpuinc
// --cuda-device-only: `asmevo hip` runs exactly that). No ROCm device library (ocml,
// ockl) is linked: the math functions below are clang builtins that LLVM's AMDGPU backend
// lowers itself, or short formulas on them, accurate to a few ulp, not ocml's results bit
// for bit. A kernel built with ROCm's own headers is a different K0 (and equally fine).
//
// Covers: fixed-width integer types and size_t; threadIdx, blockIdx, blockDim, gridDim
// (x, y, z) and warpSize; __global__, __device__, __host__, __shared__,
// __launch_bounds__, __restrict__; __syncthreads, __threadfence(_block); warp shuffles
// (__shfl, __shfl_xor, __shfl_down, __shfl_up); atomics (atomicAdd/Sub/Max/Min/Exch/CAS
// on int, unsigned, float); float math (expf, exp2f, logf, log2f, log10f, powf, sqrtf,
// rsqrtf, tanhf, sinf, cosf, fabsf, fminf, fmaxf, floorf, ceilf, truncf, roundf, fmaf,
// copysignf, erff and the __expf-style fast forms) and min/max for integers.
// Not covered: the host API (hipMalloc, launches), half/bfloat16 arithmetic types,
// cooperative groups, textures, double-precision transcendental functions.
#pragma once

#if !defined(__HIP__) || !defined(__AMDGCN__)
#error "asmevo's hip_runtime.h is for device-only builds: clang -x hip --cuda-device-only --offload-arch=gfx942"
#endif

// ---- types -------------------------------------------------------------------------------
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __INTPTR_TYPE__ intptr_t;
typedef __UINTPTR_TYPE__ uintptr_t;

// ---- qualifiers --------------------------------------------------------------------------
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __attribute__((always_inline)) inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...) __asmevo_launch_bounds(__VA_ARGS__, 0)
#define __asmevo_launch_bounds(max_threads, min_blocks, ...) \
  __attribute__((amdgpu_flat_work_group_size(1, max_threads)))
#define __HIP_DEVICE_COMPILE__ 1
#define HIP_DYNAMIC_SHARED(type, name) extern __shared__ type name[];

#define __ASMEVO_D static __device__ __forceinline__

// ---- where a work-item is ----------------------------------------------------------------
// gridDim counts workgroups: COV5's hidden_block_count_{x,y,z}, the first three dwords of the
// implicit kernel arguments (what ROCm's device library reads too)
__ASMEVO_D unsigned __asmevo_block_count(int d) {
  return ((const unsigned __attribute__((address_space(4)))*)
              __builtin_amdgcn_implicitarg_ptr())[d];
}

#define __ASMEVO_DIM(name, fx, fy, fz)                                                   \
  struct name {                                                                          \
    __device__ __forceinline__ unsigned get_x() const { return fx; }                     \
    __device__ __forceinline__ unsigned get_y() const { return fy; }                     \
    __device__ __forceinline__ unsigned get_z() const { return fz; }                     \
    __declspec(property(get = get_x)) unsigned x;                                        \
    __declspec(property(get = get_y)) unsigned y;                                        \
    __declspec(property(get = get_z)) unsigned z;                                        \
  };
__ASMEVO_DIM(__hip_tid_t, __builtin_amdgcn_workitem_id_x(), __builtin_amdgcn_workitem_id_y(),
             __builtin_amdgcn_workitem_id_z())
__ASMEVO_DIM(__hip_bid_t, __builtin_amdgcn_workgroup_id_x(), __builtin_amdgcn_workgroup_id_y(),
             __builtin_amdgcn_workgroup_id_z())
__ASMEVO_DIM(__hip_bdim_t, __builtin_amdgcn_workgroup_size_x(),
             __builtin_amdgcn_workgroup_size_y(), __builtin_amdgcn_workgroup_size_z())
__ASMEVO_DIM(__hip_gdim_t, __asmevo_block_count(0), __asmevo_block_count(1),
             __asmevo_block_count(2))
#undef __ASMEVO_DIM

static __device__ const __hip_tid_t threadIdx;
static __device__ const __hip_bid_t blockIdx;
static __device__ const __hip_bdim_t blockDim;
static __device__ const __hip_gdim_t gridDim;
#define warpSize 64

// ---- synchronisation ---------------------------------------------------------------------
__ASMEVO_D void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
__ASMEVO_D void __threadfence_block() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "workgroup"); }
__ASMEVO_D void __threadfence() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }

// ---- warp shuffles (64 lanes; ds_bpermute) -----------------------------------------------
__ASMEVO_D unsigned __lane_id() {
  return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}
__ASMEVO_D int __shfl(int v, int src, int width = warpSize) {
  int lane = __lane_id();
  int idx = (src & (width - 1)) + (lane & ~(width - 1));
  return __builtin_amdgcn_ds_bpermute(idx << 2, v);
}
__ASMEVO_D int __shfl_xor(int v, int mask, int width = warpSize) {
  int lane = __lane_id();
  int idx = lane ^ mask;
  idx = idx >= ((lane + width) & ~(width - 1)) ? lane : idx;
  return __builtin_amdgcn_ds_bpermute(idx << 2, v);
}
__ASMEVO_D int __shfl_down(int v, unsigned delta, int width = warpSize) {
  int lane = __lane_id();
  int idx = ((lane & (width - 1)) + (int)delta >= width) ? lane : lane + (int)delta;
  return __builtin_amdgcn_ds_bpermute(idx << 2, v);
}
__ASMEVO_D int __shfl_up(int v, unsigned delta, int width = warpSize) {
  int lane = __lane_id();
  int idx = ((lane & (width - 1)) < (int)delta) ? lane : lane - (int)delta;
  return __builtin_amdgcn_ds_bpermute(idx << 2, v);
}
__ASMEVO_D float __shfl(float v, int src, int width = warpSize) {
  return __builtin_bit_cast(float, __shfl(__builtin_bit_cast(int, v), src, width));
}
__ASMEVO_D float __shfl_xor(float v, int mask, int width = warpSize) {
  return __builtin_bit_cast(float, __shfl_xor(__builtin_bit_cast(int, v), mask, width));
}
__ASMEVO_D float __shfl_down(float v, unsigned delta, int width = warpSize) {
  return __builtin_bit_cast(float, __shfl_down(__builtin_bit_cast(int, v), delta, width));
}
__ASMEVO_D float __shfl_up(float v, unsigned delta, int width = warpSize) {
  return __builtin_bit_cast(float, __shfl_up(__builtin_bit_cast(int, v), delta, width));
}

// ---- atomics (device scope, relaxed, as HIP's) -------------------------------------------
#define __ASMEVO_ATOMIC(name, T, builtin)                                                  \
  __ASMEVO_D T name(T* p, T v) {                                                          \
    return builtin(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);                     \
  }
__ASMEVO_ATOMIC(atomicAdd, int, __hip_atomic_fetch_add)
__ASMEVO_ATOMIC(atomicAdd, unsigned, __hip_atomic_fetch_add)
__ASMEVO_ATOMIC(atomicAdd, float, __hip_atomic_fetch_add)
__ASMEVO_ATOMIC(atomicSub, int, __hip_atomic_fetch_sub)
__ASMEVO_ATOMIC(atomicSub, unsigned, __hip_atomic_fetch_sub)
__ASMEVO_ATOMIC(atomicMax, int, __hip_atomic_fetch_max)
__ASMEVO_ATOMIC(atomicMax, unsigned, __hip_atomic_fetch_max)
__ASMEVO_ATOMIC(atomicMin, int, __hip_atomic_fetch_min)
__ASMEVO_ATOMIC(atomicMin, unsigned, __hip_atomic_fetch_min)
__ASMEVO_ATOMIC(atomicExch, int, __hip_atomic_exchange)
__ASMEVO_ATOMIC(atomicExch, unsigned, __hip_atomic_exchange)
__ASMEVO_ATOMIC(atomicExch, float, __hip_atomic_exchange)
#undef __ASMEVO_ATOMIC
__ASMEVO_D int atomicCAS(int* p, int expected, int desired) {
  __hip_atomic_compare_exchange_strong(p, &expected, desired, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  return expected;
}
__ASMEVO_D unsigned atomicCAS(unsigned* p, unsigned expected, unsigned desired) {
  __hip_atomic_compare_exchange_strong(p, &expected, desired, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  return expected;
}

// ---- integer helpers ---------------------------------------------------------------------
__ASMEVO_D int min(int a, int b) { return a < b ? a : b; }
__ASMEVO_D int max(int a, int b) { return a > b ? a : b; }
__ASMEVO_D unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
__ASMEVO_D unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
__ASMEVO_D long long min(long long a, long long b) { return a < b ? a : b; }
__ASMEVO_D long long max(long long a, long long b) { return a > b ? a : b; }
__ASMEVO_D int abs(int a) { return a < 0 ? -a : a; }

// ---- float math --------------------------------------------------------------------------
__ASMEVO_D float fabsf(float x) { return __builtin_fabsf(x); }
__ASMEVO_D float fminf(float a, float b) { return __builtin_fminf(a, b); }
__ASMEVO_D float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
__ASMEVO_D float min(float a, float b) { return __builtin_fminf(a, b); }
__ASMEVO_D float max(float a, float b) { return __builtin_fmaxf(a, b); }
__ASMEVO_D float floorf(float x) { return __builtin_floorf(x); }
__ASMEVO_D float ceilf(float x) { return __builtin_ceilf(x); }
__ASMEVO_D float truncf(float x) { return __builtin_truncf(x); }
__ASMEVO_D float roundf(float x) { return __builtin_roundf(x); }
__ASMEVO_D float rintf(float x) { return __builtin_rintf(x); }
__ASMEVO_D float copysignf(float a, float b) { return __builtin_copysignf(a, b); }
__ASMEVO_D float fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
__ASMEVO_D float sqrtf(float x) { return __builtin_sqrtf(x); }
__ASMEVO_D float rsqrtf(float x) { return 1.0f / __builtin_sqrtf(x); }
__ASMEVO_D float expf(float x) { return __builtin_expf(x); }
__ASMEVO_D float exp2f(float x) { return __builtin_exp2f(x); }
__ASMEVO_D float logf(float x) { return __builtin_logf(x); }
__ASMEVO_D float log2f(float x) { return __builtin_log2f(x); }
__ASMEVO_D float log10f(float x) { return __builtin_log10f(x); }
__ASMEVO_D float sinf(float x) { return __builtin_sinf(x); }
__ASMEVO_D float cosf(float x) { return __builtin_cosf(x); }
__ASMEVO_D float powf(float x, float y) {       // x > 0; x = 0 and negative x as exp2(y*log2|x|)
  return __builtin_exp2f(y * __builtin_log2f(__builtin_fabsf(x)));
}
// tanh(x) = sign(x) (1 - e) / (1 + e), e = exp(-2|x|); near 0 its Taylor series (both
// computed and one selected: no branch in a kernel's loop body)
__ASMEVO_D float tanhf(float x) {
  float a = __builtin_fabsf(x);
  float e = __builtin_expf(-2.0f * a);
  float t = __builtin_copysignf((1.0f - e) / (1.0f + e), x);
  float s = x * (1.0f - x * x * (1.0f / 3.0f));
  return a < 0.004f ? s : t;
}
// erf: Abramowitz-Stegun 7.1.26 (absolute error below 1.5e-7)
__ASMEVO_D float erff(float x) {
  float a = __builtin_fabsf(x);
  float t = 1.0f / (1.0f + 0.3275911f * a);
  float p = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f +
            t * (-1.453152027f + t * 1.061405429f))));
  return __builtin_copysignf(1.0f - p * __builtin_expf(-a * a), x);
}
// the fast forms HIP maps to hardware instructions
__ASMEVO_D float __expf(float x) { return __builtin_amdgcn_exp2f(x * 1.4426950408889634f); }
__ASMEVO_D float __logf(float x) { return __builtin_amdgcn_logf(x) * 0.6931471805599453f; }
__ASMEVO_D float __fdividef(float a, float b) { return a * __builtin_amdgcn_rcpf(b); }
__ASMEVO_D float __frsqrt_rn(float x) { return __builtin_amdgcn_rsqf(x); }

#undef __ASMEVO_D
