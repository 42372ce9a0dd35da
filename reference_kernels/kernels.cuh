// Launchers for every reference kernel. Each takes the element type at run time and
// dispatches to the template instance; pointers are device pointers of that type.
#pragma once

#include <map>
#include <tuple>

#include "common.cuh"

namespace fprof::refk {

#define FPROF_DISPATCH_DTYPE(dtype, T, ...)                 \
  switch (dtype) {                                          \
    case DType::F32: { using T = float; __VA_ARGS__; break; }          \
    case DType::F16: { using T = __half; __VA_ARGS__; break; }         \
    case DType::BF16: { using T = __nv_bfloat16; __VA_ARGS__; break; } \
  }

enum class Epilogue { None, Bias, Relu, BiasRelu, BiasGelu, BiasSilu };
const char* epilogueName(Epilogue e);
bool epilogueHasBias(Epilogue e);

// ---- elementwise (elementwise.cu) ----
void launchAdd(DType t, const void* a, const void* b, void* y, std::size_t n, cudaStream_t s);
void launchMul(DType t, const void* a, const void* b, void* y, std::size_t n, cudaStream_t s);
void launchGelu(DType t, const void* x, void* y, std::size_t n, cudaStream_t s);
void launchRelu(DType t, const void* x, void* y, std::size_t n, cudaStream_t s);
// y = gelu_tanh((a + b) * c) in one pass.
void launchChainFused(DType t, const void* a, const void* b, const void* c, void* y, std::size_t n,
                      cudaStream_t s);
// y[m, n] = act(x[m, n] (+ bias[n])): the second kernel of an unfused matmul epilogue.
void launchBiasAct(DType t, Epilogue e, const void* x, const void* bias, void* y, std::size_t rows,
                   std::size_t cols, cudaStream_t s);
// Inference batchnorm on NCHW, per-channel: (x - mean) * rsqrt(var + eps) * gamma + beta.
void launchBatchNorm(DType t, const void* x, const void* gamma, const void* beta, const void* mean,
                     const void* var, float eps, void* y, std::size_t batch, std::size_t channels,
                     std::size_t hw, cudaStream_t s);
// token ids [rows] -> x[rows, width] = wte[token] + wpe[position]; position = pos0 + row % seq.
void launchEmbedding(DType t, const int* tokens, const void* wte, const void* wpe, void* x,
                     std::size_t rows, std::size_t seq, std::size_t pos0, std::size_t width,
                     cudaStream_t s);
// qkv [batch*seq, 3*width] -> q [batch, heads, seq, hd] and k/v caches [batch, heads, max_seq, hd]
// at positions pos0.. pos0+seq.
void launchSplitHeads(DType t, const void* qkv, void* q, void* k_cache, void* v_cache,
                      std::size_t batch, std::size_t seq, std::size_t heads, std::size_t head_dim,
                      std::size_t pos0, std::size_t max_seq, cudaStream_t s);
// o [batch, heads, seq, hd] -> y [batch*seq, heads*hd]
void launchMergeHeads(DType t, const void* o, void* y, std::size_t batch, std::size_t seq,
                      std::size_t heads, std::size_t head_dim, cudaStream_t s);

// ---- norms (norms.cu) ----
// sum = x + residual (written when sum != nullptr); y = norm(residual ? sum : x).
// residual == nullptr: plain norm of x. beta == nullptr with rms = false: no shift.
void launchNorm(DType t, bool rms, const void* x, const void* residual, const void* gamma,
                const void* beta, float eps, void* sum, void* y, std::size_t rows,
                std::size_t cols, cudaStream_t s);

// ---- matmul (gemm.cu) ----
// y[m, n] = epi(x[m, k] * w[n, k]^T + bias[n]); x rows are lda elements apart (lda >= k).
void launchGemm(DType t, Epilogue e, const void* x, std::size_t lda, const void* w,
                const void* bias, void* y, std::size_t m, std::size_t n, std::size_t k,
                cudaStream_t s);

// The Hopper kernel (gemm_sm90.cu: wgmma, TMA, warp-specialized; built for sm_90a only), which
// launchGemm picks when gemmSm90Usable: an sm_90 device, fp16/bf16, k, lda and n multiples of 8
// and 16-byte aligned x, w, y.
bool gemmSm90Usable(DType t, const void* x, std::size_t lda, const void* w, const void* y, std::size_t n,
                    std::size_t k);
void launchGemmSm90(DType t, Epilogue e, const void* x, std::size_t lda, const void* w, const void* bias, void* y,
                    std::size_t m, std::size_t n, std::size_t k, cudaStream_t s);

// cuBLASLt with its fused epilogue; SiLU has none in cuBLASLt, so it is refused (returns false).
class LtMatmul {
 public:
  LtMatmul();
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;
  static bool supports(Epilogue e) { return e != Epilogue::BiasSilu; }
  // x rows are lda elements apart (lda >= k; 0 means k).
  void run(DType t, Epilogue e, const void* x, const void* w, const void* bias, void* y,
           std::size_t m, std::size_t n, std::size_t k, cudaStream_t s, std::size_t lda = 0);

