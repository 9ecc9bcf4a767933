// y = clamp(x + r, -1, 1) (float32, exact)
// Naive first port: one thread per output, plain loops (built -O2).
#include "../../kernels/hip_min.h"

extern "C" __global__ void residual_add_clamp(const float* __restrict__ x, const float* __restrict__ r, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = __builtin_fminf(__builtin_fmaxf(x[i] + r[i], -1.0f), 1.0f);
  }
}
