// emufuzz prelude: the helpers every generated program uses, for both sides.
//
// One source is compiled for gfx942/gfx90a (HIP device code, clang -x hip,
// experiments/kernels/hip_min.h) and for x86-64 (the same text as plain C++).
// Every helper is free of undefined behaviour, so the two compilations compute
// the same function; where a lowering differs between the targets (f16 math
// that x86 has no instructions or libm entry for), the x86 side computes the
// same correctly rounded value another way (see exclusions.toml, "render").
#pragma once

#ifdef __HIP_DEVICE_COMPILE__
#include "hip_min.h"
#define DEV __device__
#define GPU 1
#else
#define DEV
#define GPU 0
#define __global__
#define __shared__
#endif

#define FN static DEV inline __attribute__((always_inline))

typedef __INT8_TYPE__ int8_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __INT16_TYPE__ int16_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __INT32_TYPE__ int32_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT64_TYPE__ uint64_t;
typedef _Float16 half;

// fz<T>: w = unsigned type arithmetic wraps in, u = unsigned of the same width.
template <class T> struct fz;
#define FZ(T, W, U, BITS, SGN, FLT) \
  template <> struct fz<T> { typedef W w; typedef U u; enum { bits = BITS, sgn = SGN, flt = FLT }; };
FZ(int8_t, uint32_t, uint8_t, 8, 1, 0)
FZ(uint8_t, uint32_t, uint8_t, 8, 0, 0)
FZ(int16_t, uint32_t, uint16_t, 16, 1, 0)
FZ(uint16_t, uint32_t, uint16_t, 16, 0, 0)
FZ(int32_t, uint32_t, uint32_t, 32, 1, 0)
FZ(uint32_t, uint32_t, uint32_t, 32, 0, 0)
FZ(int64_t, uint64_t, uint64_t, 64, 1, 0)
FZ(uint64_t, uint64_t, uint64_t, 64, 0, 0)
FZ(half, uint16_t, uint16_t, 16, 1, 1)
FZ(float, uint32_t, uint32_t, 32, 1, 1)
FZ(double, uint64_t, uint64_t, 64, 1, 1)
#undef FZ

template <class T> FN T w_min_of() {
  return fz<T>::sgn ? (T)((typename fz<T>::u)1 << (fz<T>::bits - 1)) : (T)0;
}
template <class T> FN T w_max_of() {
  return fz<T>::sgn ? (T)(((typename fz<T>::u)1 << (fz<T>::bits - 1)) - 1) : (T)~(typename fz<T>::u)0;
}

