// Softmax + top-k over a vocabulary-sized row (the decode step). A row is split over blocks of
// 32 KB of logits (16384 fp16/bf16 or 8192 fp32 elements), which arrive in shared memory by the
// bulk copy engine (sm_90: four cp.async.bulk pieces a block, each completing on an mbarrier;
// before sm_90, 16-byte loads into registers, 32 elements a thread, all issued before the first
// use). Each kernel finishes its cross-block merge in the last block of a row to arrive (a per-row
// arrival counter), so every stage is one launch.
// Unfused: softmax statistics (max, sum), then a kernel writing the full fp32 probability row,
// then top-k over it. Fused: one pass over the logits computes the max/sum and the top-k logits
// together (softmax is monotone, so the top-k logits are the top-k probabilities).
//
// Top-k of a block without kMaxTopK rounds of block-wide argmax: a lower bound on the block's
// kMaxTopK-th largest value comes from the thread maxima (any 8 distinct elements >= B make B a
// bound), only elements >= B are appended to shared memory (a few dozen on real data), and each
// candidate's rank is counted against the others. When more than kCandidateCap candidates
// arrive (many equal values), the bound is raised and the scan repeated.
//
// A warp kernel (opt-in, FPROF_REF_TOPK_SLICE=warp, not yet run on a GPU) does the same per
// warp with shuffles only, without block barriers.
#include <climits>
#include <cuda/atomic>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "kernels.cuh"

namespace fprof::refk {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
// Elements a thread loads into registers (8192 a block). The bulk-copy slice (below) holds
// 32 KB a block in shared memory instead.
constexpr int kElemsNarrow = 32;
constexpr int kWarpVectors = 256;  // 16-byte vectors of one warp's slice in the warp kernel (4 KB)
constexpr std::size_t kWarpMinElems = kWarpVectors * 4;  // fp32
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
  Candidate floor;
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

// The block's best kMaxTopK elements, into sh.winners (sorted; unfilled slots empty), of those
// every thread yields through each(low, f): f(value, index) for each of its elements with value
// >= low (more may be yielded). bound: a lower bound on the block's kMaxTopK-th value. Expects
// sh.count == 0 and empty winners, ordered before the call by a barrier; ends with a barrier.
template <class Each>
__device__ void selectTopK(const Each& each, float bound, BlockShared& sh) {
  // Candidates are the elements ranking at or before `floor` in better()-order. If more than
  // kCandidateCap arrive (many equal values), the 8th best of the first kCandidateCap becomes
  // the floor and the scan repeats: each repeat drops at least kCandidateCap - 8 of them.
  Candidate floor{bound, INT_MAX};
  for (;;) {
    each(floor.value, [&](float v, int i) {
      if (better(floor.value, floor.index, v, i)) return;
      const int slot = atomicAdd(&sh.count, 1);
      if (slot < kCandidateCap) sh.cand[slot] = {v, i};
    });
    __syncthreads();
    const bool overflow = sh.count > kCandidateCap;
    const int n = overflow ? kCandidateCap : sh.count;
    for (int e = int(threadIdx.x); e < n; e += kThreads) {
      const Candidate c = sh.cand[e];
      int rank = 0;
      for (int j = 0; j < n; ++j) rank += better(sh.cand[j].value, sh.cand[j].index, c.value, c.index) ? 1 : 0;
      if (!overflow && rank < kMaxTopK) sh.winners[rank] = c;
      if (overflow && rank == kMaxTopK - 1) sh.floor = c;
    }
    __syncthreads();
    if (!overflow) return;  // block-uniform
    floor = sh.floor;
    if (threadIdx.x == 0) sh.count = 0;
    __syncthreads();
  }
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

// Widens two packed 16-bit values. Volatile on purpose: the compiler must not keep the widened
// values of a whole slice alive across repeated scans (64 floats a thread would spill).
__device__ __forceinline__ float2 widenPair(std::uint32_t bits, __half) {
  float2 v;
  asm volatile("{.reg .b16 lo, hi;\n mov.b32 {lo, hi}, %2;\n cvt.f32.f16 %0, lo;\n cvt.f32.f16 %1, hi;}\n"
               : "=f"(v.x), "=f"(v.y) : "r"(bits));
  return v;
}
__device__ __forceinline__ float2 widenPair(std::uint32_t bits, __nv_bfloat16) {
  float2 v;
  asm volatile("{.reg .b16 lo, hi;\n mov.b32 {lo, hi}, %2;\n cvt.f32.bf16 %0, lo;\n cvt.f32.bf16 %1, hi;}\n"
               : "=f"(v.x), "=f"(v.y) : "r"(bits));
  return v;
}

// Spins until the mbarrier at this shared-memory address has completed its first phase (a
// completed barrier returns at once). sm_90 and newer.
__device__ __forceinline__ void waitFirstPhase(unsigned shared_address) {
  asm volatile(
      "{\n.reg .pred done;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(shared_address)
      : "memory");
}

// A row is head scalars (up to the first 16-byte boundary), `vectors` 16-byte vectors, then
// tail scalars. Block b takes vectors [b * kVectorsPerBlock, ...); block 0 also the scalars.
template <class T, int kElems>
struct ThreadSlice {
  static constexpr int kVec = 16 / int(sizeof(T));
  static constexpr int kLoads = kElems / kVec;
  static constexpr int kMinBlocks = 1;
  static constexpr int kDynamicSmem = 0;
  static constexpr std::size_t kVectorsPerBlock = std::size_t(kThreads) * kLoads;
  uint4 raw[kLoads];
  // Vector j of this thread starts at element first0 + j * kThreads * kVec and exists when
  // j * kThreads < vectors_left. Indices are ints (as the outputs are), so these stay cheap.
  int first0 = 0, vectors_left = 0;
  float head_v = -INFINITY, tail_v = -INFINITY;
  int head_i = -1, tail_i = -1;  // -1: no scalar

  __device__ bool ok(int j) const { return j * kThreads < vectors_left; }
  __device__ int first(int j) const { return first0 + j * kThreads * kVec; }

  __device__ void load(const T* __restrict__ row, std::size_t vocab, unsigned block) {
    const unsigned misalign = unsigned(reinterpret_cast<std::uintptr_t>(row) % 16);
    std::size_t head = misalign == 0 ? 0 : (16 - misalign) / sizeof(T);
    if (head > vocab) head = vocab;
    const std::size_t vectors = (vocab - head) / kVec;
    const std::size_t vi0 = std::size_t(block) * kVectorsPerBlock + threadIdx.x;
    vectors_left = int(vectors) - int(vi0);
    first0 = int(head + vi0 * kVec);
    const uint4* mine = reinterpret_cast<const uint4*>(row + head) + vi0;
#pragma unroll
    for (int j = 0; j < kLoads; ++j) raw[j] = ok(j) ? __ldg(mine + j * kThreads) : make_uint4(0u, 0u, 0u, 0u);
    if (block == 0) {
      const std::size_t tail0 = head + vectors * kVec;
      if (threadIdx.x < head) { head_i = int(threadIdx.x); head_v = toFloat(row[threadIdx.x]); }
      if (tail0 + threadIdx.x < vocab) { tail_i = int(tail0 + threadIdx.x); tail_v = toFloat(row[tail0 + threadIdx.x]); }
    }
  }
  // Running max and (when kStats) sum of exp(v - max) over the thread's elements, one vector at
  // a time (one rescale a vector), so no vector's floats outlive its turn.
  template <bool kStats> __device__ void maxSum(float& m, float& s) const {
    const auto add = [&](const float* v, int count) {
      float vm = v[0];
      for (int e = 1; e < count; ++e) vm = fmaxf(vm, v[e]);
      if constexpr (kStats) {
        if (vm > m) { s *= __expf(m - vm); m = vm; }  // m = -inf: s is 0 and stays 0
        for (int e = 0; e < count; ++e) s += __expf(v[e] - m);
      } else {
        m = fmaxf(m, vm);
      }
    };
    if (head_i >= 0) add(&head_v, 1);
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      if (!ok(j)) continue;
      float v[kVec];
      toFloats(raw[j], v, T{});
      add(v, kVec);
    }
    if (tail_i >= 0) add(&tail_v, 1);
  }
  // f(value, index) over the thread's elements >= bound, in increasing index order. 16-bit
  // elements are screened two at a time against the bound rounded down to T, so only pairs
  // holding a candidate are widened to float.
  template <class F> __device__ void forEachAtLeast(float bound, const F& f) const {
    if (head_i >= 0 && head_v >= bound) f(head_v, head_i);
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      if (!ok(j)) continue;
      const int i0 = first(j);
      if constexpr (sizeof(T) == 4) {
        float v[kVec];
        toFloats(raw[j], v, T{});
#pragma unroll
        for (int e = 0; e < kVec; ++e) if (v[e] >= bound) f(v[e], i0 + e);
      } else {
        using Pair = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;
        const Pair* pairs = reinterpret_cast<const Pair*>(&raw[j]);
        Pair low;
        if constexpr (std::is_same_v<T, __half>) low = __half2half2(__float2half_rd(bound));
        else low = __bfloat162bfloat162(__float2bfloat16_rd(bound));
#pragma unroll
        for (int q = 0; q < kVec / 2; ++q) {
          if (__hblt2(pairs[q], low)) continue;  // both below the bound
          const float2 v = widenPair(reinterpret_cast<const std::uint32_t*>(pairs)[q], T{});
          if (v.x >= bound) f(v.x, i0 + 2 * q);
          if (v.y >= bound) f(v.y, i0 + 2 * q + 1);
        }
      }
    }
    if (tail_i >= 0 && tail_v >= bound) f(tail_v, tail_i);
  }
};

