// loss[r] = sum_c p log(p / q) over each row (float32, p and q positive); one thread per sample
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void kl_div_rows(const float* __restrict__ p, const float* __restrict__ q,
                                   float* __restrict__ loss, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) {
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) {
      float pv = p[(long)i * cols + c];
      acc += pv * (__builtin_logf(pv) - __builtin_logf(q[(long)i * cols + c]));
    }
    loss[i] = acc;
  }
}
