// Kernels with analytic FLOP and byte counts, shared by the metrics GPU tests.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace fprof::gpu_test {

// n FFMA.
__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// n FADD + 2n FMUL (no mul->add chain, so nothing contracts into FFMA).
__global__ void addmul(int n, const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ z) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float s = x[i] + y[i];
    float p = x[i] * y[i];
    z[i] = __fmul_rn(s, p);
  }
}

// n DFMA.
__global__ void daxpy(int n, double a, const double* __restrict__ x, double* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// n HFMA2 instructions (2n lanes).
__global__ void haxpy2(int n, __half2 a, const __half2* __restrict__ x, __half2* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __hfma2(a, x[i], y[i]);
}

// Streams n floats in and out: 4n bytes read, 4n written, no FLOPs.
__global__ void copyKernel(int n, const float* __restrict__ x, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}

}  // namespace fprof::gpu_test
