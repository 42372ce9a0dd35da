// A rank summarised into small tables (see rank_summary.h).
#include "rank_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "fprof/analysis/diff.h"
#include "fprof/analysis/ranks.h"
#include "fprof/analysis/roofline.h"
#include "fprof/analysis/run_analysis.h"
#include "fprof/analysis/summary.h"
#include "fprof/core/merge.h"
#include "fprof/reports/format.h"
#include "fprof/reports/report_data.h"

namespace fprof::python {
namespace {

using analysis::kMemLevelCount;
using analysis::kPrecisionCount;

std::optional<int64_t> asInt(const std::optional<int>& v) {
  if (!v) return std::nullopt;
  return *v;
}

std::string joinedLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += (out.empty() ? "" : "\n") + l;
  return out;
}

// The GPU model a rank ran on: "NVIDIA H200 (sm_90, 132 SMs)", the same for every device of the
// rank, else every model ", "-joined; "" when no device was recorded.
std::string gpuModel(const core::Profile& p) {
  std::vector<std::string> models;
  for (const core::DeviceInfo& d : p.devices) {
    std::string m = fmt::format("{} (sm_{}{}, {} SMs)", d.name, d.compute_major, d.compute_minor, d.sm_count);
    if (std::find(models.begin(), models.end(), m) == models.end()) models.push_back(std::move(m));
  }
  std::string out;
  for (const std::string& m : models) out += (out.empty() ? "" : ", ") + m;
  return out;
}

// The analysis of one rank, computed once and read by every table below.
struct RankAnalysis {
  const core::Profile& p;
  std::optional<int> rank;
  std::string file;
  const analysis::RunAnalysis& analysis;
  const analysis::RunSummary& summary;
  reports::ReportData report;
  analysis::RankRow row;
  analysis::RecordingSetup setup;
};

struct RankFacts {
  const RankAnalysis* a;
};

Table ranksTable(const RankAnalysis& a, size_t step_count) {
  const core::Profile& p = a.p;
  const std::vector<RankFacts> rows = {{&a}};
  const core::ProcessInfo* first = p.processes.empty() ? nullptr : &p.processes.front();
  auto rankOf = [](const RankFacts& f) { return asInt(f.a->rank); };
  TableBuilder<RankFacts> t("ranks", "One row per rank: where it ran, what it recorded, its kernel time.", rows);
  t.text("file", "The rank file.", [](const RankFacts& f) { return std::string_view(f.a->file); })
      .optionalInteger("rank", "Global rank (RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, ...); absent if none.", rankOf)
      .text("label", "\"rank 3\", or \"pid 4242 on nodeA\" for a process without a rank.",
            [](const RankFacts& f) { return std::string_view(f.a->row.group.label); })
      .text("host", "Host name(s), \", \"-joined.", [](const RankFacts& f) { return std::string_view(f.a->row.hosts); })
      .text("pids", "Process id(s), \", \"-joined.", [](const RankFacts& f) { return std::string_view(f.a->row.pids); })
      .optionalInteger("local_rank", "Rank on its host (LOCAL_RANK, ...); absent if none.",
                       [first](const RankFacts&) { return first ? asInt(first->local_rank) : std::nullopt; })
      .text("devices", "\"[ordinal] name\" of its devices, \", \"-joined.",
            [](const RankFacts& f) { return std::string_view(f.a->row.devices); })
      .text("gpu_model", "GPU model, compute capability and SMs; ranks of other models are set apart.",
            [&p](const RankFacts&) { return gpuModel(p); })
      .text("mode", "Recording mode (trace, metrics); ranks of another mode than the job's are set apart.",
            [](const RankFacts& f) { return std::string_view(f.a->row.mode); })
      .integer("schema_version", "Schema version of the file.", [&p](const RankFacts&) { return p.schema_version; })
      .text("fprof_version", "fprof version that recorded it.",
            [&p](const RankFacts&) { return p.meta("fprof_version", "?"); })
      .text("command_line", "The profiled command line.",
            [first](const RankFacts&) { return std::string_view(first ? first->command_line : std::string_view()); })
      .integer("start_unix_ns", "When its collector started, ns since 1970.",
               [first](const RankFacts&) { return first ? first->start_unix_ns : 0; })
      .integer("kernel_count", "Kernel launches.", [](const RankFacts& f) { return f.a->row.kernel_count; })
      .integer("total_kernel_ns", "Kernel time (own durations summed), as fprof info's rank table.",
               [](const RankFacts& f) { return f.a->row.total_kernel_ns; })
      .integer("nccl_ns", "Kernel time in NCCL kernels.", [](const RankFacts& f) { return f.a->row.nccl_ns; })
      .integer("compute_ns", "Kernel time outside NCCL: the rank's own work; the most of it names the straggler.",
               [](const RankFacts& f) { return f.a->row.computeNs(); })
      .text("top_kernel", "Demangled name of its kernel with the most time.",
            [](const RankFacts& f) { return std::string_view(f.a->row.top_kernel); })
      .integer("top_kernel_ns", "That kernel's time.", [](const RankFacts& f) { return f.a->row.top_kernel_ns; })
      .integer("kernel_groups", "Distinct kernels by name and launch shape.",
               [](const RankFacts& f) { return static_cast<int64_t>(f.a->summary.groups.size()); })
      .optionalInteger("gpu_busy_ns", "Union of kernel intervals per device, summed; absent without a timeline.",
                       [](const RankFacts& f) -> std::optional<int64_t> {
                         if (!f.a->summary.timeline_known) return std::nullopt;
                         return f.a->summary.gpu_busy_ns;
                       })
      .optionalInteger("span_ns", "First kernel start to last kernel end; absent without a timeline.",
                       [](const RankFacts& f) -> std::optional<int64_t> {
                         if (!f.a->summary.timeline_known) return std::nullopt;
                         return f.a->summary.span_ns;
                       })
      .integer("steps", "NVTX step ranges found (the steps table).",
               [step_count](const RankFacts&) { return static_cast<int64_t>(step_count); })
      .boolean("has_counters", "Recorded hardware counters (metrics mode).",
               [](const RankFacts& f) { return f.a->report.header.has_counters; })
      .text("counter_coverage", "Which kernels have counters, as fprof info says (metrics runs).",
            [](const RankFacts& f) { return std::string_view(f.a->report.header.counter_coverage); })
      .text("recorded_devices", "Its devices as fprof gate compares runs: \"NAME (sm_XY)\", each once, in name order.",
            [](const RankFacts& f) { return std::string_view(f.a->setup.devices); })
      .text("recorded_mode", "Its mode as fprof gate compares runs (the file's mode metadata, \"unknown\" if none).",
            [](const RankFacts& f) { return std::string_view(f.a->setup.mode); })
      .text("recorded_metric_set", "The counter set it was recorded with (metric_set metadata; empty in trace mode).",
            [](const RankFacts& f) { return std::string_view(f.a->setup.metric_set); })
      .text("recorded_metrics", "The counters it was recorded with (metrics metadata), \",\"-joined.",
            [](const RankFacts& f) { return std::string_view(f.a->setup.metrics); })
      .text("warnings", "What fprof report warns of for this rank (dropped records, collector warnings, damage the "
                        "reader repaired), one per line.",
            [](const RankFacts& f) { return joinedLines(f.a->report.header.warnings); });
  return t.build();
}

// What the placement of a kernel group is computed from, summed over its launches exactly as
// analyzeRoofline does (roofline.cpp, GroupAccumulator), so that sums of ranks place like the
// merged file's groups; plus the report's raw counter sums (spills, achieved occupancy).
struct GroupInputs {
  const reports::GroupRow* row = nullptr;
  const analysis::KernelGroup* group = nullptr;
  GroupSums sums;
  bool first = true;
  std::optional<double> spill_bytes;
  double achieved_weighted = 0;
  double achieved_weight_ns = 0;
};

void addLaunch(GroupInputs& g, const analysis::PlacementInput& in, const core::KernelCounters* c) {
  GroupSums& s = g.sums;
  if (g.first) {
    s.work = in.work;
    s.sm_count = in.sm_count;
    g.first = false;
  } else {
    s.work += in.work;
  }
  s.duration_ns += in.duration_ns;
  s.launches += 1;
  if (in.occupancy) {
    s.occupancy_weighted += *in.occupancy * static_cast<double>(in.duration_ns);
  } else {
    s.occupancy_complete = false;
  }
  s.occupancy_achieved = s.occupancy_achieved && in.occupancy_achieved;
  if (!c) return;
  if (c->local_load_bytes || c->local_store_bytes) {
    g.spill_bytes = g.spill_bytes.value_or(0) + c->local_load_bytes.value_or(0) + c->local_store_bytes.value_or(0);
  }
  if (c->achieved_occupancy) {
    g.achieved_weighted += *c->achieved_occupancy * static_cast<double>(in.duration_ns);
    g.achieved_weight_ns += static_cast<double>(in.duration_ns);
  }
}

std::vector<GroupInputs> groupInputs(const RankAnalysis& a) {
  std::vector<GroupInputs> out(a.summary.groups.size());
  for (size_t gi = 0; gi < out.size(); ++gi) {
    GroupInputs& g = out[gi];
    g.group = &a.summary.groups[gi];
    g.row = gi < a.report.groups.size() ? &a.report.groups[gi] : nullptr;
    for (size_t idx : g.group->kernel_indices) {
      const core::KernelRow& k = a.p.kernels[idx];
      const core::KernelCounters* c = analysis::countersFor(a.p, k.id);
      addLaunch(g, analysis::kernelInput(a.p, k, a.p.device(k.process_id, k.device_id)), c);
    }
  }
  return out;
}

Table groupsTable(const RankAnalysis& a) {
  const std::vector<GroupInputs> rows = groupInputs(a);
  const core::Profile& p = a.p;
  using G = GroupInputs;
  const std::optional<int64_t> rank = asInt(a.rank);
  TableBuilder<G> t("groups",
                    "Per rank, kernels with the same demangled name and launch shape: time, resources and the sums "
                    "their roofline placement is computed from (so the job's groups place as a merged file's do).",
                    rows);
  t.optionalInteger("rank", "The rank.", [rank](const G&) { return rank; })
      .text("name", "Demangled kernel name.", [&p](const G& g) { return std::string_view(p.str(g.group->demangled_id)); })
      .text("grid", "Grid in blocks, \"128\" or \"64x8x1\".", [](const G& g) {
        return reports::formatShape(g.group->grid_x, g.group->grid_y, g.group->grid_z);
      })
      .text("block", "Block in threads.", [](const G& g) {
        return reports::formatShape(g.group->block_x, g.group->block_y, g.group->block_z);
      })
      .text("origin", "Library the kernel came from, from its name.", [](const G& g) {
        return g.row ? std::string_view(g.row->origin) : std::string_view();
      })
      .text("op", "NVTX or framework op holding most of the group's time on this rank.", [](const G& g) {
        return g.row ? std::string_view(g.row->op) : std::string_view();
      })
      .integer("calls", "Launches.", [](const G& g) { return g.group->calls; })
      .integer("total_ns", "Kernel time (own durations summed).", [](const G& g) { return g.group->total_ns; })
      .integer("min_ns", "Shortest launch.", [](const G& g) { return g.group->min_ns; })
      .integer("max_ns", "Longest launch.", [](const G& g) { return g.group->max_ns; })
      .integer("registers_per_thread", "Registers per thread, max.", [](const G& g) { return g.group->registers_per_thread; })
      .integer("shared_bytes", "Static + dynamic shared memory per block, max.", [](const G& g) { return g.group->shared_bytes; })
      .integer("local_bytes_per_thread", "Stack frame and spills per thread, max.",
               [](const G& g) { return g.group->local_bytes_per_thread; })
      .optionalReal("theoretical_occupancy", "Theoretical occupancy, min over the launches.",
                    [](const G& g) { return g.group->theoretical_occupancy; })
      .optionalReal("achieved_occupancy", "Achieved occupancy from the counters, time-weighted, on this rank.",
                    [](const G& g) { return g.row ? g.row->achieved_occupancy : std::nullopt; })
      .real("achieved_occupancy_weighted", "Sum of achieved occupancy x duration over launches that have it.",
            [](const G& g) { return g.achieved_weighted; })
      .real("achieved_occupancy_weight_ns", "Duration summed over those launches.", [](const G& g) { return g.achieved_weight_ns; })
      .optionalReal("spill_bytes", "Local-memory (spill) traffic summed over launches that counted it.",
                    [](const G& g) { return g.spill_bytes; })
      .optionalInteger("sm_count", "SMs of the first launch's device.", [](const G& g) { return asInt(g.sums.sm_count); })
      .boolean("has_counters", "Every launch has counters.", [](const G& g) { return g.sums.work.has_counters; });
  for (size_t q = 0; q < kPrecisionCount; ++q) {
    const std::string name = fmt::format("flops_{}", analysis::precisionName(static_cast<analysis::Precision>(q)));
    t.optionalReal(name, "FLOPs of this precision summed over the launches; absent unless every launch counted them.",
                   [q](const G& g) { return g.sums.work.flops[q]; });
  }
  for (size_t l = 0; l < kMemLevelCount; ++l) {
    const std::string name = fmt::format("bytes_{}", analysis::memLevelName(static_cast<analysis::MemLevel>(l)));
    t.optionalReal(name, "Bytes at this memory level summed over the launches; absent unless every launch counted them.",
                   [l](const G& g) { return g.sums.work.bytes[l]; });
  }
  t.real("occupancy_weighted", "Sum of occupancy (achieved where counted, else theoretical) x duration.",
         [](const G& g) { return g.sums.occupancy_weighted; })
      .boolean("occupancy_complete", "Every launch has an occupancy.", [](const G& g) { return g.sums.occupancy_complete; })
      .boolean("occupancy_achieved", "Every launch's occupancy is the achieved one.",
               [](const G& g) { return g.sums.occupancy_achieved; })
      .optionalReal("intensity_dram", "On this rank: FLOP per DRAM byte.",
                    [](const G& g) { return g.row ? g.row->intensity_dram : std::nullopt; })
      .optionalReal("flops_per_s", "On this rank: achieved FLOP/s.", [](const G& g) { return g.row ? g.row->flops_per_s : std::nullopt; })
      .optionalReal("roof_fraction", "On this rank: % of roof, 0..1.",
                    [](const G& g) { return g.row ? g.row->roof_fraction : std::nullopt; })
      .text("bound", "On this rank: memory, compute, latency or launch.",
            [](const G& g) { return g.row ? std::string_view(g.row->bound) : std::string_view(); });
  return t.build();
}

Table opsTable(const RankAnalysis& a) {
  using O = reports::OpRow;
  const std::optional<int64_t> rank = asInt(a.rank);
  TableBuilder<O> t("ops", "Per rank, kernel time by op (NVTX and framework ops), as fprof report's Time by op.",
                    a.report.ops);
  t.optionalInteger("rank", "The rank.", [rank](const O&) { return rank; })
      .text("op", "The op; \"(no NVTX range)\" for kernels outside any range.", [](const O& o) { return std::string_view(o.op); })
      .integer("total_ns", "Kernel time of its launches.", [](const O& o) { return o.total_ns; })
      .integer("launches", "Kernel launches.", [](const O& o) { return o.launches; });
  return t.build();
}

struct Step {
  const core::NvtxRangeRow* range = nullptr;
  int64_t kernels = 0;
  int64_t kernel_ns = 0;
};

// The outermost NVTX ranges whose message matches the step pattern, in start order, with the
// kernels launched inside each (through the kernel's innermost range and its parents).
std::vector<Step> findSteps(const core::Profile& p, const std::regex& pattern) {
  std::unordered_map<uint64_t, size_t> index_of;
  for (size_t i = 0; i < p.nvtx_ranges.size(); ++i) index_of.emplace(p.nvtx_ranges[i].key, i);
  std::vector<bool> matches(p.nvtx_ranges.size());
  for (size_t i = 0; i < p.nvtx_ranges.size(); ++i) {
    const std::string_view message = p.nvtx_ranges[i].message;
    matches[i] = std::regex_search(message.begin(), message.end(), pattern);
  }
  // The step (index into `steps`) each range lies in, -1 for none; found walking to the top,
  // bounded by the range count (the reader leaves no circle; the bound keeps the walk finite).
  std::vector<int64_t> step_of(p.nvtx_ranges.size(), -2);
  std::vector<Step> steps;
  std::vector<size_t> order(p.nvtx_ranges.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return p.nvtx_ranges[x].start_ns < p.nvtx_ranges[y].start_ns; });
  auto outermostMatch = [&](size_t i) -> std::optional<size_t> {
    std::optional<size_t> found;
    size_t at = i, walked = 0;
    while (walked++ <= p.nvtx_ranges.size()) {
      if (matches[at]) found = at;
      const auto& parent = p.nvtx_ranges[at].parent_key;
      if (!parent) break;
      auto it = index_of.find(*parent);
      if (it == index_of.end()) break;
      at = it->second;
    }
    return found;
  };
  std::unordered_map<size_t, size_t> step_index;  // range index -> step
  for (size_t i : order) {
    if (!matches[i] || outermostMatch(i) != i) continue;
    step_index[i] = steps.size();
    steps.push_back({&p.nvtx_ranges[i], 0, 0});
  }
  if (steps.empty()) return steps;
  for (const core::KernelRow& k : p.kernels) {
    if (!k.nvtx_range_key) continue;
    auto it = index_of.find(*k.nvtx_range_key);
    if (it == index_of.end()) continue;
    int64_t& s = step_of[it->second];
    if (s == -2) {
      const std::optional<size_t> top = outermostMatch(it->second);
      s = top ? static_cast<int64_t>(step_index.at(*top)) : -1;
    }
    if (s < 0) continue;
    Step& step = steps[static_cast<size_t>(s)];
    ++step.kernels;
    step.kernel_ns += k.durationNs();
  }
  return steps;
}

