// Softmax + top-k over a vocabulary-sized row (the decode step). A row is split over blocks of
// 2048 16-byte vectors (16384 fp16/bf16 or 8192 fp32 elements); each thread loads its 8 vectors
// into registers, all issued before the first use, past the row's end as -inf. Each kernel
// finishes its cross-block merge in the last block of a row to arrive (a per-row arrival counter:
// a release in every block, an acquire in the last), so every stage is one launch; where a row
// has at most 16 blocks, that block's first warp alone arrives and merges.
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
// What the kernels keep, each measured faster on an H100 than the form it stands beside below: for
// 16-bit logits a quarter of the exps by an FMA-pipe polynomial (polyExp2) and the vector maxima
// kept for the candidate marks; the block's bound from each warp's two largest thread maxima,
// ranked by warp 0 alone behind a second barrier (blockReduceTop2); a marked vector's candidates
// appended one round a set bit of its mask (RegisterSlice::forEachAtLeast); the candidates ranked
// by four lanes each (rankCandidates); the row merge by a network in registers (rowBestByNetwork);
// the 16-bit exps' reference fixed at each thread's first vector (RegisterSlice::online); the
// row's arrival a release in every block and an acquire in the last only (arriveAtRowCounter); and
// the row-slice kernels launched by programmatic dependent launch (launchRowSliceKernel), which
// fprof times from the stream predecessor's end.
// Measured slower or no faster, and not kept (the figures are in the history of bench/RESULTS.md):
// bulk copies or cp.async staging into shared memory, 32 register elements a thread, a
// warp-per-slice kernel, a streaming kernel whose warp 0 alone selects and merges, blocks of 128,
// 512 or 1024 threads, a row's blocks as a cluster (partials by st.async or a cluster barrier),
// candidates appended one atomic a vector, every warp its own exact top-k with no block barrier
// (40-55% slower), half of the exps by the polynomial, a degree-3 polynomial, the exps in fp16
// pairs (ex2.approx.f16x2 is two MUFU ops; its fp16 exponent fails the range-200 check), a row
// merge ranking the sorted partials by binary search, marked vectors taken from registers instead
// of reloaded (spills), the row merged by its first block polling self-validating 64-bit partial
// words (fp16 0.1-0.2 us faster back to back, nothing on top of the warp-0 ranking), half the
// blocks sleeping before their loads, warp sums before the first barrier, the block's bound from
// each thread's first vectors behind named barriers (the weaker bound's extra candidates cost more
// than the hidden barrier), ties at the block maximum scanned in the first vectors first, and the
// last block's acquire as a fence instead of a load.
#include <cfloat>
#include <climits>
#include <cuda/atomic>
#include <type_traits>

#include "kernels.cuh"
#include "mma_sync.cuh"

namespace fprof::refk {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
// Elements a thread of the probability-writing kernel loads (8192 a block).
constexpr int kElemsNarrow = 32;
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

struct alignas(16) BlockShared {
  float warp_max[kWarps], warp_stat_max[kWarps], warp_sum[kWarps], warp_bound[kWarps];
  float warp_top2[2 * kWarps];  // each warp's two largest thread maxima (blockReduceTop2)
  float top2_max, top2_bound;   // blockReduceTop2's result, from warp 0
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

__device__ __forceinline__ float warpSum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

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

// In one warp: the largest of the warps' maxima and the kMaxTopK-th largest of the 16 values
// (ties by position), into sh.top2_max and sh.top2_bound.
__device__ void rankTop2InWarp(BlockShared& sh) {
  const int lane = threadIdx.x & 31;
  const int mine = lane & (2 * kWarps - 1);
  const float x = sh.warp_top2[mine];
  float max = -INFINITY;
  int rank = 0;
#pragma unroll
  for (int j = 0; j < 2 * kWarps; ++j) {
    const float v = sh.warp_top2[j];
    if (j % 2 == 0) max = fmaxf(max, v);
    rank += (v > x || (v == x && j < mine)) ? 1 : 0;
  }
  const unsigned at = __ballot_sync(0xffffffffu, lane < 2 * kWarps && rank == kMaxTopK - 1);
  const float bound = __shfl_sync(0xffffffffu, x, __ffs(int(at)) - 1);
  if (lane == 0) {
    sh.top2_max = max;
    sh.top2_bound = bound;
  }
}

// The block maximum and a top-k bound from each warp's two largest thread maxima (16 distinct
// elements; the 8th largest of them is the bound): on uniform fp16 logits 10 candidates a block
// instead of 23 for blockReduce's group maxima. Warp 0 alone ranks the 16 and passes the result on
// behind a second barrier. (On an H100, fp16 fused: 9.22-9.76 us under ncu, 3.52 M instructions,
// 56.1-59.5% of copy bandwidth back to back, against 9.73-10.21 us, 3.91 M and 54.6-57.0% with
// every warp ranking them after one barrier: the launch ends on its last blocks' selections,
// which the four blocks of an SM run at once.)
__device__ Reduced blockReduceTop2(float thread_max, BlockShared& sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float m1 = thread_max, m2 = -INFINITY;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const float o1 = __shfl_xor_sync(0xffffffffu, m1, o), o2 = __shfl_xor_sync(0xffffffffu, m2, o);
    m2 = fmaxf(fminf(m1, o1), fmaxf(m2, o2));
    m1 = fmaxf(m1, o1);
  }
  if (lane == 0) { sh.warp_top2[2 * warp] = m1; sh.warp_top2[2 * warp + 1] = m2; }
  __syncthreads();
  if (warp == 0) rankTop2InWarp(sh);
  __syncthreads();
  return Reduced{sh.top2_max, MaxSum{}, sh.top2_bound};
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

// A row is head scalars (up to the first 16-byte boundary), `vectors` 16-byte vectors, then
// tail scalars. Block b takes vectors [b * kVectorsPerBlock, ...); block 0 also the scalars.
// Vectors past the row's end load as -inf (kNegInfPad: the statistics and top-k kernels need no
// bounds checks then) or as zeros (the probability-writing kernel).
template <class T> __device__ __forceinline__ uint4 negInfVector() {
  if constexpr (sizeof(T) == 4) return make_uint4(0xff800000u, 0xff800000u, 0xff800000u, 0xff800000u);
  else if constexpr (std::is_same_v<T, __half>) return make_uint4(0xfc00fc00u, 0xfc00fc00u, 0xfc00fc00u, 0xfc00fc00u);
  else return make_uint4(0xff80ff80u, 0xff80ff80u, 0xff80ff80u, 0xff80ff80u);
}

// Where a thread's vectors and scalars are, and block 0's head and tail scalars (loaded before
// the vectors); VectorSlice adds the vector loads.
template <class T, int kLoadsPerThread>
struct SliceLayout {
  static constexpr int kVec = 16 / int(sizeof(T));
  static constexpr int kLoads = kLoadsPerThread;
  static constexpr std::size_t kVectorsPerBlock = std::size_t(kThreads) * kLoads;
  // Vector j of this thread starts at element first0 + j * kThreads * kVec and exists when
  // j * kThreads < vectors_left. Indices are ints (as the outputs are), so these stay cheap.
  int first0 = 0, vectors_left = 0;
  const uint4* vector0 = nullptr;  // the thread's vector 0 in memory; vector j is vector0[j * kThreads]
  float head_v = -INFINITY, tail_v = -INFINITY;
  int head_i = -1, tail_i = -1;  // -1: no scalar

