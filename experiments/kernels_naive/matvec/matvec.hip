// y[M] = A[M,K] @ x[K] (float32); one thread per row (A reads strided across lanes)
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void matvec(const float* __restrict__ A, const float* __restrict__ x,
                              float* __restrict__ y, int M, int K) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < M) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(long)i * K + k] * x[k];
    y[i] = acc;
  }
}
