// Two kernels in one code object: vector_add and vector_scale.
#include "../hip_min.h"

// c[i] = a[i] + b[i]
extern "C" __global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// y[i] = alpha * x[i]
extern "C" __global__ void vector_scale(const float* __restrict__ x, float* __restrict__ y,
                                        float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i];
}
