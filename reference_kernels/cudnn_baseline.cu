// See cudnn_baseline.cuh. Every cuDNN call is checked with its text, file and line.
#include "cudnn_baseline.cuh"

#include "kernels.cuh"

#if FPROF_REF_HAVE_CUDNN
#include <cudnn.h>
#include <dlfcn.h>
#endif

namespace fprof::refk {

#if FPROF_REF_HAVE_CUDNN

struct CudnnConv::Impl {
  void* lib = nullptr;
#define FPROF_CUDNN_FN(name) decltype(&::name) name = nullptr;
  FPROF_CUDNN_FN(cudnnGetVersion)
  FPROF_CUDNN_FN(cudnnGetErrorString)
  FPROF_CUDNN_FN(cudnnCreate)
  FPROF_CUDNN_FN(cudnnDestroy)
  FPROF_CUDNN_FN(cudnnSetStream)
  FPROF_CUDNN_FN(cudnnCreateTensorDescriptor)
  FPROF_CUDNN_FN(cudnnSetTensor4dDescriptor)
  FPROF_CUDNN_FN(cudnnDestroyTensorDescriptor)
  FPROF_CUDNN_FN(cudnnCreateFilterDescriptor)
  FPROF_CUDNN_FN(cudnnSetFilter4dDescriptor)
  FPROF_CUDNN_FN(cudnnDestroyFilterDescriptor)
  FPROF_CUDNN_FN(cudnnCreateConvolutionDescriptor)
  FPROF_CUDNN_FN(cudnnSetConvolution2dDescriptor)
  FPROF_CUDNN_FN(cudnnSetConvolutionMathType)
  FPROF_CUDNN_FN(cudnnDestroyConvolutionDescriptor)
  FPROF_CUDNN_FN(cudnnCreateActivationDescriptor)
  FPROF_CUDNN_FN(cudnnSetActivationDescriptor)
  FPROF_CUDNN_FN(cudnnDestroyActivationDescriptor)
  FPROF_CUDNN_FN(cudnnGetConvolutionForwardWorkspaceSize)
  FPROF_CUDNN_FN(cudnnConvolutionBiasActivationForward)
#undef FPROF_CUDNN_FN
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x_desc = nullptr, y_desc = nullptr, bias_desc = nullptr;
  cudnnFilterDescriptor_t w_desc = nullptr;
  cudnnConvolutionDescriptor_t conv_desc = nullptr;
  cudnnActivationDescriptor_t act_desc = nullptr;
  DeviceBuffer workspace;
};

// A cuDNN failure throws (instead of exiting like CUDA_CHECK): cuDNN errors are not sticky, so
// the checks and benchmarks of every other op still run and report.
#define CUDNN_CHECK(call)                                                                           \
  do {                                                                                              \
    const cudnnStatus_t fprof_status_ = impl_->call;                                                \
    if (fprof_status_ != CUDNN_STATUS_SUCCESS) {                                                    \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " #call \
                               " failed: " + impl_->cudnnGetErrorString(fprof_status_));            \
    }                                                                                               \
  } while (0)

std::unique_ptr<CudnnConv> CudnnConv::load(std::string& reason) {
  void* lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    reason = std::string("dlopen(libcudnn.so.9): ") + (err ? err : "unknown error");
    return nullptr;
  }
  std::unique_ptr<CudnnConv> conv(new CudnnConv());
  conv->impl_ = std::make_unique<Impl>();
  Impl& m = *conv->impl_;
  m.lib = lib;
  bool ok = true;
#define FPROF_CUDNN_SYM(name)                                                     \
  m.name = reinterpret_cast<decltype(&::name)>(dlsym(lib, #name));                \
  if (m.name == nullptr) { ok = false; reason = std::string("dlsym(") + #name + ") failed"; }
  FPROF_CUDNN_SYM(cudnnGetVersion)
  FPROF_CUDNN_SYM(cudnnGetErrorString)
  FPROF_CUDNN_SYM(cudnnCreate)
  FPROF_CUDNN_SYM(cudnnDestroy)
  FPROF_CUDNN_SYM(cudnnSetStream)
  FPROF_CUDNN_SYM(cudnnCreateTensorDescriptor)
  FPROF_CUDNN_SYM(cudnnSetTensor4dDescriptor)
  FPROF_CUDNN_SYM(cudnnDestroyTensorDescriptor)
  FPROF_CUDNN_SYM(cudnnCreateFilterDescriptor)
  FPROF_CUDNN_SYM(cudnnSetFilter4dDescriptor)
  FPROF_CUDNN_SYM(cudnnDestroyFilterDescriptor)
  FPROF_CUDNN_SYM(cudnnCreateConvolutionDescriptor)
  FPROF_CUDNN_SYM(cudnnSetConvolution2dDescriptor)
  FPROF_CUDNN_SYM(cudnnSetConvolutionMathType)
  FPROF_CUDNN_SYM(cudnnDestroyConvolutionDescriptor)
  FPROF_CUDNN_SYM(cudnnCreateActivationDescriptor)
  FPROF_CUDNN_SYM(cudnnSetActivationDescriptor)
  FPROF_CUDNN_SYM(cudnnDestroyActivationDescriptor)
  FPROF_CUDNN_SYM(cudnnGetConvolutionForwardWorkspaceSize)
  FPROF_CUDNN_SYM(cudnnConvolutionBiasActivationForward)
#undef FPROF_CUDNN_SYM
  if (!ok) return nullptr;  // the destructor closes the library
  const cudnnStatus_t status = m.cudnnCreate(&m.handle);
  if (status != CUDNN_STATUS_SUCCESS) {
    reason = std::string("cudnnCreate: ") + m.cudnnGetErrorString(status);
    m.handle = nullptr;
    return nullptr;
  }
  return conv;
}

CudnnConv::~CudnnConv() {
  if (!impl_) return;
  Impl& m = *impl_;
  // Teardown: errors here have nowhere useful to go.
  if (m.handle != nullptr) {
    if (m.x_desc) m.cudnnDestroyTensorDescriptor(m.x_desc);
    if (m.y_desc) m.cudnnDestroyTensorDescriptor(m.y_desc);
    if (m.bias_desc) m.cudnnDestroyTensorDescriptor(m.bias_desc);
    if (m.w_desc) m.cudnnDestroyFilterDescriptor(m.w_desc);
    if (m.conv_desc) m.cudnnDestroyConvolutionDescriptor(m.conv_desc);
    if (m.act_desc) m.cudnnDestroyActivationDescriptor(m.act_desc);
    m.cudnnDestroy(m.handle);
  }
  m.workspace = DeviceBuffer();
  if (m.lib != nullptr) dlclose(m.lib);
}

std::size_t CudnnConv::version() const { return impl_->cudnnGetVersion(); }

void CudnnConv::configure(DType t, std::size_t batch, std::size_t cin, std::size_t cout, std::size_t height,
                          std::size_t width, cudaStream_t s) {
  Impl& m = *impl_;
  const cudnnDataType_t type = t == DType::F32 ? CUDNN_DATA_FLOAT : t == DType::F16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
  CUDNN_CHECK(cudnnSetStream(m.handle, s));
  if (m.x_desc == nullptr) {
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&m.x_desc));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&m.y_desc));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&m.bias_desc));
    CUDNN_CHECK(cudnnCreateFilterDescriptor(&m.w_desc));
    CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&m.conv_desc));
    CUDNN_CHECK(cudnnCreateActivationDescriptor(&m.act_desc));
  }
  const int n = int(batch), c = int(cin), k = int(cout), h = int(height), w = int(width);
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(m.x_desc, CUDNN_TENSOR_NCHW, type, n, c, h, w));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(m.y_desc, CUDNN_TENSOR_NCHW, type, n, k, h, w));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(m.bias_desc, CUDNN_TENSOR_NCHW, type, 1, k, 1, 1));
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(m.w_desc, type, CUDNN_TENSOR_NCHW, k, c, 3, 3));
  // fp32 accumulation for every type; plain FMA for fp32 (no TF32), tensor cores otherwise.
  CUDNN_CHECK(cudnnSetConvolution2dDescriptor(m.conv_desc, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CUDNN_CHECK(cudnnSetConvolutionMathType(m.conv_desc, t == DType::F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
  CUDNN_CHECK(cudnnSetActivationDescriptor(m.act_desc, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  std::size_t bytes = 0;
  // The only algorithm cudnnConvolutionBiasActivationForward supports with ReLU.
  CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(m.handle, m.x_desc, m.w_desc, m.conv_desc, m.y_desc,
                                                      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, &bytes));
  if (bytes > m.workspace.bytes()) m.workspace = DeviceBuffer(bytes);
}

void CudnnConv::run(const void* x, const void* w_folded, const void* bias_folded, void* y) {
  Impl& m = *impl_;
  const float alpha1 = 1.0f, alpha2 = 0.0f;  // alpha2 = 0: the z (residual) input is unused
  CUDNN_CHECK(cudnnConvolutionBiasActivationForward(
      m.handle, &alpha1, m.x_desc, x, m.w_desc, w_folded, m.conv_desc, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
      m.workspace.get(), m.workspace.bytes(), &alpha2, m.y_desc, y, m.bias_desc, bias_folded, m.act_desc, m.y_desc, y));
}

#else  // built where the toolkit has no cudnn.h: the baseline is absent and says why

struct CudnnConv::Impl {};
std::unique_ptr<CudnnConv> CudnnConv::load(std::string& reason) {
  reason = "built without cudnn.h";
  return nullptr;
}
CudnnConv::~CudnnConv() = default;
std::size_t CudnnConv::version() const { return 0; }
void CudnnConv::configure(DType, std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, cudaStream_t) {
  throw std::runtime_error("built without cudnn.h");
}
void CudnnConv::run(const void*, const void*, const void*, void*) { throw std::runtime_error("built without cudnn.h"); }

#endif

namespace {
template <class T>
__global__ void foldConvWeightsKernel(const T* w, const float* scale, const float* shift, T* w_folded, T* bias_folded,
                                      std::size_t cout, std::size_t per_out) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < cout * per_out;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t co = i / per_out;
    w_folded[i] = fromFloat<T>(toFloat(w[i]) * scale[co]);
    if (i % per_out == 0) bias_folded[co] = fromFloat<T>(shift[co]);
  }
}
}  // namespace

void launchFoldConvWeights(DType t, const void* w, const float* bn_scale, const float* bn_shift, void* w_folded,
                           void* bias_folded, std::size_t cout, std::size_t per_out, cudaStream_t s) {
  if (cout * per_out == 0) return;
  FPROF_DISPATCH_DTYPE(t, T, foldConvWeightsKernel<T><<<unsigned((cout * per_out + 255) / 256), 256, 0, s>>>(
                                 static_cast<const T*>(w), bn_scale, bn_shift, static_cast<T*>(w_folded),
                                 static_cast<T*>(bias_folded), cout, per_out));
  CUDA_CHECK_LAUNCH(foldConvWeightsKernel);
}

}  // namespace fprof::refk
