// Metric sets for `fprof run --metrics`, and how raw counter values become KernelCounters.
// Pure C++ (no CUPTI types), so the formulas are tested on the CPU.
#pragma once

#include <string>
#include <vector>

#include "fprof/core/expected.h"
#include "fprof/core/model.h"

namespace fprof::collector {

struct MetricSet {
  std::string name;
  std::string description;
  std::vector<std::string> metrics;  // raw range-profiler metric names
};

// "memory" (1 pass on GH100), "roofline" (bytes + FLOPs + tensor ops), "full" (roofline + more).
const std::vector<MetricSet>& builtinMetricSets();

// A set name, or a comma-separated list of metric names (duplicates dropped, order kept).
core::Expected<std::vector<std::string>> expandMetricSelection(const std::string& selection);

// Counts per FLOP unit. An FMA is two FLOPs. Packed half-precision instructions (HFMA2/HADD2/
// HMUL2) are counted per thread instruction by sm__sass_thread_inst_executed_op_h*, so each is
// two lanes: checked against a kernel of known HFMA2 count on an H200 (tests/gpu).
inline constexpr double kFlopsPerFma = 2.0;
inline constexpr double kHalfLanesPerInstruction = 2.0;
// sm__ops_path_tensor_src_* count multiply-adds, so a GEMM of M*N*K reads M*N*K: calibrated
// against cuBLAS GEMMs of known size on an H200 (tests/gpu/metrics_test).
inline constexpr double kTensorFlopsPerOp = 2.0;

// Derived counters from raw values (names[i] has values[i]); metrics that were not collected
// stay unset. kernel_id is left for the caller.
core::KernelCounters deriveCounters(const std::vector<std::string>& names, const std::vector<double>& values);

}  // namespace fprof::collector
