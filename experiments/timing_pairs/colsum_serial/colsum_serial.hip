// y[b, c] = sum of 64 rows of column c: each load waits before the next (unroll 1: one load in flight per wave)
// Timing-model pair variant (bench_timing_model.py --pairs).
#include "../../kernels/hip_min.h"

extern "C" __global__ void colsum_serial(const float* __restrict__ x, float* __restrict__ y,
                                     int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  const float* p = x + (long)blockIdx.y * 64 * cols + c;
  float acc = 0.0f;
#pragma unroll 1
  for (int r = 0; r < 64; ++r) acc += p[(long)r * cols];
  y[(long)blockIdx.y * cols + c] = acc;
}
