// Softmax + top-k over a vocabulary-sized row (the decode step). A row is split over blocks of
// 8192 elements; each thread loads its 32 elements with 16-byte loads, all issued before the
// first use, so every resident block has its whole slice in flight at once. Each kernel finishes its cross-block merge in the last block of a row to
// arrive (a per-row arrival counter), so every stage is one launch.
// Unfused: softmax statistics (max, sum), then a kernel writing the full fp32 probability row,
// then top-k over it. Fused: one pass over the logits computes the max/sum and the top-k logits
// together (softmax is monotone, so the top-k logits are the top-k probabilities).
//
// Top-k of a block without kMaxTopK rounds of block-wide argmax: a lower bound on the block's
// kMaxTopK-th largest value comes from the thread maxima (any 8 distinct elements >= B make B a
// bound), only elements >= B are appended to shared memory (a few dozen on real data), and each
// candidate's rank is counted against the others. When more than kCandidateCap candidates
// arrive (many equal values), per-thread lists and block-wide argmax rounds take over.
#include <climits>

#include "kernels.cuh"

namespace fprof::refk {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kElemsPerThread = 32;
constexpr std::size_t kBlockElems = std::size_t(kThreads) * kElemsPerThread;  // 8192
constexpr int kCandidateCap = 512;
static_assert(kWarps == kMaxTopK, "the warp-maxima bound needs kMaxTopK warps");

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

__device__ __forceinline__ Candidate emptyCandidate() { return {-INFINITY, INT_MAX}; }

// A thread's sorted best kMaxTopK (fallback path only); offers may come in any order.
struct LocalTopK {
  float value[kMaxTopK];
  int index[kMaxTopK];
  __device__ LocalTopK() {
#pragma unroll
    for (int j = 0; j < kMaxTopK; ++j) { value[j] = -INFINITY; index[j] = INT_MAX; }
  }
  __device__ void offer(float v, int i) {
    if (!better(v, i, value[kMaxTopK - 1], index[kMaxTopK - 1])) return;
    value[kMaxTopK - 1] = v;
    index[kMaxTopK - 1] = i;
#pragma unroll
    for (int j = kMaxTopK - 1; j > 0; --j) {
      if (better(value[j], index[j], value[j - 1], index[j - 1])) {
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
  __device__ void merge(float o_max, float o_sum) {
    if (o_sum == 0.0f) return;
    if (sum == 0.0f) { max = o_max; sum = o_sum; return; }
    const float m = fmaxf(max, o_max);
    sum = sum * __expf(max - m) + o_sum * __expf(o_max - m);
    max = m;
  }
};

struct BlockShared {
  float warp_max[kWarps], warp_stat_max[kWarps], warp_sum[kWarps], warp_bound[kWarps];
  Candidate winners[kMaxTopK];
  Candidate warp_best[kWarps];
  int count;
  Candidate cand[kCandidateCap];
};

struct Reduced {
  float max;    // block maximum of the threads' maxima
  MaxSum stats; // merged (max, sum of exp) when kStats
  float bound;  // lower bound on the block's kMaxTopK-th largest element
};

// One barrier: block max, merged statistics, and the top-k bound. thread_max must be an element
// of the thread's own elements (or -inf); thread_floor is another bound the thread knows.
template <bool kStats>
__device__ Reduced blockReduce(float thread_max, float thread_sum, float thread_floor, BlockShared& sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  MaxSum ms{thread_max, thread_sum};
  if constexpr (kStats) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float om = __shfl_xor_sync(0xffffffffu, ms.max, o), os = __shfl_xor_sync(0xffffffffu, ms.sum, o);
      ms.merge(om, os);
    }
  }
  // Groups of 4 lanes: 8 group maxima are 8 distinct elements, so their minimum is a bound.
  float g = fmaxf(thread_max, __shfl_xor_sync(0xffffffffu, thread_max, 1));
  g = fmaxf(g, __shfl_xor_sync(0xffffffffu, g, 2));
  float wb = g, wm = g, wf = thread_floor;
#pragma unroll
  for (int o = 4; o < 32; o <<= 1) {
    wb = fminf(wb, __shfl_xor_sync(0xffffffffu, wb, o));
    wm = fmaxf(wm, __shfl_xor_sync(0xffffffffu, wm, o));
  }
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) wf = fmaxf(wf, __shfl_xor_sync(0xffffffffu, wf, o));
  if (lane == 0) {
    sh.warp_max[warp] = wm;
    sh.warp_sum[warp] = ms.sum;
    sh.warp_bound[warp] = fmaxf(wb, wf);
    sh.warp_stat_max[warp] = ms.max;
  }
  __syncthreads();
  Reduced r{-INFINITY, MaxSum{}, -INFINITY};
  float min_of_warp_max = INFINITY;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    r.max = fmaxf(r.max, sh.warp_max[w]);
    min_of_warp_max = fminf(min_of_warp_max, sh.warp_max[w]);  // kWarps == kMaxTopK maxima
    r.bound = fmaxf(r.bound, sh.warp_bound[w]);
    if constexpr (kStats) r.stats.merge(sh.warp_stat_max[w], sh.warp_sum[w]);
  }
  r.bound = fmaxf(r.bound, min_of_warp_max);
  return r;
}

