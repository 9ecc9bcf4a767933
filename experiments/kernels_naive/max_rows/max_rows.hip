// y[r] = max_c x[r, c] (float32, exact); one thread per row
// Naive first port: one thread per output, plain loops (built -O2).
#include "../../kernels/hip_min.h"

extern "C" __global__ void max_rows(const float* __restrict__ x,
                              float* __restrict__ y, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) {
    const float* r = x + (long)i * cols;
    float m = -__builtin_inff();
    for (int c = 0; c < cols; ++c) {
      m = __builtin_fmaxf(m, r[c]);
    }
    y[i] = m;
  }
}
