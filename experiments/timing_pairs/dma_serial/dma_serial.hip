// y[i] = sum over j of x[tile j*256 + tid], the block's 16 KiB tile staged in LDS first by
// direct-to-LDS loads (buffer_load_dword ... lds: global memory into LDS), each waited for
// before the next is issued (one in flight; dma_pipelined: sixteen).
// Timing-model pair variant (bench_timing_model.py --pairs).
#include "../../kernels/hip_min.h"

typedef int int32x4_t __attribute__((ext_vector_type(4)));
__device__ void buffer_load_lds(int32x4_t rsrc, __attribute__((address_space(3))) void* lds,
                                int size, int voffset, int soffset, int offset, int aux)
    __asm("llvm.amdgcn.raw.buffer.load.lds");

extern "C" __global__ void dma_serial(const float* __restrict__ x, float* __restrict__ y,
                                         int n) {
  __shared__ float tile[4096];
  int tid = threadIdx.x, wave = tid / 64;
  int base = blockIdx.x * 4096;
  unsigned long long p = (unsigned long long)x;
  int32x4_t r = {(int)(unsigned)p, (int)((p >> 32) & 0xffff), n * 4, 0x27000};
#pragma unroll
  for (int j = 0; j < 16; ++j)
    buffer_load_lds(r, (__attribute__((address_space(3))) void*)&tile[j * 256 + wave * 64],
                    4, (base + j * 256 + tid) * 4, 0, 0, 0),
    __builtin_amdgcn_s_waitcnt(0x0f70);  // vmcnt(0) after each load: one in flight
  __syncthreads();
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < 16; ++j) s += tile[j * 256 + tid];
  y[blockIdx.x * 256 + tid] = s;
}
