// AvgPool2d kernel 3, stride 2, no padding on [P, H, W] (float32); one thread per output
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void avgpool2d(const float* __restrict__ x, float* __restrict__ y,
                                 int planes, int h, int wd) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int ho = (h - 3) / 2 + 1, wo = (wd - 3) / 2 + 1;
  if (i < planes * ho * wo) {
    int p = i / (ho * wo);
    int rem = i % (ho * wo);
    int oy = rem / wo, ox = rem % wo;
    const float* s = x + ((long)p * h + 2 * oy) * wd + 2 * ox;
    float acc = 0.0f;
    for (int ky = 0; ky < 3; ++ky)
      for (int kx = 0; kx < 3; ++kx) acc += s[ky * wd + kx];
    y[i] = acc / 9.0f;
  }
}
