// Matmul with a fused epilogue: y = epi(x * w^T + bias). fp16/bf16 on an sm_90 GPU go to the
// wgmma/TMA kernel of gemm_sm90.cu when the operands allow it; otherwise tensor cores through
// WMMA (fp32 accumulation) with a cp.async double-buffered pipeline; fp32 uses a SIMT tile
// (fp32 FMA, no TF32, so fp32 results keep fp32 accuracy). Also the cuBLASLt baseline.
#include <mma.h>

#include "gemm_epilogue.cuh"
#include "kernels.cuh"

namespace fprof::refk {
namespace {

// ---------------- tensor-core path (fp16 / bf16) ----------------
constexpr int kBm = 128, kBn = 128, kBk = 32;
constexpr int kPad = 8;  // halves: keeps rows 16-byte aligned and spreads banks
constexpr int kLd = kBk + kPad;
constexpr int kWarpsM = 2, kWarpsN = 4;  // 8 warps, each 64 x 32 of the tile
constexpr int kThreads = kWarpsM * kWarpsN * 32;
constexpr int kFragM = kBm / kWarpsM / 16, kFragN = kBn / kWarpsN / 16;

__device__ __forceinline__ void cpAsync16(void* smem, const void* gmem, bool valid) {
  const unsigned saddr = unsigned(__cvta_generic_to_shared(smem));
  const int src_bytes = valid ? 16 : 0;  // 0: zero-fill, nothing read
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(saddr), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void cpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cpAsyncWait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Loads rows [row0, row0+128) x cols [k0, k0+32) of a row-major matrix (leading dim ld) into
// smem[128][kLd], zero outside [rows, k).
template <class T, bool kAligned>
__device__ __forceinline__ void loadTile(T* smem, const T* __restrict__ g, int rows, int k, std::size_t ld,
                                         int row0, int k0) {
  if constexpr (kAligned) {
    // 128 rows x 4 chunks of 8 halves = 512 chunks, 2 per thread.
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int chunk = threadIdx.x + i * kThreads;
      const int r = chunk >> 2, c = (chunk & 3) * 8;
      const int gr = row0 + r, gc = k0 + c;
      const bool valid = gr < rows && gc < k;  // k % 8 == 0, so a chunk is all in or all out
      const T* src = valid ? g + std::size_t(gr) * ld + gc : g;
      cpAsync16(smem + r * kLd + c, src, valid);
    }
  } else {
    for (int e = threadIdx.x; e < kBm * kBk; e += kThreads) {
      const int r = e / kBk, c = e % kBk;
      const int gr = row0 + r, gc = k0 + c;
      smem[r * kLd + c] = (gr < rows && gc < k) ? g[std::size_t(gr) * ld + gc] : fromFloat<T>(0.0f);
    }
  }
}

template <class T, Epilogue E, bool kAligned>
__global__ void __launch_bounds__(kThreads) gemmWmmaKernel(const T* __restrict__ x, std::size_t lda,
                                                           const T* __restrict__ w, const T* __restrict__ bias,
                                                           T* __restrict__ y, int m, int n, int k) {
  using namespace nvcuda;
  __shared__ __align__(128) T a_smem[2][kBm * kLd];
  __shared__ __align__(128) T b_smem[2][kBn * kLd];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const int row0 = blockIdx.y * kBm, col0 = blockIdx.x * kBn;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kFragM][kFragN];
#pragma unroll
  for (int i = 0; i < kFragM; ++i)
#pragma unroll
    for (int j = 0; j < kFragN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int k_tiles = (k + kBk - 1) / kBk;
  loadTile<T, kAligned>(a_smem[0], x, m, k, lda, row0, 0);
  loadTile<T, kAligned>(b_smem[0], w, n, k, std::size_t(k), col0, 0);
  if constexpr (kAligned) cpAsyncCommit();
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int stage = kt & 1;
    if (kt + 1 < k_tiles) {
      loadTile<T, kAligned>(a_smem[stage ^ 1], x, m, k, lda, row0, (kt + 1) * kBk);
      loadTile<T, kAligned>(b_smem[stage ^ 1], w, n, k, std::size_t(k), col0, (kt + 1) * kBk);
      if constexpr (kAligned) { cpAsyncCommit(); cpAsyncWait<1>(); }
    } else if constexpr (kAligned) {
      cpAsyncWait<0>();
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBk; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[kFragM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb[kFragN];
#pragma unroll
      for (int i = 0; i < kFragM; ++i)
        wmma::load_matrix_sync(fa[i], a_smem[stage] + (warp_m * kFragM * 16 + i * 16) * kLd + kk, kLd);
#pragma unroll
      for (int j = 0; j < kFragN; ++j)
        wmma::load_matrix_sync(fb[j], b_smem[stage] + (warp_n * kFragN * 16 + j * 16) * kLd + kk, kLd);
#pragma unroll
      for (int i = 0; i < kFragM; ++i)
#pragma unroll
        for (int j = 0; j < kFragN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();
  }

  // Epilogue in registers/shared memory: each warp stages one 16x16 fragment at a time in a
  // private scratch (reusing the A tiles), applies bias/activation, and stores 8 values per lane.
  float* scratch = reinterpret_cast<float*>(a_smem) + warp * 16 * 16;
#pragma unroll
  for (int i = 0; i < kFragM; ++i) {
#pragma unroll
    for (int j = 0; j < kFragN; ++j) {
      wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      const int r = lane >> 1, c = (lane & 1) * 8;
      const int gr = row0 + warp_m * kFragM * 16 + i * 16 + r;
      const int gc = col0 + warp_n * kFragN * 16 + j * 16 + c;
      if (gr < m) {
        if ((n % 8) == 0 && gc + 8 <= n) {
          Vec16<T> out;
#pragma unroll
          for (int e = 0; e < 8; ++e) out.v[e] = fromFloat<T>(epilogue<E>(scratch[r * 16 + c + e], bias, gc + e));
          *reinterpret_cast<Vec16<T>*>(y + std::size_t(gr) * n + gc) = out;
        } else {
          for (int e = 0; e < 8; ++e) {
            if (gc + e < n) y[std::size_t(gr) * n + gc + e] = fromFloat<T>(epilogue<E>(scratch[r * 16 + c + e], bias, gc + e));
          }
        }
      }
      __syncwarp();
    }
  }
}

// ---------------- SIMT path (fp32) ----------------
constexpr int kSBm = 64, kSBn = 64, kSBk = 16, kSThreads = 256;

template <Epilogue E>
__global__ void __launch_bounds__(kSThreads) gemmSimtKernel(const float* __restrict__ x, std::size_t lda,
                                                            const float* __restrict__ w, const float* __restrict__ bias,
                                                            float* __restrict__ y, int m, int n, int k) {
  // Both tiles stored k-major so each thread's 4 rows / 4 cols are contiguous float4 reads.
  __shared__ __align__(16) float a_t[kSBk][kSBm];
  __shared__ __align__(16) float b_t[kSBk][kSBn];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * kSBm, col0 = blockIdx.x * kSBn;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < k; k0 += kSBk) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int e = threadIdx.x + i * kSThreads;  // 1024 elements per tile
      const int r = e / kSBk, c = e % kSBk;
      const int ar = row0 + r, bc = col0 + r, kc = k0 + c;
      a_t[c][r] = (ar < m && kc < k) ? x[std::size_t(ar) * lda + kc] : 0.0f;
      b_t[c][r] = (bc < n && kc < k) ? w[std::size_t(bc) * k + kc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kSBk; ++kk) {
      const float4 a4 = *reinterpret_cast<const float4*>(&a_t[kk][ty * 4]);
      const float4 b4 = *reinterpret_cast<const float4*>(&b_t[kk][tx * 4]);
      const float av[4] = {a4.x, a4.y, a4.z, a4.w};
      const float bv[4] = {b4.x, b4.y, b4.z, b4.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int gr = row0 + ty * 4 + i;
    if (gr >= m) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int gc = col0 + tx * 4 + j;
      if (gc < n) y[std::size_t(gr) * n + gc] = epilogue<E>(acc[i][j], bias, gc);
    }
  }
}

template <class T, Epilogue E>
void launchTyped(const void* x, std::size_t lda, const void* w, const void* bias, void* y, int m, int n, int k,
                 cudaStream_t s) {
  if constexpr (std::is_same_v<T, float>) {
    const dim3 grid((n + kSBn - 1) / kSBn, (m + kSBm - 1) / kSBm);
    gemmSimtKernel<E><<<grid, kSThreads, 0, s>>>(static_cast<const float*>(x), lda, static_cast<const float*>(w),
                                                 static_cast<const float*>(bias), static_cast<float*>(y), m, n, k);
  } else {
    const dim3 grid((n + kBn - 1) / kBn, (m + kBm - 1) / kBm);
    const bool aligned = k % 8 == 0 && lda % 8 == 0 &&
                         reinterpret_cast<std::uintptr_t>(x) % 16 == 0;
    if (aligned) {
      gemmWmmaKernel<T, E, true><<<grid, kThreads, 0, s>>>(static_cast<const T*>(x), lda, static_cast<const T*>(w),
                                                           static_cast<const T*>(bias), static_cast<T*>(y), m, n, k);
    } else {
      gemmWmmaKernel<T, E, false><<<grid, kThreads, 0, s>>>(static_cast<const T*>(x), lda, static_cast<const T*>(w),
                                                            static_cast<const T*>(bias), static_cast<T*>(y), m, n, k);
    }
  }
  CUDA_CHECK_LAUNCH(gemm);
}

}  // namespace

void launchGemm(DType t, Epilogue e, const void* x, std::size_t lda, const void* w,
                const void* bias, void* y, std::size_t m, std::size_t n, std::size_t k,
                cudaStream_t s) {
  if (m == 0 || n == 0) return;
  if (gemmSm90Usable(t, x, lda, w, y, n, k)) {
    launchGemmSm90(t, e, x, lda, w, bias, y, m, n, k, s);
    return;
  }
  const int mi = int(m), ni = int(n), ki = int(k);
  FPROF_DISPATCH_DTYPE(t, T, {
    switch (e) {
      case Epilogue::None: launchTyped<T, Epilogue::None>(x, lda, w, bias, y, mi, ni, ki, s); break;
      case Epilogue::Bias: launchTyped<T, Epilogue::Bias>(x, lda, w, bias, y, mi, ni, ki, s); break;
      case Epilogue::Relu: launchTyped<T, Epilogue::Relu>(x, lda, w, bias, y, mi, ni, ki, s); break;
      case Epilogue::BiasRelu: launchTyped<T, Epilogue::BiasRelu>(x, lda, w, bias, y, mi, ni, ki, s); break;
      case Epilogue::BiasGelu: launchTyped<T, Epilogue::BiasGelu>(x, lda, w, bias, y, mi, ni, ki, s); break;
      case Epilogue::BiasSilu: launchTyped<T, Epilogue::BiasSilu>(x, lda, w, bias, y, mi, ni, ki, s); break;
    }
  });
}

// ---------------- cuBLASLt ----------------
#define LT_CHECK(call) CUBLAS_CHECK(call)

LtMatmul::LtMatmul() {
  LT_CHECK(cublasLtCreate(&handle_));
  CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
}

LtMatmul::~LtMatmul() {
  // Teardown: errors here have nowhere useful to go.
  for (auto& [key, p] : plans_) {
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatmulDescDestroy(p.desc);
  }
  cudaFree(workspace_);
  cublasLtDestroy(handle_);
}

const LtMatmul::Plan& LtMatmul::plan(DType t, Epilogue e, std::size_t m, std::size_t n, std::size_t k, std::size_t lda) {
  const Key key{int(t), int(e), m, n, k, lda};
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  cudaDataType_t type = CUDA_R_32F;
  FPROF_DISPATCH_DTYPE(t, T, type = cudaType<T>());
  Plan p;
  // Row-major y[m,n] = x[m,k] w[n,k]^T is column-major y^T[n,m] = w (op T, k x n) * x^T (k x m).
  // Compute in fp32 (no TF32) for every dtype, as the hand kernels do.
  LT_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
  LT_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof(op_t)));
  LT_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof(op_n)));
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  switch (e) {
    case Epilogue::None: epi = CUBLASLT_EPILOGUE_DEFAULT; break;
    case Epilogue::Bias: epi = CUBLASLT_EPILOGUE_BIAS; break;
    case Epilogue::Relu: epi = CUBLASLT_EPILOGUE_RELU; break;
    case Epilogue::BiasRelu: epi = CUBLASLT_EPILOGUE_RELU_BIAS; break;
    case Epilogue::BiasGelu: epi = CUBLASLT_EPILOGUE_GELU_BIAS; break;
    case Epilogue::BiasSilu: break;
  }
  LT_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
  if (epilogueHasBias(e)) {
    LT_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, sizeof(type)));
  }
  LT_CHECK(cublasLtMatrixLayoutCreate(&p.a, type, k, n, std::int64_t(k)));
  LT_CHECK(cublasLtMatrixLayoutCreate(&p.b, type, k, m, std::int64_t(lda)));
  LT_CHECK(cublasLtMatrixLayoutCreate(&p.c, type, n, m, std::int64_t(n)));
  cublasLtMatmulPreference_t pref = nullptr;
  LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
                                                sizeof(workspace_bytes_)));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  LT_CHECK(cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.c, p.c, pref, 1, &heuristic, &found));
  LT_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  if (found == 0) throw std::runtime_error("cuBLASLt found no algorithm for this matmul");
  p.algo = heuristic.algo;
  return plans_.emplace(key, p).first->second;
}

void LtMatmul::run(DType t, Epilogue e, const void* x, const void* w, const void* bias, void* y,
                   std::size_t m, std::size_t n, std::size_t k, cudaStream_t s, std::size_t lda) {
  if (!supports(e)) throw std::invalid_argument("cuBLASLt has no SiLU epilogue");
  if (m == 0 || n == 0) return;
  const Plan& p = plan(t, e, m, n, k, lda == 0 ? k : lda);
  if (epilogueHasBias(e)) {
    LT_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }
  const float alpha = 1.0f, beta = 0.0f;
  LT_CHECK(cublasLtMatmul(handle_, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo, workspace_,
                          workspace_bytes_, s));
}

}  // namespace fprof::refk
