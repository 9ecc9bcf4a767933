// MaxPool2d kernel 2, stride 2 on [P, H, W] (float32, exact); one thread per output
// Naive first port: one thread per output, plain loops (built -O3).
#include "../../kernels/hip_min.h"

extern "C" __global__ void maxpool2d(const float* __restrict__ x, float* __restrict__ y,
                                 int planes, int h, int wd) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int ho = h / 2, wo = wd / 2;
  if (i < planes * ho * wo) {
    int p = i / (ho * wo);
    int rem = i % (ho * wo);
    int oy = rem / wo, ox = rem % wo;
    const float* s = x + ((long)p * h + 2 * oy) * wd + 2 * ox;
    float m = -__builtin_inff();
    for (int ky = 0; ky < 2; ++ky)
      for (int kx = 0; kx < 2; ++kx) m = __builtin_fmaxf(m, s[ky * wd + kx]);
    y[i] = m;
  }
}
