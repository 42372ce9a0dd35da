// Kernels that call other code: the SASS step of `fprof run` reads a kernel's section alone
// (nvdisasm -b), which must hold what the kernel calls (tests/unit/core/test_nvdisasm.cpp). Built as
//   nvcc -arch=sm_90 -cubin -o calls_sm90.cubin calls.cu
// and calls_half.raw.sass is `nvdisasm -b SM90` of calls_half's section cut from that cubin (768
// bytes: the kernel, then its own copy of half_fma at 0x180), on the lent H100, 2026-11-26.
#include <cuda_fp16.h>

__device__ __noinline__ __half2 half_fma(__half2 a, __half2 b) { return __hfma2(a, b, a); }

// The HFMA2 is in half_fma's section, reached by a call.
__global__ void calls_half(__half2* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = half_fma(x[i], x[i]);
}

// A float division: its slow path is a subroutine inside the kernel's own code.
__global__ void divides(float* x, const float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] / y[i];
}
