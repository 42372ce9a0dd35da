// Hopper GEMM with fused epilogues: y[m, n] = epi(x[m, k] * w[n, k]^T + bias[n]) for fp16/bf16,
// built for sm_90a only (wgmma and setmaxnreg need the arch-specific target).
//
// Persistent, warp-specialized: one producer warpgroup (a single thread issues the bulk tensor
// copies, TMA, of 128x64 x tiles and 256x64 w tiles into a kStages-deep ring of shared memory,
// each stage completing on a "full" mbarrier) and two consumer warpgroups (each multiplies its 64
// rows of the 128x256 output tile with wgmma m64n256k16 from shared memory, 128 fp32
// accumulators a thread, and frees the stage on an "empty" mbarrier once its wgmmas are done).
// The producer runs ahead into the next tile while the consumers apply bias + activation in
// registers, stage the tile in shared memory and hand it to TMA stores, which drain while the
// consumers start the next tile. Tiles are visited in groups of kGroupM row tiles so that the
// CTAs running at once share their x and w tiles in L2. Measured at 96.5-110.5% of cuBLASLt
// (bench/RESULTS.md, "The Hopper GEMM against cuBLASLt").
#include <algorithm>
#include <cstdlib>
#include <string>

#include "gemm_epilogue.cuh"
#include "kernels.cuh"
#include "sm90.cuh"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "gemm_sm90.cu is compiled for sm_90a only (see reference_kernels/CMakeLists.txt)"
#endif

namespace fprof::refk {
namespace {

using namespace sm90;

constexpr int kBm = 128, kBn = 256, kBk = 64;  // kBk: 64 halves = one 128-byte swizzle row
constexpr int kConsumers = 2;
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kGroupM = 16;
constexpr int kATileElems = kBm * kBk, kBTileElems = kBn * kBk;
constexpr unsigned kStageBytes = unsigned(kATileElems + kBTileElems) * 2u;
// Output staging for the TMA-store epilogue: each consumer's 64 x 256 half tile as four 64 x 64
// boxes in the 128-byte swizzle (conflict-free writes from the accumulator layout).
constexpr int kBoxCols = 64, kBoxes = kBn / kBoxCols;
constexpr unsigned kBoxBytes = 64u * kBoxCols * 2u, kStagingBytes = kConsumers * kBoxes * kBoxBytes;

// Two epilogues: kTmaStore stages the tile in shared memory and writes it with bulk tensor
// stores (the consumers go on to the next tile while the copy engine drains it; 3 stages leave
// room for the staging), otherwise each thread stores its accumulator pairs (4 stages).
template <bool kTmaStore> struct Config {
  static constexpr int kStages = kTmaStore ? 3 : 4;
  // 1024-byte alignment for the 128-byte swizzle atoms, the ring, the staging, the barriers.
  static constexpr std::size_t kSmemBytes = 1024 + std::size_t(kStages) * kStageBytes +
                                            (kTmaStore ? kStagingBytes : 0) + 2 * kStages * sizeof(std::uint64_t);
};
static_assert(Config<true>::kSmemBytes <= 232448 && Config<false>::kSmemBytes <= 232448, "over 227 KB");

// d[0..127] += A(desc_a) * B(desc_b)^T for one m64n256k16 step (both operands K-major in
// shared memory, 128-byte swizzle), fp32 accumulators; TYPE is f16 or bf16.
#define FPROF_WGMMA_M64N256K16(TYPE)                                                          \
  asm volatile(                                                                               \
      "{\n"                                                                                   \
      ".reg .pred p;\n"                                                                       \
      "setp.ne.b32 p, %130, 0;\n"                                                             \
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE " {"                        \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "  \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "  \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "  \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "  \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "  \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "  \
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "  \
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127},"  \
      " %128, %129, p, 1, 1, 0, 0;\n"                                                       \
      "}\n"                                                                                   \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),  \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),  \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),  \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),  \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),  \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),  \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),  \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),  \
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),  \
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),  \
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),  \
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),  \
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),  \
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),  \
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),  \
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])  \
      : "l"(desc_a), "l"(desc_b), "r"(1))

// Pins the accumulators at this point of the program: the compiler must not move their reads
// or writes across it (wgmma writes them asynchronously, behind the compiler's back).
__device__ __forceinline__ void fenceAccumulators(float (&d)[128]) {
#pragma unroll
  for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Barrier over the 128 threads of one consumer warpgroup (ids 1.., 0 is __syncthreads).
__device__ __forceinline__ void consumerBarrier(int consumer) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + consumer) : "memory");
}

