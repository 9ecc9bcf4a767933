// y[i] = tanh(x[i]) (float32), as sign(x) * (1 - 2 / (exp(2|x|) + 1)) with __builtin_expf (no libm).
#include "../hip_min.h"

extern "C" __global__ void tanh_act(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    float a = __builtin_fabsf(v);
    float t = 1.0f - 2.0f / (__builtin_expf(2.0f * a) + 1.0f);
    y[i] = __builtin_copysignf(t, v);
  }
}
