// y[N] = x[K] @ A[K,N] (float32); one thread per column (coalesced A reads)
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void vecmat(const float* __restrict__ x, const float* __restrict__ A,
                              float* __restrict__ y, int K, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += x[k] * A[(long)k * N + i];
    y[i] = acc;
  }
}
