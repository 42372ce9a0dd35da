// Softmax + top-k over a vocabulary-sized row (the decode step). A row is split over several
// blocks so a few rows still fill the GPU; each kernel finishes its cross-block merge in the last
// block to arrive (a per-row arrival counter), so every stage is one launch.
// Unfused: softmax statistics (max, sum), then a kernel writing the full fp32 probability row,
// then top-k over it. Fused: one pass over the logits keeps the online max/sum and the top-k
// logits together (softmax is monotone, so the top-k logits are the top-k probabilities).
#include <climits>

#include "kernels.cuh"

namespace fprof::refk {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kMinChunk = 2048;  // elements per block at least: enough to hide latency

struct Candidate {
  float value;
  int index;
};

// One block's result for its slice of a row.
struct Partial {
  float max, sum;
  float value[kMaxTopK];
  int index[kMaxTopK];
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
  // Offers arrive in better()-order among equal values (increasing index within a thread's scan,
  // sorted order within a partial), so an equal value never displaces an earlier one.
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

// Block-wide merge; every thread returns the total. Ends with a barrier so it can be called again.
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
  __syncthreads();
  return total;
}

// kMaxTopK rounds of a block-wide argmax over each thread's best remaining candidate.
__device__ void blockTopK(LocalTopK& mine, Candidate* winners) {
  __shared__ Candidate warp_best[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int round = 0; round < kMaxTopK; ++round) {
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
    __syncthreads();  // warp_best is rewritten next round; winners are read after the loop
  }
}

struct Split {
  int splits;
  std::size_t chunk;
};

__host__ __device__ inline Split splitFor(std::size_t rows, std::size_t vocab) {
  // About four blocks per SM of a 132-SM GPU in total, never slices under kMinChunk elements.
  std::size_t by_size = (vocab + kMinChunk - 1) / kMinChunk;
  std::size_t by_fill = (4 * 132 + rows - 1) / (rows == 0 ? 1 : rows);
  std::size_t splits = by_size < by_fill ? by_size : by_fill;
  if (splits < 1) splits = 1;
  const std::size_t chunk = (vocab + splits - 1) / splits;
  return {int((vocab + chunk - 1) / chunk), chunk};
}

// Block (split, row) publishes its partial; returns true in the last block of the row to arrive,
// which then reads every partial of the row. Block-uniform result.
__device__ bool arriveLast(unsigned* counters, int splits) {
  __shared__ bool last;
  __threadfence();  // this block's partial is visible device-wide before the arrival is counted
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned arrived = atomicAdd(&counters[blockIdx.y], 1u);
    last = arrived == unsigned(splits - 1);
    if (last) counters[blockIdx.y] = 0;  // ready for the next launch; every block of the row is in
  }
  __syncthreads();
  return last;
}

enum class Stage { Stats, TopKOfProbs, Fused };

