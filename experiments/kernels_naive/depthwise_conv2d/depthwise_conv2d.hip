// y[c, oy, ox] = sum_{ky,kx} w[c, ky, kx] x[c, oy+ky, ox+kx] (valid 3x3, float32); one thread per output
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void depthwise_conv2d(const float* __restrict__ x,
                                        const float* __restrict__ w, float* __restrict__ y,
                                        int C, int h, int wd) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int ho = h - 2, wo = wd - 2;
  if (i < C * ho * wo) {
    int c = i / (ho * wo);
    int rem = i % (ho * wo);
    int oy = rem / wo, ox = rem % wo;
    float acc = 0.0f;
    for (int ky = 0; ky < 3; ++ky)
      for (int kx = 0; kx < 3; ++kx)
        acc += w[(c * 3 + ky) * 3 + kx] * x[(c * h + oy + ky) * wd + ox + kx];
    y[i] = acc;
  }
}
