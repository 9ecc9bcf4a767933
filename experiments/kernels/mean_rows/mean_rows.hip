// out[row] = mean(x[row, :]); one 256-thread workgroup per row, LDS tree reduction.
#include "../hip_min.h"
#define BLOCK 256

extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(BLOCK, BLOCK)))
void mean_rows(const float* __restrict__ x, float* __restrict__ out, int cols) {
  __shared__ float sdata[BLOCK];
  unsigned int tid = threadIdx.x;
  const float* row = x + (long)blockIdx.x * cols;
  float acc = 0.0f;
  for (int c = tid; c < cols; c += BLOCK) acc += row[c];
  sdata[tid] = acc;
  __syncthreads();
  for (unsigned int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0] / (float)cols;
}
