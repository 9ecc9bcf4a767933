// loss[r] = logsumexp(logits[r, :]) - logits[r, target[r]] (float32, int32 targets); one thread per sample
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void cross_entropy_rows(const float* __restrict__ logits,
                                          const int* __restrict__ target,
                                          float* __restrict__ loss, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) {
    const float* r = logits + (long)i * cols;
    float m = -__builtin_inff();
    for (int c = 0; c < cols; ++c) m = __builtin_fmaxf(m, r[c]);
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += __builtin_expf(r[c] - m);
    loss[i] = m + __builtin_logf(s) - r[target[i]];
  }
}
