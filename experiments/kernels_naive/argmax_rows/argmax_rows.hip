// y[r] = argmax_c x[r, c] (first maximum, int32); one thread per row
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void argmax_rows(const float* __restrict__ x,
                              int* __restrict__ y, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) {
    const float* r = x + (long)i * cols;
    float m = -__builtin_inff(); int best = 0;
    for (int c = 0; c < cols; ++c) {
      float v = r[c]; if (v > m) { m = v; best = c; }
    }
    y[i] = best;
  }
}
