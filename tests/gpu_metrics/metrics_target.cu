// A CUDA program with kernels of known FLOP and byte counts, profiled by metrics_gpu_test under
// `fprof run --metrics`. Exits 77 where there is no GPU.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_check.h"
#include "metrics_kernels.cuh"

using namespace fprof::gpu_test;

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