Table stepsTable(const RankAnalysis& a, const std::vector<Step>& steps) {
  const std::optional<int64_t> rank = asInt(a.rank);
  std::vector<std::pair<size_t, const Step*>> rows;
  for (size_t i = 0; i < steps.size(); ++i) rows.emplace_back(i, &steps[i]);
  using S = std::pair<size_t, const Step*>;
  TableBuilder<S> t("steps",
                    "Per rank, the NVTX ranges that mark a step (the outermost whose message matches --step-regex), "
                    "with the kernels launched inside each.",
                    rows);
  t.optionalInteger("rank", "The rank.", [rank](const S&) { return rank; })
      .integer("step", "Step index on this rank, in start order from 0.", [](const S& s) { return static_cast<int64_t>(s.first); })
      .text("message", "The range's message.", [](const S& s) { return std::string_view(s.second->range->message); })
      .integer("start_ns", "Push/start time, CUPTI clock (same as kernels).", [](const S& s) { return s.second->range->start_ns; })
      .optionalInteger("wall_ns", "End - start of the range (host time of the step); absent if it never ended.",
                       [](const S& s) -> std::optional<int64_t> {
                         if (!s.second->range->end_ns) return std::nullopt;
                         return *s.second->range->end_ns - s.second->range->start_ns;
                       })
      .integer("kernels", "Kernels launched inside it.", [](const S& s) { return s.second->kernels; })
      .integer("kernel_ns", "Their kernel time.", [](const S& s) { return s.second->kernel_ns; });
  return t.build();
}