// The same interface, but the block's slice (32 KB) lands in shared memory through the bulk
// copy engine (sm_90: cp.async.bulk, four 8 KB pieces, each completing on its own mbarrier), so
// the data in flight needs no registers and rescans are cheap. Thread t takes vectors
// t + kThreads * u of the block.
template <class T>
struct BulkSlice {
  static constexpr int kVec = 16 / int(sizeof(T));
  static constexpr int kPieces = 4, kPieceVectors = 512;
  static constexpr int kVectorsPerThread = kPieces * kPieceVectors / kThreads;
  static constexpr std::size_t kVectorsPerBlock = std::size_t(kPieces) * kPieceVectors;
  static constexpr int kMinBlocks = 1;
  static constexpr int kDynamicSmem = int(kVectorsPerBlock * 16);
  static_assert(kPieceVectors % kThreads == 0, "a thread's vectors split evenly over the pieces");

  const uint4* data = nullptr;
  std::uint64_t* arrived = nullptr;
  int first0 = 0, count = 0;  // element index of the block's first vector; vectors in the block
  float head_v = -INFINITY, tail_v = -INFINITY;
  int head_i = -1, tail_i = -1;

  __device__ bool ok(int u) const { return u * kThreads + int(threadIdx.x) < count; }
  __device__ int first(int u) const { return first0 + (u * kThreads + int(threadIdx.x)) * kVec; }

  __device__ void load(const T* __restrict__ row, std::size_t vocab, unsigned block) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ uint4 bulk_buffer[];
    __shared__ std::uint64_t piece_arrived[kPieces];
    const unsigned misalign = unsigned(reinterpret_cast<std::uintptr_t>(row) % 16);
    std::size_t head = misalign == 0 ? 0 : (16 - misalign) / sizeof(T);
    if (head > vocab) head = vocab;
    const std::size_t vectors = (vocab - head) / kVec;
    const std::size_t v0 = std::size_t(block) * kVectorsPerBlock;
    count = vectors > v0 ? int(vectors - v0 < kVectorsPerBlock ? vectors - v0 : kVectorsPerBlock) : 0;
    first0 = int(head + v0 * kVec);
    data = bulk_buffer;
    arrived = piece_arrived;
    if (threadIdx.x == 0) {
      for (int c = 0; c < kPieces; ++c) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(unsigned(__cvta_generic_to_shared(&arrived[c]))));
      }
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
      const uint4* src = reinterpret_cast<const uint4*>(row + head) + v0;
      for (int c = 0; c < kPieces; ++c) {
        const int n = min(count - c * kPieceVectors, kPieceVectors);
        if (n <= 0) break;
        const unsigned bar = unsigned(__cvta_generic_to_shared(&arrived[c]));
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(unsigned(n) * 16u)
                     : "memory");
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                unsigned(__cvta_generic_to_shared(bulk_buffer + c * kPieceVectors))),
            "l"(src + c * kPieceVectors), "r"(unsigned(n) * 16u), "r"(bar)
            : "memory");
      }
    }
    if (block == 0) {
      const std::size_t tail0 = head + vectors * kVec;
      if (threadIdx.x < head) { head_i = int(threadIdx.x); head_v = toFloat(row[threadIdx.x]); }
      if (tail0 + threadIdx.x < vocab) { tail_i = int(tail0 + threadIdx.x); tail_v = toFloat(row[tail0 + threadIdx.x]); }
    }
    __syncthreads();  // the barriers are initialized before anyone waits on them
#else
    (void)row; (void)vocab; (void)block;
    __trap();  // launched only on sm_90 and newer (see sliceKind)
#endif
  }
  // Waits for the piece holding this thread's vector u (a completed barrier returns at once).
  __device__ void waitFor(int u) const {
    waitFirstPhase(unsigned(__cvta_generic_to_shared(&arrived[u * kThreads / kPieceVectors])));
  }
  template <bool kStats> __device__ void maxSum(float& m, float& s) const {
    const auto add = [&](const float* v, int n) {
      float vm = v[0];
      for (int e = 1; e < n; ++e) vm = fmaxf(vm, v[e]);
      if constexpr (kStats) {
        if (vm > m) { s *= __expf(m - vm); m = vm; }
        for (int e = 0; e < n; ++e) s += __expf(v[e] - m);
      } else {
        m = fmaxf(m, vm);
      }
    };
    if (head_i >= 0) add(&head_v, 1);
#pragma unroll
    for (int u = 0; u < kVectorsPerThread; ++u) {
      if (!ok(u)) continue;
      waitFor(u);
      float v[kVec];
      toFloats(data[u * kThreads + threadIdx.x], v, T{});
      add(v, kVec);
    }
    if (tail_i >= 0) add(&tail_v, 1);
  }
  // As ThreadSlice::forEachAtLeast; every vector read here was waited for in maxSum.
  template <class F> __device__ void forEachAtLeast(float bound, const F& f) const {
    if (head_i >= 0 && head_v >= bound) f(head_v, head_i);
#pragma unroll 2
    for (int u = 0; u < kVectorsPerThread; ++u) {
      if (!ok(u)) continue;
      const int i0 = first(u);
      float v[kVec];
      toFloats(data[u * kThreads + threadIdx.x], v, T{});
#pragma unroll
      for (int e = 0; e < kVec; ++e) if (v[e] >= bound) f(v[e], i0 + e);
    }
    if (tail_i >= 0 && tail_v >= bound) f(tail_v, tail_i);
  }
};

