// y[r, c] = sum_{c' <= c} x[r, c'] (float32); one thread per row, sequential
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void cumsum_naive(const float* __restrict__ x, float* __restrict__ y,
                                    int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) {
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) {
      acc += x[(long)i * cols + c];
      y[(long)i * cols + c] = acc;
    }
  }
}