  __device__ bool ok(int j) const { return j * kThreads < vectors_left; }
  __device__ int first(int j) const { return first0 + j * kThreads * kVec; }

  // Places the thread in the row and loads block 0's head and tail scalars.
  __device__ void locate(const T* __restrict__ row, std::size_t vocab, unsigned block) {
    const unsigned misalign = unsigned(reinterpret_cast<std::uintptr_t>(row) % 16);
    std::size_t head = misalign == 0 ? 0 : (16 - misalign) / sizeof(T);
    if (head > vocab) head = vocab;
    const std::size_t vectors = (vocab - head) / kVec;
    const std::size_t vi0 = std::size_t(block) * kVectorsPerBlock + threadIdx.x;
    vectors_left = int(vectors) - int(vi0);
    first0 = int(head + vi0 * kVec);
    vector0 = reinterpret_cast<const uint4*>(row + head) + vi0;
    if (block == 0) {
      const std::size_t tail0 = head + vectors * kVec;
      if (threadIdx.x < head) { head_i = int(threadIdx.x); head_v = toFloat(row[threadIdx.x]); }
      if (tail0 + threadIdx.x < vocab) { tail_i = int(tail0 + threadIdx.x); tail_v = toFloat(row[tail0 + threadIdx.x]); }
    }
  }
};

template <class T, int kLoadsPerThread, bool kNegInfPad>
struct VectorSlice : SliceLayout<T, kLoadsPerThread> {
  using Layout = SliceLayout<T, kLoadsPerThread>;
  using Layout::kLoads, Layout::ok, Layout::vector0;
  uint4 raw[kLoads];

