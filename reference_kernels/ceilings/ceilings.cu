// fprof-ceilings: measures this GPU's roofs (ERT-style micro-kernels, plus cuBLAS/cuBLASLt for the
// tensor cores) and prints them as JSON on stdout. `fprof ceilings` runs it and stores the result.
// Every rate is the best of several event-timed repetitions after a warm-up, on random data.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

#define CUDA_CHECK(call)                                                                                    \
  do {                                                                                                      \
    cudaError_t err_ = (call);                                                                              \
    if (err_ != cudaSuccess) {                                                                              \
      std::fprintf(stderr, "fprof-ceilings: %s failed at %s:%d: %s\n", #call, __FILE__, __LINE__,           \
                   cudaGetErrorString(err_));                                                               \
      std::exit(1);                                                                                         \
    }                                                                                                       \
  } while (0)

#define CUBLAS_CHECK(call)                                                                                  \
  do {                                                                                                      \
    cublasStatus_t st_ = (call);                                                                            \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                                     \
      std::fprintf(stderr, "fprof-ceilings: %s failed at %s:%d: %s\n", #call, __FILE__, __LINE__,           \
                   cublasGetStatusString(st_));                                                             \
      std::exit(1);                                                                                         \
    }                                                                                                       \
  } while (0)

// ---------------------------------------------------------------------------------------------
// Micro-kernels. Results are written only under a condition the data never meets, so the
// compiler cannot drop the work and the stores cost nothing.

__global__ void fillRandom(uint32_t* p, size_t n_words, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n_words; i += size_t{gridDim.x} * blockDim.x) {
    uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    // Keep floats finite and small: exponent bits forced to a sane range.
    p[i] = (x & 0x807fffffu) | 0x3e000000u;
  }
}

__global__ void dramRead(const float4* __restrict__ in, size_t n, float* __restrict__ sink) {
  float acc = 0.f;
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    float4 a = __ldcs(in + i), b = __ldcs(in + i + stride), c = __ldcs(in + i + 2 * stride),
           d = __ldcs(in + i + 3 * stride);
    acc += a.x + a.y + a.z + a.w + b.x + b.y + b.z + b.w + c.x + c.y + c.z + c.w + d.x + d.y + d.z + d.w;
  }
  for (; i < n; i += stride) {
    float4 a = __ldcs(in + i);
    acc += a.x + a.y + a.z + a.w;
  }
  if (acc == -1.2345f) sink[0] = acc;
}

__global__ void dramWrite(float4* __restrict__ out, size_t n, float v) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += stride) {
    __stcs(out + i, make_float4(v, v, v, v));
  }
}

__global__ void dramCopy(const float4* __restrict__ in, float4* __restrict__ out, size_t n) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  for (; i + stride < n; i += 2 * stride) {
    float4 a = __ldcs(in + i), b = __ldcs(in + i + stride);
    __stcs(out + i, a);
    __stcs(out + i + stride, b);
  }
  for (; i < n; i += stride) __stcs(out + i, __ldcs(in + i));
}

// L2: every block sweeps the whole (L2-resident) buffer `passes` times, bypassing L1 (.cg).
__global__ void l2Read(const float4* __restrict__ in, size_t n, int passes, float* __restrict__ sink) {
  float acc = 0.f;
  for (int p = 0; p < passes; ++p) {
    for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
      float4 a = __ldcg(in + i);
      acc += a.x + a.y + a.z + a.w;
    }
  }
  if (acc == -1.2345f) sink[0] = acc;
}

// L1: each block re-reads its own 16 KiB slice, which stays in that SM's L1.
__global__ void l1Read(const float4* __restrict__ in, int slice_vec, int passes, float* __restrict__ sink) {
  const float4* base = in + static_cast<size_t>(blockIdx.x % 64) * slice_vec;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int p = 0; p < passes; ++p) {
#pragma unroll 4
    for (int i = threadIdx.x; i < slice_vec; i += blockDim.x) {
      float4 a = __ldca(base + i);
      acc.x += a.x;
      acc.y += a.y;
      acc.z += a.z;
      acc.w += a.w;
    }
  }
  if (acc.x + acc.y + acc.z + acc.w == -1.2345f) sink[0] = acc.x;
}

