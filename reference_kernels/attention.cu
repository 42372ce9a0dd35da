// Attention: the unfused chain (cuBLAS batched Q.K^T with the scale as alpha, a masked
// softmax kernel, cuBLAS batched P.V) and one flash-style fused kernel with online softmax
// (tensor cores through WMMA for fp16/bf16; a SIMT kernel for fp32).
#include <mma.h>

#include <cmath>

#include "kernels.cuh"

namespace fprof::refk {
namespace {

constexpr float kLog2e = 1.4426950408889634f;

template <class T>
__global__ void attentionSoftmaxKernel(const T* __restrict__ scores, T* __restrict__ probs, int sq, int skv,
                                       bool causal) {
  extern __shared__ float row[];
  __shared__ float reduce[32];
  const std::size_t r = blockIdx.x;
  const int qi = int(r % std::size_t(sq));
  const int visible = causal ? qi + (skv - sq) + 1 : skv;
  const T* in = scores + r * skv;
  T* out = probs + r * skv;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;

  float local_max = -INFINITY;
  for (int c = threadIdx.x; c < visible; c += blockDim.x) {
    row[c] = toFloat(in[c]);
    local_max = fmaxf(local_max, row[c]);
  }
  for (int o = 16; o > 0; o >>= 1) local_max = fmaxf(local_max, __shfl_xor_sync(0xffffffffu, local_max, o));
  if (lane == 0) reduce[warp] = local_max;
  __syncthreads();
  float row_max = -INFINITY;
  for (int i = 0; i < warps; ++i) row_max = fmaxf(row_max, reduce[i]);
  __syncthreads();

  float local_sum = 0.0f;
  for (int c = threadIdx.x; c < visible; c += blockDim.x) {
    row[c] = __expf(row[c] - row_max);
    local_sum += row[c];
  }
  for (int o = 16; o > 0; o >>= 1) local_sum += __shfl_xor_sync(0xffffffffu, local_sum, o);
  if (lane == 0) reduce[warp] = local_sum;
  __syncthreads();
  float row_sum = 0.0f;
  for (int i = 0; i < warps; ++i) row_sum += reduce[i];
  const float inv = 1.0f / row_sum;
  for (int c = threadIdx.x; c < skv; c += blockDim.x) out[c] = fromFloat<T>(c < visible ? row[c] * inv : 0.0f);
}

// ---------------- fused, SIMT (fp32) ----------------
constexpr int kD = 64;
constexpr int kSimtQ = 64, kSimtKv = 64;

template <class T>
__global__ void __launch_bounds__(kSimtQ) flashSimtKernel(const T* __restrict__ q, const T* __restrict__ k,
                                                          const T* __restrict__ v, T* __restrict__ o,
                                                          AttentionShape a, float scale_log2) {
  __shared__ __align__(16) float ks[kSimtKv][kD];
  __shared__ __align__(16) float vs[kSimtKv][kD];
  const std::size_t bh = blockIdx.y;
  const int q0 = blockIdx.x * kSimtQ;
  const int qi = q0 + int(threadIdx.x);
  const int sq = int(a.sq), skv = int(a.skv), offset = skv - sq;
  const T* qb = q + bh * a.q_batch_stride;
  const T* kb = k + bh * a.kv_batch_stride;
  const T* vb = v + bh * a.kv_batch_stride;

  float qr[kD], acc[kD];
#pragma unroll
  for (int d = 0; d < kD; ++d) {
    qr[d] = qi < sq ? toFloat(qb[std::size_t(qi) * kD + d]) : 0.0f;
    acc[d] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  const int visible = qi >= sq ? 0 : (a.causal ? qi + offset + 1 : skv);
  const int kv_end = a.causal ? min(skv, q0 + kSimtQ + offset) : skv;
  for (int kv0 = 0; kv0 < kv_end; kv0 += kSimtKv) {
    __syncthreads();
    for (int e = threadIdx.x; e < kSimtKv * kD; e += kSimtQ) {
      const int r = e / kD, c = e % kD;
      const bool in = kv0 + r < skv;
      ks[r][c] = in ? toFloat(kb[std::size_t(kv0 + r) * kD + c]) : 0.0f;
      vs[r][c] = in ? toFloat(vb[std::size_t(kv0 + r) * kD + c]) : 0.0f;
    }
    __syncthreads();
    for (int jc = 0; jc < kSimtKv; jc += 16) {
      float s[16];
      float chunk_max = -INFINITY;
#pragma unroll
      for (int jj = 0; jj < 16; ++jj) {
        float dot = 0.0f;
#pragma unroll
        for (int d = 0; d < kD; ++d) dot = fmaf(qr[d], ks[jc + jj][d], dot);
        s[jj] = kv0 + jc + jj < visible ? dot * scale_log2 : -INFINITY;
        chunk_max = fmaxf(chunk_max, s[jj]);
      }
      if (chunk_max == -INFINITY) continue;
      const float m_new = fmaxf(m, chunk_max);
      const float alpha = exp2f(m - m_new);
      l *= alpha;
#pragma unroll
      for (int d = 0; d < kD; ++d) acc[d] *= alpha;
#pragma unroll
      for (int jj = 0; jj < 16; ++jj) {
        const float p = exp2f(s[jj] - m_new);
        l += p;
#pragma unroll
        for (int d = 0; d < kD; ++d) acc[d] = fmaf(p, vs[jc + jj][d], acc[d]);
      }
      m = m_new;
    }
  }
  if (qi < sq) {
    T* ob = o + bh * a.o_batch_stride + std::size_t(qi) * kD;
    const float inv = 1.0f / l;
#pragma unroll
    for (int d = 0; d < kD; ++d) ob[d] = fromFloat<T>(acc[d] * inv);
  }
}

// ---------------- fused, tensor cores (fp16/bf16) ----------------
constexpr int kWarps = 4, kTq = 16 * kWarps, kTkv = 64;
constexpr int kLdh = kD + 8;   // halves per smem row of Q/K/V/P
constexpr int kLdf = kTkv + 4; // floats per smem row of S and O (kTkv == kD)
constexpr std::size_t kQBytes = kTq * kLdh * 2, kKvBytes = kTkv * kLdh * 2;
constexpr std::size_t kSBytes = kWarps * 16 * kLdf * 4, kPBytes = kWarps * 16 * kLdh * 2;
constexpr std::size_t kFlashSmemBytes = kQBytes + 2 * kKvBytes + 2 * kSBytes + kPBytes;

template <class T>
__device__ __forceinline__ void loadRows16B(T* smem, const T* __restrict__ g, int row0, int rows_valid) {
  // 64 rows x 8 chunks of 16 bytes.
  for (int e = threadIdx.x; e < 64 * 8; e += kWarps * 32) {
    const int r = e >> 3, c = (e & 7) * 8;
    Vec16<T> val;
    if (row0 + r < rows_valid) {
      val = *reinterpret_cast<const Vec16<T>*>(g + std::size_t(row0 + r) * kD + c);
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) val.v[i] = fromFloat<T>(0.0f);
    }
    *reinterpret_cast<Vec16<T>*>(smem + r * kLdh + c) = val;
  }
}

template <class T>
__global__ void __launch_bounds__(kWarps * 32) flashWmmaKernel(const T* __restrict__ q, const T* __restrict__ k,
                                                               const T* __restrict__ v, T* __restrict__ o,
                                                               AttentionShape a, float scale_log2) {
  using namespace nvcuda;
  extern __shared__ __align__(128) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem);
  T* ks = reinterpret_cast<T*>(smem + kQBytes);
  T* vs = reinterpret_cast<T*>(smem + kQBytes + kKvBytes);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float* sbuf = reinterpret_cast<float*>(smem + kQBytes + 2 * kKvBytes) + warp * 16 * kLdf;
  float* obuf = reinterpret_cast<float*>(smem + kQBytes + 2 * kKvBytes + kSBytes) + warp * 16 * kLdf;
  T* pbuf = reinterpret_cast<T*>(smem + kQBytes + 2 * kKvBytes + 2 * kSBytes) + warp * 16 * kLdh;