 private:
  // Descriptors and the heuristic's choice, made once per shape so a timed call only launches.
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  using Key = std::tuple<int, int, std::size_t, std::size_t, std::size_t, std::size_t>;
  const Plan& plan(DType t, Epilogue e, std::size_t m, std::size_t n, std::size_t k, std::size_t lda);
  std::map<Key, Plan> plans_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 32u << 20;
};

// ---- attention (attention.cu) ----
struct AttentionShape {
  std::size_t batch_heads, sq, skv, head_dim;
  std::size_t q_batch_stride, kv_batch_stride, o_batch_stride;  // elements between (b,h) slices
  float scale;
  bool causal;
};
// Unfused stages: scores = scale * q k^T (cuBLAS), probs = masked softmax(scores), o = probs v.
void launchScores(cublasHandle_t h, DType t, const AttentionShape& a, const void* q, const void* k,
                  void* scores);
void launchAttentionSoftmax(DType t, const AttentionShape& a, const void* scores, void* probs,
                            cudaStream_t s);
void launchProbsTimesV(cublasHandle_t h, DType t, const AttentionShape& a, const void* probs,
                       const void* v, void* o);
// One flash-style kernel (online softmax, scale folded into the exponent, optional causal mask).
// head_dim must be 64 (the only instance compiled).
void launchFlashAttention(DType t, const AttentionShape& a, const void* q, const void* k,
                          const void* v, void* o, cudaStream_t s);
constexpr std::size_t kFlashHeadDim = 64;
// The Hopper form (attention_sm90.cu: wgmma, TMA, warp-specialized; built for sm_90a only), which
// launchFlashAttention picks when flashSm90Usable: an sm_90 device, fp16/bf16, head_dim 64,
// slice strides multiples of 8 elements and 16-byte aligned q, k, v, o.
bool flashSm90Usable(DType t, const AttentionShape& a, const void* q, const void* k, const void* v, const void* o);
void launchFlashAttentionSm90(DType t, const AttentionShape& a, const void* q, const void* k, const void* v, void* o,
                              cudaStream_t s);

// ---- softmax + top-k over a vocabulary row (topk.cu) ----
// Rows are split over several blocks; the kernels share a scratch buffer (per-block partials,
// row statistics, arrival counters) of topKScratchBytes(rows, vocab), set up once with
// initTopKScratch. One stream at a time may use a scratch buffer.
constexpr int kMaxTopK = 8;
std::size_t topKScratchBytes(std::size_t rows, std::size_t vocab);
void initTopKScratch(void* scratch, std::size_t rows, std::size_t vocab, cudaStream_t s);
// Unfused stage 1: row max and sum of exp (into the scratch).
void launchVocabSoftmaxStats(DType t, const void* logits, void* scratch, std::size_t rows, std::size_t vocab,
                             cudaStream_t s);
// Unfused stage 2: probs (fp32) = softmax(logits) from those statistics.
void launchVocabSoftmaxWrite(DType t, const void* logits, const void* scratch, float* probs, std::size_t rows,
                             std::size_t vocab, cudaStream_t s);
// Unfused stage 3: top-k of the fp32 probs.
void launchTopK(const float* probs, float* top_p, int* top_i, std::size_t rows, std::size_t vocab, int k,
                void* scratch, cudaStream_t s);
// Fused: one pass over the logits (online max/sum and top-k of the logits together).
void launchSoftmaxTopKFused(DType t, const void* logits, float* top_p, int* top_i, std::size_t rows,
                            std::size_t vocab, int k, void* scratch, cudaStream_t s);

// ---- conv2d 3x3 stride 1 pad 1, NCHW (conv.cu) ----
// The filter [out][in][3][3] as 9 tap matrices w_taps[tap][out][in], done once when the model is
// loaded (as the batchnorm fold is): the layout the convolution reads.
void launchConvWeightsTapMajor(DType t, const void* w, void* w_taps, std::size_t cout, std::size_t cin, cudaStream_t s);
// bn_scale/bn_shift == nullptr: plain conv; otherwise y = relu(conv * scale[c] + shift[c]).
void launchConv3x3(DType t, const void* x, const void* w_taps, const float* bn_scale,
                   const float* bn_shift, void* y, std::size_t batch, std::size_t cin,
                   std::size_t cout, std::size_t height, std::size_t width, cudaStream_t s);
// Folds inference batchnorm into per-channel fp32 scale and shift.
void launchFoldBatchNorm(DType t, const void* gamma, const void* beta, const void* mean,
                         const void* var, float eps, float* scale, float* shift,
                         std::size_t channels, cudaStream_t s);

}  // namespace fprof::refk
