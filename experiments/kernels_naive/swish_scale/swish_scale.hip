// y = x * sigmoid(x) * scale (float32, scale = 2.0)
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void swish_scale(const float* __restrict__ x, float* __restrict__ y, float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = x[i] / (1.0f + __builtin_expf(-x[i])) * scale;
  }
}
