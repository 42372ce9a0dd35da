// Kernel origin from its name (see origin.h). The order of the rules matters: FlashAttention is
// built on CUTLASS and lives inside PyTorch, so the most specific origin is tried first.
#include "fprof/analysis/origin.h"

#include <unordered_map>

namespace fprof::analysis {

std::string_view originName(Origin o) {
  static constexpr std::array<std::string_view, kOriginCount> kNames = {
      "cuBLAS", "cuDNN", "CUTLASS", "Triton", "ATen", "FlashAttention", "NCCL", "user"};
  return kNames[static_cast<size_t>(o)];
}

namespace {

bool has(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// The name without a leading "void " (demangled kernels are functions returning void).
std::string_view head(std::string_view s) {
  if (startsWith(s, "void ")) s.remove_prefix(5);
  return s;
}

}  // namespace

Origin classifyOrigin(std::string_view name) {
  const std::string_view h = head(name);
  if (startsWith(h, "nccl") || has(h, "ncclDevKernel") || has(h, "ncclKernel")) return Origin::kNccl;
  if (startsWith(h, "flash_") || startsWith(h, "flash::") || has(h, "flash::") || has(h, "pytorch_flash::") ||
      startsWith(h, "fmha_") || has(h, "FlashAttn") || has(h, "flash_fwd") || has(h, "flash_bwd")) {
    return Origin::kFlashAttention;
  }
  if (startsWith(h, "triton_") || startsWith(h, "triton__")) return Origin::kTriton;
  if (has(h, "cudnn") || has(h, "xmma_fprop") || has(h, "xmma_dgrad") || has(h, "xmma_wgrad") ||
      has(h, "implicit_convolve") || startsWith(h, "fft2d_") || has(h, "winograd") || has(h, "conv2d_grouped_direct")) {
    return Origin::kCudnn;
  }
  // cuBLAS kernels carry the library name, an architecture prefix (sm90_xmma_gemm, ampere_sgemm)
  // or one of its helper kernels; cuBLAS 12.8+ Hopper/Blackwell GEMMs are "nvjet_*".
  if (has(h, "cublas") || startsWith(h, "nvjet_") || has(h, "xmma_gemm") || startsWith(h, "ampere_") ||
      startsWith(h, "volta_") || startsWith(h, "turing_") || startsWith(h, "maxwell_") ||
      startsWith(h, "gemv2T_kernel") || startsWith(h, "gemv2N_kernel") || startsWith(h, "gemvNSP_kernel") ||
      startsWith(h, "gemmSN_") || startsWith(h, "gemmk1_kernel") || startsWith(h, "splitKreduce_kernel") ||
      startsWith(h, "dot_kernel") || startsWith(h, "scal_kernel") || startsWith(h, "axpy_kernel")) {
    return Origin::kCublas;
  }
  if (startsWith(h, "at::") || startsWith(h, "c10::") || startsWith(h, "(anonymous namespace)::at::")) {
    return Origin::kAten;
  }
  if (startsWith(h, "cutlass") || has(h, "cutlass::") || startsWith(h, "_ZN7cutlass")) return Origin::kCutlass;
  // Mangled ATen names: at::native -> _ZN2at6native
  if (startsWith(h, "_ZN2at") || startsWith(h, "_ZN3c10")) return Origin::kAten;
  // ATen kernels in an anonymous namespace of an ATen file, instantiated with an ATen functor
  // (torch.arange: "(anonymous namespace)::elementwise_kernel_with_index<int, at::native::...>")
  // or on PyTorch's own element types (the softmax: "(anonymous namespace)::softmax_warp_forward<
  // c10::BFloat16, ...>").
  if (startsWith(h, "(anonymous namespace)::") && (has(h, "at::native::") || has(h, "c10::"))) return Origin::kAten;
  // ATen kernels outside any namespace, by their symbol.
  for (std::string_view symbol : {"softmax_warp_forward<", "softmax_warp_backward<", "cunn_SoftMaxForward",
                                  "cunn_SoftMaxBackward", "cunn_SpatialSoftMaxForward", "cunn_SpatialSoftMaxBackward"}) {
    if (startsWith(h, symbol) || startsWith(h, "(anonymous namespace)::" + std::string(symbol))) return Origin::kAten;
  }
  return Origin::kUser;
}

bool fewWarpsByDesign(std::string_view name) {
  switch (classifyOrigin(name)) {
    case Origin::kCublas:
    case Origin::kCutlass:
    case Origin::kCudnn:
    case Origin::kFlashAttention: return true;
    default: break;
  }
  // Hopper warpgroup MMA and warp-specialized kernels by name; Triton's GEMM templates.
  const std::string_view h = head(name);
  return has(h, "wgmma") || has(h, "warpspecialized") || has(h, "WarpSpecialized") || has(h, "warp_specialized") ||
         startsWith(h, "triton_tem_");
}

OriginTotals sumByOrigin(const core::Profile& p) {
  OriginTotals t;
  std::unordered_map<uint32_t, Origin> memo;
  for (const core::KernelRow& k : p.kernels) {
    auto it = memo.find(k.demangled_id);
    if (it == memo.end()) it = memo.emplace(k.demangled_id, classifyOrigin(p.str(k.demangled_id))).first;
    const auto o = static_cast<size_t>(it->second);
    t.launches[o] += 1;
    t.duration_ns[o] += k.durationNs();
  }
  return t;
}

}  // namespace fprof::analysis
