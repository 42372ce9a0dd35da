// Trace-mode overhead benchmark target: run natively and under the collector by
// bench/trace_overhead.sh, which compares wall times.
//
//   trace_overhead launch N    N back-to-back tiny kernels (launch-bound), one sync at the end
//   trace_overhead compute N   N long FMA-bound kernels (compute-bound)
// Prints "loop_s=<seconds>" for the timed loop (after a warm-up) and "kernels=<launched>".
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CUDA_CHECK(call)                                                                             \
  do {                                                                                               \
    cudaError_t e_ = (call);                                                                         \
    if (e_ != cudaSuccess) {                                                                         \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      return 1;                                                                                      \
    }                                                                                                \
  } while (0)

__global__ void tiny(float* out, int i) {
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<float>(i);
}

// Four independent FMA chains per thread keep the FP32 pipes busy; the result is stored so the
// compiler cannot drop the loop.
__global__ void fma_bound(float* out, int iterations, float a, float b) {
  float x0 = threadIdx.x * 1e-3f, x1 = x0 + 1.f, x2 = x0 + 2.f, x3 = x0 + 3.f;
  for (int i = 0; i < iterations; ++i) {
    x0 = fmaf(x0, a, b);
    x1 = fmaf(x1, a, b);
    x2 = fmaf(x2, a, b);
    x3 = fmaf(x3, a, b);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3;
}

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "launch") != 0 && std::strcmp(argv[1], "compute") != 0)) {
    std::fprintf(stderr, "usage: %s launch|compute N\n", argv[0]);
    return 2;
  }
  const bool launch_bound = std::strcmp(argv[1], "launch") == 0;
  const int n = std::atoi(argv[2]);
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int blocks = sms * 8, threads = 256;
  float* out = nullptr;
  CUDA_CHECK(cudaMalloc(&out, sizeof(float) * blocks * threads));
  const int warmup = launch_bound ? 1000 : 2;
  const int iterations = 1 << 17;
  for (int i = 0; i < warmup; ++i) {
    if (launch_bound) {
      tiny<<<1, 32>>>(out, i);
    } else {
      fma_bound<<<blocks, threads>>>(out, iterations, 0.999f, 0.001f);
    }
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    if (launch_bound) {
      tiny<<<1, 32>>>(out, i);
    } else {
      fma_bound<<<blocks, threads>>>(out, iterations, 0.999f, 0.001f);
    }
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  const double loop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CUDA_CHECK(cudaFree(out));
  std::printf("loop_s=%.6f\nkernels=%d\n", loop_s, n + warmup);
  return 0;
}
