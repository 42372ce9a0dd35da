// 3x3 convolution (stride 1, padding 1, NCHW) with an optional fused inference batchnorm + ReLU
// epilogue, in two forms:
//  - fp16/bf16: an implicit GEMM on tensor cores (mma.sync m16n8k16, fp32 accumulation). GEMM rows
//    are output pixels, columns output channels, the reduction runs over (input channel, tap).
//    A block owns 128 consecutive pixels of one image and 64 output channels; per stage of 16
//    input channels it stages the haloed pixel range (one smem row a pixel, its 16 channels
//    contiguous) and the stage's weights ([tap][out channel][16 channels]); each of the 9 taps
//    is then one shifted ldmatrix of the pixel rows (a lane whose shifted pixel leaves the image
//    row reads a zero row) and 8 mmas for each of the 8 warps (32 pixels x 32 channels a warp).
//  - fp32 (and planes too wide for the staged halo): the direct kernel, a 16x16 pixel tile for 8
//    output channels, one input channel at a time in shared memory.
#include <algorithm>

#include "kernels.cuh"
#include "mma_sync.cuh"

namespace fprof::refk {
namespace {

constexpr int kTile = 16, kCout = 8;

template <class T, bool kBnRelu>
__global__ void __launch_bounds__(kTile * kTile) conv3x3Kernel(const T* __restrict__ x, const T* __restrict__ w_taps,
                                                               const float* __restrict__ bn_scale,
                                                               const float* __restrict__ bn_shift, T* __restrict__ y,
                                                               int cin, int cout, int height, int width) {
  __shared__ float tile[kTile + 2][kTile + 2];
  __shared__ float wts[kCout][9];
  const int tiles_x = (width + kTile - 1) / kTile;
  const int ty0 = int(blockIdx.x) / tiles_x * kTile, tx0 = int(blockIdx.x) % tiles_x * kTile;
  const int co0 = blockIdx.y * kCout;
  const int n = blockIdx.z;
  const int lx = threadIdx.x % kTile, ly = threadIdx.x / kTile;
  float acc[kCout] = {};
  for (int ci = 0; ci < cin; ++ci) {
    const T* plane = x + (std::size_t(n) * cin + ci) * height * width;
    for (int e = threadIdx.x; e < (kTile + 2) * (kTile + 2); e += kTile * kTile) {
      const int r = e / (kTile + 2), c = e % (kTile + 2);
      const int gy = ty0 + r - 1, gx = tx0 + c - 1;
      tile[r][c] = (gy >= 0 && gy < height && gx >= 0 && gx < width) ? toFloat(plane[std::size_t(gy) * width + gx]) : 0.0f;
    }
    if (threadIdx.x < kCout * 9) {
      const int j = threadIdx.x / 9, tap = threadIdx.x % 9;
      wts[j][tap] = co0 + j < cout ? toFloat(w_taps[(std::size_t(tap) * cout + co0 + j) * cin + ci]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kh = 0; kh < 3; ++kh) {
#pragma unroll
      for (int kw = 0; kw < 3; ++kw) {
        const float v = tile[ly + kh][lx + kw];
#pragma unroll
        for (int j = 0; j < kCout; ++j) acc[j] = fmaf(v, wts[j][kh * 3 + kw], acc[j]);
      }
    }
    __syncthreads();
  }
  const int gy = ty0 + ly, gx = tx0 + lx;
  if (gy >= height || gx >= width) return;
#pragma unroll
  for (int j = 0; j < kCout; ++j) {
    const int co = co0 + j;
    if (co >= cout) break;
    float v = acc[j];
    if constexpr (kBnRelu) v = fmaxf(v * bn_scale[co] + bn_shift[co], 0.0f);
    y[((std::size_t(n) * cout + co) * height + gy) * width + gx] = fromFloat<T>(v);
  }
}

// ---------------- implicit GEMM on tensor cores (fp16/bf16) ----------------
constexpr int kIgPixels = 128;          // output pixels a block (consecutive in the image plane)
constexpr int kIgCout = 64;             // output channels a block
constexpr int kIgStageCin = 16;         // input channels a stage: one mma k-step a tap
constexpr int kIgLd = kIgStageCin + 8;  // smem row pitch (48 B): 8 ldmatrix rows hit distinct banks
constexpr int kIgWarpsM = 4, kIgWarpsN = 2;  // a warp: 32 pixels x 32 output channels
constexpr int kIgWarps = kIgWarpsM * kIgWarpsN;
constexpr int kIgWarpCout = kIgCout / kIgWarpsN;
constexpr int kIgTaps = 9;
constexpr int kIgMaxSmemBytes = 200 * 1024;

struct IgPlane {
  int cin, cout, height, width;
  __host__ __device__ int pixels() const { return height * width; }
  // The staged pixel range: the block's pixels with one image row (and one pixel) either side.
  __host__ __device__ int haloRows() const { return kIgPixels + 2 * width + 2; }
};

__host__ __device__ constexpr int igWeightElements() { return kIgTaps * kIgCout * kIgLd; }
__host__ __device__ inline std::size_t igSmemBytes(const IgPlane& p, std::size_t elem) {
  return (std::size_t(igWeightElements()) + std::size_t(p.haloRows() + 1) * kIgLd) * elem;  // + one zero row
}

// ws[tap][co][ci] = w_taps[tap][k0 + co][c0 + ci]; entries past the tensor are zero
// (uninitialized shared memory may hold NaN bits, and NaN x 0 is not 0). With cin a multiple of 8
// every (tap, output channel) run of 16 channels is two 16-byte cp.async copies (a handful a
// thread, no registers); otherwise one element at a time.
template <class T>
__device__ void stageWeights(T* ws, const T* __restrict__ w_taps, const IgPlane& p, int k0, int c0) {
  constexpr int kThreads = kIgWarps * 32;
  if (p.cin % 8 == 0) {
    constexpr int kChunks = kIgTaps * kIgCout * (kIgStageCin / 8);
#pragma unroll 1
    for (int chunk = threadIdx.x; chunk < kChunks; chunk += kThreads) {
      const int run = chunk / 2, half = chunk % 2, tap = run / kIgCout, co = run % kIgCout;
      const int ci = c0 + half * 8;
      const bool inside = k0 + co < p.cout && ci < p.cin;
      const T* src = w_taps + (std::size_t(tap) * p.cout + (inside ? k0 + co : 0)) * p.cin + (inside ? ci : 0);
      cpAsync16(ws + run * kIgLd + half * 8, src, inside);
    }
    cpAsyncCommit();
    return;
  }
#pragma unroll 1
  for (int e = threadIdx.x; e < kIgTaps * kIgCout * kIgStageCin; e += kThreads) {
    const int run = e / kIgStageCin, ci = e % kIgStageCin, tap = run / kIgCout, co = run % kIgCout;
    const bool inside = k0 + co < p.cout && c0 + ci < p.cin;
    ws[run * kIgLd + ci] = inside ? w_taps[(std::size_t(tap) * p.cout + k0 + co) * p.cin + c0 + ci] : fromFloat<T>(0.0f);
  }
}

// Two 16-bit values in one register, lo in the low half (the order mma fragments use).
template <class T> __device__ __forceinline__ std::uint32_t packBits(T lo, T hi) {
  static_assert(sizeof(T) == 2, "16-bit element type");
  std::uint16_t l, h;
  memcpy(&l, &lo, 2);
  memcpy(&h, &hi, 2);
  return std::uint32_t(l) | (std::uint32_t(h) << 16);
}

template <class T>
__device__ void stageHalo(T* xs, const T* __restrict__ x_image, const IgPlane& p, int halo0, int c0) {
  const int rows = p.haloRows(), plane = p.pixels(), channels = min(kIgStageCin, p.cin - c0);
  for (int row = threadIdx.x; row <= rows; row += kIgWarps * 32) {
    const int q = halo0 + row;
    const bool in_plane = row < rows && q >= 0 && q < plane;
    const T* src = x_image + std::size_t(c0) * plane + q;
    std::uint32_t packed[kIgStageCin / 2];
#pragma unroll
    for (int pair = 0; pair < kIgStageCin / 2; ++pair) {
      const int ci = 2 * pair;
      const T lo = in_plane && ci < channels ? src[std::size_t(ci) * plane] : fromFloat<T>(0.0f);
      const T hi = in_plane && ci + 1 < channels ? src[std::size_t(ci + 1) * plane] : fromFloat<T>(0.0f);
      packed[pair] = packBits(lo, hi);
    }
    auto* dst = reinterpret_cast<uint4*>(xs + row * kIgLd);
    dst[0] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
    dst[1] = make_uint4(packed[4], packed[5], packed[6], packed[7]);
  }
}

// One stage: for each tap, the A fragments of the warp's two 16-pixel tiles come from the
// pixel rows shifted by the tap (a lane whose pixel would cross the image row's edge points at the
// zero row), the B fragments from the tap's weights for the warp's 32 output channels, 2 x 4 mmas.
template <class T>
__device__ void accumulateStage(float (&acc)[2][4][4], const T* xs, const T* ws, const IgPlane& p,
                                const int (&lane_pixel)[2], const int (&lane_col)[2], int warp_co0) {
  const int lane = threadIdx.x % 32, zero_row = p.haloRows();
#pragma unroll 1
  for (int tap = 0; tap < kIgTaps; ++tap) {
    const int r = tap / 3, s = tap % 3;
    std::uint32_t a[2][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
      const int col = lane_col[mt] + s - 1;
      const int row = (col >= 0 && col < p.width) ? lane_pixel[mt] + r * p.width + s : zero_row;
      ldmatrixX4(a[mt], xs + row * kIgLd + (lane >> 4) * 8);
    }
#pragma unroll
    for (int np = 0; np < kIgWarpCout / 16; ++np) {
      std::uint32_t b[4];
      const int co = warp_co0 + np * 16 + (lane >> 4) * 8 + (lane & 7);
      ldmatrixX4(b, ws + (tap * kIgCout + co) * kIgLd + ((lane >> 3) & 1) * 8);
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        mmaM16N8K16<T>(acc[mt][2 * np], a[mt], b[0], b[1]);
        mmaM16N8K16<T>(acc[mt][2 * np + 1], a[mt], b[2], b[3]);
      }
    }
  }
}

template <class T, bool kBnRelu>
__device__ void storeTile(const float (&acc)[2][4][4], T* __restrict__ y_image, const float* __restrict__ bn_scale,
                          const float* __restrict__ bn_shift, const IgPlane& p, int pixel0, int k0) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
    for (int nt = 0; nt < kIgWarpCout / 8; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int pixel = pixel0 + mt * 16 + g + (i / 2) * 8, co = k0 + nt * 8 + 2 * t + (i % 2);
        if (pixel >= p.pixels() || co >= p.cout) continue;
        float v = acc[mt][nt][i];
        if constexpr (kBnRelu) v = fmaxf(v * bn_scale[co] + bn_shift[co], 0.0f);
        y_image[std::size_t(co) * p.pixels() + pixel] = fromFloat<T>(v);
      }
    }
  }
}

