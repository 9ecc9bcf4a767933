// y[r, c] = gelu(x[r, c] + bias[c]): the tanh form of GELU, over a matrix of rows x cols.
// Workgroups stride over the rows (any grid), work-items over the columns (any block).
#include <hip/hip_runtime.h>

extern "C" __global__ void bias_gelu(const float* __restrict__ x, const float* __restrict__ bias,
                                     float* __restrict__ y, int rows, int cols) {
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const size_t row = (size_t)r * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
      float v = x[row + c] + bias[c];
      float u = 0.7978845608f * (v + 0.044715f * v * v * v);
      y[row + c] = 0.5f * v * (1.0f + tanhf(u));
    }
  }
}
