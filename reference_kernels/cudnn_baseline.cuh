// cuDNN's fused convolution + bias + ReLU (cudnnConvolutionBiasActivationForward) as the vendor
// baseline of conv + batchnorm + ReLU, with inference batchnorm folded into weights and bias.
// cuDNN is loaded with dlopen at run time: where no libcudnn.so.9 is found the baseline is
// simply absent and everything else still runs.
#pragma once

#include <memory>

#include "common.cuh"

namespace fprof::refk {

class CudnnConv {
 public:
  // nullptr when libcudnn.so.9 cannot be loaded or initialised; why goes to `reason`.
  static std::unique_ptr<CudnnConv> load(std::string& reason);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  // Prepares descriptors, algorithm and workspace for one shape (3x3, stride 1, padding 1).
  void configure(DType t, std::size_t batch, std::size_t cin, std::size_t cout, std::size_t height, std::size_t width,
                 cudaStream_t s);
  // y = relu(conv(x, w_folded) + bias_folded); w_folded/bias_folded in the element type.
  void run(const void* x, const void* w_folded, const void* bias_folded, void* y);
  std::size_t version() const;

 private:
  CudnnConv() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// w_folded[co] = w[co] * gamma[co] / sqrt(var[co] + eps); bias_folded[co] = beta - mean * that scale.
void launchFoldConvWeights(DType t, const void* w, const float* bn_scale, const float* bn_shift, void* w_folded,
                           void* bias_folded, std::size_t cout, std::size_t per_out, cudaStream_t s);

}  // namespace fprof::refk
