// y = x > 0 ? x : 0.01 x (float32)
// Naive first port: one thread per output, plain loops (built -O2).
#include "../../kernels/hip_min.h"

extern "C" __global__ void leaky_relu(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = x[i] > 0.0f ? x[i] : 0.01f * x[i];
  }
}
