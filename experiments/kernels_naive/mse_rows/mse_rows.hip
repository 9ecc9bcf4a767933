// loss[r] = mean_c (a[r, c] - b[r, c])^2 (float32); one thread per sample
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void mse_rows(const float* __restrict__ a, const float* __restrict__ b,
                                float* __restrict__ loss, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) {
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) {
      float d = a[(long)i * cols + c] - b[(long)i * cols + c];
      acc += d * d;
    }
    loss[i] = acc / cols;
  }
}
