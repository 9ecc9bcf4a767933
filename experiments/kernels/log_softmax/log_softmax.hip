// y[row, :] = x[row, :] - max - log(sum(exp(x[row, :] - max))); one 256-thread workgroup per row.
#include "../hip_min.h"
#define BLOCK 256

extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(BLOCK, BLOCK)))
void log_softmax(const float* __restrict__ x, float* __restrict__ y, int cols) {
  __shared__ float red[BLOCK];
  unsigned int tid = threadIdx.x;
  const float* xr = x + (long)blockIdx.x * cols;
  float* yr = y + (long)blockIdx.x * cols;

  float m = -__builtin_inff();
  for (int c = tid; c < cols; c += BLOCK) m = __builtin_fmaxf(m, xr[c]);
  red[tid] = m;
  __syncthreads();
  for (unsigned int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] = __builtin_fmaxf(red[tid], red[tid + s]);
    __syncthreads();
  }
  float rmax = red[0];
  __syncthreads();

  float sum = 0.0f;
  for (int c = tid; c < cols; c += BLOCK) sum += __builtin_expf(xr[c] - rmax);
  red[tid] = sum;
  __syncthreads();
  for (unsigned int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    __syncthreads();
  }
  float lse = rmax + __builtin_logf(red[0]);

  for (int c = tid; c < cols; c += BLOCK) yr[c] = xr[c] - lse;
}