// ---- the streaming slice: 16-byte loads into registers, statistics with few instructions ----
// Every vector a thread owns is loaded before the first is used; vectors past the row's end
// load as -inf, so the statistics need no bounds checks. The maximum comes first (two 16-bit
// values a max instruction), then one exp a value against a known maximum (no running rescale).
// (Exps on packed f16x2/bf16x2 pairs were measured no faster, 2026-11-24, and cost accuracy:
// relative errors 1e-4 (fp16) and 4e-3 (bf16) instead of 1e-7.)
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float exp2Approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
template <class T> __device__ __forceinline__ uint4 negInfVector() {
  if constexpr (sizeof(T) == 4) return make_uint4(0xff800000u, 0xff800000u, 0xff800000u, 0xff800000u);
  else if constexpr (std::is_same_v<T, __half>) return make_uint4(0xfc00fc00u, 0xfc00fc00u, 0xfc00fc00u, 0xfc00fc00u);
  else return make_uint4(0xff80ff80u, 0xff80ff80u, 0xff80ff80u, 0xff80ff80u);
}

template <class T> using PairOf = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;

template <class P> __device__ __forceinline__ P asPair(unsigned bits) { return *reinterpret_cast<const P*>(&bits); }

// Maximum over n vectors.
template <class T, int n> __device__ __forceinline__ float vectorsMax(const uint4 (&raw)[n]) {
  if constexpr (sizeof(T) == 4) {
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < n; ++j) {
      m = fmaxf(m, fmaxf(fmaxf(__uint_as_float(raw[j].x), __uint_as_float(raw[j].y)),
                         fmaxf(__uint_as_float(raw[j].z), __uint_as_float(raw[j].w))));
    }
    return m;
  } else {
    using P = PairOf<T>;
    P m = asPair<P>(raw[0].x);
#pragma unroll
    for (int j = 0; j < n; ++j) {
      m = __hmax2(m, __hmax2(__hmax2(asPair<P>(raw[j].x), asPair<P>(raw[j].y)), __hmax2(asPair<P>(raw[j].z), asPair<P>(raw[j].w))));
    }
    return fmaxf(toFloat(m.x), toFloat(m.y));
  }
}

// Sum of exp(v - base) over one vector (base finite): exp(v - base) = 2^(v log2e - base log2e),
// one fused multiply-add and one ex2 a value.
template <class T> __device__ __forceinline__ float vectorExpSum(const uint4& raw, float base) {
  float v[16 / sizeof(T)];
  toFloats(raw, v, T{});
  const float c = base * kLog2e;
  float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
  for (int e = 0; e < int(16 / sizeof(T)); e += 2) {
    s0 += exp2Approx(fmaf(v[e], kLog2e, -c));
    s1 += exp2Approx(fmaf(v[e + 1], kLog2e, -c));
  }
  return s0 + s1;
}

template <class T, int kLoadsPerThread>
struct StreamSlice {
  static constexpr int kVec = 16 / int(sizeof(T));
  static constexpr int kLoads = kLoadsPerThread;
  // Registers capped so that every block of the benchmark row is resident at once.
  static constexpr int kMinBlocks = kLoads <= 8 ? 4 : 2;
  static constexpr int kDynamicSmem = 0;
  static constexpr std::size_t kVectorsPerBlock = std::size_t(kThreads) * kLoads;
  uint4 raw[kLoads];
  int first0 = 0, vectors_left = 0;
  float head_v = -INFINITY, tail_v = -INFINITY;
  int head_i = -1, tail_i = -1;  // -1: no scalar

  __device__ bool ok(int j) const { return j * kThreads < vectors_left; }
  __device__ int first(int j) const { return first0 + j * kThreads * kVec; }

  __device__ void load(const T* __restrict__ row, std::size_t vocab, unsigned block) {
    const unsigned misalign = unsigned(reinterpret_cast<std::uintptr_t>(row) % 16);
    std::size_t head = misalign == 0 ? 0 : (16 - misalign) / sizeof(T);
    if (head > vocab) head = vocab;
    const std::size_t vectors = (vocab - head) / kVec;
    const std::size_t vi0 = std::size_t(block) * kVectorsPerBlock + threadIdx.x;
    vectors_left = int(vectors) - int(vi0);
    first0 = int(head + vi0 * kVec);
    const uint4* mine = reinterpret_cast<const uint4*>(row + head) + vi0;
#pragma unroll
    for (int j = 0; j < kLoads; ++j) raw[j] = ok(j) ? __ldg(mine + j * kThreads) : negInfVector<T>();
    if (block == 0) {
      const std::size_t tail0 = head + vectors * kVec;
      if (threadIdx.x < head) { head_i = int(threadIdx.x); head_v = toFloat(row[threadIdx.x]); }
      if (tail0 + threadIdx.x < vocab) { tail_i = int(tail0 + threadIdx.x); tail_v = toFloat(row[tail0 + threadIdx.x]); }
    }
  }
  // Maximum of the thread's elements (-inf when it has none).
  __device__ float laneMax() const { return fmaxf(vectorsMax<T>(raw), fmaxf(head_v, tail_v)); }
  // Sum of exp(v - base) over the thread's elements; base is finite.
  __device__ float expSum(float base) const {
    float acc[2] = {0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < kLoads; ++j) acc[j & 1] += vectorExpSum<T>(raw[j], base);
    float s = acc[0] + acc[1];
    if (head_i >= 0) s += exp2Approx((head_v - base) * kLog2e);
    if (tail_i >= 0) s += exp2Approx((tail_v - base) * kLog2e);
    return s;
  }
  template <bool kStats> __device__ void maxSum(float& m, float& s) const {
    m = laneMax();
    if constexpr (kStats) {
      const float base = m == -INFINITY ? 0.0f : m;  // all -inf: every exp is 0
      float acc[2] = {0.0f, 0.0f};
#pragma unroll
      for (int j = 0; j < kLoads; ++j) acc[j & 1] += vectorExpSum<T>(raw[j], base);
      s = acc[0] + acc[1];
      if (head_i >= 0) s += exp2Approx((head_v - base) * kLog2e);
      if (tail_i >= 0) s += exp2Approx((tail_v - base) * kLog2e);
    }
  }
  // As ThreadSlice::forEachAtLeast: 16-bit pairs screened against the bound rounded down.
  template <class F> __device__ void forEachAtLeast(float bound, const F& f) const {
    if (head_i >= 0 && head_v >= bound) f(head_v, head_i);
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      if (!ok(j)) continue;
      const int i0 = first(j);
      if constexpr (sizeof(T) == 4) {
        float v[kVec];
        toFloats(raw[j], v, T{});
#pragma unroll
        for (int e = 0; e < kVec; ++e) if (v[e] >= bound) f(v[e], i0 + e);
      } else {
        using Pair = PairOf<T>;
        const Pair* pairs = reinterpret_cast<const Pair*>(&raw[j]);
        Pair low;
        if constexpr (std::is_same_v<T, __half>) low = __half2half2(__float2half_rd(bound));
        else low = __bfloat162bfloat162(__float2bfloat16_rd(bound));
#pragma unroll
        for (int q = 0; q < kVec / 2; ++q) {
          if (__hblt2(pairs[q], low)) continue;  // both below the bound
          const float2 v = widenPair(reinterpret_cast<const std::uint32_t*>(pairs)[q], T{});
          if (v.x >= bound) f(v.x, i0 + 2 * q);
          if (v.y >= bound) f(v.y, i0 + 2 * q + 1);
        }
      }
    }
    if (tail_i >= 0 && tail_v >= bound) f(tail_v, tail_i);
  }
};