__global__ void sharedRead(int passes, float* __restrict__ sink) {
  __shared__ float4 tile[1024];
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) tile[i] = make_float4(i, i + 1, i + 2, i + 3);
  __syncthreads();
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int p = 0; p < passes; ++p) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float4 a = tile[(threadIdx.x + j * 256 + p) & 1023];
      acc.x += a.x;
      acc.y += a.y;
      acc.z += a.z;
      acc.w += a.w;
    }
  }
  if (acc.x + acc.y + acc.z + acc.w == -1.2345f) sink[0] = acc.x;
}

// FMA throughput: 8 independent chains per thread keep the pipes full.
template <class T>
__global__ void fmaChains(int iters, T b, T c, T* __restrict__ sink) {
  T a0 = static_cast<T>(threadIdx.x), a1 = a0 + T(1), a2 = a0 + T(2), a3 = a0 + T(3);
  T a4 = a0 + T(4), a5 = a0 + T(5), a6 = a0 + T(6), a7 = a0 + T(7);
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < 16; ++u) {
      a0 = a0 * b + c;
      a1 = a1 * b + c;
      a2 = a2 * b + c;
      a3 = a3 * b + c;
      a4 = a4 * b + c;
      a5 = a5 * b + c;
      a6 = a6 * b + c;
      a7 = a7 * b + c;
    }
  }
  T s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
  if (s == T(-1.2345)) sink[0] = s;
}

// Paired half/bfloat16 FMA: one HFMA2 = 2 lanes x 2 FLOPs.
template <class T2>
__global__ void fma2Chains(int iters, T2 b, T2 c, T2* __restrict__ sink) {
  T2 a[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) a[k] = b;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < 16; ++u) {
#pragma unroll
      for (int k = 0; k < 8; ++k) a[k] = __hfma2(a[k], b, c);
    }
  }
  T2 s = a[0];
#pragma unroll
  for (int k = 1; k < 8; ++k) s = __hadd2(s, a[k]);
  if (static_cast<float>(s.x) == -1.2345f) sink[0] = s;
}

// ---------------------------------------------------------------------------------------------

struct Measurement {
  std::string ceiling;  // "dram", "fp32", ... or a reference name
  std::string unit;     // bytes_per_s / flops_per_s / ops_per_s
  double best = 0;
  double median = 0;
  std::string method;
};

// Times fn() with events: warm-up, then `reps` timed runs; returns rates amount/time (best, median).
std::pair<double, double> timeRate(const std::function<void()>& fn, double amount, int reps = 10) {
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  fn();
  fn();
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<double> rates;
  for (int r = 0; r < reps; ++r) {
    CUDA_CHECK(cudaEventRecord(a));
    fn();
    CUDA_CHECK(cudaEventRecord(b));
    CUDA_CHECK(cudaEventSynchronize(b));
    CUDA_CHECK(cudaGetLastError());
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    rates.push_back(amount / (static_cast<double>(ms) * 1e-3));
  }
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  std::sort(rates.begin(), rates.end());
  return {rates.back(), rates[rates.size() / 2]};
}

std::string jsonEscape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    o += ch;
  }
  return o;
}

int attr(cudaDeviceAttr a, int dev) {
  int v = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&v, a, dev));
  return v;
}

