// DRAM-bytes probe (issue 15, question 2 of bench/probes/README.md): where does the extra DRAM
// traffic of fprof's kernel replay come from? The program of bench/metrics_bench.cu in small: a warm
// round of {axpy over 16 MiB vectors, relu, 1024^3 SGEMM}, then ROUNDS profiled rounds, each kernel
// in a start/stop of its own (as fprof does around a selected launch).
//
//   rp_dram_native                      the same program built without CUPTI (-DRP_DRAM_NATIVE, no
//                                       libcupti linked), for ncu (--launch-skip 3 --launch-count 9)
//   rp_dram profile                     with the range profiler; environment:
//     METRICS=one|roofline              the 4 one-pass memory metrics, or the 24 of the roofline set
//     FLUSH=none|memset|sweep           before each profiled kernel (profiler stopped): a 120 MiB
//                                       cudaMemset, or a read-only kernel over 128 MiB (2.5x L2)
//     CACHE_CONTROL=-1|0|1|2            -1: CUPTI 13.0 Enable params; else the 13.4 cacheControlMode
//                                       (0 none, 1 all, 2 L2)
//     ROUNDS=3
//     ALTERNATE=1                       two configurations on one range-profiler object, switched
//                                       per round: even rounds the 4 memory metrics (1 pass), odd
//                                       rounds the other 20 roofline metrics (FLOPs, tensor, ...)
// Output: "@json" rows of table "q2", one per profiled kernel.
#include <algorithm>
#include <vector>

#include "probe_common.h"

using probe::Json;

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

// Reads n floats and writes one value per block into `sink`: leaves the L2 full of clean lines.
__global__ void readSweep(size_t n, const float4* __restrict__ p, float* __restrict__ sink) {
  float acc = 0.f;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    float4 v = p[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 12345.f) sink[blockIdx.x] = acc;  // practically never: keeps the loads alive
}

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
#ifdef RP_DRAM_NATIVE
  const bool profile = false;
  (void)argc;
  (void)argv;
#else
  const bool profile = argc > 1 && std::string(argv[1]) == "profile";
