// C[b] = A[b] @ B[b] for BATCH matrices (float32); rows of all batches on grid y
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void bmm(const float* __restrict__ A, const float* __restrict__ B,
                           float* __restrict__ C, int batch, int M, int N, int K) {
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < batch * M && col < N) {
    int b = r / M;
    int row = r % M;
    const float* a = A + (long)b * M * K;
    const float* bb = B + (long)b * K * N;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += a[row * K + k] * bb[k * N + col];
    C[(long)r * N + col] = acc;
  }
}
