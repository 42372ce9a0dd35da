// Fused attention for Hopper (sm_90a only), FlashAttention-3 style: softmax(scale q k^T) v with
// head_dim 64, fp16/bf16, optional causal mask, one CTA per (query tile, batch-head slice).
//
// A producer warpgroup (one thread of it) copies the CTA's query tile once and the key and value
// tiles of 128 rows through a ring of shared memory with TMA (128-byte swizzle, 3-D tensor maps
// [slice, row, 64], rows past the end zero-filled), each tile completing on its own mbarrier.
// Each consumer warpgroup (three by default: 192 query rows a CTA) owns 64 query rows: S = Q K^T
// by wgmma m64n128k16 with both operands in shared memory, online softmax on the accumulators in
// registers (base-2 exponent with the scale folded into one FMA, row max and sum over the four
// lanes of a row), P rounded to fp16/bf16 in registers where the accumulator layout is already
// wgmma's register A layout, and O += P V by wgmma m64n64k16 with P from registers and V from
// shared memory (transposed B: V is [kv, d]). The next tile's Q K^T is issued before the current
// P V, so a tile's softmax runs while the tensor cores work on products, and the warpgroups take
// turns issuing theirs (ping-pong). Causal tiles past a query tile's last row are never loaded, a
// warpgroup skips the tiles past its own last row, and only tiles crossing the diagonal (and a
// last partial tile) are masked. On an H100, bh64 q2048 d64 fp16: 0.180 ms (382 TFLOP/s),
// causal 0.120 ms, where the mma.sync kernel of attention.cu takes 0.274 / 0.172 ms.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "kernels.cuh"
#include "mma_sync.cuh"
#include "sm90.cuh"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "attention_sm90.cu is compiled for sm_90a only (see reference_kernels/CMakeLists.txt)"
#endif

namespace fprof::refk {
namespace {

using namespace sm90;

constexpr int kHeadDim = 64;                              // one 128-byte swizzle row of halves
constexpr int kBlockN = 128;                              // key/value rows a tile
constexpr unsigned kWgRowsBytes = 64u * kHeadDim * 2u;    // one warpgroup's 64 query rows
constexpr unsigned kKvTileBytes = unsigned(kBlockN) * kHeadDim * 2u;
constexpr int kKvTileElems = kBlockN * kHeadDim;

// A producer warpgroup, then kConsumers warpgroups of 64 query rows; kStages key/value tiles in
// flight.
template <int kConsumers, int kStages> struct FlashConfig {
  static constexpr int kBlockM = 64 * kConsumers;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  // Registers a thread after setmaxnreg: the producer gives its share to the consumers. Three
  // consumers need the 160: the next tile's scores (64), the probabilities (32) and the output (32)
  // are live at once; with fewer, ptxas serializes the wgmmas.
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = kConsumers == 2 ? 240 : 160;
  static constexpr std::size_t kSmemBytes = 1024 + std::size_t(kConsumers) * kWgRowsBytes +
                                            2u * kStages * kKvTileBytes + (1 + 4 * kStages) * sizeof(std::uint64_t);
};
static_assert(FlashConfig<3, 4>::kSmemBytes <= 232448, "over 227 KB");

struct FlashArgs {
  int sq, skv, offset;  // offset = skv - sq: query row r sees keys <= r + offset when causal
  int q_tiles;
  bool causal;
  float scale_log2;
  std::size_t o_batch_stride;
};

#define FPROF_WGMMA_M64N128K16_SS(TYPE)                                                        \
  asm volatile(                                                                                \
      "{\n"                                                                                    \
      ".reg .pred p;\n"                                                                        \
      "setp.ne.b32 p, %66, 0;\n"                                                               \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE " {"                         \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "  \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "  \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "  \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"  \
      "}, %64, %65, p, 1, 1, 0, 0;\n"                                                          \
      "}\n"                                                                                    \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),  \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),  \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),  \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),  \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),  \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),  \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),  \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])  \
      : "l"(desc_a), "l"(desc_b), "r"(scale_d))