  const std::size_t bh = blockIdx.y;
  const int q0 = blockIdx.x * kTq;
  const int sq = int(a.sq), skv = int(a.skv), offset = skv - sq;
  const T* kb = k + bh * a.kv_batch_stride;
  const T* vb = v + bh * a.kv_batch_stride;
  loadRows16B(qs, q + bh * a.q_batch_stride, q0, sq);

  // Each lane owns half a row of this warp's 16 rows: row r, columns c0 .. c0+31.
  const int r = lane >> 1, c0 = (lane & 1) * 32;
  const int q_row = q0 + warp * 16 + r;
  const int q_pos = q_row + offset;
  for (int c = 0; c < 32; ++c) obuf[r * kLdf + c0 + c] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  __syncthreads();

  wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fq[kD / 16];
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk) wmma::load_matrix_sync(fq[kk], qs + warp * 16 * kLdh + kk * 16, kLdh);

  const int kv_end = a.causal ? min(skv, q0 + kTq + offset) : skv;
  for (int kv0 = 0; kv0 < kv_end; kv0 += kTkv) {
    __syncthreads();  // every warp is done with the previous K/V tile
    loadRows16B(ks, kb, kv0, skv);
    loadRows16B(vs, vb, kv0, skv);
    __syncthreads();

#pragma unroll
    for (int nb = 0; nb < kTkv / 16; ++nb) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> s_acc;
      wmma::fill_fragment(s_acc, 0.0f);
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fk;
        wmma::load_matrix_sync(fk, ks + nb * 16 * kLdh + kk * 16, kLdh);
        wmma::mma_sync(s_acc, fq[kk], fk, s_acc);
      }
      wmma::store_matrix_sync(sbuf + nb * 16, s_acc, kLdf, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax on this lane's 32 scores; the scale rides in the exponent's base change.
    float s[32];
    float tile_max = -INFINITY;
#pragma unroll
    for (int c = 0; c < 32; ++c) {
      const int j = kv0 + c0 + c;
      const bool visible = j < skv && (!a.causal || j <= q_pos);
      s[c] = visible ? sbuf[r * kLdf + c0 + c] * scale_log2 : -INFINITY;
      tile_max = fmaxf(tile_max, s[c]);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float m_new = fmaxf(m, tile_max);
    const float alpha = m_new == -INFINITY ? 1.0f : exp2f(m - m_new);
    float row_sum = 0.0f;
#pragma unroll
    for (int c = 0; c < 32; ++c) {
      const float p = m_new == -INFINITY ? 0.0f : exp2f(s[c] - m_new);
      row_sum += p;
      pbuf[r * kLdh + c0 + c] = fromFloat<T>(p);
      obuf[r * kLdf + c0 + c] *= alpha;
    }
    row_sum += __shfl_xor_sync(0xffffffffu, row_sum, 1);
    l = l * alpha + row_sum;
    m = m_new;
    __syncwarp();

#pragma unroll
    for (int db = 0; db < kD / 16; ++db) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> o_acc;
      wmma::load_matrix_sync(o_acc, obuf + db * 16, kLdf, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < kTkv / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fp;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fv;
        wmma::load_matrix_sync(fp, pbuf + kk * 16, kLdh);
        wmma::load_matrix_sync(fv, vs + kk * 16 * kLdh + db * 16, kLdh);
        wmma::mma_sync(o_acc, fp, fv, o_acc);
      }
      wmma::store_matrix_sync(obuf + db * 16, o_acc, kLdf, wmma::mem_row_major);
    }
    __syncwarp();
  }

