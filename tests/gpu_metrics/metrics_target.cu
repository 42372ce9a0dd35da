// A CUDA program with kernels of known FLOP and byte counts, profiled by metrics_gpu_test under
// `fprof run --metrics`. Exits 77 where there is no GPU.
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_check.h"
#include "metrics_kernels.cuh"
#include "virtual_memory.h"

using namespace fprof::gpu_test;

// A profiler that runs a launch twice must leave the program's memory as one launch leaves it:
// y = 2x + y once, checked exactly (x = y = h before).
void checkSaxpyOnce(const std::vector<float>& h, const float* y) {
  std::vector<float> got(h.size());
  CK(cudaMemcpy(got.data(), y, got.size() * 4, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < h.size(); ++i) {
    if (got[i] != std::fmaf(2.f, h[i], h[i])) {
      std::fprintf(stderr, "metrics_target: saxpy applied other than once at %zu: %g\n", i, got[i]);
      std::exit(3);
    }
  }
}

// Device memory as a program may hold it: managed, mapped pinned host, a stream-ordered pool, and
// the driver's virtual memory management (cuMemCreate + cuMemMap, as PyTorch's expandable segments
// and JAX use). Each is bumped once in place, with its own element count (its own launch
// signature, so each is profiled), and must hold exactly 1 more afterwards.
bool bumpEachMemoryKindOnce() {
  constexpr int kCount = 1 << 20;
  struct Kind {
    const char* name;
    float* p;
  };
  std::vector<Kind> kinds;
  float* managed = nullptr;
  CK(cudaMallocManaged(&managed, kCount * 4));
  kinds.push_back({"managed", managed});
  float *mapped_host = nullptr, *mapped = nullptr;
  CK(cudaHostAlloc(&mapped_host, kCount * 4, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(&mapped, mapped_host, 0));
  kinds.push_back({"mapped pinned host", mapped});
  float* pooled = nullptr;
  CK(cudaMallocAsync(&pooled, kCount * 4, nullptr));
  kinds.push_back({"stream-ordered pool", pooled});
  MappedMemory vmm;
  if (!mapDeviceMemory(kCount * 4, vmm)) {
    std::fprintf(stderr, "metrics_target: virtual memory management unavailable\n");
    return false;
  }
  kinds.push_back({"cuMemCreate + cuMemMap", reinterpret_cast<float*>(vmm.va)});
  const std::vector<float> start(kCount, 5.f);
  for (const Kind& k : kinds) CK(cudaMemcpy(k.p, start.data(), kCount * 4, cudaMemcpyDefault));
  CK(cudaDeviceSynchronize());
  nvtxRangePushA("memory kinds");
  for (size_t i = 0; i < kinds.size(); ++i) {
    const int n = kCount - static_cast<int>(i);
    bump<<<(n + 255) / 256, 256>>>(n, kinds[i].p);
  }
  nvtxRangePop();
  CK(cudaDeviceSynchronize());
  bool once = true;
  std::vector<float> got(kCount);
  for (size_t i = 0; i < kinds.size(); ++i) {
    CK(cudaMemcpy(got.data(), kinds[i].p, kCount * 4, cudaMemcpyDefault));
    const int n = kCount - static_cast<int>(i);
    for (int e = 0; e < n; ++e) {
      if (got[e] != 6.f) {
        std::fprintf(stderr, "metrics_target: %s memory bumped other than once: %g at %d\n", kinds[i].name, got[e], e);
        once = false;
        break;
      }
    }
  }
  CK(cudaFree(managed));
  CK(cudaFreeHost(mapped_host));
  CK(cudaFreeAsync(pooled, nullptr));
  unmapDeviceMemory(vmm);
  return once;
}

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return 77;
  const int n = kElems;
  float *x, *y, *z;
  double *dx, *dy;
  __half2 *hx, *hy;
  int* idx;
  CK(cudaMalloc(&x, n * 4));
  CK(cudaMalloc(&y, n * 4));
  CK(cudaMalloc(&z, n * 4));
  CK(cudaMalloc(&dx, n * 8));
  CK(cudaMalloc(&dy, n * 8));
  CK(cudaMalloc(&hx, n * 4));
  CK(cudaMalloc(&hy, n * 4));
  CK(cudaMalloc(&idx, n * 4));
  std::vector<float> h(n);
  std::vector<int> hi(n);
  for (int i = 0; i < n; ++i) {
    h[i] = 0.25f + static_cast<float>(i % 977) * 1e-3f;
    hi[i] = static_cast<int>((static_cast<unsigned>(i) * 7919u) & 63u);  // unsigned: no overflow
  }
  CK(cudaMemcpy(x, h.data(), n * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(y, h.data(), n * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(idx, hi.data(), n * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(dx, 0x3f, n * 8));
  CK(cudaMemset(dy, 0x3f, n * 8));
  CK(cudaMemset(hx, 0x3c, n * 4));
  CK(cudaMemset(hy, 0x3c, n * 4));
  const int blocks = (n + 255) / 256;

  nvtxRangePushA("flops");
  saxpy<<<blocks, 256>>>(n, 2.f, x, y);
  checkSaxpyOnce(h, y);
  addmul<<<blocks, 256>>>(n, x, y, z);
  daxpy<<<blocks, 256>>>(n, 2.0, dx, dy);
  haxpy2<<<blocks, 256>>>(n, __floats2half2_rn(1.f, 1.f), hx, hy);
  nvtxRangePop();
  CK(cudaGetLastError());

  nvtxRangePushA("memory");
  copyKernel<<<blocks, 256>>>(n, x, z);
  localArray<<<blocks, 256>>>(n, idx, x, z);
  nvtxRangePop();
  CK(cudaGetLastError());

  if (std::getenv("METRICS_TARGET_GRAPH") != nullptr) {
    // A graph of two copies (x -> z -> y) in blocks of 128, a shape no eager launch has, launched
    // twice: 16 MiB read and written by each copy.
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t graph;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    copyKernel<<<(n + 127) / 128, 128, 0, s>>>(n, x, z);
    copyKernel<<<(n + 127) / 128, 128, 0, s>>>(n, z, y);
    CK(cudaStreamEndCapture(s, &graph));
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, graph, 0));
    nvtxRangePushA("graph");
    for (int launch = 0; launch < 2; ++launch) CK(cudaGraphLaunch(exec, s));
    nvtxRangePop();
    CK(cudaStreamSynchronize(s));
  }

  if (!bumpEachMemoryKindOnce()) return 3;

  cublasHandle_t blas;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) return 1;
  void *A, *B, *C;
  CK(cudaMalloc(&A, size_t(kGemmM) * kGemmK * 4));
  CK(cudaMalloc(&B, size_t(kGemmK) * kGemmN * 4));
  CK(cudaMalloc(&C, size_t(kGemmM) * kGemmN * 4));
  CK(cudaMemset(A, 0x3c, size_t(kGemmM) * kGemmK * 4));
  CK(cudaMemset(B, 0x3c, size_t(kGemmK) * kGemmN * 4));
  struct G {
    const char* range;
    cudaDataType_t t;
    cublasComputeType_t ct;
  } gemms[] = {{"gemm_fp16", CUDA_R_16F, CUBLAS_COMPUTE_32F},
               {"gemm_bf16", CUDA_R_16BF, CUBLAS_COMPUTE_32F},
               {"gemm_tf32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32}};
  for (const G& g : gemms) {
    nvtxRangePushA(g.range);
    const float alpha = 1.f, beta = 0.f;
    if (cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, kGemmM, kGemmN, kGemmK, &alpha, A, g.t, kGemmM, B, g.t, kGemmK,
                     &beta, C, g.t, kGemmM, g.ct, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "cublasGemmEx %s failed\n", g.range);
      return 1;
    }
    nvtxRangePop();
  }
  CK(cudaDeviceSynchronize());
  cublasDestroy(blas);
  std::printf("metrics_target: done\n");
  return 0;
}