// kMaxTopK rounds of a block-wide argmax over each thread's best remaining candidate (fallback).
__device__ void blockTopKRounds(LocalTopK& mine, BlockShared& sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int round = 0; round < kMaxTopK; ++round) {
    float v = mine.value[0];
    int i = mine.index[0];
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, v, o);
      const int oi = __shfl_xor_sync(0xffffffffu, i, o);
      if (better(ov, oi, v, i)) { v = ov; i = oi; }
    }
    if (lane == 0) sh.warp_best[warp] = {v, i};
    __syncthreads();
    Candidate best = sh.warp_best[0];
    for (int w = 1; w < kWarps; ++w) {
      if (better(sh.warp_best[w].value, sh.warp_best[w].index, best.value, best.index)) best = sh.warp_best[w];
    }
    if (threadIdx.x == 0) sh.winners[round] = best;
    if (mine.index[0] == best.index) mine.popFront();
    __syncthreads();  // warp_best is rewritten next round
  }
}

// The block's best kMaxTopK of the candidates every thread yields through each(f) -> f(value,
// index), into sh.winners (sorted; unfilled slots empty). Expects sh.count == 0 and empty
// winners, ordered before the call by a barrier; ends with a barrier.
template <class Each>
__device__ void selectTopK(const Each& each, BlockShared& sh) {
  each([&](float v, int i) {
    const int slot = atomicAdd(&sh.count, 1);
    if (slot < kCandidateCap) sh.cand[slot] = {v, i};
  });
  __syncthreads();
  const int n = sh.count;
  if (n <= kCandidateCap) {
    for (int e = int(threadIdx.x); e < n; e += kThreads) {
      const Candidate c = sh.cand[e];
      int rank = 0;
      for (int j = 0; j < n; ++j) rank += better(sh.cand[j].value, sh.cand[j].index, c.value, c.index) ? 1 : 0;
      if (rank < kMaxTopK) sh.winners[rank] = c;
    }
  } else {
    LocalTopK mine;
    each([&](float v, int i) { mine.offer(v, i); });
    blockTopKRounds(mine, sh);
  }
  __syncthreads();
}

// ---- a block's slice of a row: 16-byte vectors, plus the row's unaligned head and tail ----
__device__ __forceinline__ void toFloats(const uint4& raw, float (&out)[4], float) {
  out[0] = __uint_as_float(raw.x); out[1] = __uint_as_float(raw.y);
  out[2] = __uint_as_float(raw.z); out[3] = __uint_as_float(raw.w);
}
__device__ __forceinline__ void toFloats(const uint4& raw, float (&out)[8], __half) {
  const __half2* h = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
  for (int j = 0; j < 4; ++j) { const float2 f = __half22float2(h[j]); out[2 * j] = f.x; out[2 * j + 1] = f.y; }
}
__device__ __forceinline__ void toFloats(const uint4& raw, float (&out)[8], __nv_bfloat16) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int j = 0; j < 4; ++j) { const float2 f = __bfloat1622float2(h[j]); out[2 * j] = f.x; out[2 * j + 1] = f.y; }
}