  __device__ void load(const T* __restrict__ row, std::size_t vocab, unsigned block) {
    Layout::locate(row, vocab, block);
#pragma unroll
    for (int j = 0; j < kLoads; ++j) raw[j] = vectorFromMemory(j);
  }
  // Vector j from memory, or the padding where the row has none.
  __device__ uint4 vectorFromMemory(int j) const {
    return ok(j) ? __ldg(vector0 + j * kThreads) : (kNegInfPad ? negInfVector<T>() : make_uint4(0u, 0u, 0u, 0u));
  }
};
template <class T, int kElems> using ThreadSlice = VectorSlice<T, kElems / (16 / int(sizeof(T))), false>;

// ---- the register slice: 16-byte loads into registers, statistics with few instructions ----
// Every vector a thread owns is loaded before the first is used; vectors past the row's end
// load as -inf, so the statistics need no bounds checks. The block's maximum comes first (two
// 16-bit values a max instruction, then one barrier), then one exp a value against it: no running
// rescale and no (max, sum) pairs merged with exps in the reduction (2026-11-26: 30% fewer
// instructions; fp32 12% faster, fp16 and bf16 within noise).
// (Exps on packed f16x2/bf16x2 pairs were measured no faster, 2026-11-24, and cost accuracy:
// relative errors 1e-4 (fp16) and 4e-3 (bf16) instead of 1e-7.)
constexpr float kLog2e = 1.4426950408889634f;


template <class T> using PairOf = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;

template <class P> __device__ __forceinline__ P asPair(unsigned bits) { return *reinterpret_cast<const P*>(&bits); }

// Pairwise maxima of one 16-bit vector (its maximum is the larger half).
template <class T> __device__ __forceinline__ PairOf<T> vectorMaxPair(const uint4& r) {
  using P = PairOf<T>;
  return __hmax2(__hmax2(asPair<P>(r.x), asPair<P>(r.y)), __hmax2(asPair<P>(r.z), asPair<P>(r.w)));
}

// Maximum of one vector.
template <class T> __device__ __forceinline__ float vectorMax(const uint4& r) {
  if constexpr (sizeof(T) == 4) {
    return fmaxf(fmaxf(__uint_as_float(r.x), __uint_as_float(r.y)), fmaxf(__uint_as_float(r.z), __uint_as_float(r.w)));
  } else {
    const PairOf<T> m = vectorMaxPair<T>(r);
    return fmaxf(toFloat(m.x), toFloat(m.y));
  }
}

// 2^x on the FMA pipe (the FlashAttention-4 trick): round x to an integer j by adding 1.5 * 2^23
// (j lands in the low mantissa bits), a degree-5 polynomial for 2^(x - j) on [-0.5, 0.5]
// (relative error 2.3e-7, as ex2.approx's), and j added to the exponent bits by an integer
// shift. x is clamped at -125 so that the exponent stays normal: such a term is 2^-125, not 0.
__device__ __forceinline__ float polyExp2(float x) {
  x = fmaxf(x, -125.0f);
  const float t = __fadd_rn(x, 12582912.0f);
  const float f = __fsub_rn(x, __fsub_rn(t, 12582912.0f));
  float p = 0x1.5c08e4p-10f;
  p = fmaf(p, f, 0x1.3d0c52p-7f);
  p = fmaf(p, f, 0x1.c6b6e4p-5f);
  p = fmaf(p, f, 0x1.ebf918p-3f);
  p = fmaf(p, f, 0x1.62e428p-1f);
  p = fmaf(p, f, 0x1.000002p+0f);
  return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}

// Sum of 2^(v log2e - c) over one vector, one fused multiply-add and one ex2 a value: with
// c = base * log2e, the sum of exp(v - base).
template <class T, int kPolyEvery = 0> __device__ __forceinline__ float vectorExp2Sum(const uint4& raw, float c) {
  float v[16 / sizeof(T)];
  toFloats(raw, v, T{});
  auto ex = [&](int e) {
    const float x = fmaf(v[e], kLog2e, -c);
    if constexpr (kPolyEvery > 0) {
      if (e % kPolyEvery == kPolyEvery - 1) return polyExp2(x);
    }
    return fastExp2(x);
  };
  float s0 = ex(0), s1 = ex(1);  // not 0 + x, which the compiler keeps (for -0)
#pragma unroll
  for (int e = 2; e < int(16 / sizeof(T)); e += 2) {
    s0 += ex(e);
    s1 += ex(e + 1);
  }
  return s0 + s1;
}

// A thread's maximum and sum of exps taken vector by vector as the vectors arrive, against a
// reference of the thread's own instead of the block maximum, so that no barrier stands before
// the exps: fixed at its first vector's maximum (RegisterSlice::online), or moving up (the sum
// rescaled by one ex2) when a value passes it by more than kRefSlack, so every term is below e^16
// and a thread's 64 stay far from overflow (addVector: the head and tail scalars, and the slow path).
constexpr float kRefSlack = 16.0f;
constexpr float kFixedSlack = 64.0f;  // RegisterSlice::online's fixed reference (e^64 * 64 terms < FLT_MAX)
struct OnlineExpSum {
  float max = -INFINITY;      // of the values seen
  float ref = -INFINITY;      // the sum is of exp(v - ref)
  float ref_log2 = -FLT_MAX;  // ref * log2(e), kept finite so that a -inf value gives 0, never NaN
  float sum = 0.0f;

  // Starts the sum against m (-inf gives a finite ref_log2, so that -inf values add 0).
  __device__ void fixReference(float m) {
    ref = m;
    ref_log2 = fmaxf(m * kLog2e, -FLT_MAX);
    sum = 0.0f;
  }
  __device__ void rebase(float m) {
    const float m_log2 = m * kLog2e;
    sum *= fastExp2(ref_log2 - m_log2);
    ref = m;
    ref_log2 = m_log2;
  }
  template <class T, bool kExps, int kPolyEvery = 0> __device__ void addVector(const uint4& raw, float vector_max) {
    max = fmaxf(max, vector_max);
    if constexpr (kExps) {
      if (vector_max > ref + kRefSlack) rebase(vector_max);
      sum += vectorExp2Sum<T, kPolyEvery>(raw, ref_log2);
    }
  }
  template <bool kExps> __device__ void addScalar(float v) {
    max = fmaxf(max, v);
    if constexpr (kExps) {
      if (v > ref + kRefSlack) rebase(v);
      sum += fastExp2(fmaf(v, kLog2e, -ref_log2));
    }
  }
  // Sum of exp(v - base) for a finite base >= max (the block maximum).
  __device__ float sumAgainst(float base) const { return sum * fastExp2(ref_log2 - base * kLog2e); }
};

template <class T, int kLoadsPerThread, bool kCachedMax = false>
struct RegisterSlice : VectorSlice<T, kLoadsPerThread, true> {
  using Base = VectorSlice<T, kLoadsPerThread, true>;
  using Base::kVec, Base::kLoads, Base::raw, Base::ok, Base::first;
  using Base::head_v, Base::tail_v, Base::head_i, Base::tail_i, Base::vector0;
  static_assert(kLoads <= 8, "more vectors a thread would spill at 64 registers");

