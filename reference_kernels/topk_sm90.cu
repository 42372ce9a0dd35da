// Fused softmax + top-k for Hopper: one streaming pass over the logits, built for sm_90a.
//
// The block kernels of topk.cu load a whole slice, then reduce, select and merge: every block of
// their single wave does its tail at the same time, and the memory system idles meanwhile
// (bench/RESULTS.md, issue 16: 5 us of loads, 10 us of tails). Here a row belongs to a cluster of
// 1 to 8 CTAs, one CTA an SM, and each CTA streams its part of the row through a ring of
// shared-memory stages filled by bulk copies (one producer thread, mbarriers). The eight consumer
// warps do the per-element work while later stages are still arriving:
// - statistics: each thread keeps an online (max, sum of exp) over its elements;
// - top-k: each warp keeps its best kMaxTopK elements sorted across lanes 0-7, and screens a
//   chunk by comparing every lane's chunk maximum with the list's last entry (one compare and a
//   ballot a chunk); only lanes that hold a candidate walk their elements, from shared memory.
// At the end a CTA merges its warps (one barrier), and the cluster's CTAs hand their partial
// results to CTA 0 through distributed shared memory and one cluster barrier: no global
// atomics, no second pass.
#include <climits>
#include <cstdlib>
#include <string>
#include <cooperative_groups.h>

#include "kernels.cuh"
#include "sm90.cuh"
#include "topk_common.cuh"

namespace fprof::refk {
namespace {

namespace cg = cooperative_groups;
using namespace sm90;
using namespace topk;

constexpr int kConsumerWarps = 16;
constexpr int kConsumers = kConsumerWarps * 32;
constexpr int kStreamThreads = kConsumers + 32;  // the last warp produces
constexpr int kVectorsPerThread = 2;             // 16-byte vectors a consumer thread takes from a chunk
constexpr int kChunkVectors = kConsumers * kVectorsPerThread;
constexpr int kStages = 4;     // 64 KB of chunks in flight a CTA, two CTAs an SM
constexpr int kMaxCluster = 4;  // CTA 0 merges the cluster's lists in one warp: 4 x kMaxTopK lanes
constexpr int kCtasPerSm = 2;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kListsPerWarp = 32 / kMaxTopK;  // lists one warp's bitonic merge takes
static_assert(kConsumerWarps == kListsPerWarp * kListsPerWarp, "a CTA merges its warps' lists in two levels");
static_assert(kMaxCluster <= kListsPerWarp, "CTA 0 merges the cluster's lists in one level");

struct StreamPartial {
  float max, sum;
  float value[kMaxTopK];
  int index[kMaxTopK];
};


// Where a row's 16-byte vectors are: `head` scalars up to the first 16-byte boundary, then
// `vectors` vectors, then the tail scalars up to vocab.
template <class T> struct RowGeometry {
  static constexpr int kVec = 16 / int(sizeof(T));
  int head, vectors, tail0;
  __device__ RowGeometry(const T* row, int vocab) {
    const unsigned misalign = unsigned(reinterpret_cast<std::uintptr_t>(row) % 16);
    head = misalign == 0 ? 0 : int((16 - misalign) / sizeof(T));
    if (head > vocab) head = vocab;
    vectors = (vocab - head) / kVec;
    tail0 = head + vectors * kVec;
  }
};

// Sorts the warp's 32 (value, index) entries best first (lane 0 best): a bitonic network, 15
// compare-exchange steps through shuffles.
__device__ __forceinline__ void warpSortBest(float& v, int& i, int lane) {
#pragma unroll
  for (int k = 2; k <= 32; k <<= 1) {
#pragma unroll
    for (int j = k >> 1; j > 0; j >>= 1) {
      const float pv = __shfl_xor_sync(kFullMask, v, j);
      const int pi = __shfl_xor_sync(kFullMask, i, j);
      const bool keep_better = ((lane & j) == 0) == ((lane & k) == 0);
      if (keep_better ? better(pv, pi, v, i) : better(v, i, pv, pi)) {
        v = pv;
        i = pi;
      }
    }
  }
}

// A warp's best kMaxTopK elements so far, sorted, entry e in lane e (lanes >= kMaxTopK hold the
// empty entry), and the last entry broadcast to every lane.
struct WarpList {
  static constexpr int kBatch = 32 - kMaxTopK;  // candidates merged at once, in lanes kMaxTopK..31
  float value = -INFINITY, last_value = -INFINITY;
  int index = INT_MAX, last_index = INT_MAX;

