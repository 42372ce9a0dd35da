// Tensor-core FLOPs from the tensor pipe's active cycles and the function's SASS, without the
// sm__ops_path_tensor_* counters. Those six counters take five of the roofline set's seven replay
// passes on GH100 (each needs a pass of its own); one cycle counter fits in the two passes the
// rest of the set needs, and on the H100/H200 it is exact per instruction kind:
//
//   sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.sum x ops a cycle of the kind
//
// measured against the ops_path counters on every tensor kernel of cuBLAS (nvjet, xmma), cuDNN
// attention, FlashAttention-2, CUTLASS and the reference kernels (on an H200):
// HGMMA fp16/bf16 1024 ops a cycle for every N, HGMMA tf32 512, QGMMA fp8 2048, HMMA.16816
// fp16/bf16 2048/3, HMMA.1688 fp16/bf16 512. The counts are whole cycles, so a function whose
// tensor instructions share one rate and precision (one HGMMA shape or several, as attention's
// QK^T and PV) gets exact FLOPs; other kinds, mixed rates or precisions stay unknown and say why,
// with bounds where they exist. DMMA (fp64) runs outside that counter: its warp instructions
// (sm__inst_executed_pipe_tensor_op_dmma.sum) times 2*m*n*k of the function's one DMMA shape.
// Integer MMA (IMMA, IGMMA, BMMA, BGMMA) is not counted by these metrics.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fprof/core/expected.h"
#include "fprof/core/sass_half.h"

namespace fprof::core {

inline constexpr const char* kTensorCyclesMetric = "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.sum";
inline constexpr const char* kDmmaInstMetric = "sm__inst_executed_pipe_tensor_op_dmma.sum";
// HFMA2.MMA (a half FMA or an immediate move run on the tensor pipe): the cycle counter counted
// such cycles in one of 24 PyTorch kernels that ran only HFMA2.MMA (7,796 cycles for 8,192
// instructions, H200), so a tensor kernel that also runs them gets bounds, not a count.
inline constexpr const char* kHfma2MmaInstMetric = "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum";

struct TensorFlops {
  std::optional<double> fp16, bf16, tf32, fp8, fp64;
  std::string method;  // how they were counted, or why some are unknown
};

// The ops one active cycle of kTensorCyclesMetric stands for, and the input precision, of one
// tensor instruction as nvdisasm prints it ("HGMMA.64x128x16.F32.BF16"); none where no rate was
// calibrated (other chips than sm_90, sparse, tf32 HMMA, ...).
struct MmaRate {
  std::string precision;  // fp16, bf16, tf32, fp8
  double ops_per_cycle = 0;
};
std::optional<MmaRate> mmaRateOf(const std::string& mnemonic, int sm);

// FLOPs of one DMMA instruction (2*m*n*k of "DMMA.16x8x16" or "DMMA.884"); none if unreadable.
std::optional<double> dmmaFlopsOf(const std::string& mnemonic);

// A kernel's tensor FLOPs from its counters and its function's SASS classes (sass_half.h: the
// "mma:" entries); hfma2_mma = its HFMA2.MMA instructions (kHfma2MmaInstMetric).
TensorFlops tensorFlopsFromSass(const SassHalfCounts& sass, int sm, double pipe_cycles, double dmma_instructions,
                                double hfma2_mma = 0);

// Functions (mangled names) whose kernels' tensor FLOPs wait for their SASS.
Expected<std::vector<std::string>> functionsNeedingTensorSass(const std::string& db_path);

// Fills flops_tensor_* and tensor_flops_method of every kernel waiting for its function's SASS
// (copies included); functions not in `sass` get `why_missing`. Writes their MMA instructions to
// function_sass_op. One transaction.
Status applySassTensorFlops(const std::string& db_path, const std::map<std::string, SassHalfCounts>& sass, int sm,
                            const std::string& why_missing);

}  // namespace fprof::core
