// Questions about the CUPTI 13 range profiler that decide how metrics mode is built, answered on
// the GPU (results recorded in bench/RESULTS.md):
//  A. does a memset issued while the profiler is started become a range?
//  B. do ranges from two Start/Stop sessions accumulate until one decode?
//  C. FLOP counters against kernels of known counts (FFMA, FADD/FMUL, DFMA, HFMA2) and tensor ops
//     against cuBLAS GEMMs of known size.
//  D. DRAM bytes of a streaming kernel with and without an L2 flush before it.
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fprof/core/metric_sets.h"
#include "cuda_check.h"
#include "metrics_kernels.cuh"
#include "range_profiler.h"

using namespace fprof;
using namespace fprof::gpu_test;

static collector::RangeProfiler g_rp;

static std::vector<std::vector<double>> session(const char* what, void (*body)()) {
  std::string err;
  if (!g_rp.start(err)) {
    std::fprintf(stderr, "start: %s\n", err.c_str());
    std::exit(1);
  }
  body();
  CK(cudaGetLastError());
  std::vector<std::vector<double>> rows;
  if (!g_rp.stopAndDecode(rows, err)) std::fprintf(stderr, "decode (%s): %s\n", what, err.c_str());
  std::printf("[%s] %zu ranges\n", what, rows.size());
  return rows;
}

static float *x, *y, *z;
static double *dx, *dy;
static __half2 *hx, *hy;
static void* flush;
static constexpr int kN = 1 << 24;  // 64 MiB per float array: more than L2
static cublasHandle_t blas;