  // The thread's maximum and sum of exps, vector by vector in load order, so that a vector's
  // exps can run while the later loads are in flight. (On an H100, fp16 fused: 11.8-12.1 us under
  // ncu against 12.2-12.5 us with the exps after the block maximum.)
  // With kCachedMax (16-bit T), the vector maxima are kept two to a register for the marks
  // instead of computed again from the vectors (unused, and dropped by the compiler, otherwise).
  static constexpr bool kCache = kCachedMax && sizeof(T) == 2;
  using Pair = PairOf<std::conditional_t<sizeof(T) == 2, T, __half>>;
  Pair vmax[kLoads / 2];

  //
  // For 16-bit values the exps' reference is vector 0's maximum, fixed for the loop: the compiler
  // predicated a moving reference's check and rescale into every vector. Every term stays below
  // e^kFixedSlack unless a later value passes the reference by more (logits spanning more than
  // 64); then the thread sums its vectors again from memory with a moving reference
  // (sumWithRebase). (On an H100, fp16 fused: 9.9-10.2 us under ncu and 53.3-56.4% of copy
  // bandwidth back to back, against 10.5-10.7 us and 52.6-53.9% with the moving reference; as a
  // call, not inlined, the slow path costs every launch a third of its speed.) fp32 keeps the moving reference: with
  // the slow path its fused kernel spilled 12 bytes and gained nothing.
  static constexpr bool kFixedReference = sizeof(T) == 2;

  template <bool kExps, int kPolyEvery = 0> __device__ OnlineExpSum online() {
    OnlineExpSum o;
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      const float vm = cacheVectorMax(j);
      if constexpr (kFixedReference) {
        if (j == 0) o.fixReference(vm);
        o.max = fmaxf(o.max, vm);
        if constexpr (kExps) o.sum += vectorExp2Sum<T, kPolyEvery>(raw[j], o.ref_log2);
      } else {
        o.template addVector<T, kExps, kPolyEvery>(raw[j], vm);
      }
    }
    if constexpr (kExps && kFixedReference) {
      if (o.max > o.ref + kFixedSlack) o = sumWithRebase<kPolyEvery>();
    }
    if (head_i >= 0) o.addScalar<kExps>(head_v);
    if (tail_i >= 0) o.addScalar<kExps>(tail_v);
    return o;
  }

  // Vector j's maximum, kept two to a register with kCache.
  __device__ float cacheVectorMax(int j) {
    if constexpr (kCache) {
      const Pair m = vectorMaxPair<T>(raw[j]);
      const T mt = __hmax(m.x, m.y);
      if (j % 2 == 0) vmax[j / 2].x = mt; else vmax[j / 2].y = mt;
      return toFloat(mt);
    } else {
      return vectorMax<T>(raw[j]);
    }
  }

  // The slow path of online(): the thread's vectors reloaded (L1 or L2 hits) and summed against a
  // reference that moves up with them.
  template <int kPolyEvery> __device__ __forceinline__ OnlineExpSum sumWithRebase() const {
    OnlineExpSum o;
#pragma unroll 1
    for (int j = 0; j < kLoads; ++j) {
      const uint4 r = Base::vectorFromMemory(j);
      o.template addVector<T, true, kPolyEvery>(r, vectorMax<T>(r));
    }
    return o;
  }

  __device__ unsigned markedAtLeast(float bound) const {
    unsigned marked = 0;
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      float m;
      if constexpr (kCache) m = toFloat(j % 2 == 0 ? vmax[j / 2].x : vmax[j / 2].y);
      else m = vectorMax<T>(raw[j]);
      marked |= (ok(j) && m >= bound ? 1u : 0u) << j;
    }
    return marked;
  }

  // f(value, index) over the thread's elements >= bound (a few among many). The vectors whose
  // maximum reaches the bound are marked first, without branches; only those are widened, so a
  // warp runs as many rounds as its busiest lane has marked vectors. (Widening the pairs of
  // every vector in which any lane held a candidate takes a round for nearly every vector: on an
  // H100, fp16 fused 14.5 us back to back against 12.8.) A marked vector's elements >= bound
  // become a mask, and f runs once a set bit (usually once), so the compiler builds one append,
  // not one branch and reconvergence around each of the vector's elements (on an H100: fp16 fused
  // 9.09-9.34 us under ncu against 9.47-9.63, bf16 9.79-10.08 against 9.95-10.50 us).
  template <class F> __device__ void forEachAtLeast(float bound, const F& f) const {
    if (head_i >= 0 && head_v >= bound) f(head_v, head_i);
    unsigned marked = markedAtLeast(bound);
    while (marked != 0) {
      const int j = __ffs(int(marked)) - 1;
      marked &= marked - 1;
      const uint4 r = __ldg(vector0 + j * kThreads);
      float v[kVec];
      toFloats(r, v, T{});
      unsigned mask = 0;
#pragma unroll
      for (int e = 0; e < kVec; ++e) mask |= (v[e] >= bound ? 1u : 0u) << e;
      const int i0 = first(j);
      while (mask != 0) {
        const int e = __ffs(int(mask)) - 1;
        mask &= mask - 1;
        f(elementOf(r, e), i0 + e);
      }
    }
    if (tail_i >= 0 && tail_v >= bound) f(tail_v, tail_i);
  }

