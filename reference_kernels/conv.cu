// Direct 3x3 convolution (stride 1, padding 1, NCHW) with an optional fused inference
// batchnorm + ReLU epilogue. Each block computes a 16x16 pixel tile for 8 output channels,
// staging the haloed input tile and the weights of one input channel at a time in shared memory.
#include "kernels.cuh"

namespace fprof::refk {
namespace {

constexpr int kTile = 16, kCout = 8;

template <class T, bool kBnRelu>
__global__ void __launch_bounds__(kTile * kTile) conv3x3Kernel(const T* __restrict__ x, const T* __restrict__ w,
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
      wts[j][tap] = co0 + j < cout ? toFloat(w[(std::size_t(co0 + j) * cin + ci) * 9 + tap]) : 0.0f;
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

void launchConv3x3(DType t, const void* x, const void* w, const float* bn_scale,
                   const float* bn_shift, void* y, std::size_t batch, std::size_t cin,
                   std::size_t cout, std::size_t height, std::size_t width, cudaStream_t s) {
  if (batch == 0 || cout == 0 || height == 0 || width == 0) return;
  const dim3 grid(unsigned(((height + kTile - 1) / kTile) * ((width + kTile - 1) / kTile)),
                  unsigned((cout + kCout - 1) / kCout), unsigned(batch));
  FPROF_DISPATCH_DTYPE(t, T, {
    if (bn_scale != nullptr) {
      conv3x3Kernel<T, true><<<grid, kTile * kTile, 0, s>>>(static_cast<const T*>(x), static_cast<const T*>(w), bn_scale,
                                                            bn_shift, static_cast<T*>(y), int(cin), int(cout),
                                                            int(height), int(width));
    } else {
      conv3x3Kernel<T, false><<<grid, kTile * kTile, 0, s>>>(static_cast<const T*>(x), static_cast<const T*>(w), nullptr,
                                                             nullptr, static_cast<T*>(y), int(cin), int(cout),
                                                             int(height), int(width));
    }
  });
  CUDA_CHECK_LAUNCH(conv3x3Kernel);
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
