// Which layer of the software stack a kernel came from, from its name: cuBLAS/cuBLASLt, cuDNN,
// CUTLASS, Triton, PyTorch ATen, FlashAttention, NCCL or user code. The collector does not record
// the loading module (yet), so the name is all there is; docs/analysis.md lists the patterns.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "fprof/core/store.h"

namespace fprof::analysis {

enum class Origin { kCublas = 0, kCudnn, kCutlass, kTriton, kAten, kFlashAttention, kNccl, kUser };
inline constexpr size_t kOriginCount = 8;
std::string_view originName(Origin o);  // "cuBLAS", "cuDNN", "CUTLASS", "Triton", "ATen", "FlashAttention", "NCCL", "user"

// Classifies a kernel from its demangled name (the mangled one works for most patterns too).
Origin classifyOrigin(std::string_view kernel_name);

// Kernels built to run few warps per SM (one or two warpgroups per block, a block per SM, tiles
// sized to the GPU by their library): cuBLAS/cuBLASLt (nvjet), CUTLASS, cuDNN and FlashAttention
// kernels, wgmma and warp-specialized kernels, Triton's GEMM templates. Their low theoretical
// occupancy says nothing about work in flight (roofline.h).
bool fewWarpsByDesign(std::string_view kernel_name);

struct OriginTotals {
  std::array<int64_t, kOriginCount> launches{};
  std::array<int64_t, kOriginCount> duration_ns{};
};
OriginTotals sumByOrigin(const core::Profile& p);

}  // namespace fprof::analysis
