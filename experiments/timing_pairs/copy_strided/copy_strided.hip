// y[i] = x[(i % 64) * (n / 64) + i / 64]: the same words, lanes n/16 bytes apart (strided: 64 cache lines per wave); n % 64 == 0
// Timing-model pair variant (bench_timing_model.py --pairs).
#include "../../kernels/hip_min.h"

extern "C" __global__ void copy_strided(const float* __restrict__ x, float* __restrict__ y,
                                    int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[(i % 64) * (n / 64) + i / 64];
}