template <class Slice> int splitsFor(std::size_t vocab) {
  const std::size_t vectors = vocab / Slice::kVec;  // at least as many as any row has
  const std::size_t per = Slice::kVectorsPerBlock;
  const std::size_t splits = (vectors + per - 1) / per;
  return int(splits < 1 ? 1 : splits);
}
// Upper bound over dtypes (scratch sizing): every dtype's block covers kBlockElems elements.
std::size_t maxSplits(std::size_t vocab) {
  // The warp kernel's slices (1024 fp32 elements) are the smallest partial of any kernel.
  const std::size_t s = (vocab + kWarpMinElems - 1) / kWarpMinElems;
  return s < 1 ? 1 : s;
}

enum class Stage { Stats, TopKOfProbs, Fused };

// ---------------- the warp kernel ----------------
// Every warp works alone on a 4 KB slice (2048 fp16/bf16 or 1024 fp32 elements), brought into
// shared memory by one bulk copy (sm_90), with shuffles instead of block barriers: statistics
// and a top-k bound by shuffles, candidates into the warp's own list, ranks counted there, the
// warp's partial written, and the last warp of the row to arrive merges the row alone. The
// serial tail of a block (barriers, block reductions) is what this removes.
constexpr int kWarpCandCap = 64;

// One warp's candidate list for warpSelectTopK.
struct WarpSelectShared {
  Candidate cand[kWarpCandCap];
  Candidate floor;
  int count;
};

struct WarpShared {
  uint4 data[kWarpVectors];
  Candidate cand[kWarpCandCap];
  std::uint64_t arrived;
  Candidate floor;
  int count;
};
constexpr int kWarpKernelSmem = int(kWarps * sizeof(WarpShared));

__device__ __forceinline__ MaxSum warpMergeStats(MaxSum ms) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float om = __shfl_xor_sync(0xffffffffu, ms.max, o), os = __shfl_xor_sync(0xffffffffu, ms.sum, o);
    ms.merge(om, os);
  }
  return ms;
}
__device__ __forceinline__ float warpMax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// The warp's best kMaxTopK of what each(low, f) yields (f(value, index) for elements >= low),
// given a lower bound on the kMaxTopK-th value; emit(rank, candidate) is called once for each
// rank < kMaxTopK that exists, by one lane. Expects ws.count == 0 (after a __syncwarp). ws: a
// WarpShared or WarpSelectShared (cand, count, floor).
template <class Each, class Emit, class Shared>
__device__ void warpSelectTopK(const Each& each, float bound, Shared& ws, const Emit& emit) {
  const int lane = int(threadIdx.x) & 31;
  Candidate floor{bound, INT_MAX};
  for (;;) {
    each(floor.value, [&](float v, int i) {
      if (better(floor.value, floor.index, v, i)) return;
      const int slot = atomicAdd(&ws.count, 1);
      if (slot < kWarpCandCap) ws.cand[slot] = {v, i};
    });
    __syncwarp();
    const int total = ws.count;
    const bool overflow = total > kWarpCandCap;
    const int n = overflow ? kWarpCandCap : total;
    for (int e = lane; e < n; e += 32) {
      const Candidate c = ws.cand[e];
      int rank = 0;
      for (int j = 0; j < n; ++j) rank += better(ws.cand[j].value, ws.cand[j].index, c.value, c.index) ? 1 : 0;
      if (!overflow && rank < kMaxTopK) emit(rank, c);
      if (overflow && rank == kMaxTopK - 1) ws.floor = c;
    }
    __syncwarp();
    if (!overflow) {
      if (lane == 0) ws.count = 0;
      __syncwarp();
      if (lane >= n && lane < kMaxTopK) emit(lane, emptyCandidate());  // fewer than kMaxTopK
      return;
    }
    floor = ws.floor;
    if (lane == 0) ws.count = 0;
    __syncwarp();
  }
}

template <class T, Stage kStage>
__global__ void __launch_bounds__(kThreads) warpSliceKernel(const T* __restrict__ in, Partial* __restrict__ partials,
                                                            unsigned* __restrict__ counters, float2* __restrict__ stats,
                                                            float* __restrict__ top_p, int* __restrict__ top_i,
                                                            std::size_t vocab, int parts, int k) {
  constexpr bool kStats = kStage != Stage::TopKOfProbs;
  constexpr bool kTopK = kStage != Stage::Stats;
  constexpr int kVec = 16 / int(sizeof(T));
  constexpr int kPerLane = kWarpVectors / 32;
  extern __shared__ uint4 warp_smem[];
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  WarpShared& ws = reinterpret_cast<WarpShared*>(warp_smem)[warp];
  const int slice = int(blockIdx.x) * kWarps + warp;
  if (slice >= parts) return;  // warp-uniform; the row expects exactly `parts` arrivals
  const std::size_t row = blockIdx.y;
  const T* r = in + row * vocab;

  // Head scalars up to the first 16-byte boundary, the vectors, tail scalars (slice 0 takes both).
  const unsigned misalign = unsigned(reinterpret_cast<std::uintptr_t>(r) % 16);
  std::size_t head = misalign == 0 ? 0 : (16 - misalign) / sizeof(T);
  if (head > vocab) head = vocab;
  const std::size_t vectors = (vocab - head) / kVec;
  const std::size_t v0 = std::size_t(slice) * kWarpVectors;
  const int count = vectors > v0 ? int(vectors - v0 < kWarpVectors ? vectors - v0 : kWarpVectors) : 0;
  const int first0 = int(head + v0 * kVec);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned bar = unsigned(__cvta_generic_to_shared(&ws.arrived));
  if (lane == 0) {
    ws.count = 0;
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar));
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    if (count > 0) {
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(unsigned(count) * 16u)
                   : "memory");
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
              unsigned(__cvta_generic_to_shared(ws.data))),
          "l"(reinterpret_cast<const uint4*>(r + head) + v0), "r"(unsigned(count) * 16u), "r"(bar)
          : "memory");
    }
  }
  float head_v = -INFINITY, tail_v = -INFINITY;
  int head_i = -1, tail_i = -1;
  if (slice == 0) {
    const std::size_t tail0 = head + vectors * kVec;
    if (std::size_t(lane) < head) { head_i = lane; head_v = toFloat(r[lane]); }
    if (tail0 + lane < vocab) { tail_i = int(tail0 + lane); tail_v = toFloat(r[tail0 + lane]); }
  }
  __syncwarp();
  if (count > 0) waitFirstPhase(bar);