std::string joined(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const std::string& s : parts) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

Table fusionTable(const RankAnalysis& a) {
  using F = reports::FusionRow;
  const std::optional<int64_t> rank = asInt(a.rank);
  TableBuilder<F> t("fusion", "Per rank, the fusion candidates of fprof report, with their predicted payoff.",
                    a.report.fusion);
  t.optionalInteger("rank", "The rank.", [rank](const F&) { return rank; })
      .text("id", "NVTX pair id, or the kernels joined by \" -> \".", [](const F& f) { return std::string_view(f.id); })
      .text("label", "The id with short kernel names.", [](const F& f) { return std::string_view(f.label); })
      .text("op", "NVTX op name; empty for data-flow pairs.", [](const F& f) { return std::string_view(f.op); })
      .text("stages", "Stages, producer first, \" -> \"-joined (full names).", [](const F& f) { return joined(f.stages, " -> "); })
      .text("stage_labels", "Stages with short kernel names.", [](const F& f) { return joined(f.stage_labels, " -> "); })
      .text("evidence", "How the pair was found.", [](const F& f) { return std::string_view(f.evidence); })
      .integer("instances", "Times the unfused chain ran.", [](const F& f) { return f.instances; })
      .integer("launches_removed", "Launches fusing removes, per instance.", [](const F& f) { return f.launches_removed; })
      .real("unfused_ns", "Measured kernel time of the chain, median per instance.", [](const F& f) { return f.unfused_ns; })
      .optionalReal("intermediate_bytes", "Bytes of the intermediates, per instance.", [](const F& f) { return f.intermediate_bytes; })
      .optionalReal("predicted_fused_ns", "Predicted fused time per instance.", [](const F& f) { return f.predicted_fused_ns; })
      .optionalReal("predicted_saving_ns", "Predicted saving per instance.", [](const F& f) { return f.predicted_saving_ns; })
      .optionalReal("measured_saving_ns", "Measured saving per instance, where a fused variant ran.",
                    [](const F& f) { return f.measured_saving_ns; })
      .optionalReal("payoff_ns", "Predicted saving summed over the instances.", [](const F& f) { return f.payoff_ns; })
      .text("model", "Prediction model.", [](const F& f) { return std::string_view(f.model); })
      .boolean("fuse", "Worth fusing.", [](const F& f) { return f.fuse; })
      .text("reason", "Why not to fuse, when fuse is false.", [](const F& f) { return std::string_view(f.reason); });
  return t.build();
}

