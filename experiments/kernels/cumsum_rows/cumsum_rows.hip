// y[row, :] = inclusive prefix sum of x[row, :], rows of exactly 256 float32; one 256-thread
// workgroup per row, Hillis-Steele scan in LDS (double-buffered).
#include "../hip_min.h"
#define BLOCK 256

extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(BLOCK, BLOCK)))
void cumsum_rows(const float* __restrict__ x, float* __restrict__ y) {
  __shared__ float buf[2][BLOCK];
  unsigned int tid = threadIdx.x;
  long base = (long)blockIdx.x * BLOCK;
  int cur = 0;
  buf[0][tid] = x[base + tid];
  __syncthreads();
  for (unsigned int off = 1; off < BLOCK; off <<= 1) {
    float v = buf[cur][tid];
    if (tid >= off) v += buf[cur][tid - off];
    buf[cur ^ 1][tid] = v;
    cur ^= 1;
    __syncthreads();
  }
  y[base + tid] = buf[cur][tid];
}