#else
  float head_v = -INFINITY, tail_v = -INFINITY;
  int head_i = -1, tail_i = -1;
  __trap();  // launched only on sm_90 and newer (see sliceKind)
#endif

  // Lane statistics: running max and sum of exp, one rescale a vector.
  float m = -INFINITY, s = 0.0f;
  const auto add = [&](const float* v, int n) {
    float vm = v[0];
    for (int e = 1; e < n; ++e) vm = fmaxf(vm, v[e]);
    if constexpr (kStats) {
      if (vm > m) { s *= __expf(m - vm); m = vm; }
      for (int e = 0; e < n; ++e) s += __expf(v[e] - m);
    } else {
      m = fmaxf(m, vm);
    }
  };
  if (head_i >= 0) add(&head_v, 1);
#pragma unroll
  for (int u = 0; u < kPerLane; ++u) {
    const int vi = u * 32 + lane;
    if (vi >= count) continue;
    float v[kVec];
    toFloats(ws.data[vi], v, T{});
    add(v, kVec);
  }
  if (tail_i >= 0) add(&tail_v, 1);

  const MaxSum warp_stats = kStats ? warpMergeStats(MaxSum{m, s}) : MaxSum{};
  const float warp_max = kStats ? warp_stats.max : warpMax(m);
  Partial* out = partials + row * std::size_t(parts) + std::size_t(slice);
  if (lane == 0) {
    out->max = warp_max;
    out->sum = warp_stats.sum;
  }
  if constexpr (kTopK) {
    // 8 groups of 4 lanes: the minimum of the group maxima is a bound (8 distinct elements).
    float g = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
    g = fmaxf(g, __shfl_xor_sync(0xffffffffu, g, 2));
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) g = fminf(g, __shfl_xor_sync(0xffffffffu, g, o));
    warpSelectTopK(
        [&](float low, const auto& f) {
          if (head_i >= 0 && head_v >= low) f(head_v, head_i);
#pragma unroll 2
          for (int u = 0; u < kPerLane; ++u) {
            const int vi = u * 32 + lane;
            if (vi >= count) continue;
            float v[kVec];
            toFloats(ws.data[vi], v, T{});
            const int i0 = first0 + vi * kVec;
#pragma unroll
            for (int e = 0; e < kVec; ++e) if (v[e] >= low) f(v[e], i0 + e);
          }
          if (tail_i >= 0 && tail_v >= low) f(tail_v, tail_i);
        },
        g, ws, [&](int rank, const Candidate& c) { out->value[rank] = c.value; out->index[rank] = c.index; });
  }
  // Publish the partial, then count the arrival; the last warp of the row merges it.
  __threadfence();
  __syncwarp();
  unsigned last = 0;
  if (lane == 0) {
    last = atomicAdd(&counters[row], 1u) == unsigned(parts - 1) ? 1u : 0u;
    if (last) counters[row] = 0;  // ready for the next launch
  }
  if (__shfl_sync(0xffffffffu, last, 0) == 0) return;

  const Partial* row_parts = partials + row * std::size_t(parts);
  MaxSum ms_all;
  float part_floor = -INFINITY;
  for (int p = lane; p < parts; p += 32) {
    if constexpr (kStats) ms_all.merge(__ldcg(&row_parts[p].max), __ldcg(&row_parts[p].sum));
    if constexpr (kTopK) part_floor = fmaxf(part_floor, __ldcg(&row_parts[p].value[kMaxTopK - 1]));  // 8 elements >= it
  }
  const MaxSum total = kStats ? warpMergeStats(ms_all) : MaxSum{};
  if constexpr (kStage == Stage::Stats) {
    if (lane == 0) stats[row] = make_float2(total.max, total.sum);
  } else {
    const float bound = warpMax(part_floor);
    warpSelectTopK(
        [&](float low, const auto& f) {
          for (int p = lane; p < parts; p += 32) {
#pragma unroll
            for (int j = 0; j < kMaxTopK; ++j) {
              const int idx = __ldcg(&row_parts[p].index[j]);
              const float v = __ldcg(&row_parts[p].value[j]);
              if (idx != INT_MAX && v >= low) f(v, idx);
            }
          }
        },
        bound, ws, [&](int rank, const Candidate& c) {
          if (rank < k) {
            top_p[row * k + rank] = kStage == Stage::Fused ? __expf(c.value - total.max) / total.sum : c.value;
            top_i[row * k + rank] = c.index;
          }
        });
  }
}

template <class T> int warpPartsFor(std::size_t vocab) {
  const std::size_t vectors = vocab / (16 / sizeof(T));
  const std::size_t parts = (vectors + kWarpVectors - 1) / kWarpVectors;
  return int(parts < 1 ? 1 : parts);
}

// Block (split, row) publishes its partial; returns true in the last block of the row to arrive,
// which then reads every partial of the row. Block-uniform result.
__device__ bool arriveLast(unsigned* counters, int splits) {
  __shared__ bool last;
  __syncthreads();  // the block's partial is written (by several threads) before thread 0 arrives
  if (threadIdx.x == 0) {
    // One acquire-release arrival: it publishes what the block wrote (ordered before it by the
    // barrier) and, in the last block, makes every other block's partial visible.
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> counter(counters[blockIdx.y]);
    const unsigned arrived = counter.fetch_add(1u, cuda::memory_order_acq_rel);
    last = arrived == unsigned(splits - 1);
    if (last) counter.store(0u, cuda::memory_order_relaxed);  // ready for the next launch; every block is in
  }
  __syncthreads();
  return last;
}


template <class T, Stage kStage, class Slice>
__global__ void __launch_bounds__(kThreads, Slice::kMinBlocks) rowSliceKernel(const T* __restrict__ in, Partial* __restrict__ partials,
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

  Slice slice;
  slice.load(in + row * vocab, vocab, blockIdx.x);
  float m = -INFINITY, s = 0.0f;
  slice.template maxSum<kStats>(m, s);
  Partial* mine_out = partials + row * splits + blockIdx.x;
  {
    const Reduced red = blockReduce<kStats>(m, s, -INFINITY, sh);
    if (threadIdx.x == 0) {  // now, so that only the bound stays live through the top-k scan
      mine_out->max = kStats ? red.stats.max : red.max;
      mine_out->sum = kStats ? red.stats.sum : 0.0f;
    }
    if constexpr (kTopK) selectTopK([&](float low, const auto& f) { slice.forEachAtLeast(low, f); }, red.bound, sh);
  }
  if (threadIdx.x == 0) sh.count = 0;
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
    selectTopK(
        [&](float low, const auto& f) {
          for (int p = int(threadIdx.x); p < splits; p += kThreads) {
#pragma unroll
            for (int j = 0; j < kMaxTopK; ++j) {
              const int idx = __ldcg(&row_parts[p].index[j]);
              const float v = __ldcg(&row_parts[p].value[j]);
              if (idx != INT_MAX && v >= low) f(v, idx);
            }
          }
        },
        total.bound, sh);
    if (threadIdx.x < unsigned(k)) {
      const Candidate w = sh.winners[threadIdx.x];
      top_p[row * k + threadIdx.x] =
          kStage == Stage::Fused ? __expf(w.value - total.stats.max) / total.stats.sum : w.value;
      top_i[row * k + threadIdx.x] = w.index;
    }
  }
}


