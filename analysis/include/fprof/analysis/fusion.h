// Fusion candidates and what fusing them would pay, the last step of the pipeline:
//   argument roles (arg_roles.h) -> buffers and lifetimes (buffers.h) -> producer/consumer edges
//   (dataflow.h) -> chains (fusion_chains.h) -> payoff (fusion_model.h) -> candidates (here).
// Chains come from three places, in this order of trust: the program's NVTX op convention
// (nvtx_ops.h: declared pairs, with their fused variant where it ran), PyTorch's op graph
// (framework_ops.h: emit_nvtx with record_shapes=True names each input's producer op), and data
// flow among the kernels neither covers. Instances of the same chain are one candidate; each
// candidate gets the intermediate bytes that would stay on chip, launches removed, the measured
// time, a predicted fused time from a stated model (docs/analysis.md), the register/occupancy
// risk, how its producer/consumer roles were known, and where the fused variant was measured too,
// the measured saving and the model's error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fprof/analysis/dataflow.h"
#include "fprof/analysis/framework_ops.h"
#include "fprof/analysis/fusion_model.h"
#include "fprof/analysis/fusion_patterns.h"
#include "fprof/analysis/nvtx_ops.h"
#include "fprof/core/store.h"

namespace fprof::analysis {

enum class PairSource { kNvtx, kDataFlow, kFrameworkOps };
std::string_view pairSourceName(PairSource s);  // "nvtx", "dataflow", "framework"

struct FusionCandidate {
  PairSource source = PairSource::kDataFlow;
  std::string id;                          // NVTX pair id, or the stage names joined by " -> "
  std::string op;                          // NVTX op name ("" for other pairs)
  // Stage names: the NVTX stage op, else the framework op its kernels ran in ("aten::softmax"),
  // else the kernel's full name (front ends show its short name, kernel_names.h).
  std::vector<std::string> stages;
  std::vector<std::vector<std::string>> stage_kernels;  // each stage's kernels, full names (first instance)
  // Which stage feeds which (stage indices, producer first): stages are in launch order, and a
  // group need not be a chain (GPT-2's gelu_new: two producers meet in one multiply).
  std::vector<std::pair<size_t, size_t>> links;
  std::vector<std::string> intermediates;  // buffer names (NVTX), op inputs, or allocation addresses
  // How the producer/consumer relation was known: "declared by NVTX op ranges", "declared by
  // PyTorch (emit_nvtx input_op_ids)", "measured", "inferred from the kernel signature",
  // "inferred from the argument position" (the weakest over the chain's links).
  std::string roles;
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

  // As a user reads it (fusion_patterns.h): each stage's op ("aten::matmul", "softmax"), the
  // pattern, a variant of it ("tanh GELU" for an elementwise chain that is one, else ""), the
  // largest intermediate's shape where the program recorded shapes (emit_nvtx), the name
  // ("attention, 9 kernels (matmul -> mul -> masked_fill -> softmax -> matmul), shapes
  // [4,12,512,512]") and what to do (a suggestion; its saving is the prediction above).
  // Every instance: its kernels (indices into the profile's kernels, ascending) and its predicted
  // saving (unfused - predicted fused; none where the model made no prediction). `fprof diff`
  // finds these again in a later run (fusion_outcomes.h).
  std::vector<std::vector<size_t>> instance_kernels;
  std::vector<std::optional<double>> instance_saving_ns;

  std::vector<std::string> stage_ops;
  FusionPattern pattern = FusionPattern::kOther;
  std::string variant;
  std::vector<int64_t> shape;
  std::string name;
  std::string suggestion;
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
// The same, with the framework ops the caller already has (indexFrameworkOps(p)).
FusionResult analyzeFusion(const core::Profile& p, const OpIndex& ops, const FrameworkOps& framework_ops,
                           const DataFlow& df, const FusionOptions& opt = {});

}  // namespace fprof::analysis