  if (q_row < sq) {
    T* ob = o + bh * a.o_batch_stride + std::size_t(q_row) * kD + c0;
    const float inv = 1.0f / l;
#pragma unroll
    for (int c = 0; c < 32; c += 8) {
      Vec16<T> out;
#pragma unroll
      for (int i = 0; i < 8; ++i) out.v[i] = fromFloat<T>(obuf[r * kLdf + c0 + c + i] * inv);
      *reinterpret_cast<Vec16<T>*>(ob + c) = out;
    }
  }
}

}  // namespace

void launchScores(cublasHandle_t h, DType t, const AttentionShape& a, const void* q, const void* k,
                  void* scores) {
  // Row-major scores[sq, skv] = q k^T is column-major scores^T[skv, sq] = k (op T) * q^T.
  cudaDataType_t type = CUDA_R_32F;
  FPROF_DISPATCH_DTYPE(t, T, type = cudaType<T>());
  const float alpha = a.scale, beta = 0.0f;
  CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      h, CUBLAS_OP_T, CUBLAS_OP_N, int(a.skv), int(a.sq), int(a.head_dim), &alpha, k, type, int(a.head_dim),
      (long long)a.kv_batch_stride, q, type, int(a.head_dim), (long long)a.q_batch_stride, &beta, scores, type,
      int(a.skv), (long long)(a.sq * a.skv), int(a.batch_heads), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void launchAttentionSoftmax(DType t, const AttentionShape& a, const void* scores, void* probs,
                            cudaStream_t s) {
  const std::size_t smem_bytes = a.skv * sizeof(float);
  if (smem_bytes > 48 * 1024) throw std::invalid_argument("attention softmax: skv > 12288");
  const std::size_t rows = a.batch_heads * a.sq;
  if (rows == 0) return;
  FPROF_DISPATCH_DTYPE(t, T, attentionSoftmaxKernel<T><<<unsigned(rows), 128, smem_bytes, s>>>(
                                 static_cast<const T*>(scores), static_cast<T*>(probs), int(a.sq), int(a.skv), a.causal));
  CUDA_CHECK_LAUNCH(attentionSoftmaxKernel);
}

void launchProbsTimesV(cublasHandle_t h, DType t, const AttentionShape& a, const void* probs,
                       const void* v, void* o) {
  // Row-major o[sq, d] = p[sq, skv] v[skv, d] is column-major o^T[d, sq] = v^T * p^T, no transposes.
  cudaDataType_t type = CUDA_R_32F;
  FPROF_DISPATCH_DTYPE(t, T, type = cudaType<T>());
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      h, CUBLAS_OP_N, CUBLAS_OP_N, int(a.head_dim), int(a.sq), int(a.skv), &alpha, v, type, int(a.head_dim),
      (long long)a.kv_batch_stride, probs, type, int(a.skv), (long long)(a.sq * a.skv), &beta, o, type,
      int(a.head_dim), (long long)a.o_batch_stride, int(a.batch_heads), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void launchFlashAttention(DType t, const AttentionShape& a, const void* q, const void* k,
                          const void* v, void* o, cudaStream_t s) {
  if (a.head_dim != kD) throw std::invalid_argument("fused attention is compiled for head_dim 64 only");
  if (a.sq > a.skv) throw std::invalid_argument("attention: sq > skv");
  if (a.batch_heads == 0 || a.sq == 0) return;
  const float scale_log2 = a.scale * kLog2e;
  if (t == DType::F32) {
    const dim3 grid(unsigned((a.sq + kSimtQ - 1) / kSimtQ), unsigned(a.batch_heads));
    flashSimtKernel<float><<<grid, kSimtQ, 0, s>>>(static_cast<const float*>(q), static_cast<const float*>(k),
                                                   static_cast<const float*>(v), static_cast<float*>(o), a, scale_log2);
    CUDA_CHECK_LAUNCH(flashSimtKernel);
    return;
  }
  const dim3 grid(unsigned((a.sq + kTq - 1) / kTq), unsigned(a.batch_heads));
  auto launch = [&](auto kernel, auto* typed) {
    using T = std::remove_pointer_t<decltype(typed)>;
    static bool configured = false;  // one attribute call per instance, not per launch
    if (!configured) {
      CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kFlashSmemBytes)));
      configured = true;
    }
    kernel<<<grid, kWarps * 32, kFlashSmemBytes, s>>>(static_cast<const T*>(q), static_cast<const T*>(k),
                                                      static_cast<const T*>(v), static_cast<T*>(o), a, scale_log2);
  };
  if (t == DType::F16) launch(flashWmmaKernel<__half>, static_cast<__half*>(nullptr));
  else launch(flashWmmaKernel<__nv_bfloat16>, static_cast<__nv_bfloat16*>(nullptr));
  CUDA_CHECK_LAUNCH(flashWmmaKernel);
}

}  // namespace fprof::refk
