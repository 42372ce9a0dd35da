// Metric sets for `fprof run --metrics`, and how raw counter values become KernelCounters.
// Data and arithmetic only (no CUPTI): the collector, the CLI and the CPU tests share it.
#pragma once

#include <string>
#include <vector>

#include "fprof/core/expected.h"
#include "fprof/core/model.h"

namespace fprof::core {

struct MetricSet {
  std::string name;
  std::string description;
  std::vector<std::string> metrics;  // raw range-profiler metric names
};

// "memory" (1 pass on GH100), "roofline" (bytes + FLOPs + tensor ops), "full" (roofline + more).
const std::vector<MetricSet>& builtinMetricSets();

// A set name, or a comma-separated list of metric names (duplicates dropped, order kept).
Expected<std::vector<std::string>> expandMetricSelection(const std::string& selection);

// Whether CUPTI counts `metric` by patching the kernel's SASS (sm__sass_*, smsp__sass_*): such
// counters need kernel replay (they read 0 or too little when the program's own run is counted).
bool isSassInstrumented(const std::string& metric);

// Counts per FLOP unit, checked on an H200 (tests/gpu_metrics, bench/RESULTS.md): an FMA is two
// FLOPs; sm__sass_thread_inst_executed_op_h* count packed HFMA2/HADD2/HMUL2 instructions per
// thread, each two lanes (n HFMA2 read n, so 4n FLOPs); sm__ops_path_tensor_src_* already count
// FLOPs (a cuBLAS GEMM of M*N*K read exactly 2*M*N*K).
inline constexpr double kFlopsPerFma = 2.0;
// half_flops_method of a kernel whose hadd/hmul/hfma counts wait for its function's SASS (fp16 and
// bf16 FLOPs stay unknown until `fprof run` has read it: core/sass_half.h).
inline constexpr const char* kHalfFlopsPending = "pending: the function's SASS was not read yet";
inline constexpr double kTensorFlopsPerOp = 1.0;
// tensor_flops_method of a kernel whose tensor-pipe cycles wait for its function's SASS.
inline constexpr const char* kTensorFlopsPending = "pending: the function's SASS was not read yet";

// L2 bytes as the roofline's L2 level counts them: the sectors the SMs (L1/TEX, TMA included)
// read and wrote at the L2, 32 bytes each. lts__t_bytes.sum, kept beside it, also counts the
// requests one L2 partition forwards to the other on GH100 (srcunit ltcfabric): on an H100 that
// traffic is 40-60% of a streaming kernel's SM requests, and its count follows the state the
// driver's cache flush leaves, which fprof's sweep does not reproduce, while the SMs' own requests
// agree with ncu's (docs/metrics.md). fprof's L2 ceiling is measured in
// the SMs' bytes too (reference_kernels/ceilings).
inline constexpr const char* kL2SmSectorsMetric = "lts__t_sectors_srcunit_tex.sum";
inline constexpr const char* kL2BytesMetric = "lts__t_bytes.sum";
inline constexpr double kBytesPerSector = 32.0;

// Local-memory traffic: the L1 counters (set `memory`), or the sectors the SASS instrumentation
// counts (`roofline`: free beside the FLOP counters), 32 bytes each.
inline constexpr const char* kLocalLoadBytesMetric = "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum";
inline constexpr const char* kLocalStoreBytesMetric = "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum";
inline constexpr const char* kLocalLoadSectorsSassMetric = "sm__sass_l1tex_t_sectors_pipe_lsu_mem_local_op_ld.sum";
inline constexpr const char* kLocalStoreSectorsSassMetric = "sm__sass_l1tex_t_sectors_pipe_lsu_mem_local_op_st.sum";

// Warp instructions executed: the hardware counter (`full`, `memory`-style lists) or the SASS
// instrumentation's count of the same (`roofline`, where it shares the FLOP counters' pass).
inline constexpr const char* kInstructionsMetric = "smsp__inst_executed.sum";
inline constexpr const char* kInstructionsSassMetric = "smsp__sass_inst_executed.sum";

// fprof's own sums over a kernel's half-precision instructions where each was counted per PC
// (SASS patching, core/sass_pc.h): FLOPs per lane, exact whatever forms and pipes its function
// mixes. Stored in kernel_metric beside the counters they come from.
inline constexpr const char* kHalfFlopsFp16PerPcMetric = "fprof__sass_per_pc_flops_fp16.sum";
inline constexpr const char* kHalfFlopsBf16PerPcMetric = "fprof__sass_per_pc_flops_bf16.sum";
inline constexpr const char* kHalfFlopsPerPcMethod =
    "per instruction: each HADD2/HMUL2/HFMA2's executed threads (SASS patching) times its lanes in the SASS, exact";

// Derived counters from raw values (names[i] has values[i]); metrics that were not collected
// stay unset. kernel_id is left for the caller.
KernelCounters deriveCounters(const std::vector<std::string>& names, const std::vector<double>& values);

}  // namespace fprof::core