static void fillInputs() {
  std::vector<float> h(kN);
  for (int i = 0; i < kN; ++i) h[i] = 0.5f + static_cast<float>(i % 1000) * 1e-3f;
  CK(cudaMemcpy(x, h.data(), kN * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(y, h.data(), kN * 4, cudaMemcpyHostToDevice));
}

int main() {
  CK(cudaSetDevice(0));
  CK(cudaFree(0));
  CUcontext ctx;
  cuCtxGetCurrent(&ctx);
  CK(cudaMalloc(&x, kN * 4));
  CK(cudaMalloc(&y, kN * 4));
  CK(cudaMalloc(&z, kN * 4));
  CK(cudaMalloc(&dx, kN * 8));
  CK(cudaMalloc(&dy, kN * 8));
  CK(cudaMalloc(&hx, kN * 4));
  CK(cudaMalloc(&hy, kN * 4));
  CK(cudaMalloc(&flush, 256 << 20));
  fillInputs();
  CK(cudaMemset(dx, 0x3f, kN * 8));
  CK(cudaMemset(dy, 0x3f, kN * 8));
  CK(cudaMemset(hx, 0x3c, kN * 4));
  CK(cudaMemset(hy, 0x3c, kN * 4));
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) return 1;
  CK(cudaDeviceSynchronize());

  auto metrics = core::expandMetricSelection("roofline");
  std::string err;
  if (!g_rp.setup(ctx, 0, *metrics, 64, collector::CacheControl::kNone, collector::ReplayMode::kKernel, err)) {
    std::fprintf(stderr, "setup: %s\n", err.c_str());
    return 1;
  }
  std::printf("chip %s, %zu metrics, %zu passes\n", g_rp.chip().c_str(), metrics->size(), g_rp.passes());
  const int blocks = (kN + 255) / 256;

  // A. memset inside a started session.
  session("A: saxpy, memset 256 MiB, addmul", [] {
    saxpy<<<(kN + 255) / 256, 256>>>(kN, 2.f, x, y);
    cudaMemsetAsync(flush, 1, 256 << 20);
    addmul<<<(kN + 255) / 256, 256>>>(kN, x, y, z);
  });
  // B. two start/stop sessions, one decode.
  {
    std::string e;
    g_rp.start(e);
    saxpy<<<blocks, 256>>>(kN, 2.f, x, y);
    g_rp.stop(e);
    g_rp.start(e);
    addmul<<<blocks, 256>>>(kN, x, y, z);
    g_rp.stop(e);
    std::vector<std::vector<double>> rows;
    g_rp.decode(rows, e);
    std::printf("[B: two start/stop sessions, one decode] %zu ranges (2 = they accumulate) %s\n", rows.size(),
                e.c_str());
  }
  // C. FLOPs.
  auto idx = [&](const char* name) {
    for (size_t i = 0; i < metrics->size(); ++i)
      if ((*metrics)[i] == name) return i;
    return metrics->size();
  };
  auto rows = session("C: saxpy addmul daxpy haxpy2", [] {
    saxpy<<<(kN + 255) / 256, 256>>>(kN, 2.f, x, y);
    addmul<<<(kN + 255) / 256, 256>>>(kN, x, y, z);
    daxpy<<<(kN + 255) / 256, 256>>>(kN, 2.0, dx, dy);
    haxpy2<<<(kN + 255) / 256, 256>>>(kN, __floats2half2_rn(1.f, 1.f), hx, hy);
  });
  const char* names[] = {"saxpy", "addmul", "daxpy", "haxpy2"};
  for (size_t r = 0; r < rows.size() && r < 4; ++r) {
    core::KernelCounters c = core::deriveCounters(*metrics, rows[r]);
    std::printf("  %-7s ffma=%.0f fadd=%.0f fmul=%.0f dfma=%.0f hfma=%.0f | fp32=%.0f fp64=%.0f fp16=%.0f (n=%d)\n",
                names[r], rows[r][idx("sm__sass_thread_inst_executed_op_ffma_pred_on.sum")],
                rows[r][idx("sm__sass_thread_inst_executed_op_fadd_pred_on.sum")],
                rows[r][idx("sm__sass_thread_inst_executed_op_fmul_pred_on.sum")],
                rows[r][idx("sm__sass_thread_inst_executed_op_dfma_pred_on.sum")],
                rows[r][idx("sm__sass_thread_inst_executed_op_hfma_pred_on.sum")], c.flops_fp32.value_or(-1),
                c.flops_fp64.value_or(-1), c.flops_fp16.value_or(-1), kN);
  }
  // Tensor ops: cuBLAS GEMMs of known size.
  const int M = 1024, N = 768, K = 512;
  void *A, *B, *C;
  CK(cudaMalloc(&A, size_t(M) * K * 4));
  CK(cudaMalloc(&B, size_t(K) * N * 4));
  CK(cudaMalloc(&C, size_t(M) * N * 4));
  CK(cudaMemset(A, 0x3c, size_t(M) * K * 4));
  CK(cudaMemset(B, 0x3c, size_t(K) * N * 4));
  struct G {
    const char* name;
    cudaDataType_t t;
    cublasComputeType_t ct;
  } gemms[] = {{"fp16", CUDA_R_16F, CUBLAS_COMPUTE_32F},
               {"bf16", CUDA_R_16BF, CUBLAS_COMPUTE_32F},
               {"tf32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32},
               {"fp32", CUDA_R_32F, CUBLAS_COMPUTE_32F}};
  for (const G& g : gemms) {
    // warm-up outside the profiler (heuristics, module load)
    float alpha = 1.f, beta = 0.f;
    cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &alpha, A, g.t, M, B, g.t, K, &beta, C, g.t, M, g.ct,
                 CUBLAS_GEMM_DEFAULT);
    CK(cudaDeviceSynchronize());
    g_rp.start(err);
    cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &alpha, A, g.t, M, B, g.t, K, &beta, C, g.t, M, g.ct,
                 CUBLAS_GEMM_DEFAULT);
    std::vector<std::vector<double>> rr;
    g_rp.stopAndDecode(rr, err);
    for (auto& row : rr) {
      core::KernelCounters c = core::deriveCounters(*metrics, row);
      std::printf("  gemm %s (2MNK=%.0f): %zu ranges; tensor fp16=%.0f bf16=%.0f tf32=%.0f fp32=%.0f raw fp16 ops=%.0f\n",
                  g.name, 2.0 * M * N * K, rr.size(), c.flops_tensor_fp16.value_or(-1),
                  c.flops_tensor_bf16.value_or(-1), c.flops_tensor_tf32.value_or(-1), c.flops_fp32.value_or(-1),
                  row[idx("sm__ops_path_tensor_src_fp16.sum")]);
    }
  }
  // D. DRAM bytes of a streaming copy (4n read, 4n write = 64 MiB each), without/with an L2 flush.
  for (int flushFirst = 0; flushFirst < 2; ++flushFirst) {
    copyKernel<<<blocks, 256>>>(kN, x, z);  // warms L2 with the tail of x and z
    CK(cudaDeviceSynchronize());
    if (flushFirst) {
      CK(cudaMemset(flush, 7, 256 << 20));
      CK(cudaDeviceSynchronize());
    }
    g_rp.start(err);
    copyKernel<<<blocks, 256>>>(kN, x, z);
    std::vector<std::vector<double>> rr;
    g_rp.stopAndDecode(rr, err);
    for (auto& row : rr) {
      std::printf("  copy flush=%d: dram read %.0f write %.0f (analytic %d each), l2 %.0f, time %.0f ns\n", flushFirst,
                  row[idx("dram__bytes_read.sum")], row[idx("dram__bytes_write.sum")], kN * 4,
                  row[idx("lts__t_bytes.sum")], row[idx("gpu__time_duration.sum")]);
    }
  }
  g_rp.teardown();
  std::printf("done\n");
  return 0;
}