Table roofsTable(const RankAnalysis& a) {
  using R = reports::Roof;
  const std::optional<int64_t> rank = asInt(a.rank);
  TableBuilder<R> t("roofs", "Per rank, the roofs its kernels are placed against (its first device).", a.report.roofs);
  t.optionalInteger("rank", "The rank.", [rank](const R&) { return rank; })
      .text("name", "dram, l2, l1, fp32, tensor_fp16, ...", [](const R& r) { return std::string_view(r.name); })
      .real("value", "bytes/s for a memory level, FLOP/s for a precision.", [](const R& r) { return r.value; })
      .text("source", "measured or datasheet.", [](const R& r) { return std::string_view(r.source); })
      .text("method", "How it was measured or computed.", [](const R& r) { return std::string_view(r.method); });
  return t.build();
}

// The rank's launch groups as fprof gate compares them (kernel, launch shape, op), with their
// samples cut to analysis::kSummarySamples: `fprof gate` over two job folders reads these.
struct LaunchGroupRow {
  int64_t key = 0;
  analysis::LaunchGroupStats g;
};

std::vector<LaunchGroupRow> launchGroupRows(const RankAnalysis& a) {
  std::vector<LaunchGroupRow> rows;
  for (analysis::LaunchGroupStats& g : analysis::launchGroupStats(a.p, a.analysis.kernelOps())) {
    rows.push_back({static_cast<int64_t>(rows.size()), analysis::summarized(std::move(g))});
  }
  return rows;
}

