// y[i] = max(x[i], 0) (float32)
#include "../hip_min.h"

extern "C" __global__ void relu(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v > 0.0f ? v : 0.0f;
  }
}