template <class T, bool kBnRelu>
__global__ void __launch_bounds__(kIgWarps * 32, 4) convImplicitGemmKernel(const T* __restrict__ x, const T* __restrict__ w_taps,
                                                                        const float* __restrict__ bn_scale,
                                                                        const float* __restrict__ bn_shift,
                                                                        T* __restrict__ y, IgPlane p) {
  extern __shared__ __align__(16) unsigned char ig_smem[];
  T* ws = reinterpret_cast<T*>(ig_smem);
  T* xs = ws + igWeightElements();
  const int lane = threadIdx.x % 32, warp_m = threadIdx.x / 32 % kIgWarpsM, warp_n = threadIdx.x / 32 / kIgWarpsM;
  const int block_pixel0 = int(blockIdx.x) * kIgPixels, k0 = int(blockIdx.y) * kIgCout, n = int(blockIdx.z);
  const int halo0 = block_pixel0 - p.width - 1;
  // The pixel whose row this lane addresses in each ldmatrix (relative to the block), and its column.
  int lane_pixel[2], lane_col[2];
  for (int mt = 0; mt < 2; ++mt) {
    lane_pixel[mt] = warp_m * 32 + mt * 16 + (lane & 15);
    lane_col[mt] = (block_pixel0 + lane_pixel[mt]) % p.width;
  }
  const T* x_image = x + std::size_t(n) * p.cin * p.pixels();
  float acc[2][4][4] = {};
  for (int c0 = 0; c0 < p.cin; c0 += kIgStageCin) {
    __syncthreads();  // the previous stage has been read
    stageWeights(ws, w_taps, p, k0, c0);
    stageHalo(xs, x_image, p, halo0, c0);
    cpAsyncWait<0>();
    __syncthreads();
    accumulateStage(acc, xs, ws, p, lane_pixel, lane_col, warp_n * kIgWarpCout);
  }
  storeTile<T, kBnRelu>(acc, y + std::size_t(n) * p.cout * p.pixels(), bn_scale, bn_shift, p,
                        block_pixel0 + warp_m * 32, k0 + warp_n * kIgWarpCout);
}