Table launchGroupsTable(const RankAnalysis& a, const std::vector<LaunchGroupRow>& rows) {
  using L = LaunchGroupRow;
  const std::optional<int64_t> rank = asInt(a.rank);
  TableBuilder<L> t("launch_groups",
                    "Per rank, launches grouped as fprof gate groups them (kernel, launch shape, op), with what the "
                    "gate tests: exact counts, totals, median and spread, per-launch counters; the samples are in "
                    "launch_samples.",
                    rows);
  t.optionalInteger("rank", "The rank.", [rank](const L&) { return rank; })
      .integer("key", "The launch group's number on this rank (launch_samples refers to it).", [](const L& l) { return l.key; })
      .text("name", "Demangled kernel name.", [](const L& l) { return std::string_view(l.g.name); })
      .text("shape", "\"grid XxYxZ block XxYxZ\".", [](const L& l) { return std::string_view(l.g.shape); })
      .text("op", "The op its launches are reported under (\"\" for none).", [](const L& l) { return std::string_view(l.g.op); })
      .text("nvtx_path", "The NVTX path every launch shares, \"\" when they differ.",
            [](const L& l) { return std::string_view(l.g.nvtx_path); })
      .integer("calls", "Launches.", [](const L& l) { return l.g.stats.calls; })
      .real("total_ns", "Kernel time.", [](const L& l) { return l.g.stats.total_ns; })
      .optionalReal("median_ns", "Median launch time (of every launch).", [](const L& l) { return l.g.stats.median_ns; })
      .real("squared_deviation_ns2", "Sum over the launches of (duration - mean)^2: the gate's noise estimate.",
            [](const L& l) { return l.g.stats.squared_deviation_ns2; });
  for (size_t i = 0; i < analysis::kCounterMetricCount; ++i) {
    const auto m = static_cast<analysis::CounterMetric>(i);
    t.optionalReal(std::string(analysis::counterMetricName(m)),
                   "Per launch (mean, or max for registers and local bytes, min for theoretical occupancy), as fprof "
                   "gate compares it; absent unless every launch had it.",
                   [i](const L& l) { return l.g.stats.metrics[i]; });
  }
  return t.build();
}