// ---------------- the streaming kernel (default) ----------------
// Measured on an H100 (2026-11-24, bench/RESULTS.md): with the block kernel above the loads took
// a third of the time and the block's serial tail the rest (block reductions merging (max, sum)
// pairs with an exp each step, block-wide candidate selection, a block-wide merge in the last
// block). Here the block's statistics are taken against the block maximum (one barrier, then
// plain sums), the candidates (elements >= the least of the 8 warp maxima: 8 distinct elements,
// a few dozen candidates on random rows) are ranked by warp 0 alone while the other warps leave,
// and warp 0 of the last block of a row merges the row's partials alone, without block barriers.

__device__ __forceinline__ float warpSum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Block maximum and the top-k bound from the 8 warp maxima (after the barrier in between).
struct BlockMax {
  float max;    // of the block's elements
  float bound;  // least warp maximum: kWarps == kMaxTopK distinct elements are >= it
};
__device__ BlockMax blockMax(float lane_max, float* warp_max) {
  const float w = warpMax(lane_max);
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = w;
  __syncthreads();
  BlockMax b{-INFINITY, INFINITY};
#pragma unroll
  for (int i = 0; i < kWarps; ++i) {
    b.max = fmaxf(b.max, warp_max[i]);
    b.bound = fminf(b.bound, warp_max[i]);
  }
  return b;
}

// Warp 0 of a block: publishes the block's partial (written by warp 0's lanes) and counts the
// arrival; true in the last warp 0 of the row to arrive, which may then read every partial.
__device__ bool warpArriveLast(unsigned* counter, int splits) {
  __syncwarp();
  unsigned last = 0;
  if ((threadIdx.x & 31) == 0) {
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> c(*counter);
    last = c.fetch_add(1u, cuda::memory_order_acq_rel) == unsigned(splits - 1) ? 1u : 0u;
    if (last) c.store(0u, cuda::memory_order_relaxed);  // ready for the next launch
  }
  last = __shfl_sync(0xffffffffu, last, 0);
  __syncwarp();  // lane 0's acquire is ordered before the other lanes' reads
  return last != 0;
}

// Warp 0 of the last block: (max, sum) of the row from its partials.
template <bool kStats> __device__ MaxSum mergeRowStats(const Partial* row_parts, int splits) {
  float m = -INFINITY;
  for (int p = int(threadIdx.x); p < splits; p += 32) m = fmaxf(m, __ldcg(&row_parts[p].max));
  MaxSum total{warpMax(m), 0.0f};
  if constexpr (kStats) {
    const float base = total.max == -INFINITY ? 0.0f : total.max;
    float s = 0.0f;
    for (int p = int(threadIdx.x); p < splits; p += 32) {
      const float ps = __ldcg(&row_parts[p].sum);
      if (ps > 0.0f) s += ps * exp2Approx((__ldcg(&row_parts[p].max) - base) * kLog2e);
    }
    total.sum = warpSum(s);
  }
  return total;
}

// Least of the 8 maxima of 4-lane groups: 8 distinct elements of the warp are >= it.
__device__ __forceinline__ float warpGroupBound(float lane_max) {
  float g = fmaxf(lane_max, __shfl_xor_sync(0xffffffffu, lane_max, 1));
  g = fmaxf(g, __shfl_xor_sync(0xffffffffu, g, 2));
#pragma unroll
  for (int o = 4; o < 32; o <<= 1) g = fminf(g, __shfl_xor_sync(0xffffffffu, g, o));
  return g;
}

// Warp 0 of the last block: the row's statistics and top-k bound from its partials, one L2 round
// trip; lane p keeps partial p's entries (p < 32) for the selection that follows.
struct RowMerge {
  MaxSum total;
  float bound;  // the largest 8th value of a partial: 8 entries are >= it
  float value[kMaxTopK];
  int index[kMaxTopK];
};
template <bool kStats> __device__ RowMerge loadRowPartials(const Partial* row_parts, int splits) {
  const int lane = int(threadIdx.x) & 31;
  RowMerge r;
  MaxSum mine;
  float floor = -INFINITY, max_only = -INFINITY;
#pragma unroll
  for (int j = 0; j < kMaxTopK; ++j) { r.value[j] = -INFINITY; r.index[j] = INT_MAX; }
  for (int p = lane; p < splits; p += 32) {
    const Partial* q = row_parts + p;
    const float qm = __ldcg(&q->max), qs = __ldcg(&q->sum);
    floor = fmaxf(floor, __ldcg(&q->value[kMaxTopK - 1]));
    if (p == lane) {
#pragma unroll
      for (int j = 0; j < kMaxTopK; ++j) { r.value[j] = __ldcg(&q->value[j]); r.index[j] = __ldcg(&q->index[j]); }
    }
    max_only = fmaxf(max_only, qm);
    if constexpr (kStats) mine.merge(qm, qs);
  }
  r.total.max = warpMax(max_only);
  if constexpr (kStats) {
    const float base = r.total.max == -INFINITY ? 0.0f : r.total.max;
    r.total.sum = warpSum(mine.sum > 0.0f ? mine.sum * exp2Approx((mine.max - base) * kLog2e) : 0.0f);
  }
  r.bound = warpMax(floor);
  return r;
}

