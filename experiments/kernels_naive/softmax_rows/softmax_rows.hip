// y[r, :] = softmax(x[r, :]) (float32); one thread per row, three passes
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y,
                                    int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) {
    const float* r = x + (long)i * cols;
    float* o = y + (long)i * cols;
    float m = -__builtin_inff();
    for (int c = 0; c < cols; ++c) m = __builtin_fmaxf(m, r[c]);
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += __builtin_expf(r[c] - m);
    float inv = 1.0f / s;
    for (int c = 0; c < cols; ++c) o[c] = __builtin_expf(r[c] - m) * inv;
  }
}
