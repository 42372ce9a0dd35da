// Op pairs (and chains) and what fusing them would pay. Pairs come from the NVTX op convention
// where the program declares them (nvtx_ops.h), otherwise from data flow (dataflow.h). Each gets
// the intermediate bytes that would stay on chip, launches removed, the measured time, a
// predicted fused time from a stated model (docs/analysis.md), the register/occupancy risk, and
// where the fused variant was measured too, the measured saving and the model's error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fprof/analysis/dataflow.h"
#include "fprof/analysis/nvtx_ops.h"
#include "fprof/core/store.h"

namespace fprof::analysis {

enum class PairSource { kNvtx, kDataFlow };
enum class BytesSource { kCounters, kAllocation, kNone };
enum class PredictionModel { kRoofline, kTrace };
std::string_view pairSourceName(PairSource s);          // "nvtx", "dataflow"
std::string_view bytesSourceName(BytesSource s);        // "counters", "allocation size", "n/a"
std::string_view predictionModelName(PredictionModel m);  // "roofline", "trace"

struct FusionCandidate {
  PairSource source = PairSource::kDataFlow;
  std::string id;                          // NVTX pair id, or the stage kernels joined by " -> "
  std::string op;                          // NVTX op name ("" for data-flow pairs)
  std::vector<std::string> stages;         // stage op names, or kernel names
  std::vector<std::string> intermediates;  // buffer names (NVTX) or allocation addresses
  int64_t instances = 0;                   // times the unfused chain ran
  int64_t launches_per_instance = 0;
  int64_t launches_removed = 0;            // per instance
  double unfused_ns = 0;                   // median over instances of the summed kernel time
  std::vector<double> stage_ns;            // median over instances of each stage's kernel time
  std::optional<double> intermediate_bytes;  // per instance, one copy of every intermediate
  BytesSource bytes_source = BytesSource::kNone;
  std::optional<double> predicted_fused_ns;  // median over instances
  std::optional<PredictionModel> model;
  std::optional<double> predicted_saving_ns;  // per instance: unfused - predicted fused (median)
  std::optional<double> total_saving_ns;      // summed over instances: the payoff
  std::optional<double> program_share;        // total saving / program GPU (kernel) time
  std::optional<double> measured_fused_ns;    // median over the fused variant's instances
  std::optional<int64_t> measured_fused_instances;
  std::optional<double> measured_saving_ns;
  std::optional<double> prediction_error;     // (predicted fused - measured fused) / measured fused
  std::optional<double> vendor_ns;            // median of the vendor variant, where measured
  std::optional<double> fused_occupancy;      // estimated (docs/analysis.md)
  bool fuse = true;
  std::string reason;              // why not to fuse, when fuse is false
  std::vector<std::string> risks;  // not blocking, worth knowing
};

struct FusionOptions {
  double min_occupancy = 0.5;  // the fusion note's line: below 50% occupancy, reconsider
  // Upper bound of a kernel's fixed cost (ramp-up, drain, timer overhead); the shortest kernel of
  // the run bounds it too (docs/analysis.md).
  int64_t max_kernel_fixed_ns = 2000;
  // Trace model: an intermediate no larger than this share of the L2 is taken to stay in L2
  // between producer and consumer (the rest of the L2 holds the kernels' other data).
  double l2_resident_fraction = 0.5;
  // Trace model: a stage moving its bytes at >= this share of the DRAM roof is memory-bound (the
  // roofline's own line, RooflineOptions::roof_fraction_binds).
  double roof_fraction_binds = 0.5;
};

struct FusionResult {
  std::vector<FusionCandidate> candidates;  // fusable ones by total saving, then the others
  int64_t program_gpu_ns = 0;               // sum of kernel durations
  bool nvtx_convention = false;             // the program declared op pairs
  std::optional<double> median_abs_error;   // over candidates with prediction and measurement
  int64_t measured_pairs = 0;
  std::vector<std::string> notes;           // what the analysis could not see, in words
};

FusionResult analyzeFusion(const core::Profile& p, const OpIndex& ops, const DataFlow& df,
                           const FusionOptions& opt = {});

}  // namespace fprof::analysis