  // Merges the candidates that lanes kMaxTopK..31 hold (empty: -inf, INT_MAX) into the list.
  __device__ void merge(float v, int i, int lane) {
    if (lane < kMaxTopK) {
      v = value;
      i = index;
    }
    warpSortBest(v, i, lane);
    value = lane < kMaxTopK ? v : -INFINITY;
    index = lane < kMaxTopK ? i : INT_MAX;
    last_value = __shfl_sync(kFullMask, v, kMaxTopK - 1);
    last_index = __shfl_sync(kFullMask, i, kMaxTopK - 1);
  }
  // Inserts (v, i), the same in every lane: cheaper than merge for one candidate.
  __device__ void insert(float v, int i, int lane) {
    if (!better(v, i, last_value, last_index)) return;
    const unsigned before = __ballot_sync(kFullMask, lane < kMaxTopK && better(v, i, value, index));
    const int at = __ffs(before) - 1;  // exists: (v, i) beats lane kMaxTopK - 1
    const float up_value = __shfl_up_sync(kFullMask, value, 1);
    const int up_index = __shfl_up_sync(kFullMask, index, 1);
    if (lane == at) {
      value = v;
      index = i;
    } else if (lane > at && lane < kMaxTopK) {
      value = up_value;
      index = up_index;
    }
    last_value = __shfl_sync(kFullMask, value, kMaxTopK - 1);
    last_index = __shfl_sync(kFullMask, index, kMaxTopK - 1);
  }
  __device__ bool full() const { return last_index != INT_MAX; }
};

// The best kMaxTopK of the 32 entries (v, i) the warp's lanes hold, sorted into lanes
// 0..kMaxTopK-1 (the other lanes get the empty entry).
__device__ __forceinline__ void warpBest(float& v, int& i, int lane) {
  warpSortBest(v, i, lane);
  if (lane >= kMaxTopK) {
    v = -INFINITY;
    i = INT_MAX;
  }
}

// Float keys that order as the floats do (no NaN), for a shared running maximum by atomicMax.
__device__ __forceinline__ int orderedKey(float f) {
  const int b = __float_as_int(f);
  return b >= 0 ? b : b ^ 0x7fffffff;
}
__device__ __forceinline__ float fromOrderedKey(int k) { return __int_as_float(k >= 0 ? k : k ^ 0x7fffffff); }

struct StreamShared {
  uint4 ring[kStages][kChunkVectors];  // first: 16-byte aligned for the bulk copies
  std::uint64_t full[kStages], empty[kStages];
  float warp_max[kConsumerWarps], warp_sum[kConsumerWarps];
  float cand_value[kConsumerWarps * kMaxTopK];  // the warps' lists, then the first level's
  int cand_index[kConsumerWarps * kMaxTopK];
  StreamPartial parts[kMaxCluster];  // CTA 0's: every CTA of the cluster writes its own slot
  float2 xchg[kConsumerWarps][WarpList::kBatch];  // candidates handed between lanes
  float group_max[kConsumerWarps * 8];  // the warps' group maxima of the first chunk
  int low_key;  // orderedKey of the largest lower bound on the CTA's kMaxTopK-th best so far
};

// Online (max, sum of exp(v - max)) of one thread.
struct OnlineStats {
  float max = -INFINITY, sum = 0.0f;
  // Folds in values whose maximum is vmax; sum_exp(base) sums exp(v - base) over them.
  template <class SumExp> __device__ void add(float vmax, const SumExp& sum_exp) {
    if (vmax == -INFINITY) return;  // nothing but -inf: adds 0
    if (vmax > max) {
      sum = max == -INFINITY ? 0.0f : sum * fastExp2((max - vmax) * kLog2e);
      max = vmax;
    }
    sum += sum_exp(max);
  }
};

// Sum of exp(v - base) over n vectors.
template <class T, int n> __device__ __forceinline__ float vectorsExpSum(const uint4 (&raw)[n], float base) {
  float acc[2] = {0.0f, 0.0f};
#pragma unroll
  for (int j = 0; j < n; ++j) acc[j & 1] += vectorExpSum<T>(raw[j], base);
  return acc[0] + acc[1];
}

// Bit e set for each element e (vector e / kVec, lane e % kVec) of the thread's valid vectors with
// a value >= low.
template <class T> __device__ __forceinline__ unsigned atLeastMask(const uint4 (&raw)[kVectorsPerThread], int valid, float low) {
  constexpr int kVec = 16 / int(sizeof(T));
  unsigned mask = 0;
#pragma unroll
  for (int j = 0; j < kVectorsPerThread; ++j) {
    if (j >= valid) break;
    float v[kVec];
    toFloats(raw[j], v, T{});
#pragma unroll
    for (int e = 0; e < kVec; ++e) mask |= (v[e] >= low ? 1u : 0u) << (j * kVec + e);
  }
  return mask;
}

// Merges into the warp list the elements of each lane's `pending` mask, kBatch at a time: lane
// slot (its rank among the lanes with pending elements) hands its lowest pending element over
// shared memory (xchg, kBatch entries) to lane kMaxTopK + slot. element(e) gives the lane's
// element e as (value, index); rescreen(low) re-filters the lane's pending elements after a merge
// raised the list's last entry.
template <class Element, class Rescreen>
__device__ void mergePending(unsigned pending, WarpList& list, float2* xchg, int lane, const Element& element,
                             const Rescreen& rescreen) {
  // Up to kFewCandidates: one insertion each (about 25 instructions) instead of a merge (about
  // 270), the common case once the list is full.
  constexpr int kFewCandidates = 3;
  if (__reduce_add_sync(kFullMask, unsigned(__popc(pending))) <= unsigned(kFewCandidates)) {
    for (unsigned who = __ballot_sync(kFullMask, pending != 0); who != 0; who = __ballot_sync(kFullMask, pending != 0)) {
      const int src = __ffs(who) - 1;
      float2 c = make_float2(0.0f, 0.0f);
      if (lane == src) {
        c = element(__ffs(pending) - 1);
        pending &= pending - 1u;
      }
      list.insert(__shfl_sync(kFullMask, c.x, src), __float_as_int(__shfl_sync(kFullMask, c.y, src)), lane);
    }
    return;
  }
  for (;;) {
    const unsigned who = __ballot_sync(kFullMask, pending != 0);
    if (who == 0) return;
    const int slot = __popc(who & ((1u << lane) - 1u));
    if (pending != 0 && slot < WarpList::kBatch) {
      const int e = __ffs(pending) - 1;
      pending &= pending - 1u;
      const float2 c = element(e);  // (value, index as float bits)
      xchg[slot] = c;
    }
    __syncwarp();
    const int from = lane - kMaxTopK;
    const bool has = from >= 0 && from < __popc(who);
    const float2 c = has ? xchg[from] : make_float2(-INFINITY, __int_as_float(INT_MAX));
    __syncwarp();
    list.merge(c.x, __float_as_int(c.y), lane);
    if (__any_sync(kFullMask, pending != 0) && list.full()) pending &= rescreen(list.last_value);
  }
}

__device__ __forceinline__ void clusterArriveRelaxed() { asm volatile("barrier.cluster.arrive.relaxed;\n" ::: "memory"); }
__device__ __forceinline__ void clusterArriveRelease() { asm volatile("barrier.cluster.arrive.release;\n" ::: "memory"); }
__device__ __forceinline__ void clusterWaitAcquire() { asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory"); }
__device__ __forceinline__ void consumerBarrier() { asm volatile("bar.sync 1, %0;\n" ::"n"(kConsumers) : "memory"); }
__device__ __forceinline__ void firstLevelBarrier() { asm volatile("bar.sync 2, %0;\n" ::"n"(kListsPerWarp * 32) : "memory"); }

__device__ __forceinline__ void bulkLoad(void* dst, const void* src, unsigned bytes, std::uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smemAddr(dst)),
               "l"(src), "r"(bytes), "r"(smemAddr(bar))
               : "memory");
}

// Merges (max, sum) pairs held by lanes 0..n-1 (others neutral) into lane-uniform totals.
__device__ MaxSum warpMergeStats(float max, float sum) {
  MaxSum ms{max, sum};
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float om = __shfl_xor_sync(kFullMask, ms.max, o), os = __shfl_xor_sync(kFullMask, ms.sum, o);
    ms.merge(om, os);
  }
  return ms;
}

