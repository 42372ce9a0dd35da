// The workload behind the metrics-mode cost benchmark (CUPTI_NOTES.md's anchor): 100 rounds of
// {axpy, relu, 1024^3 tiled SGEMM}, 300 launches. bench/metrics_overhead.sh times it natively,
// under `fprof run --metrics roofline` and under `ncu --metrics <the same metrics>`.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(call)                                                                                           \
  do {                                                                                                     \
    cudaError_t e_ = (call);                                                                               \
    if (e_ != cudaSuccess) {                                                                               \
      std::fprintf(stderr, "%s failed at %s:%d: %s\n", #call, __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                                        \
    }                                                                                                      \
  } while (0)

__global__ void axpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void relu(int n, const float* __restrict__ x, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}

template <int T>
__global__ void sgemm(int n, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  __shared__ float As[T][T];
  __shared__ float Bs[T][T];
  int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < n; k0 += T) {
    As[threadIdx.y][threadIdx.x] = A[row * n + k0 + threadIdx.x];
    Bs[threadIdx.y][threadIdx.x] = B[(k0 + threadIdx.y) * n + col];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < T; ++k) acc = fmaf(As[threadIdx.y][k], Bs[k][threadIdx.x], acc);
    __syncthreads();
  }
  C[row * n + col] = acc;
}

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return 77;
  const int n = 1 << 24, N = 1024;
  float *x, *y, *A, *B, *C;
  CK(cudaMalloc(&x, n * 4));
  CK(cudaMalloc(&y, n * 4));
  CK(cudaMalloc(&A, N * N * 4));
  CK(cudaMalloc(&B, N * N * 4));
  CK(cudaMalloc(&C, N * N * 4));
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[i] = static_cast<float>(i % 1013) * 1e-3f - 0.5f;
  CK(cudaMemcpy(x, h.data(), n * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(y, h.data(), n * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(A, h.data(), N * N * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(B, h.data(), N * N * 4, cudaMemcpyHostToDevice));
  for (int r = 0; r < 100; ++r) {
    axpy<<<(n + 255) / 256, 256>>>(n, 1.0001f, x, y);
    relu<<<(n + 255) / 256, 256>>>(n, y, x);
    sgemm<16><<<dim3(N / 16, N / 16), dim3(16, 16)>>>(N, A, B, C);
  }
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::printf("metrics_bench: 300 launches done\n");
  return 0;
}
