// Kernels whose K0 has problems the static checks report, as real HIP code does, and an
// in-place kernel.
// Built by tests/verify/test_gate_k0.py with clang (no ROCm: ../../../experiments/kernels/hip_min.h).
#include "hip_min.h"
#define BLOCK 256

// __builtin_amdgcn_s_barrier without a fence: the ds_write is still outstanding at the
// s_barrier (gfx90a/gfx942 have no wait before a barrier), which the waitcnt model reports.
extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(BLOCK, BLOCK)))
void lds_shift(const float* __restrict__ x, float* __restrict__ y, int n) {
  __shared__ float s[BLOCK];
  unsigned int t = threadIdx.x;
  int i = blockIdx.x * BLOCK + t;
  s[t] = i < n ? x[i] : 0.0f;
  __builtin_amdgcn_s_barrier();
  float v = s[(t + 1) % BLOCK];
  if (i < n) y[i] = v * 2.0f;
}

// A clean kernel in the same object: its gate must not see lds_shift's problem.
extern "C" __global__ void vscale(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * 3.0f;
}

// A call: the gate covers the callee, and a barrier-free kernel does not synchronize.
__attribute__((noinline)) __device__ float twice(float v) { return v * 2.0f + 1.0f; }

extern "C" __global__ void scale_call(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = twice(x[i]);
}

// In place: x is read and written (a spec declares it inout = true).
extern "C" __global__ void scale_inplace(float* __restrict__ x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 3.0f + 1.0f;
}
