// y[co, oy, ox] = sum_{ci,ky,kx} w[co,ci,ky,kx] x[ci, oy+ky, ox+kx] (valid 3x3, float32); one thread per output
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void conv2d_naive(const float* __restrict__ x,
                                    const float* __restrict__ w, float* __restrict__ y,
                                    int cin, int cout, int h, int wd) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int ho = h - 2, wo = wd - 2;
  if (i < cout * ho * wo) {
    int co = i / (ho * wo);
    int rem = i % (ho * wo);
    int oy = rem / wo, ox = rem % wo;
    float acc = 0.0f;
    for (int ci = 0; ci < cin; ++ci)
      for (int ky = 0; ky < 3; ++ky)
        for (int kx = 0; kx < 3; ++kx)
          acc += w[((co * cin + ci) * 3 + ky) * 3 + kx] * x[(ci * h + oy + ky) * wd + ox + kx];
    y[i] = acc;
  }
}
