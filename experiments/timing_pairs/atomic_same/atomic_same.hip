// y[i / 64] += x[i] atomically: the 64 lanes of a wave add into one word (contention)
// Timing-model pair variant (bench_timing_model.py --pairs).
#include "../../kernels/hip_min.h"

extern "C" __global__ void atomic_same(const unsigned int* __restrict__ x,
                                       unsigned int* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) __atomic_fetch_add(&y[i / 64], x[i], __ATOMIC_RELAXED);
}