  // Element e of a 16-byte vector, widened. e is known only at run time, where indexing the widened
  // array would put it in local memory; selecting the word and shifting keeps it in registers.
  __device__ __forceinline__ static float elementOf(const uint4& r, int e) {
    const unsigned w = e < kVec / 2 ? (e < kVec / 4 ? r.x : r.y) : (e < 3 * kVec / 4 ? r.z : r.w);
    if constexpr (sizeof(T) == 4) {
      return __uint_as_float(w);
    } else {
      const auto h = static_cast<unsigned short>((e & 1) != 0 ? w >> 16 : w & 0xffffu);
      if constexpr (std::is_same_v<T, __half>) return __half2float(__ushort_as_half(h));
      else return __bfloat162float(__ushort_as_bfloat16(h));
    }
  }
};

template <class Slice> int splitsFor(std::size_t vocab) {
  const std::size_t vectors = vocab / Slice::kVec;  // at least as many as any row has
  const std::size_t per = Slice::kVectorsPerBlock;
  const std::size_t splits = (vectors + per - 1) / per;
  return int(splits < 1 ? 1 : splits);
}
template <class T> using BlockSlice = RegisterSlice<T, 8>;
// Upper bound over dtypes (scratch sizing): fp32 has the most blocks a row.
std::size_t maxSplits(std::size_t vocab) { return std::size_t(splitsFor<BlockSlice<float>>(vocab)); }

enum class Stage { Stats, TopKOfProbs, Fused };

// One block's arrival at its row's counter (by one thread, after a barrier that ordered the
// block's partial); true in the row's last block to arrive. Each arrival is a release that
// publishes what its block wrote; only the last block acquires, by reading the counter again: the
// value it reads ends the release sequence every other arrival heads, so it synchronizes with all
// of them, and the blocks that are not last skip the acquire's L1 invalidation (`CCTL.IVALL`) of
// their SM. (On an H100, fused back to back: fp16 58.7-60.2% of copy bandwidth, bf16 55.8-57.9%,
// fp32 78.9-80.7%, against 58.5-58.8%, 55.5-56.1% and 77.0-78.1% with one acquire-release arrival
// in every block.) The last block sets the counter back to 0 for the
// next launch: every block of the row is in.
__device__ __forceinline__ bool arriveAtRowCounter(unsigned* counters, int splits) {
  cuda::atomic_ref<unsigned, cuda::thread_scope_device> counter(counters[blockIdx.y]);
  const bool last = counter.fetch_add(1u, cuda::memory_order_release) == unsigned(splits - 1);
  if (last) {
    (void)counter.load(cuda::memory_order_acquire);
    counter.store(0u, cuda::memory_order_relaxed);
  }
  return last;
}

// Block (split, row) publishes its partial; returns true in the last block of the row to arrive,
// which then reads every partial of the row. Block-uniform result.
__device__ bool arriveLast(unsigned* counters, int splits) {
  __shared__ bool last;
  __syncthreads();  // the block's partial is written (by several threads) before thread 0 arrives
  if (threadIdx.x == 0) last = arriveAtRowCounter(counters, splits);
  __syncthreads();  // thread 0's acquire is ordered before every thread's reads of the partials
  return last;
}


// Each of the n candidates' rank among them, handed to ranked(rank, candidate): kRankLanes
// adjacent lanes a candidate, each counting every kRankLanes-th other, their counts added by
// shuffles. Block-uniform (every thread calls it; the loop runs as one over the block). Ties make
// many candidates (bf16 logits: 16-48 a block at the benchmark's uniform [-8, 8] values, against
// about 12 for fp16), and one lane a candidate counted them all in one or two warps while the
// block waited. (On an H100, fused back to back: bf16 60.5-61.5% of copy bandwidth, fp32
// 85.3-86.4%, fp16 60.8-63.1%, against 58.8-60.4%, 83.9-85.6% and 63.2-64.0% with one lane a
// candidate; 2 and 8 lanes, and 4 lanes only above 16 or 24 candidates, are no better.)
constexpr int kRankLanes = 4;
template <class Ranked>
__device__ __forceinline__ void rankCandidates(const Candidate* cand, int n, const Ranked& ranked) {
  const int part = int(threadIdx.x) % kRankLanes;
  for (int base = 0; base < n; base += kThreads / kRankLanes) {
    const int e = base + int(threadIdx.x) / kRankLanes;
    const Candidate c = e < n ? cand[e] : emptyCandidate();
    int rank = 0;
    if (e < n) {
      for (int j = part; j < n; j += kRankLanes) rank += better(cand[j].value, cand[j].index, c.value, c.index) ? 1 : 0;
    }
#pragma unroll
    for (int o = 1; o < kRankLanes; o <<= 1) rank += __shfl_xor_sync(0xffffffffu, rank, o);
    if (e < n && part == 0) ranked(rank, c);
  }
}

