// y = x / sqrt(mean(x^2) + 1e-6) * gamma over each row (float32); one thread per row
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void rmsnorm_rows(const float* __restrict__ x,
                                    const float* __restrict__ gamma, float* __restrict__ y,
                                    int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) {
    const float* r = x + (long)i * cols;
    float* o = y + (long)i * cols;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += r[c] * r[c];
    float inv = 1.0f / __builtin_sqrtf(s / cols + 1e-6f);
    for (int c = 0; c < cols; ++c) o[c] = r[c] * inv * gamma[c];
  }
}