// Tensor-core GEMM through cublasLt, M=N=K=n, "TN" layout (what fp8/int8 require).
bool ltGemm(cublasLtHandle_t lt, cudaDataType_t ab, cudaDataType_t cd, cublasComputeType_t compute,
            cudaDataType_t scale, int n, void* A, void* B, void* C, void* workspace, size_t ws_bytes,
            std::function<void()>& run, std::string& why) {
  cublasLtMatmulDesc_t op;
  if (cublasLtMatmulDescCreate(&op, compute, scale) != CUBLAS_STATUS_SUCCESS) {
    why = "cublasLtMatmulDescCreate failed";
    return false;
  }
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatrixLayoutCreate(&la, ab, n, n, n);
  cublasLtMatrixLayoutCreate(&lb, ab, n, n, n);
  cublasLtMatrixLayoutCreate(&lc, cd, n, n, n);
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof(ws_bytes));
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur, &found);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
    why = std::string("no cuBLASLt algorithm: ") + cublasGetStatusString(st);
    return false;
  }
  static float alpha_f = 1.f, beta_f = 0.f;
  static int32_t alpha_i = 1, beta_i = 0;
  const bool int_scale = scale == CUDA_R_32I;
  run = [=]() {
    cublasStatus_t s = cublasLtMatmul(lt, op, int_scale ? static_cast<const void*>(&alpha_i) : &alpha_f, A, la, B, lb,
                                      int_scale ? static_cast<const void*>(&beta_i) : &beta_f, C, lc, C, lc,
                                      &heur.algo, workspace, ws_bytes, nullptr);
    if (s != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "fprof-ceilings: cublasLtMatmul failed: %s\n", cublasGetStatusString(s));
      std::exit(1);
    }
  };
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";  // smaller sizes, for tests
  int dev = 0;
  CUDA_CHECK(cudaSetDevice(dev));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  const int sms = prop.multiProcessorCount;
  std::vector<Measurement> out;
  std::vector<std::string> notes;

  const size_t dram_bytes = quick ? (size_t{256} << 20) : (size_t{2} << 30);
  const size_t n_vec = dram_bytes / sizeof(float4);
  float4 *x = nullptr, *y = nullptr;
  float* sink = nullptr;
  CUDA_CHECK(cudaMalloc(&x, dram_bytes));
  CUDA_CHECK(cudaMalloc(&y, dram_bytes));
  CUDA_CHECK(cudaMalloc(&sink, 64));
  fillRandom<<<sms * 8, 256>>>(reinterpret_cast<uint32_t*>(x), dram_bytes / 4, 1u);
  fillRandom<<<sms * 8, 256>>>(reinterpret_cast<uint32_t*>(y), dram_bytes / 4, 2u);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  const int grid = sms * 8, block = 512;
  const std::string dram_how = std::to_string(dram_bytes >> 20) + " MiB buffer, 16-byte streaming accesses, " +
                               std::to_string(grid) + "x" + std::to_string(block) + " threads";
  {
    auto [best, med] = timeRate([&] { dramRead<<<grid, block>>>(x, n_vec, sink); }, static_cast<double>(dram_bytes));
    out.push_back({"dram_read", "bytes_per_s", best, med, "read kernel, " + dram_how});
  }
  {
    auto [best, med] = timeRate([&] { dramWrite<<<grid, block>>>(y, n_vec, 1.f); }, static_cast<double>(dram_bytes));
    out.push_back({"dram_write", "bytes_per_s", best, med, "write kernel, " + dram_how});
  }
  {
    auto [best, med] = timeRate([&] { dramCopy<<<grid, block>>>(x, y, n_vec); }, 2.0 * static_cast<double>(dram_bytes));
    out.push_back({"dram", "bytes_per_s", best, med, "copy kernel (bytes read + written), " + dram_how});
  }
  {
    auto [best, med] = timeRate([&] { CUDA_CHECK(cudaMemcpyAsync(y, x, dram_bytes, cudaMemcpyDeviceToDevice)); },
                                2.0 * static_cast<double>(dram_bytes));
    out.push_back({"ref_cudaMemcpy_d2d", "bytes_per_s", best, med,
                   "cudaMemcpy device to device (bytes read + written), " + std::to_string(dram_bytes >> 20) + " MiB"});
  }
  {
    // Half the L2 so it stays resident; every block sweeps it, so traffic = grid * size * passes / grid.
    const size_t l2_bytes = std::max<size_t>(size_t{1} << 20, static_cast<size_t>(prop.l2CacheSize) / 2);
    const int passes = quick ? 4 : 20;
    const size_t l2_vec = l2_bytes / sizeof(float4);
    auto [best, med] = timeRate([&] { l2Read<<<grid, block>>>(x, l2_vec, passes, sink); },
                                static_cast<double>(l2_bytes) * passes);
    out.push_back({"l2", "bytes_per_s", best, med,
                   "L2-resident read (" + std::to_string(l2_bytes >> 20) + " MiB, ld.global.cg), " +
                       std::to_string(passes) + " sweeps"});
  }
  {
    const int slice_vec = 16 * 1024 / sizeof(float4);
    const int passes = quick ? 50 : 400;
    const int blocks = sms * 4, threads = 256;
    auto [best, med] = timeRate([&] { l1Read<<<blocks, threads>>>(x, slice_vec, passes, sink); },
                                static_cast<double>(blocks) * slice_vec * sizeof(float4) * passes);
    out.push_back({"l1", "bytes_per_s", best, med, "L1-resident read, 16 KiB per block, ld.global.ca"});
  }
  {
    const int passes = quick ? 500 : 5000;
    const int blocks = sms * 8, threads = 256;
    auto [best, med] = timeRate([&] { sharedRead<<<blocks, threads>>>(passes, sink); },
                                static_cast<double>(blocks) * threads * 4 * sizeof(float4) * passes);
    out.push_back({"shared", "bytes_per_s", best, med, "shared-memory 16-byte loads, conflict-free"});
  }
  const int fblocks = sms * 16, fthreads = 256, iters = quick ? 200 : 2000;
  const double fma_count = static_cast<double>(fblocks) * fthreads * iters * 16 * 8;
  {
    auto [best, med] = timeRate([&] { fmaChains<float><<<fblocks, fthreads>>>(iters, 0.999f, 0.001f, sink); },
                                2.0 * fma_count);
    out.push_back({"fp32", "flops_per_s", best, med, "FFMA chains (FMA = 2 FLOPs)"});
  }
  {
    double* dsink = nullptr;
    CUDA_CHECK(cudaMalloc(&dsink, 64));
    auto [best, med] = timeRate([&] { fmaChains<double><<<fblocks, fthreads>>>(iters / 4, 0.999, 0.001, dsink); },
                                2.0 * fma_count / 4);
    out.push_back({"fp64", "flops_per_s", best, med, "DFMA chains (FMA = 2 FLOPs)"});
    CUDA_CHECK(cudaFree(dsink));
  }
  {
    __half2* hsink = nullptr;
    CUDA_CHECK(cudaMalloc(&hsink, 64));
    const __half2 b = __floats2half2_rn(0.999f, 0.999f), c = __floats2half2_rn(0.001f, 0.001f);
    auto [best, med] = timeRate([&] { fma2Chains<__half2><<<fblocks, fthreads>>>(iters, b, c, hsink); },
                                4.0 * fma_count);
    out.push_back({"fp16", "flops_per_s", best, med, "HFMA2 chains (2 lanes x 2 FLOPs)"});
    __nv_bfloat162* bsink = reinterpret_cast<__nv_bfloat162*>(hsink);
    const __nv_bfloat162 bb = __floats2bfloat162_rn(0.999f, 0.999f), bc = __floats2bfloat162_rn(0.001f, 0.001f);
    auto [best2, med2] = timeRate([&] { fma2Chains<__nv_bfloat162><<<fblocks, fthreads>>>(iters, bb, bc, bsink); },
                                  4.0 * fma_count);
    out.push_back({"bf16", "flops_per_s", best2, med2, "BF16 HFMA2 chains (2 lanes x 2 FLOPs)"});
    CUDA_CHECK(cudaFree(hsink));
  }

  // Tensor cores, through the vendor library (the fastest path there is): M = N = K = n.
  const int n = quick ? 2048 : 8192;
  const double gemm_flops = 2.0 * n * double(n) * n;
  const std::string gemm_how = "cuBLASLt GEMM M=N=K=" + std::to_string(n) + ", TN, random data";
  cublasLtHandle_t lt;
  CUBLAS_CHECK(cublasLtCreate(&lt));
  const size_t ws_bytes = size_t{64} << 20;
  void* ws = nullptr;
  CUDA_CHECK(cudaMalloc(&ws, ws_bytes));
  const size_t elems = size_t(n) * n;
  void *A = nullptr, *B = nullptr, *C = nullptr;
  CUDA_CHECK(cudaMalloc(&A, elems * 4));
  CUDA_CHECK(cudaMalloc(&B, elems * 4));
  CUDA_CHECK(cudaMalloc(&C, elems * 4));
  struct TensorCase {
    const char* name;
    cudaDataType_t ab, cd;
    cublasComputeType_t compute;
    cudaDataType_t scale;
    const char* unit;
  };
  const TensorCase cases[] = {
      {"tensor_fp16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, "flops_per_s"},
      {"tensor_bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, "flops_per_s"},
      {"tensor_tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, "flops_per_s"},
      {"tensor_fp8", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, "flops_per_s"},
      {"tensor_int8", CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, CUDA_R_32I, "ops_per_s"},
      {"tensor_fp64", CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F, "flops_per_s"},
  };
  for (const TensorCase& tc : cases) {
    // fp64 operands need 8 bytes each: use a smaller problem so the buffers suffice.
    const int nn = tc.ab == CUDA_R_64F ? n / 2 : n;
    const double flops = 2.0 * nn * double(nn) * nn;
    // Fill with random bits for the int8/fp8 cases; float cases get small random floats.
    fillRandom<<<sms * 8, 256>>>(reinterpret_cast<uint32_t*>(A), elems, 3u);
    fillRandom<<<sms * 8, 256>>>(reinterpret_cast<uint32_t*>(B), elems, 4u);
    CUDA_CHECK(cudaDeviceSynchronize());
    std::function<void()> run;
    std::string why;
    if (!ltGemm(lt, tc.ab, tc.cd, tc.compute, tc.scale, nn, A, B, C, ws, ws_bytes, run, why)) {
      notes.push_back(std::string(tc.name) + " not measured: " + why);
      continue;
    }
    auto [best, med] = timeRate(run, flops, 10);
    std::string how = "cuBLASLt GEMM M=N=K=" + std::to_string(nn) + ", TN, random data";
    out.push_back({tc.name, tc.unit, best, med, how});
  }
  (void)gemm_flops;
  (void)gemm_how;

  // JSON on stdout: the device, the measurements, and notes on anything not measured.
  int mem_clock_khz = attr(cudaDevAttrMemoryClockRate, dev);
  int sm_clock_khz = attr(cudaDevAttrClockRate, dev);
  std::printf("{\n  \"device\": {\"name\": \"%s\", \"compute_major\": %d, \"compute_minor\": %d, \"sm_count\": %d, "
              "\"sm_clock_khz\": %d, \"memory_clock_khz\": %d, \"memory_bus_width_bits\": %d, \"l2_bytes\": %d, "
              "\"global_memory_bytes\": %zu, \"max_threads_per_sm\": %d, \"regs_per_sm\": %d, "
              "\"shared_per_sm_bytes\": %zu},\n",
              jsonEscape(prop.name).c_str(), prop.major, prop.minor, sms, sm_clock_khz, mem_clock_khz,
              attr(cudaDevAttrGlobalMemoryBusWidth, dev), prop.l2CacheSize, prop.totalGlobalMem,
              prop.maxThreadsPerMultiProcessor, prop.regsPerMultiprocessor, prop.sharedMemPerMultiprocessor);
  std::printf("  \"quick\": %s,\n  \"measurements\": [\n", quick ? "true" : "false");
  for (size_t i = 0; i < out.size(); ++i) {
    const Measurement& m = out[i];
    std::printf("    {\"ceiling\": \"%s\", \"unit\": \"%s\", \"best\": %.6e, \"median\": %.6e, \"method\": \"%s\"}%s\n",
                m.ceiling.c_str(), m.unit.c_str(), m.best, m.median, jsonEscape(m.method).c_str(),
                i + 1 < out.size() ? "," : "");
  }
  std::printf("  ],\n  \"notes\": [");
  for (size_t i = 0; i < notes.size(); ++i) std::printf("%s\"%s\"", i ? ", " : "", jsonEscape(notes[i]).c_str());
  std::printf("]\n}\n");

  CUDA_CHECK(cudaFree(A));
  CUDA_CHECK(cudaFree(B));
  CUDA_CHECK(cudaFree(C));
  CUDA_CHECK(cudaFree(ws));
  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
  CUDA_CHECK(cudaFree(sink));
  cublasLtDestroy(lt);
  return 0;
}