// A row is head scalars (up to the first 16-byte boundary), `vectors` 16-byte vectors, then
// tail scalars. Block b takes vectors [b * kVectorsPerBlock, ...); block 0 also the scalars.
template <class T>
struct ThreadSlice {
  static constexpr int kVec = 16 / int(sizeof(T));
  static constexpr int kLoads = kElemsPerThread / kVec;
  static constexpr std::size_t kVectorsPerBlock = std::size_t(kThreads) * kLoads;
  uint4 raw[kLoads];
  bool ok[kLoads];
  std::size_t first[kLoads];  // element index of each vector's first element
  float head_v = -INFINITY, tail_v = -INFINITY;
  int head_i = -1, tail_i = -1;  // -1: no scalar

  __device__ void load(const T* __restrict__ row, std::size_t vocab, unsigned block) {
    const unsigned misalign = unsigned(reinterpret_cast<std::uintptr_t>(row) % 16);
    std::size_t head = misalign == 0 ? 0 : (16 - misalign) / sizeof(T);
    if (head > vocab) head = vocab;
    const std::size_t vectors = (vocab - head) / kVec;
    const std::size_t tail0 = head + vectors * kVec;
    const uint4* body = reinterpret_cast<const uint4*>(row + head);
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      const std::size_t vi = std::size_t(block) * kVectorsPerBlock + std::size_t(j) * kThreads + threadIdx.x;
      ok[j] = vi < vectors;
      first[j] = head + vi * kVec;
      raw[j] = ok[j] ? __ldg(body + vi) : make_uint4(0u, 0u, 0u, 0u);
    }
    if (block == 0) {
      if (threadIdx.x < head) { head_i = int(threadIdx.x); head_v = toFloat(row[threadIdx.x]); }
      if (tail0 + threadIdx.x < vocab) { tail_i = int(tail0 + threadIdx.x); tail_v = toFloat(row[tail0 + threadIdx.x]); }
    }
  }
  // f(value, index) over the thread's elements in increasing index order.
  template <class F> __device__ void forEach(const F& f) const {
    if (head_i >= 0) f(head_v, head_i);
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      if (!ok[j]) continue;
      float v[kVec];
      toFloats(raw[j], v, T{});
#pragma unroll
      for (int e = 0; e < kVec; ++e) f(v[e], int(first[j]) + e);
    }
    if (tail_i >= 0) f(tail_v, tail_i);
  }
};

