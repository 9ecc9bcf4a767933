// GroupNorm on [NB, C, HW] with G groups (no affine, eps 1e-5, float32); one thread per (sample, group)
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void groupnorm(const float* __restrict__ x, float* __restrict__ y,
                                 int groups_total, int group_elems) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < groups_total) {
    const float* g = x + (long)i * group_elems;
    float* o = y + (long)i * group_elems;
    float s = 0.0f;
    for (int e = 0; e < group_elems; ++e) s += g[e];
    float mean = s / group_elems;
    float v = 0.0f;
    for (int e = 0; e < group_elems; ++e) v += (g[e] - mean) * (g[e] - mean);
    float rstd = 1.0f / __builtin_sqrtf(v / group_elems + 1e-5f);
    for (int e = 0; e < group_elems; ++e) o[e] = (g[e] - mean) * rstd;
  }
}
