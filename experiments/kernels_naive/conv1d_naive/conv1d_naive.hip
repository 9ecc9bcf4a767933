// y[co, l] = sum_{ci,k} w[co, ci, k] * x[ci, l + k] (valid, float32); one thread per output
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void conv1d_naive(const float* __restrict__ x,
                                    const float* __restrict__ w, float* __restrict__ y,
                                    int cin, int cout, int len, int kw) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lout = len - kw + 1;
  if (i < cout * lout) {
    int co = i / lout;
    int l = i % lout;
    float acc = 0.0f;
    for (int ci = 0; ci < cin; ++ci)
      for (int k = 0; k < kw; ++k) acc += w[(co * cin + ci) * kw + k] * x[ci * len + l + k];
    y[i] = acc;
  }
}
