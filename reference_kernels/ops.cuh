// The reference ops: each pair exists unfused (several kernels, intermediates in device memory)
// and fused (one kernel), some also as a vendor-library baseline. An op owns its tensors,
// runs a variant inside the NVTX ranges of docs/nvtx-convention.md, and checks its output
// against the CPU double-precision reference.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cudnn_baseline.cuh"
#include "kernels.cuh"
#include "nvtx_ranges.hpp"

namespace fprof::refk {

struct Context {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  std::unique_ptr<LtMatmul> lt;
  std::unique_ptr<CudnnConv> cudnn;  // null when libcudnn.so.9 is not loadable here
  std::mt19937_64 rng;
  std::uint64_t nextSeed() { return rng(); }
};

// A named device tensor; the name is the logical buffer name used in NVTX reads=/writes=.
struct Tensor {
  std::string name;
  DType dtype = DType::F32;
  std::size_t count = 0;
  DeviceBuffer buf;

  Tensor() = default;
  Tensor(std::string n, DType t, std::size_t c) : name(std::move(n)), dtype(t), count(c), buf(c * dtypeBytes(t)) {}
  void* ptr() const { return buf.get(); }
  std::size_t bytes() const { return count * dtypeBytes(dtype); }
  void random(Context& ctx, float scale, float offset = 0.0f) const {
    fillUniform(dtype, ptr(), count, ctx.nextSeed(), scale, offset);
  }
  std::vector<float> host() const { return downloadAsFloat(dtype, ptr(), count); }
};

class Op {
 public:
  virtual ~Op() = default;
  virtual std::string name() const = 0;  // also the pair id
  virtual std::string description() const = 0;
  virtual std::vector<std::string> variants() const { return {"unfused", "fused"}; }
  virtual bool supports(DType) const { return true; }
  virtual int checkShapeCount() const = 0;
  // shape_index < 0: the benchmark shape; otherwise one of the check shapes.
  virtual void setup(Context& ctx, DType t, int shape_index) = 0;
  virtual std::string shapeText() const = 0;
  virtual void run(Context& ctx, const std::string& variant, std::uint64_t repeat_index) = 0;
  virtual void poisonOutputs() = 0;
  // Relative error of the current outputs against the CPU fp64 reference (NaN when unwritten).
  virtual double check() = 0;
  // Analytic minimum DRAM bytes of a variant: each input read once, each output (and each
  // intermediate, both ways) moved once. Not a measurement.
  virtual double minimumBytes(const std::string& variant) const = 0;
  virtual double flops() const { return 0.0; }
  // Number of kernels a variant launches per invocation (vendor libraries: as documented).
  virtual int kernelCount(const std::string& variant) const = 0;
};

// with_cudnn: conv_bn_relu gets its cuDNN vendor variant.
std::vector<std::unique_ptr<Op>> makeOps(bool with_cudnn);

// The transformer (transformer.cu).
struct ModelConfig {
  std::size_t batch = 8, seq = 1024, width = 1024, heads = 16, layers = 8, vocab = 32000, decode_steps = 32;
  // Which GEMM runs the matmuls (unfused: no epilogue + bias/activation kernel; fused: the
  // epilogue in the GEMM). Auto: the hand GEMM where it matches cuBLASLt (the Hopper wgmma kernel
  // with at least kHandMatmulMinRows rows: prefill), cuBLASLt elsewhere (decode's few rows, where
  // a 128-row tile is mostly empty, and GPUs without the Hopper kernel).
  enum class Matmul { Auto, Lt, Hand };
  Matmul matmul = Matmul::Auto;
  static constexpr std::size_t kHandMatmulMinRows = 1024;
};
struct ModelTiming {
  double prefill_ms = 0.0, decode_ms = 0.0;
};
class Transformer {
 public:
  Transformer(Context& ctx, DType t, const ModelConfig& config);
  ~Transformer();
  Transformer(const Transformer&) = delete;
  Transformer& operator=(const Transformer&) = delete;
  // Prefill over the prompt, then decode_steps greedy steps. fused selects the form.
  // Returns timings from device events around each phase.
  ModelTiming generate(bool fused, std::uint64_t repeat_index);
  // Logits (batch, vocab) of the last prefill position, and of the last decode step.
  std::vector<float> prefillLogits() const;
  std::vector<float> decodeLogits() const;
  std::vector<int> generatedTokens() const;
  // CPU fp64 forward pass over prompt + generated tokens (small configs only): the logits of
  // the last prefill position and of the last decode step's input position.
  void cpuReference(std::vector<double>& prefill_logits, std::vector<double>& decode_logits) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fprof::refk