// Hardware tanh (sm_75+): about 2^-11 relative error, far under fp16/bf16 rounding.
__device__ __forceinline__ float tanhFast(float v) {
  float r;
  asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}
template <Epilogue E> __device__ __forceinline__ float activateFast(float v) {
  if constexpr (E == Epilogue::Relu || E == Epilogue::BiasRelu) return fmaxf(v, 0.0f);
  else if constexpr (E == Epilogue::BiasGelu) {
    return 0.5f * v * (1.0f + tanhFast(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  } else if constexpr (E == Epilogue::BiasSilu) return __fdividef(v, 1.0f + __expf(-v));
  else return v;
}
__host__ __device__ constexpr bool hasBias(Epilogue e) {
  return e == Epilogue::Bias || e == Epilogue::BiasRelu || e == Epilogue::BiasGelu || e == Epilogue::BiasSilu;
}

template <class T>
__device__ __forceinline__ void wgmmaStep(float (&d)[128], std::uint64_t desc_a, std::uint64_t desc_b) {
  if constexpr (std::is_same_v<T, __half>) FPROF_WGMMA_M64N256K16("f16");
  else FPROF_WGMMA_M64N256K16("bf16");
}

struct TileCoord {
  int m, n;
};
__device__ __forceinline__ TileCoord tileOf(int id, int tiles_m, int tiles_n) {
  const int span = kGroupM * tiles_n;
  const int group = id / span, first_m = group * kGroupM;
  const int size_m = min(tiles_m - first_m, kGroupM);
  const int in_group = id % span;
  return {first_m + in_group % size_m, in_group / size_m};
}

template <class T> __device__ __forceinline__ std::uint32_t packPair(float a, float b) {
  const T pair[2] = {fromFloat<T>(a), fromFloat<T>(b)};
  return *reinterpret_cast<const std::uint32_t*>(pair);
}

template <class T, Epilogue E, bool kTmaStore>
__global__ void __launch_bounds__(kThreads, 1)
    gemmSm90Kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                   const __grid_constant__ CUtensorMap map_y, const T* __restrict__ bias, T* __restrict__ y, int m,
                   int n, int k) {
  constexpr int kStages = Config<kTmaStore>::kStages;
  extern __shared__ unsigned char smem_raw[];
  const std::uintptr_t base = (reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023);
  T* a_tiles = reinterpret_cast<T*>(base);
  T* b_tiles = a_tiles + kStages * kATileElems;
  unsigned char* staging = reinterpret_cast<unsigned char*>(b_tiles + kStages * kBTileElems);
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(staging + (kTmaStore ? kStagingBytes : 0));
  std::uint64_t* empty = full + kStages;

  const int tiles_m = (m + kBm - 1) / kBm, tiles_n = (n + kBn - 1) / kBn;
  const int tiles = tiles_m * tiles_n;
  const int k_tiles = (k + kBk - 1) / kBk;
  const int warpgroup = int(threadIdx.x) / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      barrierInit(&full[s], 1);
      barrierInit(&empty[s], kConsumers * 4);  // lane 0 of every consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warpgroup == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n");
    if (threadIdx.x != 0) return;
    int it = 0;  // stage use counter, continued across tiles
    for (int tile = int(blockIdx.x); tile < tiles; tile += int(gridDim.x)) {
      const TileCoord tc = tileOf(tile, tiles_m, tiles_n);
      for (int kt = 0; kt < k_tiles; ++kt, ++it) {
        const int s = it % kStages;
        barrierWait(&empty[s], ((it / kStages) & 1) ^ 1);
        barrierExpectBytes(&full[s], kStageBytes);
        tmaLoad(a_tiles + s * kATileElems, &map_x, kt * kBk, tc.m * kBm, &full[s]);
        tmaLoad(b_tiles + s * kBTileElems, &map_w, kt * kBk, tc.n * kBn, &full[s]);
      }
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n");
  const int consumer = warpgroup - 1;
  const int lane = int(threadIdx.x) & 31, warp_in_group = (int(threadIdx.x) / 32) & 3;
  const bool store_leader = (int(threadIdx.x) & 127) == 0;
  unsigned char* my_staging = staging + consumer * kBoxes * kBoxBytes;
  int it = 0;
  for (int tile = int(blockIdx.x); tile < tiles; tile += int(gridDim.x)) {
    const TileCoord tc = tileOf(tile, tiles_m, tiles_n);
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;
    fenceAccumulators(d);
    int prev_stage = -1;
    for (int kt = 0; kt < k_tiles; ++kt, ++it) {
      const int s = it % kStages;
      barrierWait(&full[s], (it / kStages) & 1);
      const T* a = a_tiles + s * kATileElems + consumer * 64 * kBk;
      const T* b = b_tiles + s * kBTileElems;
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
      for (int kk = 0; kk < kBk / 16; ++kk) wgmmaStep<T>(d, smemDescriptor(a + kk * 16), smemDescriptor(b + kk * 16));
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      // Keep this stage's wgmmas in flight; the previous stage's are done now and it is freed.
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
      if (prev_stage >= 0 && lane == 0) barrierArrive(&empty[prev_stage]);
      prev_stage = s;
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    fenceAccumulators(d);
    if (prev_stage >= 0 && lane == 0) barrierArrive(&empty[prev_stage]);

    // Epilogue from the accumulators: d[4j + {0,1}] are row g, columns 8j + 2q + {0,1};
    // d[4j + {2,3}] the same columns of row g + 8 (g = lane / 4, q = lane % 4).
    const int g = lane / 4, q = lane % 4;
    const int col_base = tc.n * kBn + 2 * q;
    if constexpr (kTmaStore) {
      // The previous tile's stores must have read the staging before it is rewritten.
      if (store_leader) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
      consumerBarrier(consumer);
#pragma unroll
      for (int j = 0; j < kBn / 8; ++j) {
        const int col = col_base + 8 * j;
        float b0 = 0.0f, b1 = 0.0f;
        if constexpr (hasBias(E)) {
          if (col < n) {
            const float2 bb = std::is_same_v<T, __half> ? __half22float2(*reinterpret_cast<const __half2*>(bias + col))
                                                        : __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(bias + col));
            b0 = bb.x;
            b1 = bb.y;
          }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = warp_in_group * 16 + g + 8 * h;  // r % 8 == g
          const unsigned offset = unsigned(j / 8) * kBoxBytes + unsigned(r) * 128u + unsigned(((j % 8) ^ g) * 16 + q * 4);
          const std::uint32_t packed =
              packPair<T>(activateFast<E>(d[4 * j + 2 * h] + b0), activateFast<E>(d[4 * j + 2 * h + 1] + b1));
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(smemAddr(my_staging + offset)), "r"(packed) : "memory");
        }
      }
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // visible to the copy engine
      consumerBarrier(consumer);
      if (store_leader) {
        const int row = tc.m * kBm + consumer * 64;
#pragma unroll
        for (int b = 0; b < kBoxes; ++b) {
          if (tc.n * kBn + b * kBoxCols < n && row < m) tmaStore(&map_y, tc.n * kBn + b * kBoxCols, row, my_staging + b * kBoxBytes);
        }
        asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
      }
    } else {
      const int row0 = tc.m * kBm + consumer * 64 + warp_in_group * 16 + g;
#pragma unroll
      for (int j = 0; j < kBn / 8; ++j) {
        const int col = col_base + 8 * j;
        if (col >= n) continue;  // n % 8 == 0: col < n means col + 1 < n too
        float b0 = 0.0f, b1 = 0.0f;
        if constexpr (hasBias(E)) {
          b0 = toFloat(bias[col]);
          b1 = toFloat(bias[col + 1]);
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = row0 + 8 * h;
          if (row < m) {
            *reinterpret_cast<std::uint32_t*>(y + std::size_t(row) * n + col) =
                packPair<T>(activateFast<E>(d[4 * j + 2 * h] + b0), activateFast<E>(d[4 * j + 2 * h + 1] + b1));
          }
        }
      }
    }
  }
  if constexpr (kTmaStore) {
    if (store_leader) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
  }
}

// ---- host side ----
// Row-major [rows, cols] with rows `ld` elements apart, in boxes of box_rows x 64 (128 bytes).
CUtensorMap makeMap(DType t, const void* p, std::size_t rows, std::size_t cols, std::size_t ld, unsigned box_rows) {
  static_assert(kBk == kBoxCols, "one box width for loads and stores");
  CUtensorMap map{};
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(ld * 2)};
  const cuuint32_t box[2] = {cuuint32_t(kBk), cuuint32_t(box_rows)};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUtensorMapDataType type = t == DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUresult r = encodeFunction()(&map, type, 2, const_cast<void*>(p), dims, strides, box, elem_strides,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("cuTensorMapEncodeTiled failed: " + std::to_string(int(r)));
  return map;
}

const CUtensorMap& cachedMap(DType t, const void* p, std::size_t rows, std::size_t cols, std::size_t ld,
                             unsigned box_rows) {
  return cachedTensorMap({int(t), p, rows, cols, ld, box_rows}, [&] { return makeMap(t, p, rows, cols, ld, box_rows); });
}

// FPROF_REF_GEMM_STORE=direct|tma picks the epilogue (default tma).
bool tmaStoreEpilogue() {
  static const bool tma = [] {
    const char* v = std::getenv("FPROF_REF_GEMM_STORE");
    return v == nullptr || std::string(v) != "direct";
  }();
  return tma;
}

template <class T, Epilogue E, bool kTmaStore>
void launchTyped(DType t, const void* x, std::size_t lda, const void* w, const void* bias, void* y, int m, int n, int k,
                 cudaStream_t s) {
  constexpr std::size_t kSmem = Config<kTmaStore>::kSmemBytes;
  static bool attribute_set = false;  // per instance; the device's limit is the same for every launch
  if (!attribute_set) {
    CUDA_CHECK(cudaFuncSetAttribute(gemmSm90Kernel<T, E, kTmaStore>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmem)));
    attribute_set = true;
  }
  const CUtensorMap& mx = cachedMap(t, x, std::size_t(m), std::size_t(k), lda, kBm);
  const CUtensorMap& mw = cachedMap(t, w, std::size_t(n), std::size_t(k), std::size_t(k), kBn);
  const CUtensorMap& my = cachedMap(t, y, std::size_t(m), std::size_t(n), std::size_t(n), 64);
  const int tiles = ((m + kBm - 1) / kBm) * ((n + kBn - 1) / kBn);
  const int grid = std::min(tiles, deviceInfo().sms);
  gemmSm90Kernel<T, E, kTmaStore><<<grid, kThreads, kSmem, s>>>(mx, mw, my, static_cast<const T*>(bias),
                                                                  static_cast<T*>(y), m, n, k);
  CUDA_CHECK_LAUNCH(gemmSm90Kernel);
}

