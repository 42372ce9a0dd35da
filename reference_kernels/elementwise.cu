// Elementwise reference kernels: the unfused chain stages, the fused chain, epilogue stages,
// batchnorm, and the transformer's data-movement kernels. 16-byte accesses where aligned.
#include "kernels.cuh"

namespace fprof::refk {

const char* epilogueName(Epilogue e) {
  switch (e) {
    case Epilogue::None: return "none";
    case Epilogue::Bias: return "bias";
    case Epilogue::Relu: return "relu";
    case Epilogue::BiasRelu: return "bias_relu";
    case Epilogue::BiasGelu: return "bias_gelu";
    case Epilogue::BiasSilu: return "bias_silu";
  }
  return "?";
}

bool epilogueHasBias(Epilogue e) {
  return e == Epilogue::Bias || e == Epilogue::BiasRelu || e == Epilogue::BiasGelu ||
         e == Epilogue::BiasSilu;
}

namespace {

__device__ __forceinline__ float geluTanhF(float v) {
  const float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
  return 0.5f * v * (1.0f + tanhf(inner));
}

enum class Unary { Gelu, Relu };
enum class Binary { Add, Mul };

template <class T> __global__ void hashFill(T* p, std::size_t n, std::uint64_t seed, float scale, float offset) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    // splitmix64 of (seed, i): independent values without per-thread RNG state.
    std::uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const float u = float(z >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    p[i] = fromFloat<T>(offset + scale * (2.0f * u - 1.0f));
  }
}

int gridFor(std::size_t work, int block) {
  const std::size_t blocks = (work + std::size_t(block) - 1) / std::size_t(block);
  // Grid-stride loops cover the rest; 132 SMs x 16 blocks keeps an H100 busy.
  return int(blocks < 132 * 16 ? (blocks == 0 ? 1 : blocks) : 132 * 16);
}

template <class T, Binary op>
__global__ void binaryKernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ y, std::size_t n) {
  constexpr int kV = Vec16<T>::kCount;
  const std::size_t nv = n / kV;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < nv; i += stride) {
    const Vec16<T> va = reinterpret_cast<const Vec16<T>*>(a)[i];
    const Vec16<T> vb = reinterpret_cast<const Vec16<T>*>(b)[i];
    Vec16<T> vy;
#pragma unroll
    for (int j = 0; j < kV; ++j) {
      const float fa = toFloat(va.v[j]), fb = toFloat(vb.v[j]);
      vy.v[j] = fromFloat<T>(op == Binary::Add ? fa + fb : fa * fb);
    }
    reinterpret_cast<Vec16<T>*>(y)[i] = vy;
  }
  for (std::size_t i = nv * kV + blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const float fa = toFloat(a[i]), fb = toFloat(b[i]);
    y[i] = fromFloat<T>(op == Binary::Add ? fa + fb : fa * fb);
  }
}

template <class T, Unary op> __device__ __forceinline__ float unary(float v) {
  if constexpr (op == Unary::Gelu) return geluTanhF(v);
  else return v > 0.0f ? v : 0.0f;
}

template <class T, Unary op>
__global__ void unaryKernel(const T* __restrict__ x, T* __restrict__ y, std::size_t n) {
  constexpr int kV = Vec16<T>::kCount;
  const std::size_t nv = n / kV;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < nv; i += stride) {
    const Vec16<T> vx = reinterpret_cast<const Vec16<T>*>(x)[i];
    Vec16<T> vy;
#pragma unroll
    for (int j = 0; j < kV; ++j) vy.v[j] = fromFloat<T>(unary<T, op>(toFloat(vx.v[j])));
    reinterpret_cast<Vec16<T>*>(y)[i] = vy;
  }
  for (std::size_t i = nv * kV + blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += stride) {
    y[i] = fromFloat<T>(unary<T, op>(toFloat(x[i])));
  }
}

