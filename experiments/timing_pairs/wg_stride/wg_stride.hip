// y[j] = f(j) for 16 j per lane (j = i + k * stride): 64x fewer workgroups than wg_tiny
// Timing-model pair variant (bench_timing_model.py --pairs).
#include "../../kernels/hip_min.h"

extern "C" __global__ void wg_stride(float* __restrict__ y, int n, int stride) {
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride) {
    float v = (float)j;
    v = v * 0.5f + 1.0f;
    v = v * v + 0.25f;
    y[j] = v;
  }
}
