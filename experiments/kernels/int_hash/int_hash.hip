// Exactly checkable integer kernel: out[i] = hash32(in[i] ^ seed ^ i) (all uint32, wrapping).
#include "../hip_min.h"

extern "C" __global__ void int_hash(const unsigned int* __restrict__ in, unsigned int* __restrict__ out,
                                    unsigned int seed, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    unsigned int h = in[i] ^ seed ^ (unsigned int)i;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    h += (h << 3) ^ (h >> 5);
    out[i] = h;
  }
}