template <class T>
__global__ void chainFusedKernel(const T* __restrict__ a, const T* __restrict__ b, const T* __restrict__ c,
                                 T* __restrict__ y, std::size_t n) {
  constexpr int kV = Vec16<T>::kCount;
  const std::size_t nv = n / kV;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < nv; i += stride) {
    const Vec16<T> va = reinterpret_cast<const Vec16<T>*>(a)[i];
    const Vec16<T> vb = reinterpret_cast<const Vec16<T>*>(b)[i];
    const Vec16<T> vc = reinterpret_cast<const Vec16<T>*>(c)[i];
    Vec16<T> vy;
#pragma unroll
    for (int j = 0; j < kV; ++j) {
      vy.v[j] = fromFloat<T>(geluTanhF((toFloat(va.v[j]) + toFloat(vb.v[j])) * toFloat(vc.v[j])));
    }
    reinterpret_cast<Vec16<T>*>(y)[i] = vy;
  }
  for (std::size_t i = nv * kV + blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += stride) {
    y[i] = fromFloat<T>(geluTanhF((toFloat(a[i]) + toFloat(b[i])) * toFloat(c[i])));
  }
}

template <Epilogue E> __device__ __forceinline__ float activate(float v) {
  if constexpr (E == Epilogue::Relu || E == Epilogue::BiasRelu) return v > 0.0f ? v : 0.0f;
  else if constexpr (E == Epilogue::BiasGelu) return geluTanhF(v);
  else if constexpr (E == Epilogue::BiasSilu) return v / (1.0f + __expf(-v));
  else return v;
}

template <class T, Epilogue E>
__global__ void biasActKernel(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ y,
                              std::size_t rows, std::size_t cols) {
  constexpr bool kBias = E == Epilogue::Bias || E == Epilogue::BiasRelu || E == Epilogue::BiasGelu ||
                         E == Epilogue::BiasSilu;
  constexpr int kV = Vec16<T>::kCount;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  if (cols % kV == 0) {
    const std::size_t nv = rows * cols / kV;
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < nv; i += stride) {
      const Vec16<T> vx = reinterpret_cast<const Vec16<T>*>(x)[i];
      const std::size_t col0 = (i * kV) % cols;
      Vec16<T> vb{};
      if constexpr (kBias) vb = reinterpret_cast<const Vec16<T>*>(bias + col0)[0];
      Vec16<T> vy;
#pragma unroll
      for (int j = 0; j < kV; ++j) {
        float v = toFloat(vx.v[j]);
        if constexpr (kBias) v += toFloat(vb.v[j]);
        vy.v[j] = fromFloat<T>(activate<E>(v));
      }
      reinterpret_cast<Vec16<T>*>(y)[i] = vy;
    }
  } else {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < rows * cols; i += stride) {
      float v = toFloat(x[i]);
      if constexpr (kBias) v += toFloat(bias[i % cols]);
      y[i] = fromFloat<T>(activate<E>(v));
    }
  }
}

template <class T>
__global__ void batchNormKernel(const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ beta,
                                const T* __restrict__ mean, const T* __restrict__ var, float eps,
                                T* __restrict__ y, std::size_t channels, std::size_t hw, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t c = (i / hw) % channels;
    const float v = (toFloat(x[i]) - toFloat(mean[c])) * rsqrtf(toFloat(var[c]) + eps) * toFloat(gamma[c]) +
                    toFloat(beta[c]);
    y[i] = fromFloat<T>(v);
  }
}

template <class T>
__global__ void embeddingKernel(const int* __restrict__ tokens, const T* __restrict__ wte, const T* __restrict__ wpe,
                                T* __restrict__ x, std::size_t rows, std::size_t seq, std::size_t pos0,
                                std::size_t width) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < rows * width;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t row = i / width, c = i % width;
    const std::size_t pos = pos0 + row % seq;
    x[i] = fromFloat<T>(toFloat(wte[std::size_t(tokens[row]) * width + c]) + toFloat(wpe[pos * width + c]));
  }
}

template <class T>
__global__ void splitHeadsKernel(const T* __restrict__ qkv, T* __restrict__ q, T* __restrict__ kc,
                                 T* __restrict__ vc, std::size_t batch, std::size_t seq, std::size_t heads,
                                 std::size_t hd, std::size_t pos0, std::size_t max_seq) {
  const std::size_t width = heads * hd;
  const std::size_t n = batch * seq * 3 * width;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t row = i / (3 * width), col = i % (3 * width);
    const std::size_t which = col / width, h = (col % width) / hd, d = col % hd;
    const std::size_t b = row / seq, s = row % seq;
    const T v = qkv[i];
    if (which == 0) q[((b * heads + h) * seq + s) * hd + d] = v;
    else if (which == 1) kc[((b * heads + h) * max_seq + pos0 + s) * hd + d] = v;
    else vc[((b * heads + h) * max_seq + pos0 + s) * hd + d] = v;
  }
}

