// y[i] = sum_{j < k} x[i + j] * w[j] for i < n - k + 1 ("valid" 1-D correlation, float32, small filter).
#include "../hip_min.h"

extern "C" __global__ void conv1d(const float* __restrict__ x, const float* __restrict__ w,
                                  float* __restrict__ y, int n, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int n_out = n - k + 1;
  if (i < n_out) {
    float acc = 0.0f;
    for (int j = 0; j < k; ++j) acc += x[i + j] * w[j];
    y[i] = acc;
  }
}
