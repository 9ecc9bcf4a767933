// y = (x - mean) / sqrt(var + 1e-5) * gamma + beta over each row (float32); one thread per row
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void layernorm_rows(const float* __restrict__ x,
                                      const float* __restrict__ gamma,
                                      const float* __restrict__ beta, float* __restrict__ y,
                                      int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) {
    const float* r = x + (long)i * cols;
    float* o = y + (long)i * cols;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += r[c];
    float mean = s / cols;
    float v = 0.0f;
    for (int c = 0; c < cols; ++c) v += (r[c] - mean) * (r[c] - mean);
    float rstd = 1.0f / __builtin_sqrtf(v / cols + 1e-5f);
    for (int c = 0; c < cols; ++c) o[c] = (r[c] - mean) * rstd * gamma[c] + beta[c];
  }
}
