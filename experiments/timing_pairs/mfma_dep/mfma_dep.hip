// 64 MFMAs into one accumulator, each followed by VALU work that reads its result: the VALU
// waits for the matrix core every time (no co-execution)
// Timing-model pair variant (bench_timing_model.py --pairs).
#include "../../kernels/hip_min.h"

typedef _Float16 half4 __attribute__((ext_vector_type(4)));
typedef float float16v __attribute__((ext_vector_type(16)));

extern "C" __global__ void mfma_dep(const float* __restrict__ x, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float w = x[i];
  half4 a = {(_Float16)w, (_Float16)1.0f, (_Float16)0.5f, (_Float16)0.25f};
  half4 b = a;
  float16v acc = {};
  for (int k = 0; k < 64; ++k) {
    acc = __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, acc, 0, 0, 0);
    w = w * 0.999f + acc[0];
    w = w * 0.999f + 0.25f;
    w = w * 0.999f + 0.125f;
    w = w * 0.999f + 0.0625f;
  }
  y[i] = acc[0] + acc[15] + w;
}
