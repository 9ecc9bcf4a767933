// Minimal HIP device-side definitions for building kernels with plain clang
// (-nogpulib -nogpuinc, no ROCm headers, no libm/ocml). Math via clang builtins only.
#pragma once

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __forceinline__ __attribute__((always_inline)) inline

struct __hip_tid_t {
  __device__ unsigned int __attribute__((always_inline)) get_x() const { return __builtin_amdgcn_workitem_id_x(); }
  __device__ unsigned int __attribute__((always_inline)) get_y() const { return __builtin_amdgcn_workitem_id_y(); }
  __declspec(property(get = get_x)) unsigned int x;
  __declspec(property(get = get_y)) unsigned int y;
};
struct __hip_bid_t {
  __device__ unsigned int __attribute__((always_inline)) get_x() const { return __builtin_amdgcn_workgroup_id_x(); }
  __device__ unsigned int __attribute__((always_inline)) get_y() const { return __builtin_amdgcn_workgroup_id_y(); }
  __declspec(property(get = get_x)) unsigned int x;
  __declspec(property(get = get_y)) unsigned int y;
};
struct __hip_bdim_t {
  __device__ unsigned int __attribute__((always_inline)) get_x() const { return __builtin_amdgcn_workgroup_size_x(); }
  __device__ unsigned int __attribute__((always_inline)) get_y() const { return __builtin_amdgcn_workgroup_size_y(); }
  __declspec(property(get = get_x)) unsigned int x;
  __declspec(property(get = get_y)) unsigned int y;
};

static __device__ const __hip_tid_t threadIdx;
static __device__ const __hip_bid_t blockIdx;
static __device__ const __hip_bdim_t blockDim;

static __device__ __forceinline__ void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
