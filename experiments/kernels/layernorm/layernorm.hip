// y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * gamma + beta; one 256-thread workgroup per row.
#include "../hip_min.h"
#define BLOCK 256

static __device__ __forceinline__ float block_sum(float v, float* red, unsigned int tid) {
  red[tid] = v;
  __syncthreads();
  for (unsigned int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    __syncthreads();
  }
  float r = red[0];
  __syncthreads();
  return r;
}

extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(BLOCK, BLOCK)))
void layernorm(const float* __restrict__ x, const float* __restrict__ gamma,
               const float* __restrict__ beta, float* __restrict__ y, int cols, float eps) {
  __shared__ float red[BLOCK];
  unsigned int tid = threadIdx.x;
  const float* xr = x + (long)blockIdx.x * cols;
  float* yr = y + (long)blockIdx.x * cols;

  float s = 0.0f;
  for (int c = tid; c < cols; c += BLOCK) s += xr[c];
  float mean = block_sum(s, red, tid) / (float)cols;

  float q = 0.0f;
  for (int c = tid; c < cols; c += BLOCK) { float d = xr[c] - mean; q += d * d; }
  float var = block_sum(q, red, tid) / (float)cols;
  float rstd = 1.0f / __builtin_sqrtf(var + eps);

  for (int c = tid; c < cols; c += BLOCK) yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
}
