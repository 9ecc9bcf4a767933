// y = max(0, 1 - pred * target) elementwise (float32, target in {-1, 1})
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void hinge_loss(const float* __restrict__ pred, const float* __restrict__ target, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = __builtin_fmaxf(1.0f - pred[i] * target[i], 0.0f);
  }
}
