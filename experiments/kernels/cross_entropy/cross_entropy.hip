// loss[row] = logsumexp(logits[row, :]) - logits[row, target[row]] (float32 logits, int32 targets);
// one 256-thread workgroup per row, LDS max and sum reductions.
#include "../hip_min.h"
#define BLOCK 256

extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(BLOCK, BLOCK)))
void cross_entropy(const float* __restrict__ logits, const int* __restrict__ target,
                   float* __restrict__ loss, int cols) {
  __shared__ float red[BLOCK];
  unsigned int tid = threadIdx.x;
  const float* xr = logits + (long)blockIdx.x * cols;

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
  if (tid == 0) loss[blockIdx.x] = rmax + __builtin_logf(red[0]) - xr[target[blockIdx.x]];
}
