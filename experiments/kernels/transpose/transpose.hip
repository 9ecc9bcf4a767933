// out[c, r] = in[r, c] for in of shape [rows, cols]; 32x32 LDS tile (padded), block (32, 8).
#include "../hip_min.h"
#define TILE 32
#define ROWS_PER_PASS 8

extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(TILE * ROWS_PER_PASS, TILE * ROWS_PER_PASS)))
void transpose(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[TILE][TILE + 1];
  int tx = threadIdx.x, ty = threadIdx.y;
  int c = blockIdx.x * TILE + tx;
  int r0 = blockIdx.y * TILE;
  for (int j = ty; j < TILE; j += ROWS_PER_PASS) {
    int r = r0 + j;
    if (r < rows && c < cols) tile[j][tx] = in[(long)r * cols + c];
  }
  __syncthreads();
  int oc = r0 + tx;                 // column in out (= row in in)
  int or0 = blockIdx.x * TILE;      // row in out (= column in in)
  for (int j = ty; j < TILE; j += ROWS_PER_PASS) {
    int orow = or0 + j;
    if (orow < cols && oc < rows) out[(long)orow * rows + oc] = tile[tx][j];
  }
}
