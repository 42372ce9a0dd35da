// Kernels with analytic FLOP and byte counts, shared by the metrics GPU tests.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace fprof::gpu_test {

// n FFMA.
// In place: a second run of a launch (a duplicate whose memory was not restored) shows as +2.
__global__ void bump(int n, float* __restrict__ p) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1.f;
}

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

namespace fprof::gpu_test {

// Sizes shared by the metrics target program and the test that checks its counters.
inline constexpr int kElems = 1 << 22;  // 16 MiB per float array
inline constexpr int kGemmM = 1024, kGemmN = 768, kGemmK = 512;

// A per-thread array indexed at run time lives in local memory: stack traffic to count.
__global__ void localArray(int n, const int* __restrict__ idx, const float* __restrict__ src, float* __restrict__ out) {
  float buf[64];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
#pragma unroll
  for (int j = 0; j < 64; ++j) buf[j] = src[(i + j * 977) & (n - 1)];
  out[i] = buf[idx[i] & 63];
}

}  // namespace fprof::gpu_test
