// Attention: the unfused chain (cuBLAS batched Q.K^T with the scale as alpha, a masked
// softmax kernel, cuBLAS batched P.V) and one flash-style fused kernel with online softmax
// (on Hopper the wgmma kernel of attention_sm90.cu; elsewhere tensor cores through mma.sync for
// fp16/bf16; a SIMT kernel for fp32).
#include <cmath>
#include <cstdlib>
#include <string>

#include "kernels.cuh"
#include "mma_sync.cuh"

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
// FlashAttention-2 style: each warp owns 32 query rows (two 16-row mma tiles, so every K/V
// operand loaded from shared memory feeds two mmas); scores, probabilities and the output
// accumulator stay in registers in the mma.sync m16n8k16 fragment layouts (the score
// accumulator of two adjacent n8 tiles is exactly the A operand of the P.V product). K and V
// tiles are double-buffered in shared memory with cp.async; V's B operand comes from
// ldmatrix.trans. Row layout of a fragment: g = lane / 4 owns rows g and g + 8, t = lane % 4
// owns columns 2t and 2t + 1 of each 8-wide tile.
constexpr int kFaWarps = 4, kFaKv = 64;
// Measured on an H200 (bench/RESULTS.md): 16 rows per warp ran 0.366 ms vs 0.386 ms for 32.
constexpr int kFlashRowsPerWarp = 16;
constexpr int kFaLd = kD + 8;  // halves per shared row: 16-byte aligned rows, conflict-free fragment loads


// 64 rows x 64 halves of a [rows, 64] matrix into smem[64][kFaLd]; rows >= rows_valid are zero.
template <class T>
__device__ __forceinline__ void loadTileAsync(T* smem, const T* __restrict__ g, int row0, int rows_valid) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int chunk = threadIdx.x + i * kFaWarps * 32;
    const int r = chunk >> 3, c = (chunk & 7) * 8;
    const bool valid = row0 + r < rows_valid;
    cpAsync16(smem + r * kFaLd + c, valid ? g + std::size_t(row0 + r) * kD + c : g, valid);
  }
}

__device__ __forceinline__ std::uint32_t ld32(const void* p) { return *reinterpret_cast<const std::uint32_t*>(p); }



template <class T, int kMi>
__global__ void __launch_bounds__(kFaWarps * 32, 4 / kMi) flashMmaKernel(const T* __restrict__ q, const T* __restrict__ k,
                                                                const T* __restrict__ v, T* __restrict__ o,
                                                                AttentionShape a, float scale_log2) {
  // Two stages of K and V tiles; Q is staged once in stage 1's space (it lives in registers
  // after the prologue), which keeps the block under the 48 KB static limit.
  constexpr int kFaQ = 16 * kMi * kFaWarps;
  __shared__ __align__(128) T smem[2][2][kFaKv * kFaLd];
  T* const qs = &smem[1][0][0];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const std::size_t bh = blockIdx.y;
  const int q0 = blockIdx.x * kFaQ;
  const int sq = int(a.sq), skv = int(a.skv), offset = skv - sq;
  const T* kb = k + bh * a.kv_batch_stride;
  const T* vb = v + bh * a.kv_batch_stride;
  const int kv_end = a.causal ? min(skv, q0 + kFaQ + offset) : skv;
  const int tiles = (kv_end + kFaKv - 1) / kFaKv;

  loadTileAsync(qs, q + bh * a.q_batch_stride, q0, sq);
  if constexpr (kMi == 2) loadTileAsync(qs + kFaKv * kFaLd, q + bh * a.q_batch_stride, q0 + kFaKv, sq);
  loadTileAsync(smem[0][0], kb, 0, skv);
  loadTileAsync(smem[0][1], vb, 0, skv);
  cpAsyncCommit();
  cpAsyncWait<0>();
  __syncthreads();

  // Each warp owns kMi groups of 16 rows; each lane two rows per group (g and g + 8).
  std::uint32_t qa[kMi][kD / 16][4];
#pragma unroll
  for (int mi = 0; mi < kMi; ++mi) {
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      const T* base = qs + (warp * 16 * kMi + mi * 16) * kFaLd + kk * 16 + 2 * t;
      qa[mi][kk][0] = ld32(base + g * kFaLd);
      qa[mi][kk][1] = ld32(base + (g + 8) * kFaLd);
      qa[mi][kk][2] = ld32(base + g * kFaLd + 8);
      qa[mi][kk][3] = ld32(base + (g + 8) * kFaLd + 8);
    }
  }
  __syncthreads();  // Q's space is stage 1, overwritten by the first prefetch below

  const int row_base = q0 + warp * 16 * kMi + g;
  float o_acc[kMi][kD / 8][4] = {};
  float m_r[kMi][2], l_r[kMi][2];
