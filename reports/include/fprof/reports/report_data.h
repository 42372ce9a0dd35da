// What a report shows, independent of its format: built once from a profile (and a baseline)
// through the analysis layer, then rendered as HTML or Markdown. Renderers never compute a number;
// they only format what is here, so both formats always agree.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fprof/analysis/kernel_names.h"
#include "fprof/analysis/ranks.h"
#include "fprof/analysis/roofline.h"
#include "fprof/analysis/run_analysis.h"
#include "fprof/core/store.h"

namespace fprof::reports {

// A roof of the roofline: a bandwidth (bytes/s) or a compute rate (FLOP/s).
struct Roof {
  std::string name;         // "dram", "l2", "l1", "fp32", "tensor_fp16", ...
  bool is_bandwidth = false;
  double value = 0;         // bytes/s or FLOP/s
  std::string source;       // "measured" or "datasheet"
  std::string method;       // how it was obtained, in words
};

struct RunHeader {
  std::string file;
  std::string program;      // command line of the profiled process(es)
  std::string host;
  std::string date_utc;     // "2026-11-21 23:22:12 UTC", from the process start; "" if unknown
  std::string mode;         // "trace", "metrics", ...
  std::string fprof_version;
  std::vector<std::string> devices;  // one line per device
  int64_t kernel_count = 0;
  int64_t total_kernel_ns = 0;
  int64_t programmatic_launches = 0;  // launched with programmatic stream serialization
  int64_t dependency_wait_ns = 0;     // their waits for the previous kernel, outside total_kernel_ns
  int64_t gpu_busy_ns = 0;
  int64_t span_ns = 0;
  bool timeline_known = true;  // false: metrics mode replayed every kernel (no start times)
  bool has_counters = false;
  // Metrics runs (analysis/coverage.h): "counters for 35 of 35 kernels (100.0% of kernel time): 3
  // profiled, 32 same signature"; the kernels without and why; how the counters were collected
  // (replay, passes, cache control, sampling). Empty for a trace run.
  std::string counter_coverage;
  std::string counter_missing;
  std::string counter_collection;
  std::string graph_launches;  // describeGraphLaunches; "" when none was counted whole
  std::vector<std::string> warnings;  // dropped records, collector warnings
};

// Kernels with the same name and launch shape, with their roofline placement where counters exist.
struct GroupRow {
  std::string name;        // demangled
  std::string short_name;  // what a person reads (analysis/kernel_names.h); the full name on hover
  std::string grid;  // "128" or "64x8x1"
  std::string block;
  std::string op;      // NVTX op that holds most of the group's time, "" if none
  std::string origin;  // library the kernel came from, "" when unknown
  int64_t calls = 0;
  int64_t total_ns = 0;
  double mean_ns = 0;
  double share = 0;  // of total kernel time
  int registers_per_thread = 0;
  int64_t shared_bytes = 0;
  int64_t local_bytes_per_thread = 0;
  std::optional<double> theoretical_occupancy;
  std::optional<double> achieved_occupancy;  // counters
  // How its kernels' counters were obtained, or why they have none: "1 profiled, 299 same
  // signature", "4 without: CUDA graph launch: ..." (analysis::describeGroupCounters); "" in a
  // trace run.
  std::string counters;
  // Counter-derived (measured); absent in trace mode.
  std::optional<double> flops;
  std::optional<double> dram_bytes;
  std::optional<double> l2_bytes;
  std::optional<double> l1_bytes;
  std::optional<double> spill_bytes;  // local-memory traffic
  std::optional<double> intensity_dram;  // FLOP/byte
  std::optional<double> intensity_l2;
  std::optional<double> intensity_l1;
  std::optional<double> flops_per_s;
  std::optional<double> dram_bytes_per_s;
  std::optional<double> roof_fraction;  // achieved / attainable at this intensity
  // What the group could gain: its time x (1 - roof_fraction), none where the fraction is unknown.
  std::optional<double> headroom_ns;
  std::string binding_roof;             // e.g. "dram" or "fp32"; "" when unknown
  std::string bound;                    // "memory", "compute", "latency", "launch"; "" when unknown
  std::string bound_reason;             // why, in words (the analyzer's)
  std::string precision;                // dominant precision of the FLOPs, "" when none
  // The same group in the baseline run, for the before->after arrows.
  std::optional<int64_t> base_total_ns;
  std::optional<double> base_intensity_dram;
  std::optional<double> base_flops_per_s;

