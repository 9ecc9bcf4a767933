// 32x32 LDS-tile transpose, tile[32][32]: the column reads hit one bank per phase (32-way conflict); R % 32 == 0
// Timing-model pair variant (bench_timing_model.py --pairs).
#include "../../kernels/hip_min.h"

extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(256, 256)))
void transpose_lds_conflicted(const float* __restrict__ x, float* __restrict__ y, int r) {
  __shared__ float tile[32][32];
  int bx = blockIdx.x * 32, by = blockIdx.y * 32;
  int tx = threadIdx.x, ty = threadIdx.y;
  for (int j = 0; j < 32; j += 8) tile[ty + j][tx] = x[(long)(by + ty + j) * r + bx + tx];
  __syncthreads();
  for (int j = 0; j < 32; j += 8) y[(long)(bx + ty + j) * r + by + tx] = tile[tx][ty + j];
}