// ---- integers ---------------------------------------------------------------
// An optimization barrier on the GPU side only: the value is unknown to LLVM's
// known-bits analysis (see exclusions.toml, llvm19-divrem-shrink).
template <class T> FN T w_opq(T x) {
#if GPU
  __asm__("" : "+v"(x));
#endif
  return x;
}
#define W(T) typename fz<T>::w
#define U(T) typename fz<T>::u
template <class T> FN T w_add(T a, T b) { return (T)((W(T))a + (W(T))b); }
template <class T> FN T w_sub(T a, T b) { return (T)((W(T))a - (W(T))b); }
template <class T> FN T w_mul(T a, T b) { return (T)((W(T))a * (W(T))b); }
template <class T> FN T w_neg(T a) { return (T)((W(T))0 - (W(T))a); }
template <class T> FN T w_abs(T a) { return a < (T)0 ? w_neg(a) : a; }
template <class T> FN T w_shl(T a, T b) {
  return (T)((W(T))a << ((unsigned)(U(T))b & (fz<T>::bits - 1)));
}
template <class T> FN T w_shr(T a, T b) { return (T)(a >> ((unsigned)(U(T))b & (fz<T>::bits - 1))); }
// the dividend of a 32/64-bit unsigned or a 64-bit signed division goes through w_opq
// (exclusions.toml: llvm19-divrem-shrink)
template <class T> FN T w_divarg(T a) {
  if constexpr (fz<T>::bits >= 32 && (!fz<T>::sgn || fz<T>::bits == 64)) return w_opq(a);
  else return a;
}
template <class T> FN T w_div(T a, T b) {
  return (b == (T)0 || (fz<T>::sgn && a == w_min_of<T>() && b == (T)-1)) ? a
                                                                         : (T)(w_divarg(a) / b);
}
template <class T> FN T w_rem(T a, T b) {
  return b == (T)0 ? a : (fz<T>::sgn && b == (T)-1) ? (T)0 : (T)(w_divarg(a) % b);
}
template <class T> FN T w_mulhi(T a, T b) {
  if constexpr (fz<T>::bits == 64) {
    if constexpr (fz<T>::sgn) return (T)(((__int128)a * (__int128)b) >> 64);
    else return (T)(((unsigned __int128)a * (unsigned __int128)b) >> 64);
  } else if constexpr (fz<T>::sgn) {
    return (T)(((int64_t)a * (int64_t)b) >> fz<T>::bits);
  } else {
    return (T)(((uint64_t)a * (uint64_t)b) >> fz<T>::bits);
  }
}
template <class T> FN T w_popc(T a) {
  if constexpr (fz<T>::bits == 64) return (T)__builtin_popcountll((uint64_t)a);
  else return (T)__builtin_popcount((uint32_t)(U(T))a);
}
template <class T> FN T w_clz(T a) {
  if constexpr (fz<T>::bits == 64)
    return (uint64_t)a == 0 ? (T)64 : (T)__builtin_clzll((uint64_t)a);
  else
    return (U(T))a == 0 ? (T)fz<T>::bits
                        : (T)(__builtin_clz((uint32_t)(U(T))a) - (32 - fz<T>::bits));
}
template <class T> FN T w_ctz(T a) {
  if constexpr (fz<T>::bits == 64)
    return (uint64_t)a == 0 ? (T)64 : (T)__builtin_ctzll((uint64_t)a);
  else
    return (U(T))a == 0 ? (T)fz<T>::bits : (T)__builtin_ctz((uint32_t)(U(T))a);
}

// ---- floats -------------------------------------------------------------------
FN half w_sqrt(half a) {
#if GPU
  return __builtin_sqrtf16(a);
#else
  return (half)__builtin_sqrtf((float)a);   // one rounding of an exact-enough f32 root
#endif
}
FN float w_sqrt(float a) { return __builtin_sqrtf(a); }
FN double w_sqrt(double a) { return __builtin_sqrt(a); }