Table launchSamplesTable(const RankAnalysis& a, const std::vector<LaunchGroupRow>& groups) {
  struct Sample {
    int64_t key;
    double ns;
  };
  std::vector<Sample> rows;
  for (const LaunchGroupRow& l : groups) {
    for (double ns : l.g.stats.samples_ns) rows.push_back({l.key, ns});
  }
  const std::optional<int64_t> rank = asInt(a.rank);
  TableBuilder<Sample> t("launch_samples",
                         fmt::format("Per rank and launch group, its launch times: every one for a group of at most {} "
                                     "launches, else {} evenly spaced order statistics of them; the gate's "
                                     "Mann-Whitney tests run on these.",
                                     analysis::kSummarySamples, analysis::kSummarySamples),
                         rows);
  t.optionalInteger("rank", "The rank.", [rank](const Sample&) { return rank; })
      .integer("key", "The launch group (launch_groups.key).", [](const Sample& s) { return s.key; })
      .real("duration_ns", "A launch time.", [](const Sample& s) { return s.ns; });
  return t.build();
}

void appendRows(Table& into, Table from) {
  if (into.columns.empty()) {
    into = std::move(from);
    return;
  }
  for (size_t c = 0; c < into.columns.size(); ++c) {
    Column& dst = into.columns[c];
    Column& src = from.columns[c];
    const size_t before = dst.size();
    if (!dst.valid.empty() || !src.valid.empty()) {
      if (dst.valid.empty()) dst.valid.assign(before, 1);
      if (src.valid.empty()) src.valid.assign(src.size(), 1);
      dst.valid.insert(dst.valid.end(), src.valid.begin(), src.valid.end());
    }
    dst.ints.insert(dst.ints.end(), src.ints.begin(), src.ints.end());
    dst.floats.insert(dst.floats.end(), src.floats.begin(), src.floats.end());
    // Strings: the second table's codes renumbered into the first one's dictionary.
    if (dst.kind == ColumnKind::kString) {
      std::unordered_map<std::string, int32_t> ids;
      for (size_t i = 0; i < dst.dictionary.size(); ++i) ids.emplace(dst.dictionary[i], static_cast<int32_t>(i));
      std::vector<int32_t> remap(src.dictionary.size());
      for (size_t i = 0; i < src.dictionary.size(); ++i) {
        auto [it, inserted] = ids.emplace(src.dictionary[i], static_cast<int32_t>(dst.dictionary.size()));
        if (inserted) dst.dictionary.push_back(src.dictionary[i]);
        remap[i] = it->second;
      }
      for (int32_t code : src.codes) dst.codes.push_back(code < 0 ? -1 : remap[static_cast<size_t>(code)]);
    }
  }
  into.rows += from.rows;
}

}  // namespace

