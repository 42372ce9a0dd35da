// Fusion, the payoff step (docs/analysis.md, "Predicted fused time"): what one instance of a chain
// would take fused. An instance is its stages (the kernels of each, in launch order) and the
// intermediates passed between them; the model is fixed cost + intermediate traffic at the level
// it lives in + not faster than the roof, and it says when not to fuse (register/shared-memory
// pressure, independent concurrent stages). fusion.h aggregates instances into candidates.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fprof/analysis/dataflow.h"
#include "fprof/analysis/roofline.h"
#include "fprof/core/store.h"

namespace fprof::analysis {

enum class BytesSource { kCounters, kAllocation, kNone };
enum class PredictionModel { kRoofline, kTrace };
std::string_view bytesSourceName(BytesSource s);          // "counters", "allocation size", "n/a"
std::string_view predictionModelName(PredictionModel m);  // "roofline", "trace"

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
  // Trace model: a stage below that line but at >= this share of the DRAM roof, with at least one
  // block per SM and no matrix multiply in it, is taken to stream in a fused kernel (the streaming
  // model, docs/analysis.md). Below it a kernel is compute- or latency-bound beyond what its launch
  // shows (the reference model's direct convolution runs at 1% of the roof, its batch norm at 22%).
  double streamable_roof_fraction = 0.25;
};

// One stage-to-stage edge of an instance: the intermediate it passes.
struct StageEdge {
  size_t from = 0, to = 0;  // stage indices
  std::string name;
  std::optional<double> allocation_bytes;  // the intermediate's size in memory, where known
  // False when the value must still be written by the fused kernel: other kernels read it too, or
  // the op itself lists it among its outputs (residual_layernorm's h).
  bool write_removed = true;
};

struct Instance {
  std::vector<std::vector<size_t>> stages;  // kernel indices per stage
  std::vector<StageEdge> edges;
};

struct InstanceResult {
  double unfused_ns = 0;
  std::vector<double> stage_ns;
  std::optional<double> intermediate_bytes;
  BytesSource bytes_source = BytesSource::kNone;
  std::optional<double> fused_ns;
  std::optional<PredictionModel> model;
  std::optional<double> fused_occupancy;
  std::string no_fuse;
  std::vector<std::string> risks;
};

// What every instance's evaluation needs: the run, its data flow, roofs, options, and the fixed
// cost of one kernel per (process, device).
class FusionModel {
 public:
  FusionModel(const core::Profile& p, const DataFlow& df, const FusionOptions& opt);
  InstanceResult evaluate(const Instance& in);
  // The fixed cost of one kernel on a device: the shortest kernel it ran, at most the option's cap.
  double fixedNs(uint32_t process_id, uint32_t device_id) const;
  const core::Profile& profile() const { return p_; }
  const DataFlow& dataFlow() const { return df_; }

 private:
  const core::Profile& p_;
  const DataFlow& df_;
  const FusionOptions& opt_;
  CeilingCache cache_;
  std::map<uint64_t, double> fixed_ns_;  // by process << 32 | device
};

// Bytes a stage moves by its pointer arguments (extent x (read + written)); none when a kernel's
// arguments are unknown or resolve to nothing (cuBLAS passes its pointers in a struct).
std::optional<double> stageArgumentBytes(const DataFlow& df, const std::vector<size_t>& kernels);

}  // namespace fprof::analysis
