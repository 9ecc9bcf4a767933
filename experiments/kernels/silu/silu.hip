// y[i] = x[i] * sigmoid(x[i]) = x / (1 + exp(-x)) (float32), __builtin_expf (no libm).
#include "../hip_min.h"

extern "C" __global__ void silu(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v / (1.0f + __builtin_expf(-v));
  }
}
