// y[i] = x[i]: lane i reads word i (coalesced: 2 cache lines per wave)
// Timing-model pair variant (bench_timing_model.py --pairs).
#include "../../kernels/hip_min.h"

extern "C" __global__ void copy_coalesced(const float* __restrict__ x, float* __restrict__ y,
                                      int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}
