// libfprof_validation_dso.so: a kernel the validation program knows nothing about at link time.
// The program dlopen()s this library, asks it for the kernel's facts and has it launch the kernel
// with <<<>>> (through this library's own statically linked CUDA runtime).
#include <cuda.h>

#include <cstdio>
#include <cstring>

#include "validation_dso.h"

namespace validation_dso {

__global__ void dso_fma_kernel(unsigned* out, const float* in, int n, int iters, float m, float c) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float a = in[i], s = a;
#pragma unroll 1
  for (int k = 0; k < iters; ++k) {
    a = __fmaf_rn(a, m, c);
    s = __fadd_rn(s, c);
  }
  out[i] = __float_as_uint(a) ^ __float_as_uint(s);
}

}  // namespace validation_dso

extern "C" __attribute__((visibility("default"))) int validation_dso_describe(ValidationDsoKernel* out) {
  cudaFuncAttributes attr{};
  if (cudaError_t e = cudaFuncGetAttributes(&attr, validation_dso::dso_fma_kernel); e != cudaSuccess) return e;
  cudaFunction_t f = nullptr;
  if (cudaError_t e = cudaGetFuncBySymbol(&f, reinterpret_cast<const void*>(validation_dso::dso_fma_kernel));
      e != cudaSuccess) {
    return e;
  }
  const char* name = nullptr;
  if (cuFuncGetName(&name, reinterpret_cast<CUfunction>(f)) != CUDA_SUCCESS || name == nullptr) {
    return cudaErrorInvalidDeviceFunction;
  }
  std::snprintf(out->name, sizeof out->name, "%s", name);
  out->registers_per_thread = attr.numRegs;
  out->local_bytes_per_thread = static_cast<int>(attr.localSizeBytes);
  out->static_shared_bytes = static_cast<int>(attr.sharedSizeBytes);
  out->const_bytes = static_cast<int>(attr.constSizeBytes);
  out->max_threads_per_block = attr.maxThreadsPerBlock;
  out->binary_version = attr.binaryVersion;
  out->ptx_version = attr.ptxVersion;
  return 0;
}

extern "C" __attribute__((visibility("default"))) int validation_dso_launch(unsigned* out, const float* in, int n,
                                                                             int iters, float m, float c,
                                                                             cudaStream_t stream) {
  validation_dso::dso_fma_kernel<<<(n + 255) / 256, 256, 0, stream>>>(out, in, n, iters, m, c);
  return cudaGetLastError();
}
