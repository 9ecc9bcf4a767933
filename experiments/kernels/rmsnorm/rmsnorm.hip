// y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w; one 256-thread workgroup per row.
#include "../hip_min.h"
#define BLOCK 256

extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(BLOCK, BLOCK)))
void rmsnorm(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
             int cols, float eps) {
  __shared__ float red[BLOCK];
  unsigned int tid = threadIdx.x;
  const float* xr = x + (long)blockIdx.x * cols;
  float* yr = y + (long)blockIdx.x * cols;

  float q = 0.0f;
  for (int c = tid; c < cols; c += BLOCK) { float v = xr[c]; q += v * v; }
  red[tid] = q;
  __syncthreads();
  for (unsigned int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    __syncthreads();
  }
  float rs = __builtin_amdgcn_rsqf(red[0] / (float)cols + eps);

  for (int c = tid; c < cols; c += BLOCK) yr[c] = xr[c] * rs * w[c];
}