// kEarly: the candidates and exps of a warp before any block barrier (the warp's own top-k bound,
// sums against the lane maximum and rescaled once), one barrier a block, and the last block's
// merge reading the partials once; otherwise one barrier for the block maximum first.
template <class T, Stage kStage, bool kEarly>
__global__ void __launch_bounds__(kThreads, 4) streamKernel(const T* __restrict__ in, Partial* __restrict__ partials,
                                                            unsigned* __restrict__ counters, float2* __restrict__ stats,
                                                            float* __restrict__ top_p, int* __restrict__ top_i,
                                                            std::size_t vocab, int k) {
  using Slice = StreamSlice<T, 8>;
  constexpr bool kStats = kStage != Stage::TopKOfProbs;
  constexpr bool kTopK = kStage != Stage::Stats;
  __shared__ BlockShared sh;
  __shared__ WarpSelectShared sel;
  const int splits = int(gridDim.x), lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  const std::size_t row = blockIdx.y;
  if (threadIdx.x == 0) { sh.count = 0; sel.count = 0; }
  if (threadIdx.x < kMaxTopK) sh.winners[threadIdx.x] = emptyCandidate();

  Slice slice;
  slice.load(in + row * vocab, vocab, blockIdx.x);
  const float lane_max = slice.laneMax();
  const auto appendAtLeast = [&](float bound) {
    if (lane_max >= bound) {  // a few threads a block
      slice.forEachAtLeast(bound, [&](float v, int i) {
        const int slot = atomicAdd(&sh.count, 1);
        if (slot < kCandidateCap) sh.cand[slot] = {v, i};
      });
    }
  };
  // The candidates first, then the exps: each vector's registers are free once its exps are done.
  float block_max = -INFINITY, bound = INFINITY, block_sum = 0.0f;
  if constexpr (kEarly) {
    const float warp_max = warpMax(lane_max);
    const float warp_bound = warpGroupBound(lane_max);
    if constexpr (kTopK) appendAtLeast(warp_bound);
    float s = 0.0f;
    if constexpr (kStats) {
      s = slice.expSum(lane_max == -INFINITY ? 0.0f : lane_max);
      s = warpSum(s > 0.0f ? s * exp2Approx((lane_max - warp_max) * kLog2e) : 0.0f);
    }
    if (lane == 0) { sh.warp_max[warp] = warp_max; sh.warp_sum[warp] = s; sh.warp_bound[warp] = warp_bound; }
    __syncthreads();
    float least_max = INFINITY;
#pragma unroll
    for (int i = 0; i < kWarps; ++i) {
      block_max = fmaxf(block_max, sh.warp_max[i]);
      least_max = fminf(least_max, sh.warp_max[i]);
      bound = i == 0 ? sh.warp_bound[i] : fmaxf(bound, sh.warp_bound[i]);
    }
    bound = fmaxf(bound, least_max);  // >= every warp's bound: every element >= it was appended
    if constexpr (kStats) {
      const float base = block_max == -INFINITY ? 0.0f : block_max;
#pragma unroll
      for (int i = 0; i < kWarps; ++i) {
        const float ws = sh.warp_sum[i];
        if (ws > 0.0f) block_sum += ws * exp2Approx((sh.warp_max[i] - base) * kLog2e);
      }
    }
  } else {
    const BlockMax bm = blockMax(lane_max, sh.warp_max);
    block_max = bm.max;
    bound = bm.bound;
    if constexpr (kTopK) appendAtLeast(bound);
    if constexpr (kStats) {
      const float s = warpSum(slice.expSum(block_max == -INFINITY ? 0.0f : block_max));
      if (lane == 0) sh.warp_sum[warp] = s;
    }
    __syncthreads();
    if constexpr (kStats) {
#pragma unroll
      for (int i = 0; i < kWarps; ++i) block_sum += sh.warp_sum[i];
    }
  }
  Partial* out = partials + row * splits + blockIdx.x;
  const int count = kTopK ? sh.count : 0;  // block-uniform
  if (count > kCandidateCap) {
    // Many equal values: the block-wide selection, which rescans with a raised floor. The slice
    // is loaded again so that the first one's registers are free after the scan above.
    __syncthreads();  // every thread has read sh.count
    if (threadIdx.x == 0) sh.count = 0;
    __syncthreads();
    Slice again;
    again.load(in + row * vocab, vocab, blockIdx.x);
    selectTopK([&](float low, const auto& f) { again.forEachAtLeast(low, f); }, bound, sh);
  }
  if (warp != 0) return;

  if (lane == 0) {
    out->max = block_max;
    out->sum = block_sum;
  }
  if constexpr (kTopK) {
    const auto toPartial = [&](int rank, const Candidate& c) { out->value[rank] = c.value; out->index[rank] = c.index; };
    if (count > kCandidateCap) {
      if (lane < kMaxTopK) toPartial(lane, sh.winners[lane]);
    } else {
      warpSelectTopK(
          [&](float low, const auto& f) {
            for (int e = lane; e < count; e += 32) if (sh.cand[e].value >= low) f(sh.cand[e].value, sh.cand[e].index);
          },
          bound, sel, toPartial);
    }
  }
  if (!warpArriveLast(&counters[row], splits)) return;

  // Warp 0 of the row's last block: merge the row's partials (L2 reads: other SMs wrote them).
  const Partial* row_parts = partials + row * splits;
  const auto eachEntry = [&](float low, const auto& f, const float* held_value, const int* held_index) {
    for (int p = lane; p < splits; p += 32) {
#pragma unroll
      for (int j = 0; j < kMaxTopK; ++j) {
        const bool held = p == lane && held_value != nullptr;
        const int idx = held ? held_index[j] : __ldcg(&row_parts[p].index[j]);
        const float v = held ? held_value[j] : __ldcg(&row_parts[p].value[j]);
        if (idx != INT_MAX && v >= low) f(v, idx);
      }
    }
  };
  MaxSum total;
  float merge_bound = -INFINITY;
  RowMerge held;
  if constexpr (kEarly) {
    held = loadRowPartials<kStats>(row_parts, splits);
    total = held.total;
    merge_bound = held.bound;
  } else {
    total = mergeRowStats<kStats>(row_parts, splits);
    if constexpr (kTopK) {
      float part_floor = -INFINITY;  // each partial has 8 elements >= its 8th value
      for (int p = lane; p < splits; p += 32) part_floor = fmaxf(part_floor, __ldcg(&row_parts[p].value[kMaxTopK - 1]));
      merge_bound = warpMax(part_floor);
    }
  }
  if constexpr (kStage == Stage::Stats) {
    if (lane == 0) stats[row] = make_float2(total.max, total.sum);
  } else {
    const float base = total.max == -INFINITY ? 0.0f : total.max;
    warpSelectTopK(
        [&](float low, const auto& f) {
          if constexpr (kEarly) eachEntry(low, f, held.value, held.index);
          else eachEntry(low, f, nullptr, nullptr);
        },
        merge_bound, sel, [&](int rank, const Candidate& c) {
          if (rank < k) {
            top_p[row * k + rank] = kStage == Stage::Fused ? exp2Approx((c.value - base) * kLog2e) / total.sum : c.value;
            top_i[row * k + rank] = c.index;
          }
        });
  }
}

