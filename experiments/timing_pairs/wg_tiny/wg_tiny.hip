// y[j] = f(j), one j per lane: 64x more workgroups of 64 lanes, each started by the dispatcher
// Timing-model pair variant (bench_timing_model.py --pairs).
#include "../../kernels/hip_min.h"

extern "C" __global__ void wg_tiny(float* __restrict__ y, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < n) {
    float v = (float)j;
    v = v * 0.5f + 1.0f;
    v = v * v + 0.25f;
    y[j] = v;
  }
}
