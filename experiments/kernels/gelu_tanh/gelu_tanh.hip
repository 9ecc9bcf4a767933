// y = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
// tanh(u) computed as 1 - 2 / (exp(2u) + 1) with __builtin_expf (no libm).
#include "../hip_min.h"

extern "C" __global__ void gelu_tanh(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    float t = 1.0f - 2.0f / (__builtin_expf(2.0f * u) + 1.0f);
    y[i] = 0.5f * v * (1.0f + t);
  }
}