template <class T>
__global__ void mergeHeadsKernel(const T* __restrict__ o, T* __restrict__ y, std::size_t batch, std::size_t seq,
                                 std::size_t heads, std::size_t hd) {
  const std::size_t n = batch * seq * heads * hd;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t row = i / (heads * hd), col = i % (heads * hd);
    const std::size_t b = row / seq, s = row % seq, h = col / hd, d = col % hd;
    y[i] = o[((b * heads + h) * seq + s) * hd + d];
  }
}

template <class T> __global__ void widenKernel(const T* __restrict__ x, float* __restrict__ y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    y[i] = toFloat(x[i]);
  }
}

constexpr int kBlock = 256;

}  // namespace

void fillUniform(DType dtype, void* ptr, std::size_t n, std::uint64_t seed, float scale, float offset) {
  if (n == 0) return;
  FPROF_DISPATCH_DTYPE(dtype, T, hashFill<T><<<gridFor(n, kBlock), kBlock>>>(static_cast<T*>(ptr), n, seed, scale, offset));
  CUDA_CHECK_LAUNCH(hashFill);
}

std::vector<float> downloadAsFloat(DType dtype, const void* ptr, std::size_t n) {
  std::vector<float> host(n);
  if (n == 0) return host;
  DeviceBuffer wide(n * sizeof(float));
  FPROF_DISPATCH_DTYPE(dtype, T, widenKernel<T><<<gridFor(n, kBlock), kBlock>>>(static_cast<const T*>(ptr), wide.as<float>(), n));
  CUDA_CHECK_LAUNCH(widenKernel);
  CUDA_CHECK(cudaMemcpy(host.data(), wide.get(), n * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

std::vector<double> toDouble(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

void launchAdd(DType t, const void* a, const void* b, void* y, std::size_t n, cudaStream_t s) {
  FPROF_DISPATCH_DTYPE(t, T, binaryKernel<T, Binary::Add><<<gridFor(n / Vec16<T>::kCount + 1, kBlock), kBlock, 0, s>>>(
                                 static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y), n));
  CUDA_CHECK_LAUNCH(binaryKernel);
}

void launchMul(DType t, const void* a, const void* b, void* y, std::size_t n, cudaStream_t s) {
  FPROF_DISPATCH_DTYPE(t, T, binaryKernel<T, Binary::Mul><<<gridFor(n / Vec16<T>::kCount + 1, kBlock), kBlock, 0, s>>>(
                                 static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y), n));
  CUDA_CHECK_LAUNCH(binaryKernel);
}

void launchGelu(DType t, const void* x, void* y, std::size_t n, cudaStream_t s) {
  FPROF_DISPATCH_DTYPE(t, T, unaryKernel<T, Unary::Gelu><<<gridFor(n / Vec16<T>::kCount + 1, kBlock), kBlock, 0, s>>>(
                                 static_cast<const T*>(x), static_cast<T*>(y), n));
  CUDA_CHECK_LAUNCH(unaryKernel);
}

void launchRelu(DType t, const void* x, void* y, std::size_t n, cudaStream_t s) {
  FPROF_DISPATCH_DTYPE(t, T, unaryKernel<T, Unary::Relu><<<gridFor(n / Vec16<T>::kCount + 1, kBlock), kBlock, 0, s>>>(
                                 static_cast<const T*>(x), static_cast<T*>(y), n));
  CUDA_CHECK_LAUNCH(unaryKernel);
}

void launchChainFused(DType t, const void* a, const void* b, const void* c, void* y, std::size_t n,
                      cudaStream_t s) {
  FPROF_DISPATCH_DTYPE(t, T, chainFusedKernel<T><<<gridFor(n / Vec16<T>::kCount + 1, kBlock), kBlock, 0, s>>>(
                                 static_cast<const T*>(a), static_cast<const T*>(b), static_cast<const T*>(c),
                                 static_cast<T*>(y), n));
  CUDA_CHECK_LAUNCH(chainFusedKernel);
}

void launchBiasAct(DType t, Epilogue e, const void* x, const void* bias, void* y, std::size_t rows,
                   std::size_t cols, cudaStream_t s) {
  const std::size_t n = rows * cols;
  if (n == 0) return;
  FPROF_DISPATCH_DTYPE(t, T, {
    const int grid = gridFor(n / Vec16<T>::kCount + 1, kBlock);
    const T* xt = static_cast<const T*>(x);
    const T* bt = static_cast<const T*>(bias);
    T* yt = static_cast<T*>(y);
    switch (e) {
      case Epilogue::None: biasActKernel<T, Epilogue::None><<<grid, kBlock, 0, s>>>(xt, bt, yt, rows, cols); break;
      case Epilogue::Bias: biasActKernel<T, Epilogue::Bias><<<grid, kBlock, 0, s>>>(xt, bt, yt, rows, cols); break;
      case Epilogue::Relu: biasActKernel<T, Epilogue::Relu><<<grid, kBlock, 0, s>>>(xt, bt, yt, rows, cols); break;
      case Epilogue::BiasRelu: biasActKernel<T, Epilogue::BiasRelu><<<grid, kBlock, 0, s>>>(xt, bt, yt, rows, cols); break;
      case Epilogue::BiasGelu: biasActKernel<T, Epilogue::BiasGelu><<<grid, kBlock, 0, s>>>(xt, bt, yt, rows, cols); break;
      case Epilogue::BiasSilu: biasActKernel<T, Epilogue::BiasSilu><<<grid, kBlock, 0, s>>>(xt, bt, yt, rows, cols); break;
    }
  });
  CUDA_CHECK_LAUNCH(biasActKernel);
}

void launchBatchNorm(DType t, const void* x, const void* gamma, const void* beta, const void* mean,
                     const void* var, float eps, void* y, std::size_t batch, std::size_t channels,
                     std::size_t hw, cudaStream_t s) {
  const std::size_t n = batch * channels * hw;
  FPROF_DISPATCH_DTYPE(t, T, batchNormKernel<T><<<gridFor(n, kBlock), kBlock, 0, s>>>(
                                 static_cast<const T*>(x), static_cast<const T*>(gamma), static_cast<const T*>(beta),
                                 static_cast<const T*>(mean), static_cast<const T*>(var), eps, static_cast<T*>(y),
                                 channels, hw, n));
  CUDA_CHECK_LAUNCH(batchNormKernel);
}

void launchEmbedding(DType t, const int* tokens, const void* wte, const void* wpe, void* x,
                     std::size_t rows, std::size_t seq, std::size_t pos0, std::size_t width,
                     cudaStream_t s) {
  FPROF_DISPATCH_DTYPE(t, T, embeddingKernel<T><<<gridFor(rows * width, kBlock), kBlock, 0, s>>>(
                                 tokens, static_cast<const T*>(wte), static_cast<const T*>(wpe), static_cast<T*>(x),
                                 rows, seq, pos0, width));
  CUDA_CHECK_LAUNCH(embeddingKernel);
}

void launchSplitHeads(DType t, const void* qkv, void* q, void* k_cache, void* v_cache,
                      std::size_t batch, std::size_t seq, std::size_t heads, std::size_t head_dim,
                      std::size_t pos0, std::size_t max_seq, cudaStream_t s) {
  FPROF_DISPATCH_DTYPE(t, T, splitHeadsKernel<T><<<gridFor(batch * seq * 3 * heads * head_dim, kBlock), kBlock, 0, s>>>(
                                 static_cast<const T*>(qkv), static_cast<T*>(q), static_cast<T*>(k_cache),
                                 static_cast<T*>(v_cache), batch, seq, heads, head_dim, pos0, max_seq));
  CUDA_CHECK_LAUNCH(splitHeadsKernel);
}

void launchMergeHeads(DType t, const void* o, void* y, std::size_t batch, std::size_t seq,
                      std::size_t heads, std::size_t head_dim, cudaStream_t s) {
  FPROF_DISPATCH_DTYPE(t, T, mergeHeadsKernel<T><<<gridFor(batch * seq * heads * head_dim, kBlock), kBlock, 0, s>>>(
                                 static_cast<const T*>(o), static_cast<T*>(y), batch, seq, heads, head_dim));
  CUDA_CHECK_LAUNCH(mergeHeadsKernel);
}

}  // namespace fprof::refk
