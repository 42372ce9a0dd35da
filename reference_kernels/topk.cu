// Softmax + top-k over a vocabulary-sized row (the decode step). Unfused: a softmax kernel that
// writes the full fp32 probability row, then a top-k kernel over it. Fused: one pass over the
// logits keeps the online max/sum and the top-k logits together (softmax is monotone, so the
// top-k logits are the top-k probabilities).
#include <climits>

#include "kernels.cuh"

namespace fprof::refk {
namespace {

constexpr int kThreads = 1024;

struct Candidate {
  float value;
  int index;
};

// Larger value first; among equal values the lower index, matching the CPU reference.
__device__ __forceinline__ bool better(float v, int i, float w, int j) { return v > w || (v == w && i < j); }

struct LocalTopK {
  float value[kMaxTopK];
  int index[kMaxTopK];
  __device__ LocalTopK() {
#pragma unroll
    for (int j = 0; j < kMaxTopK; ++j) { value[j] = -INFINITY; index[j] = INT_MAX; }
  }
  // A thread sees its indices in increasing order, so an equal value never displaces.
  __device__ void offer(float v, int i) {
    if (!(v > value[kMaxTopK - 1])) return;
    value[kMaxTopK - 1] = v;
    index[kMaxTopK - 1] = i;
#pragma unroll
    for (int j = kMaxTopK - 1; j > 0; --j) {
      if (value[j] > value[j - 1]) {
        const float tv = value[j]; value[j] = value[j - 1]; value[j - 1] = tv;
        const int ti = index[j]; index[j] = index[j - 1]; index[j - 1] = ti;
      }
    }
  }
  __device__ void popFront() {
#pragma unroll
    for (int j = 0; j + 1 < kMaxTopK; ++j) { value[j] = value[j + 1]; index[j] = index[j + 1]; }
    value[kMaxTopK - 1] = -INFINITY;
    index[kMaxTopK - 1] = INT_MAX;
  }
};

struct MaxSum {
  float max = -INFINITY, sum = 0.0f;
  __device__ void add(float v) {
    if (v > max) { sum = sum * __expf(max - v) + 1.0f; max = v; }
    else sum += __expf(v - max);
  }
  __device__ void merge(float o_max, float o_sum) {
    if (o_sum == 0.0f) return;
    if (sum == 0.0f) { max = o_max; sum = o_sum; return; }
    const float m = fmaxf(max, o_max);
    sum = sum * __expf(max - m) + o_sum * __expf(o_max - m);
    max = m;
  }
};

__device__ MaxSum blockMaxSum(MaxSum ms) {
  __shared__ float maxes[32], sums[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) {
    const float om = __shfl_xor_sync(0xffffffffu, ms.max, o), os = __shfl_xor_sync(0xffffffffu, ms.sum, o);
    ms.merge(om, os);
  }
  if (lane == 0) { maxes[warp] = ms.max; sums[warp] = ms.sum; }
  __syncthreads();
  MaxSum total;
  for (int w = 0; w < int(blockDim.x >> 5); ++w) total.merge(maxes[w], sums[w]);
  return total;
}

// k rounds of a block-wide argmax over each thread's best remaining candidate.
__device__ void blockTopK(LocalTopK& mine, int k, Candidate* winners) {
  __shared__ Candidate warp_best[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int round = 0; round < k; ++round) {
    float v = mine.value[0];
    int i = mine.index[0];
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, v, o);
      const int oi = __shfl_xor_sync(0xffffffffu, i, o);
      if (better(ov, oi, v, i)) { v = ov; i = oi; }
    }
    if (lane == 0) warp_best[warp] = {v, i};
    __syncthreads();
    Candidate best = warp_best[0];
    for (int w = 1; w < int(blockDim.x >> 5); ++w) {
      if (better(warp_best[w].value, warp_best[w].index, best.value, best.index)) best = warp_best[w];
    }
    if (threadIdx.x == 0) winners[round] = best;
    if (mine.index[0] == best.index) mine.popFront();
    __syncthreads();  // warp_best is rewritten next round
  }
}

template <class T, bool kFromLogits>
__global__ void __launch_bounds__(kThreads) topKKernel(const T* __restrict__ in, float* __restrict__ top_p,
                                                       int* __restrict__ top_i, std::size_t vocab, int k) {
  __shared__ Candidate winners[kMaxTopK];
  const T* row = in + std::size_t(blockIdx.x) * vocab;
  LocalTopK mine;
  MaxSum ms;
  for (std::size_t c = threadIdx.x; c < vocab; c += kThreads) {
    const float v = toFloat(row[c]);
    mine.offer(v, int(c));
    if constexpr (kFromLogits) ms.add(v);
  }
  MaxSum total;
  if constexpr (kFromLogits) total = blockMaxSum(ms);
  blockTopK(mine, k, winners);
  if (threadIdx.x < unsigned(k)) {
    const Candidate w = winners[threadIdx.x];
    const std::size_t o = std::size_t(blockIdx.x) * k + threadIdx.x;
    top_p[o] = kFromLogits ? __expf(w.value - total.max) / total.sum : w.value;
    top_i[o] = w.index;
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) vocabSoftmaxKernel(const T* __restrict__ logits, float* __restrict__ probs,
                                                               std::size_t vocab) {
  const T* row = logits + std::size_t(blockIdx.x) * vocab;
  float* out = probs + std::size_t(blockIdx.x) * vocab;
  MaxSum ms;
  for (std::size_t c = threadIdx.x; c < vocab; c += kThreads) ms.add(toFloat(row[c]));
  const MaxSum total = blockMaxSum(ms);
  const float inv = 1.0f / total.sum;
  for (std::size_t c = threadIdx.x; c < vocab; c += kThreads) out[c] = __expf(toFloat(row[c]) - total.max) * inv;
}

void checkK(std::size_t vocab, int k) {
  if (k < 1 || k > kMaxTopK || std::size_t(k) > vocab) {
    throw std::invalid_argument("top-k: need 1 <= k <= min(8, vocab)");
  }
}

}  // namespace

void launchVocabSoftmax(DType t, const void* logits, float* probs, std::size_t rows,
                        std::size_t vocab, cudaStream_t s) {
  if (rows == 0) return;
  FPROF_DISPATCH_DTYPE(t, T, vocabSoftmaxKernel<T><<<unsigned(rows), kThreads, 0, s>>>(static_cast<const T*>(logits), probs, vocab));
  CUDA_CHECK_LAUNCH(vocabSoftmaxKernel);
}

void launchTopK(const float* probs, float* top_p, int* top_i, std::size_t rows, std::size_t vocab,
                int k, cudaStream_t s) {
  checkK(vocab, k);
  if (rows == 0) return;
  topKKernel<float, false><<<unsigned(rows), kThreads, 0, s>>>(probs, top_p, top_i, vocab, k);
  CUDA_CHECK_LAUNCH(topKKernel);
}

void launchSoftmaxTopKFused(DType t, const void* logits, float* top_p, int* top_i,
                            std::size_t rows, std::size_t vocab, int k, cudaStream_t s) {
  checkK(vocab, k);
  if (rows == 0) return;
  FPROF_DISPATCH_DTYPE(t, T, topKKernel<T, true><<<unsigned(rows), kThreads, 0, s>>>(static_cast<const T*>(logits), top_p, top_i, vocab, k));
  CUDA_CHECK_LAUNCH(topKKernel);
}

}  // namespace fprof::refk