template <class T> int splitsFor(std::size_t vocab) {
  const std::size_t vectors = vocab / ThreadSlice<T>::kVec;  // at least as many as any row has
  const std::size_t per = ThreadSlice<T>::kVectorsPerBlock;
  const std::size_t splits = (vectors + per - 1) / per;
  return int(splits < 1 ? 1 : splits);
}
// Upper bound over dtypes (scratch sizing): every dtype's block covers kBlockElems elements.
std::size_t maxSplits(std::size_t vocab) {
  const std::size_t s = (vocab + kBlockElems - 1) / kBlockElems;
  return s < 1 ? 1 : s;
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
                                                           std::size_t vocab, int k) {
  __shared__ BlockShared sh;
  constexpr bool kStats = kStage != Stage::TopKOfProbs;
  constexpr bool kTopK = kStage != Stage::Stats;
  const int splits = int(gridDim.x);
  const std::size_t row = blockIdx.y;
  if (threadIdx.x == 0) sh.count = 0;
  if (threadIdx.x < kMaxTopK) sh.winners[threadIdx.x] = emptyCandidate();

  ThreadSlice<T> slice;
  slice.load(in + row * vocab, vocab, blockIdx.x);
  float m = -INFINITY;
  slice.forEach([&](float v, int) { m = fmaxf(m, v); });
  float s = 0.0f;
  if constexpr (kStats) {
    if (m > -INFINITY) slice.forEach([&](float v, int) { s += __expf(v - m); });
  }
  const Reduced red = blockReduce<kStats>(m, s, -INFINITY, sh);
  if constexpr (kTopK) {
    const float bound = red.bound;
    selectTopK([&](const auto& f) { slice.forEach([&](float v, int i) { if (v >= bound) f(v, i); }); }, sh);
  }
  Partial* mine_out = partials + row * splits + blockIdx.x;
  if (threadIdx.x == 0) {
    mine_out->max = kStats ? red.stats.max : red.max;
    mine_out->sum = kStats ? red.stats.sum : 0.0f;
    sh.count = 0;
  }
  if (threadIdx.x < kMaxTopK) {
    mine_out->value[threadIdx.x] = sh.winners[threadIdx.x].value;
    mine_out->index[threadIdx.x] = sh.winners[threadIdx.x].index;
    sh.winners[threadIdx.x] = emptyCandidate();
  }
  if (!arriveLast(counters, splits)) return;

  // Last block of the row: merge the row's partials (L2 reads: other SMs wrote them).
  const Partial* row_parts = partials + row * splits;
  MaxSum ms_all;
  float part_max = -INFINITY, part_floor = -INFINITY;
  for (int p = int(threadIdx.x); p < splits; p += kThreads) {
    const float pm = __ldcg(&row_parts[p].max);
    if constexpr (kStats) ms_all.merge(pm, __ldcg(&row_parts[p].sum));
    if constexpr (kTopK) {
      part_max = fmaxf(part_max, __ldcg(&row_parts[p].value[0]));
      part_floor = fmaxf(part_floor, __ldcg(&row_parts[p].value[kMaxTopK - 1]));  // 8 elements >= it
    }
  }
  const Reduced total = blockReduce<kStats>(kStats ? ms_all.max : part_max, ms_all.sum, part_floor, sh);
  if constexpr (kStage == Stage::Stats) {
    if (threadIdx.x == 0) stats[row] = make_float2(total.stats.max, total.stats.sum);
    return;
  } else {
    const float bound = total.bound;
    selectTopK(
        [&](const auto& f) {
          for (int p = int(threadIdx.x); p < splits; p += kThreads) {
#pragma unroll
            for (int j = 0; j < kMaxTopK; ++j) {
              const int idx = __ldcg(&row_parts[p].index[j]);
              const float v = __ldcg(&row_parts[p].value[j]);
              if (idx != INT_MAX && v >= bound) f(v, idx);
            }
          }
        },
        sh);
    if (threadIdx.x < unsigned(k)) {
      const Candidate w = sh.winners[threadIdx.x];
      top_p[row * k + threadIdx.x] =
          kStage == Stage::Fused ? __expf(w.value - total.stats.max) / total.stats.sum : w.value;
      top_i[row * k + threadIdx.x] = w.index;
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) vocabSoftmaxWriteKernel(const T* __restrict__ logits,
                                                                    const float2* __restrict__ stats,
                                                                    float* __restrict__ probs, std::size_t vocab) {
  const std::size_t row = blockIdx.y;
  ThreadSlice<T> slice;
  slice.load(logits + row * vocab, vocab, blockIdx.x);
  const float2 st = stats[row];
  const float inv = 1.0f / st.y;
  float* out = probs + row * vocab;
  if (slice.head_i >= 0) out[slice.head_i] = __expf(slice.head_v - st.x) * inv;
  if (slice.tail_i >= 0) out[slice.tail_i] = __expf(slice.tail_v - st.x) * inv;
  constexpr int kVec = ThreadSlice<T>::kVec;
#pragma unroll
  for (int j = 0; j < ThreadSlice<T>::kLoads; ++j) {
    if (!slice.ok[j]) continue;
    float v[kVec];
    toFloats(slice.raw[j], v, T{});
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[e] = __expf(v[e] - st.x) * inv;
    float* dst = out + slice.first[j];
    if (reinterpret_cast<std::uintptr_t>(dst) % 16 == 0) {
#pragma unroll
      for (int e = 0; e < kVec; e += 4) *reinterpret_cast<float4*>(dst + e) = make_float4(v[e], v[e + 1], v[e + 2], v[e + 3]);
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e) dst[e] = v[e];
    }
  }
}

void checkK(std::size_t vocab, int k) {
  if (k < 1 || k > kMaxTopK || std::size_t(k) > vocab) {
    throw std::invalid_argument("top-k: need 1 <= k <= min(8, vocab)");
  }
}

// Scratch layout: [rows * maxSplits] Partial, then [rows] float2 stats, then [rows] counters.
struct ScratchView {
  Partial* partials;
  float2* stats;
  unsigned* counters;
};
ScratchView view(void* scratch, std::size_t rows, std::size_t vocab) {
  char* p = static_cast<char*>(scratch);
  ScratchView v;
  v.partials = reinterpret_cast<Partial*>(p);
  p += rows * maxSplits(vocab) * sizeof(Partial);
  v.stats = reinterpret_cast<float2*>(p);
  p += rows * sizeof(float2);
  v.counters = reinterpret_cast<unsigned*>(p);
  return v;
}

template <class T> dim3 gridFor(std::size_t rows, std::size_t vocab) {
  return dim3(unsigned(splitsFor<T>(vocab)), unsigned(rows));
}

}  // namespace