#define FPROF_WGMMA_M64N64K16_RS(TYPE)                                                         \
  asm volatile(                                                                                \
      "{\n"                                                                                    \
      ".reg .pred p;\n"                                                                        \
      "setp.ne.b32 p, %37, 0;\n"                                                               \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE " {"                          \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "  \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"  \
      "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n"                                           \
      "}\n"                                                                                    \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),  \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),  \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),  \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])  \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1))

template <class T>
__device__ __forceinline__ void wgmmaQK(float (&d)[64], std::uint64_t desc_a, std::uint64_t desc_b, int scale_d) {
  if constexpr (std::is_same_v<T, __half>) FPROF_WGMMA_M64N128K16_SS("f16");
  else FPROF_WGMMA_M64N128K16_SS("bf16");
}
template <class T>
__device__ __forceinline__ void wgmmaPV(float (&d)[32], const std::uint32_t (&a)[4], std::uint64_t desc_b) {
  if constexpr (std::is_same_v<T, __half>) FPROF_WGMMA_M64N64K16_RS("f16");
  else FPROF_WGMMA_M64N64K16_RS("bf16");
}

__device__ __forceinline__ void wgmmaFence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmmaCommit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Pins registers that wgmma writes behind the compiler's back at this point of the program.
template <int N> __device__ __forceinline__ void fenceRegisters(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}


// Q K^T of one key tile: 4 k-steps over the head dimension, the first overwriting the scores.
template <class T>
__device__ __forceinline__ void issueScores(float (&s)[64], const T* q_wg, const T* k_tile) {
#pragma unroll
  for (int kk = 0; kk < kHeadDim / 16; ++kk) {
    wgmmaQK<T>(s, smemDescriptor(q_wg + kk * 16), smemDescriptor(k_tile + kk * 16), kk > 0 ? 1 : 0);
  }
}

// O += P V of one value tile: 8 k-steps of 16 key rows (2048 bytes of the tile each).
template <class T>
__device__ __forceinline__ void issueProbsTimesV(float (&o)[32], const std::uint32_t (&p)[32], const T* v_tile) {
#pragma unroll
  for (int kk = 0; kk < kBlockN / 16; ++kk) {
    const std::uint32_t a[4] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2], p[4 * kk + 3]};
    wgmmaPV<T>(o, a, smemDescriptor(v_tile + kk * 16 * kHeadDim));
  }
}

// Online softmax of one score tile in the accumulator layout: s[4j + 2h + c] is row g + 8h of the
// warp's 16 rows, key 8j + 2t + c of the tile (g = lane / 4, t = lane % 4). Overwrites s with the
// probabilities, updates the running max (base 2, scaled) and the lane's partial sums, returns the
// factor the output accumulated so far must be scaled by. limit[h]: keys >= limit are masked.
template <bool kMask>
__device__ __forceinline__ void softmaxTile(float (&s)[64], float (&m)[2], float (&l)[2], float (&alpha)[2],
                                            const int (&limit)[2], int key0, float scale_log2) {
  if constexpr (kMask) {
#pragma unroll
    for (int j = 0; j < 16; ++j) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        if (key0 + 8 * j + (c & 1) >= limit[c >> 1]) s[4 * j + c] = -INFINITY;
      }
    }
  }
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int j = 0; j < 16; ++j) {
#pragma unroll
    for (int c = 0; c < 4; ++c) mx[c >> 1] = fmaxf(mx[c >> 1], s[4 * j + c]);
  }
  float m_use[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
    const float m_new = fmaxf(m[h], mx[h] * scale_log2);  // scale > 0, so the max commutes
    // A row with every key masked so far keeps m = -inf; subtracting 0 then gives p = 0, alpha = 0.
    m_use[h] = m_new == -INFINITY ? 0.0f : m_new;
    alpha[h] = fastExp2(m[h] - m_use[h]);
    m[h] = m_new;
  }
  float sum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int j = 0; j < 16; ++j) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const float p = fastExp2(fmaf(s[4 * j + c], scale_log2, -m_use[c >> 1]));
      s[4 * j + c] = p;
      sum[c >> 1] += p;
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) l[h] = l[h] * alpha[h] + sum[h];
}