// One instance's launch. Its dynamic shared memory limit is raised only when a launch needs more
// than any before it (not on every launch: that would put a driver call on each one).
template <class T, bool kBnRelu>
void launchIgInstance(dim3 grid, std::size_t smem, cudaStream_t s, const T* x, const T* w_taps,
                      const float* bn_scale, const float* bn_shift, T* y, const IgPlane& p) {
  static std::size_t allowed = 48 * 1024;  // the default limit
  if (smem > allowed) {
    CUDA_CHECK(cudaFuncSetAttribute(convImplicitGemmKernel<T, kBnRelu>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    allowed = smem;
  }
  convImplicitGemmKernel<T, kBnRelu><<<grid, kIgWarps * 32, smem, s>>>(x, w_taps, bn_scale, bn_shift, y, p);
}

template <class T>
bool launchConvImplicitGemm(const T* x, const T* w_taps, const float* bn_scale, const float* bn_shift, T* y,
                            std::size_t batch, const IgPlane& p, cudaStream_t s) {
  const std::size_t smem = igSmemBytes(p, sizeof(T));
  if (smem > std::size_t(kIgMaxSmemBytes) || batch > 65535) return false;
  const dim3 grid(unsigned((p.pixels() + kIgPixels - 1) / kIgPixels), unsigned((p.cout + kIgCout - 1) / kIgCout),
                  unsigned(batch));
  if (bn_scale != nullptr) {
    launchIgInstance<T, true>(grid, smem, s, x, w_taps, bn_scale, bn_shift, y, p);
  } else {
    launchIgInstance<T, false>(grid, smem, s, x, w_taps, nullptr, nullptr, y, p);
  }
  CUDA_CHECK_LAUNCH(convImplicitGemmKernel);
  return true;
}

// w_taps[tap][co][ci] = w[co][ci][tap]: the filter as the 9 taps' (out x in) matrices, input
// channels contiguous (the GEMM's B operand rows).
template <class T>
__global__ void weightsToTapMajorKernel(const T* __restrict__ w, T* __restrict__ w_taps, std::size_t cout, std::size_t cin) {
  const std::size_t total = cout * cin * kIgTaps;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total; i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t tap = i % kIgTaps, ci = i / kIgTaps % cin, co = i / kIgTaps / cin;
    w_taps[(tap * cout + co) * cin + ci] = w[i];
  }
}

template <class T>
__global__ void foldBatchNormKernel(const T* gamma, const T* beta, const T* mean, const T* var, float eps,
                                   float* scale, float* shift, std::size_t channels) {
  const std::size_t c = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (c >= channels) return;
  const float s = toFloat(gamma[c]) * rsqrtf(toFloat(var[c]) + eps);
  scale[c] = s;
  shift[c] = toFloat(beta[c]) - toFloat(mean[c]) * s;
}

}  // namespace

