// y[c] = argmin_r x[r, c] (first minimum, int32); one thread per column
// Naive first port: one thread per output, plain loops (built -O2).
#include "../../kernels/hip_min.h"

extern "C" __global__ void argmin_cols(const float* __restrict__ x,
                              int* __restrict__ y, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < cols) {
    float m = __builtin_inff(); int best = 0;
    for (int r = 0; r < rows; ++r) {
      float v = x[(long)r * cols + i]; if (v < m) { m = v; best = r; }
    }
    y[i] = best;
  }
}
