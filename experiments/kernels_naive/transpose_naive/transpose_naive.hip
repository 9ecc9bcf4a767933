// y[c, r] = x[r, c] (float32, exact); one thread per output, strided reads
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void transpose_naive(const float* __restrict__ x,
                                       float* __restrict__ y, int rows, int cols) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < cols && col < rows) y[(long)row * rows + col] = x[(long)col * cols + row];
}