void launchConv3x3(DType t, const void* x, const void* w_taps, const float* bn_scale,
                   const float* bn_shift, void* y, std::size_t batch, std::size_t cin,
                   std::size_t cout, std::size_t height, std::size_t width, cudaStream_t s) {
  if (batch == 0 || cout == 0 || height == 0 || width == 0) return;
  const IgPlane plane{int(cin), int(cout), int(height), int(width)};
  if (t == DType::F16 && launchConvImplicitGemm(static_cast<const __half*>(x), static_cast<const __half*>(w_taps), bn_scale,
                                                bn_shift, static_cast<__half*>(y), batch, plane, s)) {
    return;
  }
  if (t == DType::BF16 && launchConvImplicitGemm(static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(w_taps),
                                                 bn_scale, bn_shift, static_cast<__nv_bfloat16*>(y), batch, plane, s)) {
    return;
  }
  const dim3 grid(unsigned(((height + kTile - 1) / kTile) * ((width + kTile - 1) / kTile)),
                  unsigned((cout + kCout - 1) / kCout), unsigned(batch));
  FPROF_DISPATCH_DTYPE(t, T, {
    if (bn_scale != nullptr) {
      conv3x3Kernel<T, true><<<grid, kTile * kTile, 0, s>>>(static_cast<const T*>(x), static_cast<const T*>(w_taps), bn_scale,
                                                            bn_shift, static_cast<T*>(y), int(cin), int(cout),
                                                            int(height), int(width));
    } else {
      conv3x3Kernel<T, false><<<grid, kTile * kTile, 0, s>>>(static_cast<const T*>(x), static_cast<const T*>(w_taps), nullptr,
                                                             nullptr, static_cast<T*>(y), int(cin), int(cout),
                                                             int(height), int(width));
    }
  });
  CUDA_CHECK_LAUNCH(conv3x3Kernel);
}

