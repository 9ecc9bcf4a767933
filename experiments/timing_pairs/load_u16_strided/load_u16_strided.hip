// y[i] = x[2 i] for 2-byte x: the same number of 2-byte reads, lanes 4 bytes apart (sub-dword strided)
// Timing-model pair variant (bench_timing_model.py --pairs).
#include "../../kernels/hip_min.h"

extern "C" __global__ void load_u16_strided(const unsigned short* __restrict__ x,
                                            unsigned int* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[2 * i];
}