template <class T, int kElems>
__global__ void __launch_bounds__(kThreads) vocabSoftmaxWriteKernel(const T* __restrict__ logits,
                                                                    const float2* __restrict__ stats,
                                                                    float* __restrict__ probs, std::size_t vocab) {
  const std::size_t row = blockIdx.y;
  ThreadSlice<T, kElems> slice;
  slice.load(logits + row * vocab, vocab, blockIdx.x);
  const float2 st = stats[row];
  const float inv = 1.0f / st.y;
  float* out = probs + row * vocab;
  if (slice.head_i >= 0) out[slice.head_i] = __expf(slice.head_v - st.x) * inv;
  if (slice.tail_i >= 0) out[slice.tail_i] = __expf(slice.tail_v - st.x) * inv;
  constexpr int kVec = ThreadSlice<T, kElems>::kVec;
#pragma unroll
  for (int j = 0; j < ThreadSlice<T, kElems>::kLoads; ++j) {
    if (!slice.ok(j)) continue;
    float v[kVec];
    toFloats(slice.raw[j], v, T{});
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[e] = __expf(v[e] - st.x) * inv;
    float* dst = out + slice.first(j);
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

template <class Slice> dim3 gridFor(std::size_t rows, std::size_t vocab) {
  return dim3(unsigned(splitsFor<Slice>(vocab)), unsigned(rows));
}

// FPROF_REF_TOPK_SLICE=bulk|warp|regs32 picks the kernel: the block kernel with its slice
// brought in by bulk copies into shared memory (default on sm_90 and newer), the warp kernel
// (not yet run on a GPU: opt-in until measured), or the block kernel with 16-byte loads into
// registers, 32 elements a thread (the only one before sm_90). A 64-element register slice
// was measured (2026-11-23, H100) no faster than the bulk one and spilled; it is gone.
enum class SliceKind { Stream, StreamEarly, Block8, Bulk, Warp, Regs32 };
SliceKind sliceKind() {
  static const SliceKind kind = [] {
    const char* v = std::getenv("FPROF_REF_TOPK_SLICE");
    const std::string want = v == nullptr ? "" : v;
    int dev = 0, major = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (want == "regs32") return SliceKind::Regs32;
    if (want == "block8") return SliceKind::Block8;
    if (want == "early") return SliceKind::StreamEarly;
    if (want == "bulk" && major >= 9) return SliceKind::Bulk;
    if (want == "warp" && major >= 9) return SliceKind::Warp;
    return SliceKind::Stream;
  }();
  return kind;
}

// Calls launch(slice tag) with the block kernel's slice type for T; the tag is a null pointer.
template <class T, class Launch> void withSlice(const Launch& launch) {
  switch (sliceKind()) {
    case SliceKind::Regs32: launch(static_cast<ThreadSlice<T, kElemsNarrow>*>(nullptr)); return;
    case SliceKind::Block8: launch(static_cast<StreamSlice<T, 8>*>(nullptr)); return;
    default: launch(static_cast<BulkSlice<T>*>(nullptr));  // the warp and stream kernels are taken before this
  }
}

template <class T, Stage kStage>
void launchStreamKernel(const T* in, const ScratchView& v, float* top_p, int* top_i, std::size_t rows, std::size_t vocab,
                        int k, cudaStream_t s) {
  const dim3 grid = gridFor<StreamSlice<T, 8>>(rows, vocab);
  if (sliceKind() == SliceKind::StreamEarly) {
    streamKernel<T, kStage, true><<<grid, kThreads, 0, s>>>(in, v.partials, v.counters, v.stats, top_p, top_i, vocab, k);
  } else {
    streamKernel<T, kStage, false><<<grid, kThreads, 0, s>>>(in, v.partials, v.counters, v.stats, top_p, top_i, vocab, k);
  }
  CUDA_CHECK_LAUNCH(streamKernel);
}

template <class T, Stage kStage>
void launchWarpKernel(const T* in, const ScratchView& v, float* top_p, int* top_i, std::size_t rows, std::size_t vocab,
                      int k, cudaStream_t s) {
  const int parts = warpPartsFor<T>(vocab);
  const dim3 grid(unsigned((parts + kWarps - 1) / kWarps), unsigned(rows));
  warpSliceKernel<T, kStage><<<grid, kThreads, kWarpKernelSmem, s>>>(in, v.partials, v.counters, v.stats, top_p, top_i,
                                                                      vocab, parts, k);
  CUDA_CHECK_LAUNCH(warpSliceKernel);
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
  if (sliceKind() == SliceKind::Stream || sliceKind() == SliceKind::StreamEarly) {
    FPROF_DISPATCH_DTYPE(t, T, launchStreamKernel<T, Stage::Stats>(static_cast<const T*>(logits), v, nullptr, nullptr, rows, vocab, 0, s));
    return;
  }
  if (sliceKind() == SliceKind::Warp) {
    FPROF_DISPATCH_DTYPE(t, T, launchWarpKernel<T, Stage::Stats>(static_cast<const T*>(logits), v, nullptr, nullptr, rows, vocab, 0, s));
    return;
  }
  FPROF_DISPATCH_DTYPE(t, T, withSlice<T>([&](auto* tag) {
                         using Slice = std::remove_pointer_t<decltype(tag)>;
                         rowSliceKernel<T, Stage::Stats, Slice><<<gridFor<Slice>(rows, vocab), kThreads, Slice::kDynamicSmem, s>>>(
                             static_cast<const T*>(logits), v.partials, v.counters, v.stats, nullptr, nullptr, vocab, 0);
                       }));
  CUDA_CHECK_LAUNCH(rowSliceKernel);
}

void launchVocabSoftmaxWrite(DType t, const void* logits, const void* scratch, float* probs, std::size_t rows,
                             std::size_t vocab, cudaStream_t s) {
  if (rows == 0) return;
  const ScratchView v = view(const_cast<void*>(scratch), rows, vocab);
  // Registers only: every element is used once, so the 16-byte loads suffice.
  FPROF_DISPATCH_DTYPE(t, T, {
    using Slice = ThreadSlice<T, kElemsNarrow>;
    vocabSoftmaxWriteKernel<T, kElemsNarrow><<<gridFor<Slice>(rows, vocab), kThreads, 0, s>>>(
        static_cast<const T*>(logits), v.stats, probs, vocab);
  });
  CUDA_CHECK_LAUNCH(vocabSoftmaxWriteKernel);
}

void launchTopK(const float* probs, float* top_p, int* top_i, std::size_t rows, std::size_t vocab, int k,
                void* scratch, cudaStream_t s) {
  checkK(vocab, k);
  if (rows == 0) return;
  const ScratchView v = view(scratch, rows, vocab);
  if (sliceKind() == SliceKind::Stream || sliceKind() == SliceKind::StreamEarly) {
    launchStreamKernel<float, Stage::TopKOfProbs>(probs, v, top_p, top_i, rows, vocab, k, s);
    return;
  }
  if (sliceKind() == SliceKind::Warp) {
    launchWarpKernel<float, Stage::TopKOfProbs>(probs, v, top_p, top_i, rows, vocab, k, s);
    return;
  }
  withSlice<float>([&](auto* tag) {
    using Slice = std::remove_pointer_t<decltype(tag)>;
    rowSliceKernel<float, Stage::TopKOfProbs, Slice><<<gridFor<Slice>(rows, vocab), kThreads, Slice::kDynamicSmem, s>>>(
        probs, v.partials, v.counters, nullptr, top_p, top_i, vocab, k);
  });
  CUDA_CHECK_LAUNCH(rowSliceKernel);
}

void launchSoftmaxTopKFused(DType t, const void* logits, float* top_p, int* top_i, std::size_t rows,
                            std::size_t vocab, int k, void* scratch, cudaStream_t s) {
  checkK(vocab, k);
  if (rows == 0) return;
  const ScratchView v = view(scratch, rows, vocab);
  if (sliceKind() == SliceKind::Stream || sliceKind() == SliceKind::StreamEarly) {
    FPROF_DISPATCH_DTYPE(t, T, launchStreamKernel<T, Stage::Fused>(static_cast<const T*>(logits), v, top_p, top_i, rows, vocab, k, s));
    return;
  }
  if (sliceKind() == SliceKind::Warp) {
    FPROF_DISPATCH_DTYPE(t, T, launchWarpKernel<T, Stage::Fused>(static_cast<const T*>(logits), v, top_p, top_i, rows, vocab, k, s));
    return;
  }
  FPROF_DISPATCH_DTYPE(t, T, withSlice<T>([&](auto* tag) {
                         using Slice = std::remove_pointer_t<decltype(tag)>;
                         rowSliceKernel<T, Stage::Fused, Slice><<<gridFor<Slice>(rows, vocab), kThreads, Slice::kDynamicSmem, s>>>(
                             static_cast<const T*>(logits), v.partials, v.counters, nullptr, top_p, top_i, vocab, k);
                       }));
  CUDA_CHECK_LAUNCH(rowSliceKernel);
}

}  // namespace fprof::refk
