// y[c] = sum_r x[r, c] (float32); one thread per column
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void sum_cols(const float* __restrict__ x,
                              float* __restrict__ y, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < cols) {
    float acc = 0.0f;
    for (int r = 0; r < rows; ++r) {
      acc += x[(long)r * cols + i];
    }
    y[i] = acc;
  }
}
