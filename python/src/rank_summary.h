// A rank of a job summarised into small tables (`fprof job`): what the job's reduction joins
// instead of the kernels. Each rank file is read once, on a worker, by the same analysis as fprof
// report; the tables keep what a job-wide figure needs and can be summed across ranks exactly:
// per kernel group its time and the roofline placement's inputs (work, occupancy), so the job's
// placement is computed by analysis::place from sums, as for a merged file.
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "columns.h"
#include "fprof/analysis/ceilings.h"
#include "fprof/analysis/roofline.h"
#include "fprof/core/store.h"

namespace fprof::python {

// Bump when a summary table changes: cached summaries of another version are recomputed.
inline constexpr int kRankSummaryVersion = 2;

struct RankSummaryOptions {
  // NVTX ranges that mark a step (matched against the message; the outermost match counts).
  std::string step_regex = R"(^(op=)?(\w*_)?step\b)";
};

// The tables of every rank a file holds (one for a rank's own file; a merged file is split into
// its ranks), in this order: ranks, groups, ops, steps, fusion, roofs, launch_groups, launch_samples.
std::vector<Table> summarizeRanks(const core::Profile& p, const RankSummaryOptions& options);

// The roofs of a summary's roofs table back as the analysis's ceilings.
struct RoofRow {
  std::string name;
  double value = 0;
  std::string source;
  std::string method;
};
analysis::Ceilings ceilingsFromRoofs(const std::vector<RoofRow>& roofs);

// The inputs of one job-level kernel group's placement: the rank summaries' sums, summed again.
struct GroupSums {
  int64_t duration_ns = 0;
  int64_t launches = 0;
  std::optional<int> sm_count;
  analysis::Work work;
  double occupancy_weighted = 0;  // sum of occupancy x duration
  bool occupancy_complete = true;
  bool occupancy_achieved = true;
};

// analysis::place over each group's sums, against one set of roofs: the columns intensity_dram,
// intensity_l2, intensity_l1, flops, dram_bytes, flops_per_s, dram_bytes_per_s, roof_fraction,
// binding_roof, bound, bound_reason, precision (as GroupRow has them).
Table placeGroups(const std::vector<GroupSums>& groups, const analysis::Ceilings& ceilings);

}  // namespace fprof::python