#endif
  const std::string set = probe::envOr("METRICS", "one");
  const std::string flush = probe::envOr("FLUSH", "none");
  const int cacheControl = std::atoi(probe::envOr("CACHE_CONTROL", "-1").c_str());
  const int rounds = std::atoi(probe::envOr("ROUNDS", "3").c_str());
  const int n = 1 << 22, N = 1024;  // 16 MiB vectors, 4 MiB matrices
  const size_t scratchBytes = size_t(128) << 20;

  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaFree(0));
  CUcontext ctx = nullptr;
  cuCtxGetCurrent(&ctx);
  float *x, *y, *A, *B, *C, *sink;
  void* scratch;
  CUDA_OK(cudaMalloc(&x, n * 4));
  CUDA_OK(cudaMalloc(&y, n * 4));
  CUDA_OK(cudaMalloc(&A, N * N * 4));
  CUDA_OK(cudaMalloc(&B, N * N * 4));
  CUDA_OK(cudaMalloc(&C, N * N * 4));
  CUDA_OK(cudaMalloc(&scratch, scratchBytes));
  CUDA_OK(cudaMalloc(&sink, 4096 * 4));
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[i] = static_cast<float>(i % 1013) * 1e-3f - 0.5f;
  CUDA_OK(cudaMemcpy(x, h.data(), n * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(y, h.data(), n * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(A, h.data(), N * N * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(B, h.data(), N * N * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(scratch, 1, scratchBytes));

  auto launch = [&](int k) {
    if (k == 0) axpy<<<(n + 255) / 256, 256>>>(n, 1.0001f, x, y);
    if (k == 1) relu<<<(n + 255) / 256, 256>>>(n, y, x);
    if (k == 2) sgemm<16><<<dim3(N / 16, N / 16), dim3(16, 16)>>>(N, A, B, C);
  };
  for (int k = 0; k < 3; ++k) launch(k);  // warm round: modules loaded, caches as a program leaves them
  CUDA_OK(cudaDeviceSynchronize());

#ifndef RP_DRAM_NATIVE
  probe::RangeProfiler rp;
  const std::vector<std::string> metrics = set == "roofline" ? probe::rooflineMetrics() : probe::memoryOnePassMetrics();
  std::string label = std::string("cupti ") + std::to_string(probe::cuptiVersion()) + " " + set +
                      " flush=" + flush + " cache_control=" + std::to_string(cacheControl);
  const bool alternate = std::getenv("ALTERNATE") != nullptr;
  std::vector<std::string> rest;  // the roofline metrics outside the one-pass memory set
  for (const std::string& m : probe::rooflineMetrics())
    if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) rest.push_back(m);
  if (alternate) label += " alternate";
  if (profile && !(rp.setup(ctx, metrics, 64, cacheControl) && (!alternate || rp.addConfig(rest) == 1))) {
    std::printf("FATAL: range profiler setup failed (%s): %s\n", label.c_str(), probe::calls().take().c_str());
    Json().str("table", "q2setup").str("config", label).boolean("ok", false).emit();
    return 2;
  }
  if (profile) {
    std::printf("rp_dram %s: %zu passes\n", label.c_str(), rp.passes());
    Json().str("table", "q2setup").str("config", label).boolean("ok", true).integer("passes", rp.passes()).emit();
  }
#endif
#ifndef RP_DRAM_NATIVE
  std::vector<probe::Range> ranges;  // memory-configuration ranges
  size_t dropped = 0;
#endif
  const double t0 = probe::nowMs();
  for (int r = 0; r < rounds; ++r) {
#ifndef RP_DRAM_NATIVE
    if (profile && alternate) rp.select(r % 2);
#endif
    for (int k = 0; k < 3; ++k) {
      if (flush == "memset") CUDA_OK(cudaMemsetAsync(scratch, r + k, size_t(120) << 20));
      if (flush == "sweep") readSweep<<<1056, 512>>>(scratchBytes / 16, static_cast<const float4*>(scratch), sink);
      if (flush != "none") CUDA_OK(cudaDeviceSynchronize());
#ifndef RP_DRAM_NATIVE
      if (profile) rp.start();
#endif
      launch(k);
#ifndef RP_DRAM_NATIVE
      if (profile) rp.stop();
#endif
      CUDA_OK(cudaDeviceSynchronize());
    }
#ifndef RP_DRAM_NATIVE
    if (profile && alternate && r % 2 == 1) {  // the FLOP configuration's round: decode and report it
      std::vector<probe::Range> flops;
      rp.decode(flops, dropped);
      const int iF = rp.index("sm__sass_thread_inst_executed_op_ffma_pred_on.sum");
      const int iL1 = rp.index("l1tex__t_bytes.sum");  // a hardware counter, no SASS patching
      for (const auto& range : flops) {
        std::printf("  alternate round %d (%zu passes): %s ffma %.0f l1tex bytes %.0f\n", r, rp.passes(),
                    range.name.c_str(), iF >= 0 ? range.values[iF] : -1.0, iL1 >= 0 ? range.values[iL1] : -1.0);
        Json()
            .str("table", "q2alt")
            .str("range_name", range.name)
            .integer("round", r)
            .integer("passes", static_cast<long long>(rp.passes()))
            .num("ffma", iF >= 0 ? range.values[iF] : -1.0)
            .emit();
      }
    }
    if (profile && alternate && r % 2 == 0) rp.decode(ranges, dropped);
#endif
  }
  const double t1 = probe::nowMs();
  CUDA_OK(cudaGetLastError());
  if (!profile) {
    std::printf("rp_dram native: %d rounds in %.1f ms\n", rounds, t1 - t0);
    return 0;
  }
#ifndef RP_DRAM_NATIVE
  if (!alternate) rp.decode(ranges, dropped);
  rp.select(0);  // index() below names the memory configuration's metrics
  std::printf("rp_dram %s: %zu ranges, %zu dropped, %.1f ms, cupti [%s]\n", label.c_str(), ranges.size(), dropped,
              t1 - t0, probe::calls().take().c_str());
  const int iR = rp.index("dram__bytes_read.sum"), iW = rp.index("dram__bytes_write.sum"),
            iL = rp.index("lts__t_bytes.sum"), iT = rp.index("gpu__time_duration.sum");
  std::map<std::string, int> seen;  // kernel -> ranges so far: its round
  for (size_t i = 0; i < ranges.size(); ++i) {
    const auto& v = ranges[i].values;
    const char* kernels[] = {"axpy", "relu", "sgemm"};
    std::string kernel = kernels[i % 3];  // by position when the range name names none of them
    for (const char* k : kernels)
      if (ranges[i].name.find(k) != std::string::npos) kernel = k;
    const int round = seen[kernel]++;
    std::printf("  %-6s round %d: dram read %12.0f write %12.0f  lts %12.0f  time %8.0f ns  (%s)\n", kernel.c_str(),
                round, v[iR], v[iW], v[iL], v[iT], ranges[i].name.c_str());
    Json()
        .str("table", "q2")
        .str("config", label)
        .str("set", set)
        .str("flush", flush)
        .integer("cache_control", cacheControl)
        .integer("cupti", probe::cuptiVersion())
        .integer("passes", static_cast<long long>(rp.passes()))
        .str("kernel", kernel)
        .integer("round", round)
        .str("range_name", ranges[i].name)
        .num("dram_read", v[iR])
        .num("dram_write", v[iW])
        .num("lts", v[iL])
        .num("time_ns", v[iT])
        .num("ms_per_kernel", (t1 - t0) / (rounds * 3))
        .emit();
  }
#endif
  return 0;
}