template <class T>
__device__ __forceinline__ void toOperand(std::uint32_t (&p)[32], const float (&s)[64]) {
#pragma unroll
  for (int i = 0; i < 32; ++i) p[i] = pack2<T>(s[2 * i], s[2 * i + 1]);
}

__device__ __forceinline__ void scaleRows(float (&o)[32], const float (&alpha)[2]) {
#pragma unroll
  for (int i = 0; i < 32; ++i) o[i] *= alpha[(i >> 1) & 1];
}

// Ping-pong between consumer warpgroups: warpgroup w issues its products only after
// warpgroup w - 1 has issued its own, so one warpgroup's softmax runs while the tensor cores work
// on another's products. Named barrier 1 + w (0 is __syncthreads): warpgroup w waits there, its
// predecessor arrives, 256 threads in all.
__device__ __forceinline__ void waitTurn(int wg) {
  asm volatile("bar.sync %0, 256;\n" ::"r"(1 + wg) : "memory");
}
template <int kConsumers> __device__ __forceinline__ void passTurn(int wg) {
  asm volatile("bar.arrive %0, 256;\n" ::"r"(1 + (wg + 1) % kConsumers) : "memory");
}

template <class T, int kConsumers, int kStages>
__global__ void __launch_bounds__(FlashConfig<kConsumers, kStages>::kThreads, 1)
    flashSm90Kernel(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,
                    const __grid_constant__ CUtensorMap map_v, T* __restrict__ o, FlashArgs args) {
  using Config = FlashConfig<kConsumers, kStages>;
  extern __shared__ unsigned char smem_raw[];
  const std::uintptr_t base = (reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023);
  T* q_tile = reinterpret_cast<T*>(base);
  T* k_tiles = q_tile + kConsumers * 64 * kHeadDim;
  T* v_tiles = k_tiles + kStages * kKvTileElems;
  std::uint64_t* q_full = reinterpret_cast<std::uint64_t*>(v_tiles + kStages * kKvTileElems);
  std::uint64_t* k_full = q_full + 1;
  std::uint64_t* v_full = k_full + kStages;
  std::uint64_t* k_empty = v_full + kStages;
  std::uint64_t* v_empty = k_empty + kStages;

  // The query tiles of one slice are neighbours in the launch order, so the CTAs running at once
  // read the same keys and values from L2 (ncu, H100: 80% L2 hits and 9% of DRAM bandwidth; with
  // the slices innermost 52% and 36%, the keys and values of all slices in flight at once).
  // Causal query tiles see more keys the later they are: a slice's heaviest start first.
  const int bh = int(blockIdx.x) / args.q_tiles;
  const int q_in_slice = int(blockIdx.x) % args.q_tiles;
  const int q_index = args.causal ? args.q_tiles - 1 - q_in_slice : q_in_slice;
  const int q0 = q_index * Config::kBlockM;
  const int kv_end = args.causal ? min(args.skv, q0 + Config::kBlockM + args.offset) : args.skv;
  const int n_tiles = (kv_end + kBlockN - 1) / kBlockN;
  const int warpgroup = int(threadIdx.x) / 128;

  if (threadIdx.x == 0) {
    barrierInit(q_full, 1);
    for (int s = 0; s < kStages; ++s) {
      barrierInit(&k_full[s], 1);
      barrierInit(&v_full[s], 1);
      barrierInit(&k_empty[s], kConsumers * 4);  // lane 0 of every consumer warp
      barrierInit(&v_empty[s], kConsumers * 4);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warpgroup == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Config::kProducerRegs));
    if (threadIdx.x != 0) return;
    barrierExpectBytes(q_full, kConsumers * kWgRowsBytes);
    for (int w = 0; w < kConsumers; ++w) tmaLoad3d(q_tile + w * 64 * kHeadDim, &map_q, 0, q0 + 64 * w, bh, q_full);
    for (int j = 0; j < n_tiles; ++j) {
      const int s = j % kStages;
      const unsigned phase = unsigned(j / kStages) & 1u;
      barrierWait(&k_empty[s], phase ^ 1u);
      barrierExpectBytes(&k_full[s], kKvTileBytes);
      tmaLoad3d(k_tiles + s * kKvTileElems, &map_k, 0, j * kBlockN, bh, &k_full[s]);
      barrierWait(&v_empty[s], phase ^ 1u);
      barrierExpectBytes(&v_full[s], kKvTileBytes);
      tmaLoad3d(v_tiles + s * kKvTileElems, &map_v, 0, j * kBlockN, bh, &v_full[s]);
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Config::kConsumerRegs));
  const int wg = warpgroup - 1;
  const int lane = int(threadIdx.x) & 31, warp_in_group = (int(threadIdx.x) / 32) & 3;
  const int g = lane / 4, t = lane % 4;
  const T* q_wg = q_tile + wg * 64 * kHeadDim;
  const int wg_row0 = q0 + 64 * wg;                      // this warpgroup's first query row
  const int row0 = wg_row0 + 16 * warp_in_group + g;     // this lane's rows: row0, row0 + 8
  int limit[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) limit[h] = args.causal ? min(args.skv, row0 + 8 * h + args.offset + 1) : args.skv;
  // Tiles from here on cross the diagonal or the end of the keys for some row of this warpgroup.
  const int first_masked =
      args.causal ? min(args.skv / kBlockN, max(0, (wg_row0 + args.offset + 1) / kBlockN)) : args.skv / kBlockN;
  // Tiles this warpgroup multiplies: none when all its rows are past the last query, none past its
  // last row's diagonal. It still waits for and frees every tile of the CTA and takes every turn.
  const int wg_kv_end =
      wg_row0 >= args.sq ? 0 : (args.causal ? min(args.skv, wg_row0 + 64 + args.offset) : args.skv);
  const int wg_tiles = (wg_kv_end + kBlockN - 1) / kBlockN;

  float s[64], o_acc[32];
  std::uint32_t p[32];
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, alpha[2];
#pragma unroll
  for (int i = 0; i < 32; ++i) o_acc[i] = 0.0f;
  const auto softmax = [&](int j) {
    const int key0 = j * kBlockN + 2 * t;
    if (j >= first_masked) softmaxTile<true>(s, m, l, alpha, limit, key0, args.scale_log2);
    else softmaxTile<false>(s, m, l, alpha, limit, key0, args.scale_log2);
  };

  // Every warpgroup takes n_tiles + 1 turns (the scores of tile 0, then tile j's scores with tile
  // j - 1's P V, then the last P V); the last warpgroup opens the first turn and skips its last pass.
  const auto wait_turn = [&] { waitTurn(wg); };
  const auto pass_turn = [&](bool last) {
    if (!(last && wg == kConsumers - 1)) passTurn<kConsumers>(wg);
  };
  if (wg == kConsumers - 1) passTurn<kConsumers>(wg);

  barrierWait(q_full, 0);
  barrierWait(&k_full[0], 0);
  wait_turn();
  if (wg_tiles > 0) {
    wgmmaFence();
    issueScores<T>(s, q_wg, k_tiles);
    wgmmaCommit();
    pass_turn(false);
    wgmmaWait<0>();
    fenceRegisters(s);
    if (lane == 0) barrierArrive(&k_empty[0]);
    softmax(0);
    toOperand<T>(p, s);
  } else {
    pass_turn(false);
    if (lane == 0) barrierArrive(&k_empty[0]);
  }

  for (int j = 1; j < n_tiles; ++j) {
    const int sk = j % kStages, sv = (j - 1) % kStages;
    barrierWait(&k_full[sk], unsigned(j / kStages) & 1u);
    barrierWait(&v_full[sv], unsigned((j - 1) / kStages) & 1u);
    wait_turn();
    if (j < wg_tiles) {
      wgmmaFence();
      issueScores<T>(s, q_wg, k_tiles + sk * kKvTileElems);
      wgmmaCommit();
      issueProbsTimesV<T>(o_acc, p, v_tiles + sv * kKvTileElems);
      wgmmaCommit();
      pass_turn(false);
      wgmmaWait<1>();  // the scores are done; P V runs on during the softmax
      fenceRegisters(s);
      if (lane == 0) barrierArrive(&k_empty[sk]);
      softmax(j);
      wgmmaWait<0>();
      fenceRegisters(o_acc);
      if (lane == 0) barrierArrive(&v_empty[sv]);
      scaleRows(o_acc, alpha);
      toOperand<T>(p, s);
    } else {
      // Past this warpgroup's last tile: its last P V once, then only the barriers.
      if (j == wg_tiles) {
        wgmmaFence();
        issueProbsTimesV<T>(o_acc, p, v_tiles + sv * kKvTileElems);
        wgmmaCommit();
      }
      pass_turn(false);
      wgmmaWait<0>();
      fenceRegisters(o_acc);
      if (lane == 0) {
        barrierArrive(&k_empty[sk]);
        barrierArrive(&v_empty[sv]);
      }
    }
  }
  {
    const int sv = (n_tiles - 1) % kStages;
    barrierWait(&v_full[sv], unsigned((n_tiles - 1) / kStages) & 1u);
    wait_turn();
    if (wg_tiles == n_tiles) {
      wgmmaFence();
      issueProbsTimesV<T>(o_acc, p, v_tiles + sv * kKvTileElems);
      wgmmaCommit();
    }
    pass_turn(true);
    wgmmaWait<0>();
    fenceRegisters(o_acc);
    if (lane == 0) barrierArrive(&v_empty[sv]);
  }

  // o[4j + 2h + c]: row row0 + 8h, column 8j + 2t + c.
  T* ob = o + std::size_t(bh) * args.o_batch_stride;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = l[h];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int row = row0 + 8 * h;
    if (row >= args.sq) continue;
    const float inv = 1.0f / sum;