// The block's best kMaxTopK elements handed to emit(rank, candidate) for ranks 0..kMaxTopK-1
// (empty candidates where the block has fewer elements), of those every thread appends with
// collect(floor) (its elements ranking at or before floor, each counted in sh.count). Unlike
// selectTopK it ends without a barrier: emit writes straight to the block's partial, which the
// row arrival's barrier orders, so the caller must pass a barrier before sh.count or sh.cand is
// used again (and reset sh.count).
template <class Collect, class Emit>
__device__ void selectTopKInto(const Collect& collect, float bound, BlockShared& sh, const Emit& emit) {
  Candidate floor{bound, INT_MAX};
  for (;;) {
    collect(floor);
    __syncthreads();
    const int count = sh.count;
    const bool overflow = count > kCandidateCap;
    const int n = overflow ? kCandidateCap : count;
    auto ranked = [&](int rank, const Candidate& c) {
      if (!overflow && rank < kMaxTopK) emit(rank, c);
      if (overflow && rank == kMaxTopK - 1) sh.floor = c;
    };
    rankCandidates(sh.cand, n, ranked);
    if (!overflow) {  // block-uniform
      if (int(threadIdx.x) >= n && threadIdx.x < unsigned(kMaxTopK)) emit(int(threadIdx.x), emptyCandidate());
      return;
    }
    __syncthreads();
    floor = sh.floor;
    if (threadIdx.x == 0) sh.count = 0;
    __syncthreads();
  }
}

// The row's merge in the last block to arrive, by its first warp alone: one round of L2 loads
// (a lane holds up to kMergeEntriesPerLane of the partials' kMaxTopK entries and one partial's
// statistics), the best kMaxTopK merged in registers (rowBestByNetwork); no block barriers.
// Needs splits * kMaxTopK <= 32 * kMergeEntriesPerLane.
// (Measured on an H100 on a form staging the vectors in shared memory: fp16 fused 12.8-13.2 us
// under ncu against 14.7-15.1 us with the whole block merging.)
constexpr int kMergeEntriesPerLane = 4;

__device__ __forceinline__ float warpMax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// A row's partials as the merging warp holds them: entry c = lane + 32 e is slot c % kMaxTopK
// (= lane % kMaxTopK) of partial c / kMaxTopK; lane p < splits holds partial p's statistics.
struct MergeInput {
  float value[kMergeEntriesPerLane];
  int index[kMergeEntriesPerLane];
  float part_max = -INFINITY, part_sum = 0.0f;
};

template <Stage kStage>
__device__ MergeInput loadPartials(const Partial* __restrict__ parts, int splits) {
  constexpr bool kStats = kStage != Stage::TopKOfProbs;
  constexpr bool kTopK = kStage != Stage::Stats;
  const int lane = int(threadIdx.x & 31);
  MergeInput in;
#pragma unroll
  for (int e = 0; e < kMergeEntriesPerLane; ++e) {
    const int c = lane + 32 * e;
    const bool has = kTopK && c < splits * kMaxTopK;
    in.value[e] = has ? __ldcg(&parts[c / kMaxTopK].value[c % kMaxTopK]) : -INFINITY;
    in.index[e] = has ? __ldcg(&parts[c / kMaxTopK].index[c % kMaxTopK]) : INT_MAX;
  }
  if (kStats && lane < splits) {
    in.part_max = __ldcg(&parts[lane].max);
    in.part_sum = __ldcg(&parts[lane].sum);
  }
  return in;
}

