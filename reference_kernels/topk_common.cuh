// The per-element pieces of softmax + top-k shared by topk.cu (the block kernels, any GPU) and
// topk_sm90.cu (the streaming kernel for Hopper): the candidate order, merging of (max, sum of
// exp) statistics, and 16-byte vectors of logits widened, maximized and summed as exps.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common.cuh"
#include "mma_sync.cuh"

namespace fprof::refk::topk {

// Larger value first; among equal values the lower index, matching the CPU reference.
__device__ __forceinline__ bool better(float v, int i, float w, int j) { return v > w || (v == w && i < j); }

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

template <class T> __device__ __forceinline__ uint4 negInfVector() {
  if constexpr (sizeof(T) == 4) return make_uint4(0xff800000u, 0xff800000u, 0xff800000u, 0xff800000u);
  else if constexpr (std::is_same_v<T, __half>) return make_uint4(0xfc00fc00u, 0xfc00fc00u, 0xfc00fc00u, 0xfc00fc00u);
  else return make_uint4(0xff80ff80u, 0xff80ff80u, 0xff80ff80u, 0xff80ff80u);
}

constexpr float kLog2e = 1.4426950408889634f;

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
    s0 += fastExp2(fmaf(v[e], kLog2e, -c));
    s1 += fastExp2(fmaf(v[e + 1], kLog2e, -c));
  }
  return s0 + s1;
}

}  // namespace fprof::refk::topk
