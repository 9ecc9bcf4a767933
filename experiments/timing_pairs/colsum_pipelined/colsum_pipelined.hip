// the same sum with 8 loads issued before the first add (unroll 8: eight loads in flight per wave, same order of additions)
// Timing-model pair variant (bench_timing_model.py --pairs).
#include "../../kernels/hip_min.h"

extern "C" __global__ void colsum_pipelined(const float* __restrict__ x, float* __restrict__ y,
                                        int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  const float* p = x + (long)blockIdx.y * 64 * cols + c;
  float acc = 0.0f;
#pragma unroll 8
  for (int r = 0; r < 64; ++r) acc += p[(long)r * cols];
  y[(long)blockIdx.y * cols + c] = acc;
}