#pragma unroll
  for (int mi = 0; mi < kMi; ++mi) {
    m_r[mi][0] = m_r[mi][1] = -INFINITY;
    l_r[mi][0] = l_r[mi][1] = 0.0f;
  }

  for (int tile = 0; tile < tiles; ++tile) {
    const int stage = tile & 1;
    if (tile + 1 < tiles) {
      loadTileAsync(smem[stage ^ 1][0], kb, (tile + 1) * kFaKv, skv);
      loadTileAsync(smem[stage ^ 1][1], vb, (tile + 1) * kFaKv, skv);
      cpAsyncCommit();
      cpAsyncWait<1>();
    } else {
      cpAsyncWait<0>();
    }
    __syncthreads();
    const T* ks = smem[stage][0];
    const T* vs = smem[stage][1];

    float s[kMi][kFaKv / 8][4] = {};
#pragma unroll
    for (int nt = 0; nt < kFaKv / 8; nt += 2) {
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) {
        // One ldmatrix.x4 gives the B operands of key tiles nt and nt + 1; each feeds kMi mmas.
        const T* kp = ks + (nt * 8 + (lane & 7) + ((lane >> 4) & 1) * 8) * kFaLd + kk * 16 + ((lane >> 3) & 1) * 8;
        std::uint32_t b[4];
        ldmatrixX4(b, kp);
#pragma unroll
        for (int mi = 0; mi < kMi; ++mi) {
          mmaM16N8K16<T>(s[mi][nt], qa[mi][kk], b[0], b[1]);
          mmaM16N8K16<T>(s[mi][nt + 1], qa[mi][kk], b[2], b[3]);
        }
      }
    }

    // Online softmax per row; the scale is folded into the base-2 exponent's FMA. Only the last
    // tile (keys past skv) and, when causal, tiles reaching past this warp's first row mask.
    const int kv0 = tile * kFaKv;
    const bool need_mask =
        kv0 + kFaKv > skv || (a.causal && kv0 + kFaKv - 1 > q0 + warp * 16 * kMi + offset);
#pragma unroll
    for (int mi = 0; mi < kMi; ++mi) {
      const int pos0 = row_base + mi * 16 + offset;
      float mx[2] = {-INFINITY, -INFINITY};
      if (need_mask) {
#pragma unroll
        for (int nt = 0; nt < kFaKv / 8; ++nt) {
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            const int key = kv0 + nt * 8 + 2 * t + (c & 1);
            const int pos = pos0 + (c >> 1) * 8;
            if (key >= skv || (a.causal && key > pos)) s[mi][nt][c] = -INFINITY;
          }
        }
      }
#pragma unroll
      for (int nt = 0; nt < kFaKv / 8; ++nt) {
#pragma unroll
        for (int c = 0; c < 4; ++c) mx[c >> 1] = fmaxf(mx[c >> 1], s[mi][nt][c]);
      }
      float alpha[2], m_new[2], sum[2] = {0.0f, 0.0f};
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        m_new[r] = fmaxf(m_r[mi][r], mx[r] * scale_log2);  // scale > 0, so the max commutes
        alpha[r] = m_new[r] == -INFINITY ? 1.0f : fastExp2(m_r[mi][r] - m_new[r]);
        m_r[mi][r] = m_new[r];
      }
#pragma unroll
      for (int nt = 0; nt < kFaKv / 8; ++nt) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const float mr = m_new[c >> 1];
          const float p = mr == -INFINITY ? 0.0f : fastExp2(fmaf(s[mi][nt][c], scale_log2, -mr));
          s[mi][nt][c] = p;
          sum[c >> 1] += p;
        }
      }
#pragma unroll
      for (int r = 0; r < 2; ++r) l_r[mi][r] = l_r[mi][r] * alpha[r] + sum[r];  // per-lane partial
#pragma unroll
      for (int dt = 0; dt < kD / 8; ++dt) {
        o_acc[mi][dt][0] *= alpha[0]; o_acc[mi][dt][1] *= alpha[0];
        o_acc[mi][dt][2] *= alpha[1]; o_acc[mi][dt][3] *= alpha[1];
      }
    }

