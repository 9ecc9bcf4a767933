// y[i % m] += x[i] atomically, m = n / 64: the lanes of a wave add into 64 consecutive words
// Timing-model pair variant (bench_timing_model.py --pairs).
#include "../../kernels/hip_min.h"

extern "C" __global__ void atomic_distinct(const unsigned int* __restrict__ x,
                                           unsigned int* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) __atomic_fetch_add(&y[i % (n / 64)], x[i], __ATOMIC_RELAXED);
}