template <class T, int kWork>
__global__ void __launch_bounds__(kStreamThreads, kCtasPerSm)
    softmaxTopKStreamKernel(const T* __restrict__ logits, float* __restrict__ top_p, int* __restrict__ top_i, int vocab,
                            int k) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  StreamShared& sh = *reinterpret_cast<StreamShared*>(smem_raw);
  constexpr int kVec = 16 / int(sizeof(T));
  const int ctas = int(gridDim.x), rank = int(blockIdx.x);  // the cluster is the row's CTAs
  const std::size_t row = blockIdx.y;
  const T* in = logits + row * std::size_t(vocab);
  const RowGeometry<T> geo(in, vocab);
  const int first_vector = int(std::int64_t(geo.vectors) * rank / ctas);
  const int end_vector = int(std::int64_t(geo.vectors) * (rank + 1) / ctas);
  const int chunks = (end_vector - first_vector + kChunkVectors - 1) / kChunkVectors;
  const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31;

  if (ctas > 1) clusterArriveRelaxed();  // phase 1: this CTA runs (waited on before DSMEM writes)
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      barrierInit(&sh.full[s], 1);
      barrierInit(&sh.empty[s], kConsumerWarps);
    }
    sh.low_key = orderedKey(-INFINITY);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warp == kConsumerWarps) {
    // Producer: one thread keeps every stage filled, a chunk of kChunkVectors a copy.
    if (lane == 0) {
      const uint4* src = reinterpret_cast<const uint4*>(in + geo.head) + first_vector;
      for (int c = 0; c < chunks; ++c) {
        const int stage = c % kStages;
        if (c >= kStages) barrierWait(&sh.empty[stage], unsigned((c / kStages - 1) & 1));
        const int count = min(kChunkVectors, end_vector - first_vector - c * kChunkVectors);
        barrierExpectBytes(&sh.full[stage], unsigned(count) * 16u);
        bulkLoad(sh.ring[stage], src + std::size_t(c) * kChunkVectors, unsigned(count) * 16u, &sh.full[stage]);
      }
    }
  } else {
    const int t = int(threadIdx.x);
    OnlineStats stats;
    WarpList list;
    float2* xchg = sh.xchg[warp];
    // CTA 0 also takes the row's unaligned scalars: the head in warp 0, the tail in warp 1.
    if (rank == 0 && warp < 2) {
      const int i = warp == 0 ? (lane < geo.head ? lane : -1) : (geo.tail0 + lane < vocab ? geo.tail0 + lane : -1);
      const float v = i >= 0 ? toFloat(in[i]) : -INFINITY;
      stats.add(v, [&](float base) { return i >= 0 ? fastExp2((v - base) * kLog2e) : 0.0f; });
      const int from = lane - kMaxTopK;  // kVec - 1 < 32 - kMaxTopK scalars at most
      const float cv = __shfl_sync(kFullMask, v, from & 31);
      const int ci = __shfl_sync(kFullMask, i, from & 31);
      list.merge(from >= 0 && ci >= 0 ? cv : -INFINITY, from >= 0 && ci >= 0 ? ci : INT_MAX, lane);
    }
    // Elements below `low` cannot be among the row's best: low is the larger of a bound from the
    // warp's first chunk (the minimum of 8 group maxima: 8 distinct elements reach it) and the
    // largest last entry any warp of the CTA has published (its list holds 8 elements >= it).
    float floor = -INFINITY;
    for (int c = 0; c < chunks; ++c) {
      const int stage = c % kStages;
      barrierWait(&sh.full[stage], unsigned((c / kStages) & 1));
      const int count = min(kChunkVectors, end_vector - first_vector - c * kChunkVectors);
      const int valid = count > t ? min(kVectorsPerThread, (count - t + kConsumers - 1) / kConsumers) : 0;
      uint4 raw[kVectorsPerThread];
#pragma unroll
      for (int j = 0; j < kVectorsPerThread; ++j) raw[j] = j < valid ? sh.ring[stage][t + j * kConsumers] : negInfVector<T>();
      const float vmax = vectorsMax<T>(raw);
      if (kWork == 0) {  // ablation: loads and maxima only
        stats.max = fmaxf(stats.max, vmax);
        stats.sum = 1.0f;
        __syncwarp();
        if (lane == 0) barrierArrive(&sh.empty[stage]);
        continue;
      }
      stats.add(vmax, [&](float base) { return vectorsExpSum<T>(raw, base); });
      if (kWork == 1) {  // ablation: statistics, no top-k
        __syncwarp();
        if (lane == 0) barrierArrive(&sh.empty[stage]);
        continue;
      }
      if (c == 0) {
        float group = fmaxf(vmax, __shfl_xor_sync(kFullMask, vmax, 1));  // groups of 4 lanes
        group = fmaxf(group, __shfl_xor_sync(kFullMask, group, 2));
        float g = group;
#pragma unroll
        for (int o = 4; o < 32; o <<= 1) g = fminf(g, __shfl_xor_sync(kFullMask, g, o));
        // Every warp's 8 group maxima (128 distinct elements of the CTA's first chunk) give a
        // bound for the whole CTA: the minimum over 8 groups of 16 of their maxima.
        if ((lane & 3) == 0) sh.group_max[warp * 8 + (lane >> 2)] = group;
        consumerBarrier();
        const float* gm = &sh.group_max[lane * 4];
        float f = fmaxf(fmaxf(gm[0], gm[1]), fmaxf(gm[2], gm[3]));
        f = fmaxf(f, __shfl_xor_sync(kFullMask, f, 1));
        f = fmaxf(f, __shfl_xor_sync(kFullMask, f, 2));
#pragma unroll
        for (int o = 4; o < 32; o <<= 1) f = fminf(f, __shfl_xor_sync(kFullMask, f, o));
        floor = fmaxf(g, f);
      }
      const float low = fmaxf(fmaxf(floor, list.last_value), fromOrderedKey(*static_cast<volatile int*>(&sh.low_key)));
      const bool mine = vmax >= low && valid > 0;
      if (__any_sync(kFullMask, mine)) {
        const unsigned pending = mine ? atLeastMask<T>(raw, valid, low) : 0u;
        const int chunk_vector0 = first_vector + c * kChunkVectors;
        const float last_before = list.last_value;
        mergePending(
            pending, list, xchg, lane,
            [&](int e) {
              const int v = t + (e / kVec) * kConsumers;  // the vector within the chunk
              const T* p = reinterpret_cast<const T*>(&sh.ring[stage][v]) + e % kVec;
              return make_float2(toFloat(*p), __int_as_float(geo.head + (chunk_vector0 + v) * kVec + e % kVec));
            },
            [&](float new_low) { return atLeastMask<T>(raw, valid, new_low); });
        if (lane == 0 && list.full() && list.last_value > last_before) atomicMax(&sh.low_key, orderedKey(list.last_value));
      }
      __syncwarp();
      if (lane == 0) barrierArrive(&sh.empty[stage]);
    }

    // The CTA: warps' statistics and lists into shared memory, merged by warp 0.
    const MaxSum warp_stats = warpMergeStats(stats.max, stats.sum);
    if (lane == 0) {
      sh.warp_max[warp] = warp_stats.max;
      sh.warp_sum[warp] = warp_stats.sum;
    }
    if (lane < kMaxTopK) {
      sh.cand_value[warp * kMaxTopK + lane] = list.value;
      sh.cand_index[warp * kMaxTopK + lane] = list.index;
    }
    consumerBarrier();
    // Two levels of bitonic merges: warps 0..3 each take 4 lists, then warp 0 their 4 results.
    if (warp < kListsPerWarp) {
      float v = sh.cand_value[warp * 32 + lane];
      int i = sh.cand_index[warp * 32 + lane];
      warpBest(v, i, lane);
      firstLevelBarrier();  // every first-level warp has read its lists before any is overwritten
      if (lane < kMaxTopK) {
        sh.cand_value[warp * kMaxTopK + lane] = v;
        sh.cand_index[warp * kMaxTopK + lane] = i;
      }
      firstLevelBarrier();
    }
    if (warp == 0) {
      const MaxSum cta_stats = warpMergeStats(lane < kConsumerWarps ? sh.warp_max[lane] : -INFINITY,
                                              lane < kConsumerWarps ? sh.warp_sum[lane] : 0.0f);
      float best_value = sh.cand_value[lane];
      int best_index = sh.cand_index[lane];
      warpBest(best_value, best_index, lane);
      if (ctas > 1) {
        clusterWaitAcquire();  // phase 1: every CTA of the cluster runs, so its memory may be written
        StreamPartial* dst = cg::this_cluster().map_shared_rank(&sh.parts[rank], 0);
        if (lane == 0) {
          dst->max = cta_stats.max;
          dst->sum = cta_stats.sum;
        }
        if (lane < kMaxTopK) {
          dst->value[lane] = best_value;
          dst->index[lane] = best_index;
        }
        __syncwarp();
      } else if (lane < k) {
        top_p[row * k + lane] = fastExp2((best_value - cta_stats.max) * kLog2e) / cta_stats.sum;
        top_i[row * k + lane] = best_index;
      }
    }
  }
  if (ctas == 1) return;

  // The cluster: every thread ends phase 1 (warp 0 of each consumer group already has) and
  // arrives for phase 2 after its writes; CTA 0 waits for all and merges the partials.
  if (threadIdx.x >= 32) clusterWaitAcquire();
  clusterArriveRelease();
  if (rank != 0 || warp != 0) return;
  clusterWaitAcquire();
  const MaxSum total = warpMergeStats(lane < ctas ? sh.parts[lane].max : -INFINITY, lane < ctas ? sh.parts[lane].sum : 0.0f);
  const bool part = lane < ctas * kMaxTopK;
  float best_value = part ? sh.parts[lane / kMaxTopK].value[lane % kMaxTopK] : -INFINITY;
  int best_index = part ? sh.parts[lane / kMaxTopK].index[lane % kMaxTopK] : INT_MAX;
  warpBest(best_value, best_index, lane);
  if (lane < k) {
    top_p[row * k + lane] = fastExp2((best_value - total.max) * kLog2e) / total.sum;
    top_i[row * k + lane] = best_index;
  }
}