void launchConvWeightsTapMajor(DType t, const void* w, void* w_taps, std::size_t cout, std::size_t cin, cudaStream_t s) {
  const std::size_t total = cout * cin * kIgTaps;
  if (total == 0) return;
  FPROF_DISPATCH_DTYPE(t, T, weightsToTapMajorKernel<T><<<unsigned(std::min<std::size_t>((total + 255) / 256, 4096)), 256, 0, s>>>(
                                 static_cast<const T*>(w), static_cast<T*>(w_taps), cout, cin));
  CUDA_CHECK_LAUNCH(weightsToTapMajorKernel);
}

void launchFoldBatchNorm(DType t, const void* gamma, const void* beta, const void* mean,
                         const void* var, float eps, float* scale, float* shift,
                         std::size_t channels, cudaStream_t s) {
  if (channels == 0) return;
  FPROF_DISPATCH_DTYPE(t, T, foldBatchNormKernel<T><<<unsigned((channels + 127) / 128), 128, 0, s>>>(
                                 static_cast<const T*>(gamma), static_cast<const T*>(beta), static_cast<const T*>(mean),
                                 static_cast<const T*>(var), eps, scale, shift, channels));
  CUDA_CHECK_LAUNCH(foldBatchNormKernel);
}

}  // namespace fprof::refk
