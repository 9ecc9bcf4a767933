// y = gelu_tanh(x * scale + bias) (float32, scalars scale = 1.5, bias = 0.25)
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void scale_add_gelu(const float* __restrict__ x, float* __restrict__ y, float scale, float bias, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float u = x[i] * scale + bias;
    float z = 0.7978845608028654f * (u + 0.044715f * u * u * u);
    float t = 1.0f - 2.0f / (__builtin_expf(2.0f * z) + 1.0f);
    y[i] = 0.5f * u * (1.0f + t);
  }
}