#pragma unroll
    for (int kk = 0; kk < kFaKv / 16; ++kk) {
      std::uint32_t pa[kMi][4];
#pragma unroll
      for (int mi = 0; mi < kMi; ++mi) {
        pa[mi][0] = pack2<T>(s[mi][2 * kk][0], s[mi][2 * kk][1]);
        pa[mi][1] = pack2<T>(s[mi][2 * kk][2], s[mi][2 * kk][3]);
        pa[mi][2] = pack2<T>(s[mi][2 * kk + 1][0], s[mi][2 * kk + 1][1]);
        pa[mi][3] = pack2<T>(s[mi][2 * kk + 1][2], s[mi][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dt = 0; dt < kD / 8; dt += 2) {
        const T* vp = vs + (kk * 16 + (lane & 15)) * kFaLd + (dt + (lane >> 4)) * 8;
        std::uint32_t b[4];
        ldmatrixX4Trans(b, vp);
#pragma unroll
        for (int mi = 0; mi < kMi; ++mi) {
          mmaM16N8K16<T>(o_acc[mi][dt], pa[mi], b[0], b[1]);
          mmaM16N8K16<T>(o_acc[mi][dt + 1], pa[mi], b[2], b[3]);
        }
      }
    }
    __syncthreads();  // the next iteration's cp.async overwrites the other stage
  }

  T* ob = o + bh * a.o_batch_stride;
#pragma unroll
  for (int mi = 0; mi < kMi; ++mi) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = l_r[mi][r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const int row = row_base + mi * 16 + 8 * r;
      if (row >= sq) continue;
      const float inv = 1.0f / l;
#pragma unroll
      for (int dt = 0; dt < kD / 8; ++dt) {
        *reinterpret_cast<std::uint32_t*>(ob + std::size_t(row) * kD + dt * 8 + 2 * t) =
            pack2<T>(o_acc[mi][dt][2 * r] * inv, o_acc[mi][dt][2 * r + 1] * inv);
      }
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
  // FPROF_REF_FLASH=mma keeps the mma.sync kernel on a Hopper device too, for comparison runs.
  const char* form = std::getenv("FPROF_REF_FLASH");
  if ((form == nullptr || std::string(form) != "mma") && flashSm90Usable(t, a, q, k, v, o)) {
    launchFlashAttentionSm90(t, a, q, k, v, o, s);
    return;
  }
  // 32 rows per warp reuse each K/V operand from shared memory twice but need 236 registers
  // (2 blocks per SM); 16 rows per warp need 128 (4 blocks per SM) and waste less of the tile
  // when sq is small (decode). FPROF_REF_FLASH_ROWS=16|32 overrides, for tuning runs.
  const char* env = std::getenv("FPROF_REF_FLASH_ROWS");
  const int rows_per_warp = env != nullptr ? std::atoi(env) : kFlashRowsPerWarp;
  const bool wide = rows_per_warp == 32 && a.sq > 64;
  const unsigned blocks = unsigned((a.sq + (wide ? 128 : 64) - 1) / (wide ? 128 : 64));
  const dim3 grid(blocks, unsigned(a.batch_heads));
  if (t == DType::F16) {
    using H = __half;
    if (wide) flashMmaKernel<H, 2><<<grid, kFaWarps * 32, 0, s>>>(static_cast<const H*>(q), static_cast<const H*>(k), static_cast<const H*>(v), static_cast<H*>(o), a, scale_log2);
    else flashMmaKernel<H, 1><<<grid, kFaWarps * 32, 0, s>>>(static_cast<const H*>(q), static_cast<const H*>(k), static_cast<const H*>(v), static_cast<H*>(o), a, scale_log2);
  } else {
    using B = __nv_bfloat16;
    if (wide) flashMmaKernel<B, 2><<<grid, kFaWarps * 32, 0, s>>>(static_cast<const B*>(q), static_cast<const B*>(k), static_cast<const B*>(v), static_cast<B*>(o), a, scale_log2);
    else flashMmaKernel<B, 1><<<grid, kFaWarps * 32, 0, s>>>(static_cast<const B*>(q), static_cast<const B*>(k), static_cast<const B*>(v), static_cast<B*>(o), a, scale_log2);
  }
  CUDA_CHECK_LAUNCH(flashMmaKernel);
}

}  // namespace fprof::refk
