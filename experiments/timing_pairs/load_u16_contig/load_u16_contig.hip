// y[i] = x[i] for 2-byte x: lane i reads element i (lanes 2 bytes apart: one 128 B line per wave)
// Timing-model pair variant (bench_timing_model.py --pairs).
#include "../../kernels/hip_min.h"

extern "C" __global__ void load_u16_contig(const unsigned short* __restrict__ x,
                                           unsigned int* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}