template <class T, Stage kStage>
__global__ void __launch_bounds__(kThreads) rowSliceKernel(const T* __restrict__ in, Partial* __restrict__ partials,
                                                           unsigned* __restrict__ counters, float2* __restrict__ stats,
                                                           float* __restrict__ top_p, int* __restrict__ top_i,
                                                           std::size_t vocab, std::size_t chunk, int k) {
  __shared__ Candidate winners[kMaxTopK];
  const int splits = int(gridDim.x);
  const std::size_t row = blockIdx.y;
  const std::size_t c0 = std::size_t(blockIdx.x) * chunk;
  const std::size_t c1 = c0 + chunk < vocab ? c0 + chunk : vocab;
  const T* r = in + row * vocab;
  constexpr bool kStats = kStage != Stage::TopKOfProbs;
  constexpr bool kTopK = kStage != Stage::Stats;

  LocalTopK mine;
  MaxSum ms;
  for (std::size_t c = c0 + threadIdx.x; c < c1; c += kThreads) {
    const float v = toFloat(r[c]);
    if constexpr (kTopK) mine.offer(v, int(c));
    if constexpr (kStats) ms.add(v);
  }
  Partial* mine_out = partials + row * splits + blockIdx.x;
  if constexpr (kStats) {
    const MaxSum total = blockMaxSum(ms);
    if (threadIdx.x == 0) { mine_out->max = total.max; mine_out->sum = total.sum; }
  }
  if constexpr (kTopK) {
    blockTopK(mine, winners);
    if (threadIdx.x < kMaxTopK) {
      mine_out->value[threadIdx.x] = winners[threadIdx.x].value;
      mine_out->index[threadIdx.x] = winners[threadIdx.x].index;
    }
  }
  if (!arriveLast(counters, splits)) return;

  // Last block of the row: merge the row's partials (L2 reads: other SMs wrote them).
  const Partial* row_parts = partials + row * splits;
  MaxSum ms_all;
  LocalTopK all;
  for (int p = threadIdx.x; p < splits; p += kThreads) {
    if constexpr (kStats) ms_all.merge(__ldcg(&row_parts[p].max), __ldcg(&row_parts[p].sum));
    if constexpr (kTopK) {
#pragma unroll
      for (int j = 0; j < kMaxTopK; ++j) all.offer(__ldcg(&row_parts[p].value[j]), __ldcg(&row_parts[p].index[j]));
    }
  }
  MaxSum total;
  if constexpr (kStats) total = blockMaxSum(ms_all);
  if constexpr (kStage == Stage::Stats) {
    if (threadIdx.x == 0) stats[row] = make_float2(total.max, total.sum);
    return;
  } else {
    blockTopK(all, winners);
    if (threadIdx.x < unsigned(k)) {
      const Candidate w = winners[threadIdx.x];
      top_p[row * k + threadIdx.x] = kStage == Stage::Fused ? __expf(w.value - total.max) / total.sum : w.value;
      top_i[row * k + threadIdx.x] = w.index;
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) vocabSoftmaxWriteKernel(const T* __restrict__ logits,
                                                                    const float2* __restrict__ stats,
                                                                    float* __restrict__ probs, std::size_t vocab,
                                                                    std::size_t chunk) {
  const std::size_t row = blockIdx.y;
  const std::size_t c0 = std::size_t(blockIdx.x) * chunk;
  const std::size_t c1 = c0 + chunk < vocab ? c0 + chunk : vocab;
  const float2 st = stats[row];
  const float inv = 1.0f / st.y;
  for (std::size_t c = c0 + threadIdx.x; c < c1; c += kThreads) {
    probs[row * vocab + c] = __expf(toFloat(logits[row * vocab + c]) - st.x) * inv;
  }
}

void checkK(std::size_t vocab, int k) {
  if (k < 1 || k > kMaxTopK || std::size_t(k) > vocab) {
    throw std::invalid_argument("top-k: need 1 <= k <= min(8, vocab)");
  }
}

// Scratch layout: [rows * splits] Partial, then [rows] float2 stats, then [rows] counters.
struct ScratchView {
  Partial* partials;
  float2* stats;
  unsigned* counters;
};
ScratchView view(void* scratch, std::size_t rows, std::size_t vocab) {
  const Split sp = splitFor(rows, vocab);
  char* p = static_cast<char*>(scratch);
  ScratchView v;
  v.partials = reinterpret_cast<Partial*>(p);
  p += rows * std::size_t(sp.splits) * sizeof(Partial);
  v.stats = reinterpret_cast<float2*>(p);
  p += rows * sizeof(float2);
  v.counters = reinterpret_cast<unsigned*>(p);
  return v;
}

}  // namespace

std::size_t topKScratchBytes(std::size_t rows, std::size_t vocab) {
  const Split sp = splitFor(rows, vocab);
  return rows * std::size_t(sp.splits) * sizeof(Partial) + rows * sizeof(float2) + rows * sizeof(unsigned);
}

void initTopKScratch(void* scratch, std::size_t rows, std::size_t vocab, cudaStream_t s) {
  // Only the arrival counters need a defined start; the kernels reset them after each use.
  CUDA_CHECK(cudaMemsetAsync(view(scratch, rows, vocab).counters, 0, rows * sizeof(unsigned), s));
}

void launchVocabSoftmaxStats(DType t, const void* logits, void* scratch, std::size_t rows, std::size_t vocab,
                             cudaStream_t s) {
  if (rows == 0) return;
  const Split sp = splitFor(rows, vocab);
  const ScratchView v = view(scratch, rows, vocab);
  const dim3 grid(unsigned(sp.splits), unsigned(rows));
  FPROF_DISPATCH_DTYPE(t, T, rowSliceKernel<T, Stage::Stats><<<grid, kThreads, 0, s>>>(
                                 static_cast<const T*>(logits), v.partials, v.counters, v.stats, nullptr, nullptr,
                                 vocab, sp.chunk, 0));
  CUDA_CHECK_LAUNCH(rowSliceKernel);
}

void launchVocabSoftmaxWrite(DType t, const void* logits, const void* scratch, float* probs, std::size_t rows,
                             std::size_t vocab, cudaStream_t s) {
  if (rows == 0) return;
  const Split sp = splitFor(rows, vocab);
  const ScratchView v = view(const_cast<void*>(scratch), rows, vocab);
  const dim3 grid(unsigned(sp.splits), unsigned(rows));
  FPROF_DISPATCH_DTYPE(t, T, vocabSoftmaxWriteKernel<T><<<grid, kThreads, 0, s>>>(static_cast<const T*>(logits), v.stats,
                                                                                   probs, vocab, sp.chunk));
  CUDA_CHECK_LAUNCH(vocabSoftmaxWriteKernel);
}

void launchTopK(const float* probs, float* top_p, int* top_i, std::size_t rows, std::size_t vocab, int k,
                void* scratch, cudaStream_t s) {
  checkK(vocab, k);
  if (rows == 0) return;
  const Split sp = splitFor(rows, vocab);
  const ScratchView v = view(scratch, rows, vocab);
  const dim3 grid(unsigned(sp.splits), unsigned(rows));
  rowSliceKernel<float, Stage::TopKOfProbs><<<grid, kThreads, 0, s>>>(probs, v.partials, v.counters, nullptr, top_p,
                                                                      top_i, vocab, sp.chunk, k);
  CUDA_CHECK_LAUNCH(rowSliceKernel);
}

void launchSoftmaxTopKFused(DType t, const void* logits, float* top_p, int* top_i, std::size_t rows,
                            std::size_t vocab, int k, void* scratch, cudaStream_t s) {
  checkK(vocab, k);
  if (rows == 0) return;
  const Split sp = splitFor(rows, vocab);
  const ScratchView v = view(scratch, rows, vocab);
  const dim3 grid(unsigned(sp.splits), unsigned(rows));
  FPROF_DISPATCH_DTYPE(t, T, rowSliceKernel<T, Stage::Fused><<<grid, kThreads, 0, s>>>(
                                 static_cast<const T*>(logits), v.partials, v.counters, nullptr, top_p, top_i, vocab,
                                 sp.chunk, k));
  CUDA_CHECK_LAUNCH(rowSliceKernel);
}

}  // namespace fprof::refk