#pragma unroll
    for (int j = 0; j < kHeadDim / 8; ++j) {
      *reinterpret_cast<std::uint32_t*>(ob + std::size_t(row) * kHeadDim + 8 * j + 2 * t) =
          pack2<T>(o_acc[4 * j + 2 * h] * inv, o_acc[4 * j + 2 * h + 1] * inv);
    }
  }
}

// ---- host side ----
// [slices, rows, 64] with slices `slice_stride` elements apart, in boxes of box_rows x 64.
CUtensorMap makeSliceMap(DType t, const void* p, std::size_t slices, std::size_t rows, std::size_t slice_stride,
                         unsigned box_rows) {
  CUtensorMap map{};
  const cuuint64_t dims[3] = {cuuint64_t(kHeadDim), cuuint64_t(rows), cuuint64_t(slices)};
  const cuuint64_t strides[2] = {cuuint64_t(kHeadDim * 2), cuuint64_t(slice_stride * 2)};
  const cuuint32_t box[3] = {cuuint32_t(kHeadDim), cuuint32_t(box_rows), 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUtensorMapDataType type = t == DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUresult r = encodeFunction()(&map, type, 3, const_cast<void*>(p), dims, strides, box, elem_strides,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("cuTensorMapEncodeTiled failed: " + std::to_string(int(r)));
  return map;
}

const CUtensorMap& cachedSliceMap(DType t, const void* p, std::size_t slices, std::size_t rows,
                                  std::size_t slice_stride, unsigned box_rows) {
  return cachedTensorMap({int(t), p, slices, rows, slice_stride, box_rows},
                         [&] { return makeSliceMap(t, p, slices, rows, slice_stride, box_rows); });
}

// FPROF_REF_FLASH_SM90_ROWS=128|192: query rows a CTA (2 or 3 consumer warpgroups), for tuning
// runs. 192 by default: 0.180 vs 0.206 ms (H100, bh64 q2048 d64 fp16), fewer CTAs reading each
// slice's keys and values.
int consumersFromEnvironment() {
  static const int consumers = [] {
    const char* v = std::getenv("FPROF_REF_FLASH_SM90_ROWS");
    return v != nullptr && std::string(v) == "128" ? 2 : 3;
  }();
  return consumers;
}
// FPROF_REF_FLASH_SM90_STAGES=2|4: key/value tiles in flight (2 by default: 4 measured the same,
// the tiles come from L2).
int stagesFromEnvironment() {
  static const int stages = [] {
    const char* v = std::getenv("FPROF_REF_FLASH_SM90_STAGES");
    return v != nullptr && std::string(v) == "4" ? 4 : 2;
  }();
  return stages;
}

template <class T, int kConsumers, int kStages>
void launchTyped(DType t, const AttentionShape& a, const void* q, const void* k, const void* v, void* o,
                 cudaStream_t s) {
  using Config = FlashConfig<kConsumers, kStages>;
  static bool attribute_set = false;  // per instance; the device's limit is the same for every launch
  if (!attribute_set) {
    CUDA_CHECK(cudaFuncSetAttribute(flashSm90Kernel<T, kConsumers, kStages>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(Config::kSmemBytes)));
    attribute_set = true;
  }
  const CUtensorMap& mq = cachedSliceMap(t, q, a.batch_heads, a.sq, a.q_batch_stride, 64);
  const CUtensorMap& mk = cachedSliceMap(t, k, a.batch_heads, a.skv, a.kv_batch_stride, kBlockN);
  const CUtensorMap& mv = cachedSliceMap(t, v, a.batch_heads, a.skv, a.kv_batch_stride, kBlockN);
  FlashArgs args{};
  args.sq = int(a.sq);
  args.skv = int(a.skv);
  args.offset = int(a.skv - a.sq);
  args.q_tiles = int((a.sq + Config::kBlockM - 1) / Config::kBlockM);
  args.causal = a.causal;
  args.scale_log2 = a.scale * 1.4426950408889634f;
  args.o_batch_stride = a.o_batch_stride;
  const unsigned grid = unsigned(a.batch_heads) * unsigned(args.q_tiles);
  flashSm90Kernel<T, kConsumers, kStages><<<grid, Config::kThreads, Config::kSmemBytes, s>>>(mq, mk, mv, static_cast<T*>(o), args);
  CUDA_CHECK_LAUNCH(flashSm90Kernel);
}

}  // namespace

bool flashSm90Usable(DType t, const AttentionShape& a, const void* q, const void* k, const void* v, const void* o) {
  const auto aligned16 = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  return t != DType::F32 && sm90::deviceInfo().hopper && a.head_dim == std::size_t(kHeadDim) && a.sq <= a.skv &&
         a.skv < (std::size_t(1) << 30) && a.batch_heads * ((a.sq + 127) / 128) < (std::size_t(1) << 31) && a.q_batch_stride % 8 == 0 &&
         a.kv_batch_stride % 8 == 0 && aligned16(q) && aligned16(k) && aligned16(v) && aligned16(o);
}

void launchFlashAttentionSm90(DType t, const AttentionShape& a, const void* q, const void* k, const void* v, void* o,
                              cudaStream_t s) {
  if (a.batch_heads == 0 || a.sq == 0) return;
  if (t == DType::F32) throw std::invalid_argument("the Hopper attention kernel takes fp16 or bf16");
  const bool three = consumersFromEnvironment() == 3, four = stagesFromEnvironment() == 4;
  const auto run = [&](auto tag) {
    using T = decltype(tag);
    if (three) {
      if (four) launchTyped<T, 3, 4>(t, a, q, k, v, o, s);
      else launchTyped<T, 3, 2>(t, a, q, k, v, o, s);
    } else {
      if (four) launchTyped<T, 2, 4>(t, a, q, k, v, o, s);
      else launchTyped<T, 2, 2>(t, a, q, k, v, o, s);
    }
  };
  if (t == DType::F16) run(__half{});
  else run(__nv_bfloat16{});
}

}  // namespace fprof::refk
