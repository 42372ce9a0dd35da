// Kernel summaries from trace data: totals and the top kernels grouped by name and launch shape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fprof/core/store.h"

namespace fprof::analysis {

// Kernels with the same demangled name and launch shape, aggregated.
struct KernelGroup {
  uint32_t demangled_id = 0;
  int32_t grid_x = 0, grid_y = 0, grid_z = 0;
  int32_t block_x = 0, block_y = 0, block_z = 0;
  int64_t calls = 0;
  int64_t total_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  int32_t registers_per_thread = 0;      // max over the group
  int32_t shared_bytes = 0;              // static + dynamic, max over the group
  int64_t local_bytes_per_thread = 0;    // max over the group: stack frame and spills
  std::optional<double> theoretical_occupancy;  // min over the group
  std::vector<size_t> kernel_indices;    // into Profile::kernels, in time order

  double meanNs() const { return calls ? static_cast<double>(total_ns) / static_cast<double>(calls) : 0.0; }
};

struct RunSummary {
  int64_t kernel_count = 0;
  int64_t total_kernel_ns = 0;  // sum of kernel durations (overlap counted twice)
  // Programmatic dependent launches, and the time they waited for their stream predecessor
  // inside their recorded spans (excluded from their durations).
  int64_t programmatic_launches = 0;
  int64_t dependency_wait_ns = 0;
  int64_t gpu_busy_ns = 0;      // union of kernel intervals per device, summed over devices
  int64_t span_ns = 0;          // first kernel start to last kernel end
  // False when no kernel has a start time: the range profiler hides kernel timestamps, so a
  // metrics-mode run whose every kernel was replayed has durations but no timeline, and then
  // gpu_busy_ns and span_ns mean nothing.
  bool timeline_known = true;
  int64_t memcpy_count = 0;
  int64_t memcpy_bytes = 0;
  int64_t memcpy_ns = 0;
  int64_t memset_count = 0;
  int64_t nvtx_range_count = 0;
  std::vector<KernelGroup> groups;  // by total_ns, descending
};

RunSummary summarize(const core::Profile& profile);

}  // namespace fprof::analysis
