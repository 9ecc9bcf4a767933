// out[r, c] = sum_{i, j < 3} in[r + i, c + j] * w[i, j] for out of shape [H - 2, W - 2]
// ("valid" 3x3 correlation, one channel, float32). 16x16 output tile per workgroup, 18x18 input
// tile (with halo) staged in LDS; block (16, 16).
#include "../hip_min.h"
#define TILE 16
#define HALO (TILE + 2)

extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(TILE * TILE, TILE * TILE)))
void conv2d(const float* __restrict__ in, const float* __restrict__ w, float* __restrict__ out,
            int H, int W) {
  __shared__ float tile[HALO][HALO];
  int tx = threadIdx.x, ty = threadIdx.y;
  int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;
  for (int t = ty * TILE + tx; t < HALO * HALO; t += TILE * TILE) {
    int lr = t / HALO, lc = t % HALO;
    int gr = r0 + lr, gc = c0 + lc;
    tile[lr][lc] = (gr < H && gc < W) ? in[(long)gr * W + gc] : 0.0f;
  }
  __syncthreads();
  int r = r0 + ty, c = c0 + tx;
  if (r < H - 2 && c < W - 2) {
    float acc = 0.0f;
#pragma unroll
    for (int i = 0; i < 3; ++i)
#pragma unroll
      for (int j = 0; j < 3; ++j) acc += tile[ty + i][tx + j] * w[i * 3 + j];
    out[(long)r * (W - 2) + c] = acc;
  }
}
