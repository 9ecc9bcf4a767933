// idx[row] = argmax(x[row, :]) (int32, first index on ties); one 256-thread workgroup per row,
// LDS tree reduction over (value, index) pairs.
#include "../hip_min.h"
#define BLOCK 256

extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(BLOCK, BLOCK)))
void argmax_rows(const float* __restrict__ x, int* __restrict__ idx, int cols) {
  __shared__ float sval[BLOCK];
  __shared__ int sidx[BLOCK];
  unsigned int tid = threadIdx.x;
  const float* row = x + (long)blockIdx.x * cols;
  float best = -__builtin_inff();
  int bi = cols;  // larger than any real index
  for (int c = tid; c < cols; c += BLOCK) {
    float v = row[c];
    if (v > best) { best = v; bi = c; }  // strided ascending c: first max wins
  }
  sval[tid] = best;
  sidx[tid] = bi;
  __syncthreads();
  for (unsigned int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) {
      float v = sval[tid + s];
      int j = sidx[tid + s];
      float u = sval[tid];
      int i = sidx[tid];
      if (v > u || (v == u && j < i)) { sval[tid] = v; sidx[tid] = j; }
    }
    __syncthreads();
  }
  if (tid == 0) idx[blockIdx.x] = sidx[0];
}
