// Residual add + LayerNorm (one-pass Welford statistics) and residual add + RMSNorm: one block
// per row, the row kept in shared memory as fp32 so the normalize pass re-reads no DRAM.
#include "kernels.cuh"

namespace fprof::refk {
namespace {

struct Welford {
  float count = 0.0f, mean = 0.0f, m2 = 0.0f;
  __device__ void add(float v) {
    count += 1.0f;
    const float delta = v - mean;
    mean += delta / count;
    m2 += delta * (v - mean);
  }
  // Chan et al.: merge two partial statistics.
  __device__ void merge(const Welford& o) {
    if (o.count == 0.0f) return;
    if (count == 0.0f) { *this = o; return; }
    const float n = count + o.count;
    const float delta = o.mean - mean;
    mean += delta * (o.count / n);
    m2 += o.m2 + delta * delta * (count * o.count / n);
    count = n;
  }
};

__device__ Welford shuffleWelford(const Welford& w, int offset) {
  Welford o;
  o.count = __shfl_xor_sync(0xffffffffu, w.count, offset);
  o.mean = __shfl_xor_sync(0xffffffffu, w.mean, offset);
  o.m2 = __shfl_xor_sync(0xffffffffu, w.m2, offset);
  return o;
}

template <class T, bool kRms, bool kResidual, bool kVector>
__global__ void normKernel(const T* __restrict__ x, const T* __restrict__ residual, const T* __restrict__ gamma,
                           const T* __restrict__ beta, float eps, T* __restrict__ sum, T* __restrict__ y,
                           std::size_t cols) {
  extern __shared__ float row_cache[];
  __shared__ Welford warp_stats[32];
  __shared__ float warp_squares[32];
  const std::size_t row = blockIdx.x;
  const T* xr = x + row * cols;
  const T* rr = kResidual ? residual + row * cols : nullptr;
  T* sr = (kResidual && sum != nullptr) ? sum + row * cols : nullptr;

  Welford stats;
  float squares = 0.0f;
  constexpr int kV = Vec16<T>::kCount;
  auto consume = [&](std::size_t c, float h) {
    row_cache[c] = h;
    if constexpr (kRms) squares += h * h;
    else stats.add(h);
  };
  if constexpr (kVector) {
    for (std::size_t c = std::size_t(threadIdx.x) * kV; c < cols; c += std::size_t(blockDim.x) * kV) {
      const Vec16<T> vx = *reinterpret_cast<const Vec16<T>*>(xr + c);
      float hv[kV];
      if constexpr (kResidual) {
        const Vec16<T> vr = *reinterpret_cast<const Vec16<T>*>(rr + c);
        Vec16<T> vs;
#pragma unroll
        for (int j = 0; j < kV; ++j) {
          // Round the sum to T first: the residual stream is stored in T, and the unfused
          // form normalizes that stored value, so both forms compute the same function.
          vs.v[j] = fromFloat<T>(toFloat(vx.v[j]) + toFloat(vr.v[j]));
          hv[j] = toFloat(vs.v[j]);
        }
        if (sr != nullptr) *reinterpret_cast<Vec16<T>*>(sr + c) = vs;
      } else {
#pragma unroll
        for (int j = 0; j < kV; ++j) hv[j] = toFloat(vx.v[j]);
      }
#pragma unroll
      for (int j = 0; j < kV; j += 4) {
        *reinterpret_cast<float4*>(row_cache + c + j) = make_float4(hv[j], hv[j + 1], hv[j + 2], hv[j + 3]);
      }
      if constexpr (kRms) {
#pragma unroll
        for (int j = 0; j < kV; ++j) squares += hv[j] * hv[j];
      } else {
        // Welford/Chan in chunks: exact statistics of the kV values in registers, merged into
        // the running ones with one division per chunk instead of one per element.
        float chunk_mean = 0.0f;
#pragma unroll
        for (int j = 0; j < kV; ++j) chunk_mean += hv[j];
        chunk_mean *= 1.0f / float(kV);
        float chunk_m2 = 0.0f;
#pragma unroll
        for (int j = 0; j < kV; ++j) chunk_m2 += (hv[j] - chunk_mean) * (hv[j] - chunk_mean);
        Welford chunk;
        chunk.count = float(kV);
        chunk.mean = chunk_mean;
        chunk.m2 = chunk_m2;
        stats.merge(chunk);
      }
    }
  } else {
    for (std::size_t c = threadIdx.x; c < cols; c += blockDim.x) {
      float h = toFloat(xr[c]);
      if constexpr (kResidual) {
        const T hs = fromFloat<T>(h + toFloat(rr[c]));
        if (sr != nullptr) sr[c] = hs;
        h = toFloat(hs);
      }
      consume(c, h);
    }
  }

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  float mean = 0.0f, inv = 0.0f;
  if constexpr (kRms) {
    for (int o = 16; o > 0; o >>= 1) squares += __shfl_xor_sync(0xffffffffu, squares, o);
    if (lane == 0) warp_squares[warp] = squares;
    __syncthreads();
    if (warp == 0) {
      float total = lane < warps ? warp_squares[lane] : 0.0f;
      for (int o = 16; o > 0; o >>= 1) total += __shfl_xor_sync(0xffffffffu, total, o);
      if (lane == 0) warp_squares[0] = total;
    }
    __syncthreads();
    inv = rsqrtf(warp_squares[0] / float(cols) + eps);
  } else {
    for (int o = 16; o > 0; o >>= 1) stats.merge(shuffleWelford(stats, o));
    if (lane == 0) warp_stats[warp] = stats;
    __syncthreads();
    if (warp == 0) {
      Welford total = lane < warps ? warp_stats[lane] : Welford{};
      for (int o = 16; o > 0; o >>= 1) total.merge(shuffleWelford(total, o));
      if (lane == 0) warp_stats[0] = total;
    }
    __syncthreads();
    mean = warp_stats[0].mean;
    inv = rsqrtf(warp_stats[0].m2 / float(cols) + eps);
  }

  T* yr = y + row * cols;
  if constexpr (kVector) {
    for (std::size_t c = std::size_t(threadIdx.x) * kV; c < cols; c += std::size_t(blockDim.x) * kV) {
      const Vec16<T> vg = *reinterpret_cast<const Vec16<T>*>(gamma + c);
      Vec16<T> vb{};
      if (beta != nullptr) vb = *reinterpret_cast<const Vec16<T>*>(beta + c);
      float hv[kV];
#pragma unroll
      for (int j = 0; j < kV; j += 4) {
        const float4 h4 = *reinterpret_cast<const float4*>(row_cache + c + j);
        hv[j] = h4.x; hv[j + 1] = h4.y; hv[j + 2] = h4.z; hv[j + 3] = h4.w;
      }
      Vec16<T> vy;
#pragma unroll
      for (int j = 0; j < kV; ++j) {
        const float b = beta != nullptr ? toFloat(vb.v[j]) : 0.0f;
        vy.v[j] = fromFloat<T>((hv[j] - mean) * inv * toFloat(vg.v[j]) + b);
      }
      *reinterpret_cast<Vec16<T>*>(yr + c) = vy;
    }
  } else {
    for (std::size_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float b = beta != nullptr ? toFloat(beta[c]) : 0.0f;
      yr[c] = fromFloat<T>((row_cache[c] - mean) * inv * toFloat(gamma[c]) + b);
    }
  }
}

constexpr std::size_t kMaxCols = 32768;  // 128 KB of fp32 row cache

template <class T, bool kRms, bool kResidual>
void launchTyped(const void* x, const void* residual, const void* gamma, const void* beta, float eps,
                 void* sum, void* y, std::size_t rows, std::size_t cols, cudaStream_t s) {
  const std::size_t smem_bytes = cols * sizeof(float);
  if (cols > kMaxCols) throw std::invalid_argument("norm: rows wider than 32768 columns do not fit the fp32 row cache");
  const int block = cols >= 2048 ? 256 : 128;
  const bool vector = cols % Vec16<T>::kCount == 0;
  auto args = [&](auto kernel) {
    // Rows of about 12k columns and more need over the default 48 KB of dynamic shared memory.
    // Set per launch: both kernel instances share this lambda's type, so a static flag cannot.
    if (smem_bytes > 32 * 1024) {
      CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kMaxCols * sizeof(float))));
    }
    kernel<<<unsigned(rows), block, smem_bytes, s>>>(static_cast<const T*>(x), static_cast<const T*>(residual),
                                                      static_cast<const T*>(gamma), static_cast<const T*>(beta), eps,
                                                      static_cast<T*>(sum), static_cast<T*>(y), cols);
  };
  if (vector) args(normKernel<T, kRms, kResidual, true>);
  else args(normKernel<T, kRms, kResidual, false>);
  CUDA_CHECK_LAUNCH(normKernel);
}

}  // namespace

void launchNorm(DType t, bool rms, const void* x, const void* residual, const void* gamma,
                const void* beta, float eps, void* sum, void* y, std::size_t rows,
                std::size_t cols, cudaStream_t s) {
  if (rows == 0) return;
  FPROF_DISPATCH_DTYPE(t, T, {
    if (rms && residual) launchTyped<T, true, true>(x, residual, gamma, nullptr, eps, sum, y, rows, cols, s);
    else if (rms) launchTyped<T, true, false>(x, nullptr, gamma, nullptr, eps, nullptr, y, rows, cols, s);
    else if (residual) launchTyped<T, false, true>(x, residual, gamma, beta, eps, sum, y, rows, cols, s);
    else launchTyped<T, false, false>(x, nullptr, gamma, beta, eps, nullptr, y, rows, cols, s);
  });
}

}  // namespace fprof::refk