// The row's best kMaxTopK by a merging network in registers (no shared memory, no ranks): a lane
// group of 8 (lanes 8g..8g+7) holds slot lane % 8 of partials g, g + 4, g + 8 and g + 12, each
// sorted best first. Two sorted lists merge into their best kMaxTopK as the better of each slot
// and the other list's reversed slot (a bitonic sequence), sorted by three half-cleaner steps;
// lists in one group merge first, then groups 16 and 8 lanes apart, and lanes 0..7 end with the
// row's sorted best. (On an H100, fp16 fused: 10.5-10.7 us under ncu against 11.2-11.5 us ranking
// the candidates at or above the partials' floor in shared memory.)
__device__ __forceinline__ Candidate shflXor(const Candidate& c, int lane_mask) {
  return {__shfl_xor_sync(0xffffffffu, c.value, lane_mask), __shfl_xor_sync(0xffffffffu, c.index, lane_mask)};
}
// Sorts a bitonic sequence of kMaxTopK candidates across each 8-lane group, best first.
__device__ __forceinline__ Candidate sortBitonicInGroup(Candidate c) {
  const int slot = int(threadIdx.x % kMaxTopK);
#pragma unroll
  for (int d = kMaxTopK / 2; d > 0; d >>= 1) {
    const Candidate o = shflXor(c, d);
    const bool keep_better = (slot & d) == 0;
    if (keep_better != better(c.value, c.index, o.value, o.index)) c = o;
  }
  return c;
}
// The best kMaxTopK of two sorted lists: `mine` and the one `lane_mask` away (xor kMaxTopK - 1
// reverses a group's slots; a mask below kMaxTopK pairs `mine` with `other` in the same lanes).
__device__ __forceinline__ Candidate mergeBest(const Candidate& mine, const Candidate& other, int lane_mask) {
  const Candidate o = shflXor(other, lane_mask | (kMaxTopK - 1));
  return sortBitonicInGroup(better(mine.value, mine.index, o.value, o.index) ? mine : o);
}
static_assert(kMergeEntriesPerLane == 4 && kMaxTopK == 8, "the network's lane layout");
__device__ Candidate rowBestByNetwork(const MergeInput& in) {
  Candidate c = mergeBest({in.value[0], in.index[0]}, {in.value[1], in.index[1]}, 0);
  if (!__all_sync(0xffffffffu, in.index[2] == INT_MAX && in.index[3] == INT_MAX)) {  // more than 8 partials
    c = mergeBest(c, mergeBest({in.value[2], in.index[2]}, {in.value[3], in.index[3]}, 0), 0);
  }
  c = mergeBest(c, c, 16);
  return mergeBest(c, c, 8);
}

template <Stage kStage>
__device__ void mergeRowInWarp(const MergeInput& in, float2* __restrict__ stats, float* __restrict__ top_p,
                               int* __restrict__ top_i, std::size_t row, int k) {
  constexpr bool kStats = kStage != Stage::TopKOfProbs;
  constexpr bool kTopK = kStage != Stage::Stats;
  const int lane = int(threadIdx.x & 31);
  float row_max = -INFINITY, row_sum = 0.0f;
  if constexpr (kStats) {
    row_max = warpMax(in.part_max);
    row_sum = warpSum(in.part_sum == 0.0f ? 0.0f : in.part_sum * __expf(in.part_max - row_max));
    if (kStage == Stage::Stats && lane == 0) stats[row] = make_float2(row_max, row_sum);
  }
  if constexpr (kTopK) {
    const Candidate best = rowBestByNetwork(in);
    if (lane < k) {
      top_p[row * k + lane] = kStage == Stage::Fused ? __expf(best.value - row_max) / row_sum : best.value;
      top_i[row * k + lane] = best.index;
    }
  }
}

// The row's arrival by warp 0 alone (after a barrier that ordered the block's partial) and, in
// the row's last block, its merge.
template <Stage kStage>
__device__ void arriveAndMergeInWarp(unsigned* __restrict__ counters, int splits, const Partial* __restrict__ row_parts,
                                     float2* __restrict__ stats, float* __restrict__ top_p, int* __restrict__ top_i,
                                     std::size_t row, int k) {
  unsigned last = 0;
  if (threadIdx.x == 0) last = arriveAtRowCounter(counters, splits) ? 1u : 0u;
  // The shuffle synchronizes the warp: lane 0's acquire is ordered before the other lanes' loads.
  if (!__shfl_sync(0xffffffffu, last, 0)) return;
  mergeRowInWarp<kStage>(loadPartials<kStage>(row_parts, splits), stats, top_p, top_i, row, k);
}

// Programmatic dependent launch (launchRowSliceKernel): the blocks of this grid may be resident
// while the previous kernel of the stream still runs. Every read and write of this kernel follows
// the wait, which returns once that kernel has completed and its writes are visible (at once when
// the launch was not programmatic); the next kernel of the stream may then launch, its blocks
// waiting in turn. The launch and block dispatch of one kernel so overlap the tail of the one before.
__device__ __forceinline__ void waitForPreviousGridThenReleaseNext() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// 64 registers a thread: 4 blocks an SM, so the 512 blocks of 64 rows of 128256 fp16 logits are
// all resident at once on 132 SMs.
constexpr int kBlocksPerSm = 4;