  // Positive and finite (a damaged file's counters may overflow): a point a log-log chart can place.
  bool onRoofline() const {
    return intensity_dram && flops_per_s && *intensity_dram > 0 && *flops_per_s > 0 && std::isfinite(*intensity_dram) &&
           std::isfinite(*flops_per_s);
  }
};

// Time by op (NVTX op range).
struct OpRow {
  std::string op;  // "(no NVTX range)" for kernels launched outside any range
  int64_t total_ns = 0;
  int64_t launches = 0;
  double share = 0;
};

// One producer->consumer pair (or chain) and what fusing it would pay, from the analyzer.
struct FusionRow {
  std::string id;                    // NVTX pair id, or the kernels joined by " -> "
  std::string label;                 // the id with short kernel names
  std::string op;                    // NVTX op name, "" for data-flow pairs
  std::vector<std::string> stages;   // producer first
  std::vector<std::string> stage_labels;  // the stages with short kernel names
  std::string evidence;              // how the pair was found, in words
  std::vector<std::string> intermediates;  // buffer names or allocation addresses
  int64_t instances = 0;             // times the unfused chain ran
  int64_t launches_removed = 0;      // per instance
  double unfused_ns = 0;             // measured, median per instance
  std::optional<double> intermediate_bytes;  // per instance
  std::string bytes_source;          // "counters", "allocation size", "n/a"
  std::optional<double> predicted_fused_ns;  // per instance (median)
  std::string model;                 // prediction model, "" when none
  std::optional<double> measured_fused_ns;   // where the run holds the fused variant
  std::optional<double> predicted_saving_ns;  // per instance
  std::optional<double> measured_saving_ns;   // per instance
  std::optional<double> payoff_ns;   // predicted saving summed over instances
  std::optional<double> payoff_share;  // of the program's kernel time
  std::optional<double> model_error;   // (predicted fused - measured fused) / measured fused
  bool fuse = true;
  std::string reason;                // why not to fuse, when fuse is false
  std::vector<std::string> risks;
  // As a user reads it (analysis/fusion_patterns.h): "attention, 9 kernels (matmul -> mul ->
  // masked_fill -> softmax -> matmul)", its pattern, each stage's op, and what to do.
  std::string name;
  std::string pattern;
  std::vector<std::string> ops;
  std::string suggestion;
  bool declared = false;  // an NVTX-declared pair (its id is the program's name for it)
};

struct DiffRow {
  std::string name;
  std::string short_name;
  std::string shape;
  std::string kind;                // "matched", "renamed", "new", "vanished"
  std::optional<double> base_ns;   // total over the run; absent: new kernel
  std::optional<double> cur_ns;    // absent: vanished kernel
  std::optional<double> change;    // median time per launch, cur / base - 1
  std::optional<double> p_value;   // one-sided test that this run is slower
  bool regression = false;         // the gate flagged it
  std::string note;                // the gate's message, renamed-from, ...
};

struct GateVerdict {
  bool pass = true;
  int64_t kernels_checked = 0;
  std::vector<std::string> reasons;  // one line per regression
  std::string method;                // the tests and thresholds used, in words
};

// The baseline's fusion candidates this run runs fused (analysis/fusion_outcomes.h): the saving
// the model predicted for those very instances next to the one measured between the two runs.
struct AppliedFusionRow {
  std::string name;        // the candidate's name; several sharing their regions: the first "and N more"
  std::string pattern;     // the first candidate's
  std::string matched_by;  // "the same NVTX op ranges", "the same neighbouring kernels"
  int64_t instances = 0;   // baseline instances found fused
  int64_t launches_before = 0;
  int64_t launches_after = 0;
  std::optional<double> predicted_saving_ns;  // summed over the instances
  double measured_saving_ns = 0;              // kernel time, baseline - this run, over the same regions
  std::optional<double> error;                // (predicted - measured) / measured
};

// The rows of the outcomes, each named by the baseline's candidates.
std::vector<AppliedFusionRow> appliedFusionRows(const analysis::FusionOutcomes& outcomes,
                                                const analysis::FusionResult& base_fusion);
// "Applied fusion: attention, 7 kernels (...): predicted 1.91 ms, measured 2.35 ms over 20 instances
// (error -18.7%)."
std::string appliedFusionFinding(const AppliedFusionRow& f);

struct BaselineSection {
  RunHeader header;
  std::vector<DiffRow> diff;  // largest absolute change first
  GateVerdict gate;
  std::string note;  // how kernels were matched
  std::vector<AppliedFusionRow> fusions;  // by measured saving, largest first
  std::string fusions_note;               // how they were found, what was compared
};

struct ReportData {
  RunHeader header;
  std::vector<Roof> roofs;
  std::vector<GroupRow> groups;  // by total time, descending; at most the cap
  int64_t group_count = 0;       // all groups, listed or not
  int64_t omitted_groups = 0;    // groups beyond the cap
  int64_t omitted_ns = 0;
  std::vector<OpRow> ops;        // by time, descending
  std::vector<FusionRow> fusion;  // fusable ones by payoff, descending, then those not to fuse
  std::vector<std::string> fusion_notes;  // what the fusion analysis could and could not see
  std::optional<double> fusion_median_abs_error;  // of the model, over pairs measured both ways
  int64_t fusion_measured_pairs = 0;
  std::optional<BaselineSection> baseline;
  std::vector<std::string> findings;  // the top findings, in plain text (shared by all formats)
  // The listed groups with the most headroom (GroupRow::headroom_ns), most first, at most five.
  std::vector<size_t> top_headroom;
  // The listed groups below 50% of their roof, by time (the finding that counts them names them).
  std::vector<size_t> below_half_roof;
  // One row per rank when the run holds several processes (a merged job, fprof merge); else empty.
  std::vector<analysis::RankRow> ranks;
  // Short names of the kernels this report names (listed groups, the diff, fusion stages, ranks'
  // top kernels), told apart (kernel_names.h).
  analysis::KernelNames names;
};

// A fusion candidate as a finding says it: its name, the predicted saving and its share, how often
// the chain ran ("attention, 9 kernels (matmul -> ... -> matmul): 1.91 ms (27.8% of kernel time)
// predicted over 20 runs"), a declared pair's id first in a `code span`.
std::string fusionFinding(const FusionRow& f);
// The best pair to fuse as the report's finding says it, after "Best fusion: ": its finding and
// the suggestion; "" when there is none. fprof info prints it.
std::string bestFusion(const ReportData& r);
// The same for a run without a report: its analysis's best candidate.
std::string bestFusion(const analysis::FusionResult& fusion, const analysis::KernelNames& names);
// The row of one candidate, its kernels named by `names`.
FusionRow fusionRow(const analysis::FusionCandidate& c, const analysis::KernelNames& names);

// "2 CUDA graph launches counted whole, one range each (5 kernels, 1.20 ms of kernel time): DRAM
// read 16.0 MiB, written 16.1 MiB, L2 64.0 MiB (sums; table graph_launch_counter)"; "" for none.
// fprof info and the reports' header print it.
std::string describeGraphLaunches(const core::Profile& p);

struct BuildOptions {
  // Kernel groups listed in the table and chart; the rest are summed in one line. Keeps a run of
  // 100,000 distinct kernels under 10 MB of HTML.
  size_t max_groups = 2000;
};

// Copies the analyzer's placement of a kernel group into its row: FLOPs, DRAM bytes, intensities,
// rates, roof fraction, binding roof, bound and the dominant precision. Front ends that place
// groups themselves (the job report's groups, summed over ranks) fill their rows the same way.
void applyPlacement(GroupRow& g, const analysis::Placement& placement);

// Builds the report of `run`, compared with `baseline` when given.
ReportData buildReport(const core::Profile& run, const core::Profile* baseline, const BuildOptions& options = {});
// The same from the run's analysis (compared with its baseline, when it has one).
ReportData buildReport(const analysis::RunAnalysis& analysis, const BuildOptions& options = {});

}  // namespace fprof::reports
