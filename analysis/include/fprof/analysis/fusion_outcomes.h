// Closing the loop (docs/analysis.md, "Applied fusions"): which of a baseline run's fusion
// candidates a later run runs fused, with the saving measured next to the one predicted.
//   1. Same op ranges: a candidate the program declared (fprof's NVTX op convention, pair P) is
//      found again as the ranges of pair P in the later run; the i-th instance of the baseline is
//      compared with the i-th of the later run.
//   2. Same neighbours, fewer launches: the kernels of both runs in launch order, within the top
//      NVTX ranges both runs hold the same number of times (a training step), else whole. Kernels
//      of the same name and launch shape that ran as often in both runs are anchors, paired in
//      order (the longest sequence in the same order in both). A candidate's instance whose kernels
//      are not all anchors lies between the anchors around it; the later run's kernels between the
//      same anchors replaced it. Where they are fewer launches, the candidate ran fused there. An
//      anchor must bound the region on one side at least (over the whole runs, on both): the start
//      or end of a step is the other side's neighbour, never both sides'.
// A region between two anchors may hold several candidates' instances (torch.compile fuses all
// of them at once): their outcome is one row, predicted savings summed, the measured saving the
// region's. The measured saving is the difference of kernel time between the two runs over the
// regions; the predicted one is the model's for the very instances matched; the error is
// (predicted - measured) / measured. A kernel counted by two candidates is counted once, for the
// better ranked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fprof/analysis/fusion.h"
#include "fprof/core/store.h"

namespace fprof::analysis {

struct FusionOutcome {
  std::vector<size_t> candidates;  // indices into the baseline's FusionResult::candidates, by rank
  std::string matched_by;          // "the same NVTX op ranges", "the same neighbouring kernels"
  int64_t instances = 0;           // baseline instances found fused
  int64_t regions = 0;             // where they were compared (op instances, or stretches between anchors)
  int64_t launches_before = 0;     // kernel launches over the regions, baseline and later run
  int64_t launches_after = 0;
  double before_ns = 0;            // kernel time over the regions
  double after_ns = 0;
  std::optional<double> predicted_saving_ns;  // the model's, summed over the instances; none if any lacks one
  double measured_saving_ns = 0;              // before_ns - after_ns
  std::optional<double> error;                // (predicted - measured) / measured
};

struct FusionOutcomes {
  std::vector<FusionOutcome> applied;  // by measured saving, largest first
  int64_t candidates = 0;              // baseline candidates looked for
  int64_t unchanged = 0;               // ... that the later run ran as before (every kernel an anchor)
  int64_t changed_not_fused = 0;       // ... whose regions did not lose launches
  std::string scope;                   // what was compared: "5 matched NVTX ranges \"op=step\"", "the whole runs"
  std::vector<std::string> notes;      // why the times may not compare: the runs differ in mode or device
};

FusionOutcomes matchFusionOutcomes(const core::Profile& base, const FusionResult& base_fusion,
                                   const core::Profile& cur);

// An outcome as front ends name it: its best ranked candidate by name (a declared pair's id first:
// "l0.res1: residual add + normalization, 2 kernels (add -> layer_norm)"), the others sharing its
// regions by pattern and size ("attention, 7 kernels (...), with attention (8 kernels)").
std::string fusionOutcomeName(const FusionOutcome& outcome, const FusionResult& base_fusion);

}  // namespace fprof::analysis