std::size_t topKScratchBytes(std::size_t rows, std::size_t vocab) {
  return rows * maxSplits(vocab) * sizeof(Partial) + rows * sizeof(float2) + rows * sizeof(unsigned);
}

void initTopKScratch(void* scratch, std::size_t rows, std::size_t vocab, cudaStream_t s) {
  // Only the arrival counters need a defined start; the kernels reset them after each use.
  CUDA_CHECK(cudaMemsetAsync(view(scratch, rows, vocab).counters, 0, rows * sizeof(unsigned), s));
}

void launchVocabSoftmaxStats(DType t, const void* logits, void* scratch, std::size_t rows, std::size_t vocab,
                             cudaStream_t s) {
  if (rows == 0) return;
  const ScratchView v = view(scratch, rows, vocab);
  FPROF_DISPATCH_DTYPE(t, T, rowSliceKernel<T, Stage::Stats><<<gridFor<T>(rows, vocab), kThreads, 0, s>>>(
                                 static_cast<const T*>(logits), v.partials, v.counters, v.stats, nullptr, nullptr,
                                 vocab, 0));
  CUDA_CHECK_LAUNCH(rowSliceKernel);
}

void launchVocabSoftmaxWrite(DType t, const void* logits, const void* scratch, float* probs, std::size_t rows,
                             std::size_t vocab, cudaStream_t s) {
  if (rows == 0) return;
  const ScratchView v = view(const_cast<void*>(scratch), rows, vocab);
  FPROF_DISPATCH_DTYPE(t, T, vocabSoftmaxWriteKernel<T><<<gridFor<T>(rows, vocab), kThreads, 0, s>>>(
                                 static_cast<const T*>(logits), v.stats, probs, vocab));
  CUDA_CHECK_LAUNCH(vocabSoftmaxWriteKernel);
}

void launchTopK(const float* probs, float* top_p, int* top_i, std::size_t rows, std::size_t vocab, int k,
                void* scratch, cudaStream_t s) {
  checkK(vocab, k);
  if (rows == 0) return;
  const ScratchView v = view(scratch, rows, vocab);
  rowSliceKernel<float, Stage::TopKOfProbs><<<gridFor<float>(rows, vocab), kThreads, 0, s>>>(
      probs, v.partials, v.counters, nullptr, top_p, top_i, vocab, k);
  CUDA_CHECK_LAUNCH(rowSliceKernel);
}

void launchSoftmaxTopKFused(DType t, const void* logits, float* top_p, int* top_i, std::size_t rows,
                            std::size_t vocab, int k, void* scratch, cudaStream_t s) {
  checkK(vocab, k);
  if (rows == 0) return;
  const ScratchView v = view(scratch, rows, vocab);
  FPROF_DISPATCH_DTYPE(t, T, rowSliceKernel<T, Stage::Fused><<<gridFor<T>(rows, vocab), kThreads, 0, s>>>(
                                 static_cast<const T*>(logits), v.partials, v.counters, nullptr, top_p, top_i, vocab,
                                 k));
  CUDA_CHECK_LAUNCH(rowSliceKernel);
}

}  // namespace fprof::refk