template <class T, Epilogue E>
void launchTyped(DType t, const void* x, std::size_t lda, const void* w, const void* bias, void* y, int m, int n, int k,
                 cudaStream_t s) {
  if (tmaStoreEpilogue()) launchTyped<T, E, true>(t, x, lda, w, bias, y, m, n, k, s);
  else launchTyped<T, E, false>(t, x, lda, w, bias, y, m, n, k, s);
}

}  // namespace

bool gemmSm90Usable(DType t, const void* x, std::size_t lda, const void* w, const void* y, std::size_t n,
                    std::size_t k) {
  const auto aligned16 = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  return t != DType::F32 && deviceInfo().hopper && k > 0 && k % 8 == 0 && lda % 8 == 0 && n % 8 == 0 &&
         aligned16(x) && aligned16(w) && aligned16(y);
}

void launchGemmSm90(DType t, Epilogue e, const void* x, std::size_t lda, const void* w, const void* bias, void* y,
                    std::size_t m, std::size_t n, std::size_t k, cudaStream_t s) {
  if (m == 0 || n == 0) return;
  const int mi = int(m), ni = int(n), ki = int(k);
  const auto run = [&](auto tag) {
    using T = decltype(tag);
    switch (e) {
      case Epilogue::None: launchTyped<T, Epilogue::None>(t, x, lda, w, bias, y, mi, ni, ki, s); break;
      case Epilogue::Bias: launchTyped<T, Epilogue::Bias>(t, x, lda, w, bias, y, mi, ni, ki, s); break;
      case Epilogue::Relu: launchTyped<T, Epilogue::Relu>(t, x, lda, w, bias, y, mi, ni, ki, s); break;
      case Epilogue::BiasRelu: launchTyped<T, Epilogue::BiasRelu>(t, x, lda, w, bias, y, mi, ni, ki, s); break;
      case Epilogue::BiasGelu: launchTyped<T, Epilogue::BiasGelu>(t, x, lda, w, bias, y, mi, ni, ki, s); break;
      case Epilogue::BiasSilu: launchTyped<T, Epilogue::BiasSilu>(t, x, lda, w, bias, y, mi, ni, ki, s); break;
    }
  };
  if (t == DType::F16) run(__half{});
  else if (t == DType::BF16) run(__nv_bfloat16{});
  else throw std::invalid_argument("the Hopper GEMM takes fp16 or bf16");
}

}  // namespace fprof::refk
