// y[i] = x[i] & 0xffff into 2-byte y: every byte of the lines written (full-line writes)
// Timing-model pair variant (bench_timing_model.py --pairs).
#include "../../kernels/hip_min.h"

extern "C" __global__ void store_u16_full(const unsigned int* __restrict__ x,
                                          unsigned short* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = (unsigned short)x[i];
}
