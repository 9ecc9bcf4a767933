// y[r] = sum_c x[r, c] (float32); one thread per row
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void sum_rows(const float* __restrict__ x,
                              float* __restrict__ y, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) {
    const float* r = x + (long)i * cols;
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) {
      acc += r[c];
    }
    y[i] = acc;
  }
}