// CTAs a row: as many as fill the SMs once (kCtasPerSm an SM), a power of two up to the portable
// cluster size, and no more than the row has chunks.
int ctasPerRow(std::size_t rows, std::size_t vocab, int kvec) {
  const int sms = deviceInfo().sms;
  const std::size_t chunks = (vocab / std::size_t(kvec) + kChunkVectors - 1) / kChunkVectors;
  int ctas = 1;
  while (ctas * 2 <= kMaxCluster && rows * std::size_t(ctas * 2) <= std::size_t(sms) * kCtasPerSm && std::size_t(ctas * 2) <= chunks) {
    ctas *= 2;
  }
  return ctas;
}

template <class T>
void launchStream(const T* logits, float* top_p, int* top_i, std::size_t rows, std::size_t vocab, int k, cudaStream_t s) {
  constexpr std::size_t kSmem = sizeof(StreamShared);
  const char* form = std::getenv("FPROF_REF_TOPK");
  const int work = form == nullptr ? 2 : std::string(form) == "stream-read" ? 0 : std::string(form) == "stream-stats" ? 1 : 2;
  auto kernel = work == 0 ? softmaxTopKStreamKernel<T, 0> : work == 1 ? softmaxTopKStreamKernel<T, 1> : softmaxTopKStreamKernel<T, 2>;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmem)));
  const int ctas = ctasPerRow(rows, vocab, 16 / int(sizeof(T)));
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(unsigned(ctas), unsigned(rows));
  cfg.blockDim = dim3(kStreamThreads);
  cfg.dynamicSmemBytes = kSmem;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = unsigned(ctas);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, logits, top_p, top_i, int(vocab), k));
  CUDA_CHECK_LAUNCH(softmaxTopKStreamKernel);
}

}  // namespace

bool softmaxTopKSm90Usable(std::size_t rows, std::size_t vocab) {
  return deviceInfo().hopper && rows <= 65535 && vocab <= std::size_t(INT_MAX);
}

void launchSoftmaxTopKFusedSm90(DType t, const void* logits, float* top_p, int* top_i, std::size_t rows,
                                std::size_t vocab, int k, cudaStream_t s) {
  FPROF_DISPATCH_DTYPE(t, T, launchStream<T>(static_cast<const T*>(logits), top_p, top_i, rows, vocab, k, s));
}

}  // namespace fprof::refk
