// y = x > 0 ? x : alpha * (exp(x) - 1) (float32, alpha = 1.0)
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void elu(const float* __restrict__ x, float* __restrict__ y, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = x[i] > 0.0f ? x[i] : alpha * (__builtin_expf(x[i]) - 1.0f);
  }
}