template <class T, Stage kStage>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm) rowSliceKernel(const T* __restrict__ in, Partial* __restrict__ partials,
                                                           unsigned* __restrict__ counters, float2* __restrict__ stats,
                                                           float* __restrict__ top_p, int* __restrict__ top_i,
                                                           std::size_t vocab, int k) {
  // The fused kernel of 16-bit logits: a quarter of the exps on the FMA pipe, the vector maxima
  // kept for the marks, the bound from each warp's two largest thread maxima. fp32 (at the target
  // without them) and the unfused kernels go without.
  constexpr bool kNarrowFused = kStage == Stage::Fused && sizeof(T) == 2;
  constexpr int kPolyEvery = kNarrowFused ? 4 : 0;
  using Slice = RegisterSlice<T, 8, kNarrowFused>;
  __shared__ BlockShared sh;
  constexpr bool kStats = kStage != Stage::TopKOfProbs;
  constexpr bool kTopK = kStage != Stage::Stats;
  const int splits = int(gridDim.x);
  const std::size_t row = blockIdx.y;
  waitForPreviousGridThenReleaseNext();
  if (threadIdx.x == 0) sh.count = 0;
  if (threadIdx.x < kMaxTopK) sh.winners[threadIdx.x] = emptyCandidate();

  Slice slice;
  slice.load(in + row * vocab, vocab, blockIdx.x);
  Partial* mine_out = partials + row * splits + blockIdx.x;
  const Partial* row_parts = partials + row * splits;
  {
    // Exps against the thread's own reference as the vectors arrive, then the block maximum
    // (and the top-k bound, from maxima alone) with one barrier, and one ex2 a thread to bring
    // its sum to the block maximum.
    const OnlineExpSum online = slice.template online<kStats, kPolyEvery>();
    const Reduced red = kNarrowFused ? blockReduceTop2(online.max, sh) : blockReduce<false>(online.max, 0.0f, -INFINITY, sh);
    if constexpr (kStats) {
      const float warp_sum = warpSum(red.max == -INFINITY ? 0.0f : online.sumAgainst(red.max));  // all -inf: 0
      if ((threadIdx.x & 31) == 0) sh.warp_sum[threadIdx.x >> 5] = warp_sum;
    }
    if (threadIdx.x == 0) mine_out->max = red.max;
    // The selection's first barrier also orders the warp sums before thread 0 adds them.
    if constexpr (kTopK) {
      selectTopKInto(
          [&](const Candidate& floor) {
            slice.forEachAtLeast(floor.value, [&](float v, int i) {
              if (better(floor.value, floor.index, v, i)) return;
              const int slot = atomicAdd(&sh.count, 1);
              if (slot < kCandidateCap) sh.cand[slot] = {v, i};
            });
          },
          red.bound, sh,
          [&](int rank, const Candidate& c) {
            mine_out->value[rank] = c.value;
            mine_out->index[rank] = c.index;
          });
    } else {
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      float sum = 0.0f;
      if constexpr (kStats) {
#pragma unroll
        for (int w = 0; w < kWarps; ++w) sum += sh.warp_sum[w];
      }
      mine_out->sum = sum;
    }
  }
  if (splits * kMaxTopK <= 32 * kMergeEntriesPerLane) {  // block-uniform
    // The row's arrival and, in its last block, the merge are warp 0's: the other warps leave as
    // soon as the block's partial is written (on an H100, fp16 fused: 11.6-11.7 us under ncu
    // against 12.0-12.4 us with all warps waiting for thread 0's arrival).
    __syncthreads();  // the block's partial is written before its arrival
    if (threadIdx.x >= 32) return;
    arriveAndMergeInWarp<kStage>(counters, splits, row_parts, stats, top_p, top_i, row, k);
    return;
  }
  if (!arriveLast(counters, splits)) return;

  // Last block of a row of many splits: the whole block merges the row's partials (L2 reads:
  // other SMs wrote them).
  if (threadIdx.x == 0) sh.count = 0;  // the block's selection left its count; the barrier below orders this
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

// Programmatic stream serialization needs compute capability 9.0 (the device current at the first
// launch decides for the process).
bool programmaticLaunchSupported() {
  static const bool supported = [] {
    int device = 0, major = 0;
    return cudaGetDevice(&device) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess && major >= 9;
  }();
  return supported;
}

// The row-slice kernels go by programmatic dependent launch (waitForPreviousGridThenReleaseNext):
// back to back, and behind the LM head in a decode step, each one's launch and block dispatch
// overlap the previous kernel's tail. fprof records the attribute and counts such a kernel's time
// from its predecessor's end (docs/analysis.md).
template <class T, Stage kStage>
void launchRowSliceKernel(const T* in, const ScratchView& v, float* top_p, int* top_i, std::size_t rows, std::size_t vocab,
                          int k, cudaStream_t s) {
  using Slice = BlockSlice<T>;
  cudaLaunchConfig_t config{};
  config.gridDim = gridFor<Slice>(rows, vocab);
  config.blockDim = dim3(kThreads);
  config.stream = s;
  cudaLaunchAttribute programmatic{};
  programmatic.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  programmatic.val.programmaticStreamSerializationAllowed = 1;
  if (programmaticLaunchSupported()) {
    config.attrs = &programmatic;
    config.numAttrs = 1;
  }
  CUDA_CHECK(cudaLaunchKernelEx(&config, rowSliceKernel<T, kStage>, in, v.partials, v.counters, v.stats, top_p, top_i,
                                vocab, k));
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
  FPROF_DISPATCH_DTYPE(t, T, launchRowSliceKernel<T, Stage::Stats>(static_cast<const T*>(logits), v, nullptr, nullptr, rows, vocab, 0, s));
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
  launchRowSliceKernel<float, Stage::TopKOfProbs>(probs, view(scratch, rows, vocab), top_p, top_i, rows, vocab, k, s);
}

void launchSoftmaxTopKFused(DType t, const void* logits, float* top_p, int* top_i, std::size_t rows,
                            std::size_t vocab, int k, void* scratch, cudaStream_t s) {
  checkK(vocab, k);
  if (rows == 0) return;
  const ScratchView v = view(scratch, rows, vocab);
  FPROF_DISPATCH_DTYPE(t, T, launchRowSliceKernel<T, Stage::Fused>(static_cast<const T*>(logits), v, top_p, top_i, rows, vocab, k, s));
}

}  // namespace fprof::refk