std::vector<Table> summarizeRanks(const core::Profile& whole, const RankSummaryOptions& options) {
  const std::regex step_pattern(options.step_regex, std::regex::ECMAScript);
  std::vector<Table> tables(8);
  const std::vector<core::RankGroup> groups = core::rankGroups(whole);
  for (const core::RankGroup& group : groups) {
    // A merged file is split into its ranks; a rank's own file is used as it is.
    std::optional<core::Profile> part;
    if (groups.size() > 1) part = core::selectProcesses(whole, group.process_ids);
    const core::Profile& p = part ? *part : whole;
    reports::BuildOptions build;
    build.max_groups = std::numeric_limits<size_t>::max();
    const analysis::RunAnalysis analysed = analysis::RunAnalysis::of(p);
    RankAnalysis a{p, group.rank, whole.path, analysed, analysed.summary(), reports::buildReport(analysed, build), {}, {}};
    a.setup = analysis::recordingSetup(p);
    // Of a rank's own processes: the one row rankBreakdown gives (RunAnalysis::ranks is empty for one process).
    const std::vector<analysis::RankRow> rows = analysis::rankBreakdown(p);
    if (rows.empty()) {
      a.row.group = group;
    } else {
      a.row = rows.front();
    }
    const std::vector<Step> steps = findSteps(p, step_pattern);
    const std::vector<LaunchGroupRow> launch_groups = launchGroupRows(a);
    Table parts[] = {ranksTable(a, steps.size()), groupsTable(a),  opsTable(a),
                     stepsTable(a, steps),        fusionTable(a),  roofsTable(a),
                     launchGroupsTable(a, launch_groups), launchSamplesTable(a, launch_groups)};
    for (size_t i = 0; i < tables.size(); ++i) appendRows(tables[i], std::move(parts[i]));
  }
  return tables;
}

