// Per-rank breakdown of a profile holding several processes (a merged torchrun/mpirun/srun job):
// kernel time, launches, the top kernel and the share of time in NCCL kernels, rank by rank, so
// an imbalance or a rank stuck in communication shows at a glance.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fprof/core/merge.h"
#include "fprof/core/store.h"

namespace fprof::analysis {

struct RankRow {
  core::RankGroup group;   // the rank and its processes
  std::string hosts;       // distinct hosts, ", "-joined
  std::string pids;        // ", "-joined
  std::string devices;     // distinct "[ordinal] name", ", "-joined; "" when none was recorded
  std::string mode;        // the processes' mode (trace, metrics); "mixed" when they differ
  int64_t kernel_count = 0;
  int64_t total_kernel_ns = 0;       // sum of kernel durations
  std::optional<double> share;       // of all ranks' kernel time; none when there is none
  std::string top_kernel;            // demangled name with the most time; "" without kernels
  int64_t top_kernel_ns = 0;
  int64_t nccl_ns = 0;               // kernels classified NCCL (analysis/origin.h)
  std::optional<double> nccl_share;  // of this rank's kernel time; none without kernel time

  // Kernel time outside NCCL: the rank's own work. A rank that waits for a slower one spends the
  // wait inside NCCL kernels, so total kernel time would name the waiting rank, not the slow one.
  int64_t computeNs() const { return total_kernel_ns - nccl_ns; }

  std::optional<double> topKernelShare() const {
    if (total_kernel_ns <= 0) return std::nullopt;
    return static_cast<double>(top_kernel_ns) / static_cast<double>(total_kernel_ns);
  }
};

// One row per core::rankGroups group, in that order.
std::vector<RankRow> rankBreakdown(const core::Profile& p);

// The ranks with the most and the least kernel time outside NCCL (computeNs), when two or more
// ranks have some: indices into the rows and the ratio of their times. The slowest rank is the one
// the others wait for at every collective.
struct RankImbalance {
  size_t most = 0;
  size_t least = 0;
  double ratio = 1.0;  // most / least
};
std::optional<RankImbalance> rankImbalance(const std::vector<RankRow>& rows);

}  // namespace fprof::analysis