#if GPU
#define F16_UNARY(name, builtin) FN half name(half a) { return builtin##f16(a); }
#else
#define F16_UNARY(name, builtin) FN half name(half a) { return (half)builtin##f((float)a); }
#endif
#define F_UNARY(name, builtin) \
  F16_UNARY(name, builtin) \
  FN float name(float a) { return builtin##f(a); } \
  FN double name(double a) { return builtin(a); }
F_UNARY(w_floor, __builtin_floor)
F_UNARY(w_ceil, __builtin_ceil)
F_UNARY(w_trunc, __builtin_trunc)
F_UNARY(w_rint, __builtin_rint)
F_UNARY(w_fabs, __builtin_fabs)

FN half w_fma(half a, half b, half c) {
#if GPU
  return __builtin_fmaf16(a, b, c);
#else
  // a*b is exact in double and the one double rounding of a*b+c cannot move it
  // across an f16 rounding boundary (any case that could is an f16 overflow).
  return (half)((double)a * (double)b + (double)c);
#endif
}
FN float w_fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
FN double w_fma(double a, double b, double c) { return __builtin_fma(a, b, c); }

FN half w_copysign(half a, half b) { return __builtin_copysignf16(a, b); }
FN float w_copysign(float a, float b) { return __builtin_copysignf(a, b); }
FN double w_copysign(double a, double b) { return __builtin_copysign(a, b); }

// fmin/fmax: LLVM's minnum returns "either" zero for (+0, -0); this makes it the
// IEEE-754-2019 answer on both targets (min: -0, max: +0). NaN: the other operand.
#if GPU
FN half fmin_raw(half a, half b) { return __builtin_fminf16(a, b); }
FN half fmax_raw(half a, half b) { return __builtin_fmaxf16(a, b); }
#else
FN half fmin_raw(half a, half b) { return (half)__builtin_fminf((float)a, (float)b); }
FN half fmax_raw(half a, half b) { return (half)__builtin_fmaxf((float)a, (float)b); }
#endif
FN float fmin_raw(float a, float b) { return __builtin_fminf(a, b); }
FN float fmax_raw(float a, float b) { return __builtin_fmaxf(a, b); }
FN double fmin_raw(double a, double b) { return __builtin_fmin(a, b); }
FN double fmax_raw(double a, double b) { return __builtin_fmax(a, b); }
// a NaN operand (signalling ones too) gives the other operand, spelled out: llvm.minnum's
// sNaN case is target-defined (x86: the other operand; AMDGPU IEEE mode may return the
// quieted sNaN when LLVM drops the canonicalize), exclusions.toml fmin-snan
template <class T> FN T w_fmin(T a, T b) {
  if (a != a) return b;
  if (b != b) return a;
  T r = fmin_raw(a, b);
  return (a == (T)0 && b == (T)0)
             ? __builtin_bit_cast(T, (U(T))(__builtin_bit_cast(U(T), a) | __builtin_bit_cast(U(T), b)))
             : r;
}
template <class T> FN T w_fmax(T a, T b) {
  if (a != a) return b;
  if (b != b) return a;
  T r = fmax_raw(a, b);
  return (a == (T)0 && b == (T)0)
             ? __builtin_bit_cast(T, (U(T))(__builtin_bit_cast(U(T), a) & __builtin_bit_cast(U(T), b)))
             : r;
}
// The sign of a NaN an operation produced is not determined (LLVM LangRef,
// "Floating-point NaN values"): before it reaches an integer or a copysign, map NaN
// to one fixed value.
template <class T> FN T w_nansign(T b) { return b != b ? (T)1 : b; }

// ---- conversions -----------------------------------------------------------------
// value conversion; float -> int saturates (NaN -> 0), as C leaves it undefined
template <class T, class F> FN T w_conv(F x) {
  if constexpr (fz<F>::flt && !fz<T>::flt) {
    double d = (double)x;
    if (d != d) return (T)0;
    if (fz<T>::sgn) {
      double lo = -__builtin_ldexp(1.0, fz<T>::bits - 1);
      if (d <= lo) return w_min_of<T>();
      if (d >= -lo) return w_max_of<T>();
    } else {
      if (d <= -1.0) return (T)0;
      if (d >= __builtin_ldexp(1.0, fz<T>::bits)) return w_max_of<T>();
    }
    return (T)x;
  } else {
    return (T)x;
  }
}
template <class T, class F> FN T w_bits(F x) { return __builtin_bit_cast(T, x); }
// float -> int bits of a computed value: NaN to the canonical quiet NaN first
template <class F> FN U(F) w_qnan() {
  return fz<F>::bits == 16 ? (U(F))0x7e00 : fz<F>::bits == 32 ? (U(F))0x7fc00000u
                                                              : (U(F))0x7ff8000000000000ull;
}
template <class T, class F> FN T w_nbits(F x) {
  return x != x ? (T)w_qnan<F>() : __builtin_bit_cast(T, x);
}
// int -> float bits of a computed value: a NaN bit pattern to the canonical quiet NaN
// (integer operations only, so neither compiler can fold it; exclusions.toml nan-bits)
template <class T, class F> FN T w_fbits(F x) {
  U(T) u = __builtin_bit_cast(U(T), x);
  const U(T) qn = w_qnan<T>();
  const U(T) quiet = (U(T))(qn & (U(T))(0 - qn));
  const U(T) expm = (U(T))(qn ^ quiet), fracm = (U(T))((U(T))(quiet << 1) - 1);
  if ((U(T))(u & expm) == expm && (U(T))(u & fracm) != 0) u = qn;
  return __builtin_bit_cast(T, u);
}
template <class F> FN U(F) w_out(F x) { return __builtin_bit_cast(U(F), x); }
#undef W
#undef U

// gather index: any integer, reduced into [0, n) in its own width (64-bit -> u64 urem)
template <class T> FN uint64_t w_gix(T x, uint32_t n) {
  if constexpr (fz<T>::bits == 64) return w_opq((uint64_t)x) % (uint64_t)n;  // llvm19-divrem-shrink
  else return w_opq((uint32_t)(typename fz<T>::u)x) % n;
}
template <class T> FN T w_imin(T a, T b) { return a < b ? a : b; }
template <class T> FN T w_imax(T a, T b) { return a < b ? b : a; }
