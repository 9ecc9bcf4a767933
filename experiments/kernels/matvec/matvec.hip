// y[M] = A[M, K] @ x[K] (float32, row-major); one 256-thread workgroup per row, LDS tree reduction.
#include "../hip_min.h"
#define BLOCK 256

extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(BLOCK, BLOCK)))
void matvec(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y, int K) {
  __shared__ float sdata[BLOCK];
  unsigned int tid = threadIdx.x;
  const float* row = A + (long)blockIdx.x * K;
  float acc = 0.0f;
  for (int c = tid; c < K; c += BLOCK) acc += row[c] * x[c];
  sdata[tid] = acc;
  __syncthreads();
  for (unsigned int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) y[blockIdx.x] = sdata[0];
}
