// Trace-mode overhead benchmark target: run natively and under the collector by
// bench/trace_overhead.sh, which compares wall times.
//
//   trace_overhead launch N [S]   N back-to-back tiny kernels (launch-bound), one sync at the end
//   trace_overhead nvtx N [S]     the same, each launch inside an NVTX push/pop range with a
//                                 message like the reference model's, and one enclosing range
//                                 every 8 launches (2.25 NVTX ranges a launch)
//   trace_overhead compute N      N long FMA-bound kernels (compute-bound)
// S: the tiny kernels go round-robin to S streams (default 1), so that the GPU runs them faster
// than one thread launches them and the loop measures the CPU's cost per launch.
// Prints "loop_s=<seconds>" for the timed loop (after a warm-up), "enqueue_s=<seconds>" for the
// launches alone (before the final sync) and "kernels=<launched>" ("ranges=<pushed>" for nvtx).
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>

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

// One tiny launch; in nvtx mode inside its own range, and every 8th opens a new enclosing range.
void launchTiny(float* out, int i, cudaStream_t stream, bool with_ranges) {
  if (with_ranges && i % 8 == 0) {
    if (i > 0) nvtxRangePop();
    nvtxRangePushA("op=layer layer=3");
  }
  if (with_ranges) nvtxRangePushA("op=matmul_bias variant=unfused pair=l3.qkv reads=l3.ln1,l3.w_qkv,l3.b_qkv writes=l3.qkv layer=3");
  tiny<<<1, 32, 0, stream>>>(out, i);
  if (with_ranges) nvtxRangePop();
}

int main(int argc, char** argv) {
  const bool known = argc >= 3 && (std::strcmp(argv[1], "launch") == 0 || std::strcmp(argv[1], "compute") == 0 ||
                                   std::strcmp(argv[1], "nvtx") == 0);
  if (!known || argc > 4) {
    std::fprintf(stderr, "usage: %s launch|nvtx|compute N [STREAMS]\n", argv[0]);
    return 2;
  }
  const bool with_ranges = std::strcmp(argv[1], "nvtx") == 0;
  const bool launch_bound = with_ranges || std::strcmp(argv[1], "launch") == 0;
  const int n = std::atoi(argv[2]);
  const int stream_count = argc == 4 ? std::max(1, std::atoi(argv[3])) : 1;
  std::vector<cudaStream_t> streams(stream_count, nullptr);
  for (int s = 1; s < stream_count; ++s) CUDA_CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int blocks = sms * 8, threads = 256;
  float* out = nullptr;
  CUDA_CHECK(cudaMalloc(&out, sizeof(float) * blocks * threads));
  const int warmup = launch_bound ? 1000 : 2;
  const int iterations = 1 << 17;
  for (int i = 0; i < warmup; ++i) {
    if (launch_bound) {
      launchTiny(out, i, streams[i % stream_count], with_ranges);
    } else {
      fma_bound<<<blocks, threads>>>(out, iterations, 0.999f, 0.001f);
    }
  }
  if (with_ranges) nvtxRangePop();
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    if (launch_bound) {
      launchTiny(out, i, streams[i % stream_count], with_ranges);
    } else {
      fma_bound<<<blocks, threads>>>(out, iterations, 0.999f, 0.001f);
    }
  }
  if (with_ranges) nvtxRangePop();
  const double enqueue_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  const double loop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CUDA_CHECK(cudaFree(out));
  for (int s = 1; s < stream_count; ++s) CUDA_CHECK(cudaStreamDestroy(streams[s]));
  std::printf("loop_s=%.6f\nenqueue_s=%.6f\nkernels=%d\n", loop_s, enqueue_s, n + warmup);
  if (with_ranges) std::printf("ranges=%d\n", (n + warmup) + (warmup + 7) / 8 + (n + 7) / 8);
  return 0;
}
