// Fusion candidates as a user reads them (docs/analysis.md, "Findings: ops, pattern, suggestion"):
// named by the ops the program wrote and by a pattern, with what to do about them.
//   - Ops: each stage's op -- the NVTX op it ran in (fprof's op= convention, record_function),
//     PyTorch's op (emit_nvtx: "aten::matmul", its op_id and shapes dropped), the XLA op -- else
//     the op its kernel computes, read from the kernel's name (`kernelOpName`: ATen's functors
//     and kernels give "mul", "masked_fill", "softmax", "copy"; library GEMMs "matmul").
//   - Pattern, from what the stages compute: attention (two matrix multiplies around a softmax,
//     with the scale, mask and copies between), GEMM + epilogue (a matrix multiply and the
//     pointwise ops on its output: bias, activation), residual add + normalization, elementwise
//     chain (the tanh GELU among them: HF's gelu_new), reduction chain, layout copies.
//   - Suggestion, per pattern and per kind of program: a PyTorch program (ATen kernels or
//     emit_nvtx ops) gets the framework's API (scaled_dot_product_attention, torch.compile,
//     F.gelu(approximate="tanh")); a CUDA C++ program the kernel-level form. A suggestion is
//     advice: the saving it goes with is the model's prediction, never a measurement.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fprof/core/store.h"

namespace fprof::analysis {

struct FusionCandidate;
struct FrameworkOps;

enum class FusionPattern : uint8_t {
  kAttention,
  kGemmEpilogue,
  kResidualNorm,
  kElementwiseChain,
  kReductionChain,
  kLayoutCopies,
  kOther,
};
// "attention", "GEMM + epilogue", "residual add + normalization", "elementwise chain",
// "reduction chain", "layout copies", "chain"
std::string_view fusionPatternName(FusionPattern p);

// What a stage computes, for the pattern.
enum class StageKind : uint8_t {
  kMatmul,
  kSoftmax,
  kNorm,
  kReduction,
  kCopy,
  kAdd,
  kMul,
  kMask,
  kActivation,
  kElementwise,
  kOther,
};

// The op a kernel computes, from its demangled name: "matmul" for library and named GEMMs,
// ATen's ops by their kernel or functor ("add", "mul", "masked_fill", "softmax", "layer_norm",
// "copy", "gelu", "tanh", "pow", "sum", ...), a Triton kernel by its fused ops
// ("fused_add_native_layer_norm"); else the kernel's function name ("biasActKernel").
std::string kernelOpName(std::string_view demangled_name);

// What an op computes, from its name (an op name, or kernelOpName's) and its kernels' names.
StageKind stageKind(std::string_view op_name, const std::vector<std::string>& kernel_names);

enum class ProgramKind : uint8_t { kPytorch, kCuda };
// A PyTorch program when emit_nvtx ops were recorded or any kernel is ATen's.
ProgramKind programKind(const core::Profile& p, const FrameworkOps& framework_ops);

// Fills each candidate's ops, pattern, variant, name and suggestion (fusion.h).
void nameCandidate(FusionCandidate& c, ProgramKind program);

}  // namespace fprof::analysis