analysis::Ceilings ceilingsFromRoofs(const std::vector<RoofRow>& roofs) {
  analysis::Ceilings c;
  auto sourceOf = [](const std::string& s) {
    return s == "measured" ? analysis::CeilingSource::kMeasured : analysis::CeilingSource::kDatasheet;
  };
  for (const RoofRow& r : roofs) {
    for (size_t l = 0; l < kMemLevelCount; ++l) {
      if (r.name == analysis::memLevelName(static_cast<analysis::MemLevel>(l))) {
        c.bandwidth[l] = analysis::Roof{r.value, sourceOf(r.source), r.method};
      }
    }
    for (size_t q = 0; q < kPrecisionCount; ++q) {
      if (r.name == analysis::precisionName(static_cast<analysis::Precision>(q))) {
        c.compute[q] = analysis::Roof{r.value, sourceOf(r.source), r.method};
      }
    }
  }
  return c;
}

Table placeGroups(const std::vector<GroupSums>& groups, const analysis::Ceilings& ceilings) {
  std::vector<reports::GroupRow> rows(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    const GroupSums& s = groups[i];
    analysis::PlacementInput in;
    in.duration_ns = s.duration_ns;
    in.launches = s.launches;
    in.sm_count = s.sm_count;
    in.work = s.work;
    if (s.occupancy_complete && s.duration_ns > 0) {
      in.occupancy = s.occupancy_weighted / static_cast<double>(s.duration_ns);
      in.occupancy_achieved = s.occupancy_achieved;
    }
    reports::applyPlacement(rows[i], analysis::place(in, ceilings));
  }
  using G = reports::GroupRow;
  TableBuilder<G> t("placement", "The roofline placement of job-level kernel groups.", rows);
  t.optionalReal("flops", "FLOPs summed over the launches (all precisions).", [](const G& g) { return g.flops; })
      .optionalReal("dram_bytes", "DRAM bytes read and written, summed.", [](const G& g) { return g.dram_bytes; })
      .optionalReal("intensity_dram", "FLOP per DRAM byte.", [](const G& g) { return g.intensity_dram; })
      .optionalReal("intensity_l2", "FLOP per L2 byte.", [](const G& g) { return g.intensity_l2; })
      .optionalReal("intensity_l1", "FLOP per L1 byte.", [](const G& g) { return g.intensity_l1; })
      .optionalReal("flops_per_s", "Achieved FLOP/s.", [](const G& g) { return g.flops_per_s; })
      .optionalReal("dram_bytes_per_s", "Achieved DRAM bytes/s.", [](const G& g) { return g.dram_bytes_per_s; })
      .optionalReal("roof_fraction", "% of roof, 0..1.", [](const G& g) { return g.roof_fraction; })
      .text("binding_roof", "The roof that binds.", [](const G& g) { return std::string_view(g.binding_roof); })
      .text("bound", "memory, compute, latency or launch; empty when unknown.", [](const G& g) { return std::string_view(g.bound); })
      .text("bound_reason", "Why this bound.", [](const G& g) { return std::string_view(g.bound_reason); })
      .text("precision", "Precision with the most FLOP/s.", [](const G& g) { return std::string_view(g.precision); });
  return t.build();
}

}  // namespace fprof::python
