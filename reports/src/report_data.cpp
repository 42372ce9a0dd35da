// Builds ReportData from a profile through the analysis layer (see report_data.h).
#include "fprof/reports/report_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <unordered_set>

#include "fprof/analysis/ceilings.h"
#include "fprof/analysis/coverage.h"
#include "fprof/analysis/dataflow.h"
#include "fprof/analysis/diff.h"
#include "fprof/analysis/fusion.h"
#include "fprof/analysis/kernel_names.h"
#include "fprof/analysis/nvtx_ops.h"
#include "fprof/analysis/origin.h"
#include "fprof/analysis/roofline.h"
#include "fprof/analysis/summary.h"
#include "fprof/reports/format.h"

namespace fprof::reports {
namespace {

std::string utcDate(int64_t unix_ns) {
  if (unix_ns <= 0) return "";
  const std::time_t t = static_cast<std::time_t>(unix_ns / 1000000000);
  std::tm tm{};
  if (!gmtime_r(&t, &tm)) return "";
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

RunHeader makeHeader(const analysis::RunAnalysis& analysed) {
  const core::Profile& p = analysed.profile();
  const analysis::RunSummary& s = analysed.summary();
  RunHeader h;
  h.file = p.path;
  h.mode = p.meta("mode", "unknown");
  h.fprof_version = p.meta("fprof_version", "unknown");
  for (const core::ProcessInfo& pr : p.processes) {
    if (!h.program.empty()) h.program += " | ";
    h.program += pr.command_line.empty() ? "unknown" : pr.command_line;
    if (h.host.empty()) h.host = pr.host;
    if (h.date_utc.empty()) h.date_utc = utcDate(pr.start_unix_ns);
  }
  for (const core::DeviceInfo& d : p.devices) {
    h.devices.push_back(fmt::format("[{}] {}, sm_{}{}, {} SMs, {} memory, {} L2", d.id, d.name, d.compute_major,
                                    d.compute_minor, d.sm_count, formatBytes(static_cast<double>(d.global_memory_bytes)),
                                    formatBytes(static_cast<double>(d.l2_bytes))));
  }
  h.kernel_count = s.kernel_count;
  h.total_kernel_ns = s.total_kernel_ns;
  h.programmatic_launches = s.programmatic_launches;
  h.dependency_wait_ns = s.dependency_wait_ns;
  h.gpu_busy_ns = s.gpu_busy_ns;
  h.span_ns = s.span_ns;
  h.timeline_known = s.timeline_known;
  h.has_counters = !p.counters.empty();
  if (p.meta("mode") == "metrics" || !p.counters_missing.empty()) {
    const analysis::CounterCoverage& coverage = analysed.coverage();
    h.counter_coverage = analysis::describeCoverage(coverage);
    h.counter_missing = analysis::describeMissing(coverage);
    h.counter_collection = analysis::describeCollection(p);
    h.graph_launches = describeGraphLaunches(p);
  }
  if (const std::string dropped = p.meta("dropped_records", "0"); dropped != "0") {
    h.warnings.push_back(
        fmt::format("the collector dropped {} records (buffers full); totals are lower bounds", dropped));
  }
  for (const core::CollectorEventRecord& e : p.collector_events) {
    if (e.severity != "info") h.warnings.push_back(e.severity + ": " + e.message);
  }
  // What the reader found damaged in the file, and how it read it anyway.
  h.warnings.insert(h.warnings.end(), p.warnings.begin(), p.warnings.end());
  return h;
}

// The roofs of the run's first device, as the analyzer chose them (measured preferred, datasheet
// computed from the device attributes otherwise).
std::vector<Roof> pickRoofs(const analysis::RunAnalysis& analysed) {
  std::vector<Roof> roofs;
  const core::Profile& p = analysed.profile();
  if (p.devices.empty()) return roofs;
  const analysis::Ceilings& c = analysed.ceilings(p.devices.front().process_id, p.devices.front().id);
  for (size_t l = 0; l < analysis::kMemLevelCount; ++l) {
    if (!c.bandwidth[l] || c.bandwidth[l]->value <= 0) continue;
    roofs.push_back(Roof{std::string(analysis::memLevelName(static_cast<analysis::MemLevel>(l))), true,
                         c.bandwidth[l]->value, std::string(analysis::ceilingSourceName(c.bandwidth[l]->source)),
                         c.bandwidth[l]->method});
  }
  std::vector<Roof> compute;
  for (size_t q = 0; q < analysis::kPrecisionCount; ++q) {
    if (!c.compute[q] || c.compute[q]->value <= 0) continue;
    compute.push_back(Roof{std::string(analysis::precisionName(static_cast<analysis::Precision>(q))), false,
                           c.compute[q]->value, std::string(analysis::ceilingSourceName(c.compute[q]->source)),
                           c.compute[q]->method});
  }
  std::stable_sort(compute.begin(), compute.end(), [](const Roof& a, const Roof& b) { return a.value > b.value; });
  roofs.insert(roofs.end(), compute.begin(), compute.end());
  return roofs;
}

// Raw counter sums the placement does not carry: spill traffic and achieved occupancy.
struct CounterSums {
  std::optional<double> spill;
  double occupancy_weighted = 0;
  double occupancy_weight_ns = 0;
};

void accumulate(CounterSums& s, const core::KernelCounters& c, int64_t duration_ns) {
  if (c.local_load_bytes || c.local_store_bytes) {
    s.spill = s.spill.value_or(0) + c.local_load_bytes.value_or(0) + c.local_store_bytes.value_or(0);
  }
  if (c.achieved_occupancy) {
    s.occupancy_weighted += *c.achieved_occupancy * static_cast<double>(duration_ns);
    s.occupancy_weight_ns += static_cast<double>(duration_ns);
  }
}

}  // namespace

// Copies the analyzer's placement of a group into the row (report_data.h).
void applyPlacement(GroupRow& g, const analysis::Placement& pl) {
  constexpr size_t kDram = static_cast<size_t>(analysis::MemLevel::kDram);
  constexpr size_t kL2 = static_cast<size_t>(analysis::MemLevel::kL2);
  constexpr size_t kL1 = static_cast<size_t>(analysis::MemLevel::kL1);
  const double seconds = static_cast<double>(pl.duration_ns) * 1e-9;
  g.flops = pl.total_flops;
  if (pl.bytes_per_s[kDram] && seconds > 0) g.dram_bytes = *pl.bytes_per_s[kDram] * seconds;
  g.intensity_dram = pl.intensity_flop_per_byte[kDram];
  g.intensity_l2 = pl.intensity_flop_per_byte[kL2];
  g.intensity_l1 = pl.intensity_flop_per_byte[kL1];
  g.flops_per_s = pl.achieved_flops_per_s;
  g.dram_bytes_per_s = pl.bytes_per_s[kDram];
  g.roof_fraction = pl.roof_fraction;
  if (pl.roof_fraction) {
    g.headroom_ns = static_cast<double>(pl.duration_ns) * (1 - std::clamp(*pl.roof_fraction, 0.0, 1.0));
  }
  g.binding_roof = pl.binding;
  g.bound = pl.bound == analysis::Bound::kUnknown ? std::string() : std::string(analysis::boundName(pl.bound));
  g.bound_reason = pl.reason;
  // The dominant precision: the one with the most FLOP/s.
  double best = 0;
  for (size_t q = 0; q < analysis::kPrecisionCount; ++q) {
    if (pl.flops_per_s[q] && *pl.flops_per_s[q] > best) {
      best = *pl.flops_per_s[q];
      g.precision = std::string(analysis::precisionName(static_cast<analysis::Precision>(q)));
    }
  }
}

namespace {

struct GroupKey {
  std::string name;
  std::string grid, block;
  bool operator<(const GroupKey& o) const { return std::tie(name, grid, block) < std::tie(o.name, o.grid, o.block); }
};

struct Built {
  RunHeader header;
  std::vector<GroupRow> all_groups;  // every group, by time
  std::vector<OpRow> ops;
};

// Kernel id -> index into Profile::counters, for the group sums. Empty (the caller then searches)
// where the ids are too sparse for an array: a damaged file's kernel id 2^40 must not size one.
std::vector<int32_t> counterIndex(const core::Profile& p) {
  std::vector<int32_t> index;
  if (p.counters.empty()) return index;
  int64_t max_id = 0;
  for (const core::KernelRow& k : p.kernels) max_id = std::max(max_id, k.id);
  if (max_id > 4 * static_cast<int64_t>(p.kernels.size() + p.counters.size()) + 1024) return index;
  index.assign(static_cast<size_t>(max_id) + 1, -1);
  for (size_t i = 0; i < p.counters.size(); ++i) {
    const int64_t id = p.counters[i].kernel_id;
    if (id >= 0 && id <= max_id) index[static_cast<size_t>(id)] = static_cast<int32_t>(i);
  }
  return index;
}

Built buildGroups(const analysis::RunAnalysis& analysed) {
  const core::Profile& p = analysed.profile();
  const analysis::RunSummary& s = analysed.summary();
  const analysis::RooflineResult& roof = analysed.roofline();
  const analysis::KernelOps& kops = analysed.kernelOps();
  const std::vector<int32_t> counter_of = counterIndex(p);
  Built b;
  b.header = makeHeader(analysed);
  std::vector<OpRow> ops(kops.names.size());
  std::vector<int64_t> op_ns(kops.names.size(), 0);
  std::vector<uint32_t> touched;
  b.all_groups.reserve(s.groups.size());
  for (size_t gi = 0; gi < s.groups.size(); ++gi) {
    const analysis::KernelGroup& kg = s.groups[gi];
    GroupRow g;
    g.name = p.str(kg.demangled_id);
    g.origin = std::string(analysis::originName(analysed.origin(kg.kernel_indices.front())));
    g.grid = formatShape(kg.grid_x, kg.grid_y, kg.grid_z);
    g.block = formatShape(kg.block_x, kg.block_y, kg.block_z);
    g.calls = kg.calls;
    g.total_ns = kg.total_ns;
    g.mean_ns = kg.meanNs();
    g.share = s.total_kernel_ns ? static_cast<double>(kg.total_ns) / static_cast<double>(s.total_kernel_ns) : 0;
    g.registers_per_thread = kg.registers_per_thread;
    g.shared_bytes = kg.shared_bytes;
    g.local_bytes_per_thread = kg.local_bytes_per_thread;
    g.theoretical_occupancy = kg.theoretical_occupancy;
    if (gi < roof.kernel_groups.size()) applyPlacement(g, roof.kernel_groups[gi].placement);
    CounterSums sums;
    touched.clear();
    for (size_t idx : kg.kernel_indices) {
      const core::KernelRow& k = p.kernels[idx];
      const int64_t d = k.durationNs();
      if (!counter_of.empty() && k.id >= 0 && static_cast<size_t>(k.id) < counter_of.size()) {
        if (const int32_t c = counter_of[static_cast<size_t>(k.id)]; c >= 0) accumulate(sums, p.counters[static_cast<size_t>(c)], d);
      } else if (counter_of.empty() && !p.counters.empty()) {
        if (const core::KernelCounters* c = analysis::countersFor(p, k.id)) accumulate(sums, *c, d);
      }
      const uint32_t op = kops.of_kernel[idx];
      ops[op].total_ns += d;
      ++ops[op].launches;
      if (op_ns[op] == 0) touched.push_back(op);
      op_ns[op] += d;
    }
    if (!b.header.counter_coverage.empty()) {
      g.counters = analysis::describeGroupCounters(analysis::counterCoverage(p, kg.kernel_indices));
    }
    g.spill_bytes = sums.spill;
    if (sums.occupancy_weight_ns > 0) g.achieved_occupancy = sums.occupancy_weighted / sums.occupancy_weight_ns;
    // The group's op: the one holding most of its time (ties: the first seen).
    int64_t best = -1;
    for (uint32_t op : touched) {
      if (op_ns[op] > best) {
        best = op_ns[op];
        g.op = kops.names[op];
      }
      op_ns[op] = 0;
    }
    b.all_groups.push_back(std::move(g));
  }
  for (size_t o = 0; o < ops.size(); ++o) {
    if (ops[o].launches == 0) continue;
    OpRow row = ops[o];
    row.op = kops.names[o].empty() ? "(no NVTX range)" : kops.names[o];
    row.share = s.total_kernel_ns ? static_cast<double>(row.total_ns) / static_cast<double>(s.total_kernel_ns) : 0;
    b.ops.push_back(row);
  }
  std::stable_sort(b.ops.begin(), b.ops.end(), [](const OpRow& a, const OpRow& c) {
    if (a.total_ns != c.total_ns) return a.total_ns > c.total_ns;
    return a.op < c.op;
  });
  return b;
}

// "2 of the baseline's 11 fusion candidates run fused here (compared over the whole runs ...); 3
// ran as before, 1 changed without fewer launches".
std::string describeOutcomes(const analysis::FusionOutcomes& o) {
  if (o.candidates == 0) return "the baseline has no fusion candidate";
  int64_t fused = 0;
  for (const analysis::FusionOutcome& f : o.applied) fused += static_cast<int64_t>(f.candidates.size());
  return fmt::format("{} of the baseline's {} fusion candidates run fused in this run, found by the same NVTX op "
                     "ranges or by the same neighbouring kernels with fewer launches between them, compared over {}; "
                     "{} ran as before, {} changed without fewer launches. Predicted: the model's saving for the "
                     "instances found; measured: the kernel time the two runs spent there",
                     fused, o.candidates, o.scope, o.unchanged, o.changed_not_fused);
}

// The analyzer's diff and gate against the baseline, plus each listed group's baseline place on
// the roofline (for the arrows).
void addBaseline(ReportData& r, const analysis::RunAnalysis& base, const analysis::RunComparison& comparison,
                 std::vector<GroupRow>& cur_groups) {
  const analysis::RunDiff& diff = comparison.diff;
  BaselineSection section;
  section.fusions = appliedFusionRows(comparison.fusions, base.fusion());
  section.fusions_note = describeOutcomes(comparison.fusions);
  for (const std::string& note : comparison.fusions.notes) section.fusions_note += "; note: " + note;
  const Built b = buildGroups(base);
  section.header = b.header;
  section.note = "kernels matched by name, launch shape and op (renames detected by shape and op)";
  const analysis::GateOptions gate_options;
  const analysis::GateResult gate = analysis::evaluateGate(diff, gate_options);
  std::map<std::pair<std::string, std::string>, std::string> flagged;  // (kernel, shape) -> message
  for (const analysis::GateFinding& f : gate.findings) {
    if (f.regression) flagged.emplace(std::make_pair(f.kernel, f.shape), analysis::shortMessage(f, r.names));
  }
  for (const analysis::DiffEntry& e : diff.kernels) {
    DiffRow d;
    d.name = e.name;
    d.short_name = r.names.shortName(e.name);
    d.shape = e.shape;
    d.kind = std::string(analysis::matchKindName(e.kind));
    if (e.base) d.base_ns = e.base->total_ns;
    if (e.cur) d.cur_ns = e.cur->total_ns;
    d.change = e.time_change;
    if (e.test) d.p_value = e.test->p_greater;
    if (e.kind == analysis::MatchKind::kRenamed) d.note = "renamed from " + r.names.shortName(e.base_name);
    if (e.kind == analysis::MatchKind::kNew) d.note = "new";
    if (e.kind == analysis::MatchKind::kVanished) d.note = "vanished";
    if (auto it = flagged.find({e.name, e.shape}); it != flagged.end()) {
      d.regression = true;
      d.note = d.note.empty() ? it->second : d.note + "; " + it->second;
    }
    section.diff.push_back(std::move(d));
  }
  section.gate.pass = gate.passed();
  section.gate.kernels_checked = gate.kernels_checked;
  for (const analysis::GateFinding& f : gate.findings) {
    if (!f.regression) continue;
    if (f.kernel.empty()) {  // a whole-run check or the pool of rare kernels
      section.gate.reasons.push_back(analysis::shortMessage(f, r.names));
      continue;
    }
    const std::string shape = f.shape.empty() ? "" : " [" + f.shape + "]";
    section.gate.reasons.push_back(r.names.shortName(f.kernel) + shape + ": " + analysis::shortMessage(f, r.names));
  }
  section.gate.method = fmt::format(
      "time: median slower by more than {:.0f}% and one-sided Mann-Whitney p < {} over launches (launch groups too "
      "rare alone pooled), and the whole run's kernel time, busy time, launches and time in new kernels; counters "
      "(bytes, FLOPs, registers, spills, occupancy): change beyond {:.0f}%",
      gate_options.time_threshold * 100, gate_options.alpha, gate_options.counter_threshold * 100);
  std::map<GroupKey, const GroupRow*> base_by_key;
  for (const GroupRow& g : b.all_groups) base_by_key[{g.name, g.grid, g.block}] = &g;
  for (GroupRow& g : cur_groups) {
    auto it = base_by_key.find({g.name, g.grid, g.block});
    if (it == base_by_key.end()) continue;
    g.base_total_ns = it->second->total_ns;
    g.base_intensity_dram = it->second->intensity_dram;
    g.base_flops_per_s = it->second->flops_per_s;
  }
  r.baseline = std::move(section);
}

}  // namespace

FusionRow fusionRow(const analysis::FusionCandidate& c, const analysis::KernelNames& names) {
  FusionRow f;
  f.id = c.id;
  f.op = c.op;
  f.stages = c.stages;
  for (const std::string& st : c.stages) f.stage_labels.push_back(names.label(st));
  // A data-flow pair is named by its stages (ops, or kernels by their short names).
  f.label = c.source == analysis::PairSource::kDataFlow ? names.chainLabel(c.stages) : c.id;
  switch (c.source) {
    case analysis::PairSource::kNvtx: f.evidence = "NVTX op metadata (declared pair)"; break;
    case analysis::PairSource::kFrameworkOps: f.evidence = "PyTorch op graph (emit_nvtx input_op_ids)"; break;
    case analysis::PairSource::kDataFlow:
      f.evidence = "data flow (pointer arguments and allocations; roles " + c.roles + ")";
      break;
  }
  f.intermediates = c.intermediates;
  f.instances = c.instances;
  f.launches_removed = c.launches_removed;
  f.unfused_ns = c.unfused_ns;
  f.intermediate_bytes = c.intermediate_bytes;
  f.bytes_source = std::string(analysis::bytesSourceName(c.bytes_source));
  f.predicted_fused_ns = c.predicted_fused_ns;
  if (c.model) f.model = std::string(analysis::predictionModelName(*c.model));
  f.measured_fused_ns = c.measured_fused_ns;
  f.predicted_saving_ns = c.predicted_saving_ns;
  f.measured_saving_ns = c.measured_saving_ns;
  f.payoff_ns = c.total_saving_ns;
  f.payoff_share = c.program_share;
  f.model_error = c.prediction_error;
  f.fuse = c.fuse;
  f.reason = c.reason;
  f.risks = c.risks;
  f.name = c.name;
  f.pattern = std::string(analysis::fusionPatternName(c.pattern));
  f.ops = c.stage_ops;
  f.suggestion = c.suggestion;
  f.declared = c.source == analysis::PairSource::kNvtx;
  return f;
}

namespace {

void addFusion(ReportData& r, const analysis::FusionResult& fr) {
  for (const analysis::FusionCandidate& c : fr.candidates) r.fusion.push_back(fusionRow(c, r.names));
  r.fusion_notes = fr.notes;
  r.fusion_median_abs_error = fr.median_abs_error;
  r.fusion_measured_pairs = fr.measured_pairs;
}

// A name quoted in a finding: set in backticks (code in Markdown and HTML); a backtick inside the
// name would end the span early, so it becomes a quote.
std::string quoted(std::string name) {
  for (char& c : name) {
    if (c == '`') c = '\'';
  }
  return "`" + name + "`";
}

// A listed group as a finding names it: its short name, and its grid where another listed group
// has the same name (one kernel launched in two shapes).
std::string groupName(const ReportData& r, size_t index) {
  const GroupRow& g = r.groups[index];
  for (size_t i = 0; i < r.groups.size(); ++i) {
    if (i != index && r.groups[i].short_name == g.short_name) return quoted(g.short_name) + " (grid " + g.grid + ")";
  }
  return quoted(g.short_name);
}

// "`a` (12.0%), `b` (31.0%) and 4 more": the first few groups of a list by name, with their
// fraction of roof.
std::string namedGroups(const ReportData& r, const std::vector<size_t>& list, size_t shown) {
  std::vector<std::string> names;
  for (size_t i = 0; i < list.size() && i < shown; ++i) {
    names.push_back(groupName(r, list[i]) + " (" + formatPercent(r.groups[list[i]].roof_fraction) + ")");
  }
  if (list.size() > shown) names.push_back(fmt::format("{} more", list.size() - shown));
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return s;
}

// With counters: the groups that could gain most (time x (1 - fraction of roof)), and those far
// from their roof, named.
void addRoofFindings(ReportData& r) {
  const RunHeader& h = r.header;
  std::vector<size_t> by_headroom;
  for (size_t i = 0; i < r.groups.size(); ++i) {
    const GroupRow& g = r.groups[i];
    if (g.headroom_ns && *g.headroom_ns > 0) by_headroom.push_back(i);
    if (g.roof_fraction && *g.roof_fraction < 0.5) r.below_half_roof.push_back(i);
  }
  std::stable_sort(by_headroom.begin(), by_headroom.end(),
                   [&](size_t a, size_t b) { return *r.groups[a].headroom_ns > *r.groups[b].headroom_ns; });
  if (by_headroom.size() > 5) by_headroom.resize(5);
  r.top_headroom = by_headroom;
  const double total = static_cast<double>(h.total_kernel_ns);
  if (!by_headroom.empty()) {
    std::string list;
    for (size_t i = 0; i < by_headroom.size() && i < 3; ++i) {
      const GroupRow& g = r.groups[by_headroom[i]];
      list += fmt::format("{}{} {} ({} of roof{})", i ? "; " : "", groupName(r, by_headroom[i]),
                          formatDurationNs(*g.headroom_ns), formatPercent(g.roof_fraction),
                          g.binding_roof.empty() ? "" : ", " + g.binding_roof);
    }
    r.findings.push_back("Most to gain (time x (1 - fraction of roof)): " + list + ".");
  }
  if (!r.below_half_roof.empty()) {
    double low_ns = 0;
    for (size_t i : r.below_half_roof) low_ns += static_cast<double>(r.groups[i].total_ns);
    r.findings.push_back(fmt::format("{} kernel group{} run below 50% of their roof, {} of kernel time: {}.",
                                     r.below_half_roof.size(), r.below_half_roof.size() == 1 ? "" : "s",
                                     formatPercent(total > 0 ? low_ns / total : 0), namedGroups(r, r.below_half_roof, 3)));
  }
}

// The answer first: the verdict against a baseline, what the kernels could gain at their roofs,
// the best fusion; then where the time goes and what to know about how it was measured.
void addFindings(ReportData& r) {
  const RunHeader& h = r.header;
  if (h.kernel_count == 0) {
    r.findings.push_back("The run holds no kernels.");
    return;
  }
  if (r.baseline) {
    const GateVerdict& v = r.baseline->gate;
    r.findings.push_back(v.pass ? fmt::format("Gate: pass ({} kernels checked against the baseline, no regression).",
                                              v.kernels_checked)
                                : fmt::format("Gate: FAIL ({} regression{} against the baseline).", v.reasons.size(),
                                              v.reasons.size() == 1 ? "" : "s"));
    if (!r.baseline->fusions.empty()) {
      r.findings.push_back("Applied fusion: " + appliedFusionFinding(r.baseline->fusions.front()) + ".");
    }
  }
  if (h.has_counters) addRoofFindings(r);
  if (const std::string best = bestFusion(r); !best.empty()) r.findings.push_back("Best fusion: " + best);
  if (!r.groups.empty()) {
    const GroupRow& g = r.groups.front();
    r.findings.push_back(fmt::format("Top kernel: {} ({} / {}) takes {} of kernel time ({} over {} calls).",
                                     quoted(g.short_name), g.grid, g.block, formatPercent(g.share),
                                     formatDurationNs(static_cast<double>(g.total_ns)), g.calls));
  }
  if (!r.ops.empty() && r.ops.front().op != "(no NVTX range)") {
    const OpRow& o = r.ops.front();
    r.findings.push_back(fmt::format("Top op: {} takes {} of kernel time ({} in {} launches).", quoted(o.op),
                                     formatPercent(o.share), formatDurationNs(static_cast<double>(o.total_ns)),
                                     o.launches));
  }
  if (!h.has_counters) {
    r.findings.push_back(
        "Trace-mode run: no hardware counters, so no arithmetic intensity or % of roof. "
        "Record them with `fprof run --metrics roofline`.");
  }
  if (h.programmatic_launches > 0) {
    r.findings.push_back(fmt::format(
        "{} launches used programmatic dependent launch: their blocks started while the kernel before them "
        "still ran; {} of such waiting is left out of their kernel times, which start where that kernel ended.",
        h.programmatic_launches, formatDurationNs(static_cast<double>(h.dependency_wait_ns))));
  }
}

// Several processes (a merged job): the per-rank table, every distinct command and host in the
// header, and a finding when the ranks' kernel time is unbalanced.
// After the rank rows themselves (rankBreakdown), which buildReport needs earlier for the names.
void addRanks(ReportData& r, const core::Profile& run) {
  std::vector<std::string> programs, hosts;
  for (const core::ProcessInfo& pr : run.processes) {
    const std::string program = pr.command_line.empty() ? "unknown" : pr.command_line;
    if (std::find(programs.begin(), programs.end(), program) == programs.end()) programs.push_back(program);
    if (std::find(hosts.begin(), hosts.end(), pr.host) == hosts.end()) hosts.push_back(pr.host);
  }
  r.header.program.clear();
  for (const std::string& p : programs) r.header.program += (r.header.program.empty() ? "" : " | ") + p;
  r.header.host.clear();
  for (const std::string& h : hosts) r.header.host += (r.header.host.empty() ? "" : ", ") + h;
  // Collector warnings say which rank they came from.
  for (const analysis::RankRow& row : r.ranks) {
    for (const core::CollectorEventRecord& e : run.collector_events) {
      if (e.severity == "info" || std::find(row.group.process_ids.begin(), row.group.process_ids.end(), e.process_id) ==
                                      row.group.process_ids.end()) {
        continue;
      }
      auto w = std::find(r.header.warnings.begin(), r.header.warnings.end(), e.severity + ": " + e.message);
      if (w != r.header.warnings.end()) *w = e.severity + ": " + row.group.label + ": " + e.message;
    }
  }
  if (const auto im = analysis::rankImbalance(r.ranks); im && im->ratio >= 1.1) {
    r.findings.push_back(fmt::format("{} spends {:.2f}x the kernel time outside NCCL of {} ({} against {}): the "
                                     "other ranks wait for it at every collective; see the per-rank table.",
                                     r.ranks[im->most].group.label, im->ratio, r.ranks[im->least].group.label,
                                     formatDurationNs(static_cast<double>(r.ranks[im->most].computeNs())),
                                     formatDurationNs(static_cast<double>(r.ranks[im->least].computeNs()))));
  }
}

// The kernels an output of the report can name: the listed groups, every kernel of the diff, the
// fusion stages that are kernels, the ranks' top kernels. Shortened together (kernel_names.h), and
// only these: a run of 100,000 distinct kernels lists 2,000.
analysis::KernelNames namesShown(const core::Profile& run, const std::vector<GroupRow>& groups,
                                 const analysis::FusionResult& fusion, const analysis::RunDiff* diff,
                                 const std::vector<analysis::RankRow>& ranks) {
  std::vector<std::string> names;
  for (const GroupRow& g : groups) names.push_back(g.name);
  if (diff) {
    for (const analysis::DiffEntry& e : diff->kernels) {
      names.push_back(e.name);
      if (!e.base_name.empty()) names.push_back(e.base_name);
    }
  }
  for (const analysis::RankRow& row : ranks) {
    if (!row.top_kernel.empty()) names.push_back(row.top_kernel);
  }
  // A stage of a declared (NVTX) pair is an op, or a kernel launched in the op outside any stage;
  // other pairs list their stages' kernels.
  std::unordered_set<std::string_view> kernels;
  for (const analysis::FusionCandidate& c : fusion.candidates) {
    if (c.source != analysis::PairSource::kNvtx) {
      for (const auto& stage : c.stage_kernels) names.insert(names.end(), stage.begin(), stage.end());
      continue;
    }
    if (c.source == analysis::PairSource::kNvtx && kernels.empty()) {
      std::vector<bool> seen(run.strings.size(), false);
      for (const core::KernelRow& k : run.kernels) {
        if (k.demangled_id < seen.size() && !seen[k.demangled_id]) {
          seen[k.demangled_id] = true;
          kernels.insert(run.str(k.demangled_id));
        }
      }
    }
    for (const std::string& st : c.stages) {
      if (kernels.count(st)) names.push_back(st);
    }
  }
  return analysis::KernelNames(std::move(names));
}

// Sum of one counter over the graph launches that have it ("n/a" when none has).
std::string graphSum(const core::Profile& p, std::optional<double> core::KernelCounters::*field) {
  double sum = 0;
  bool any = false;
  for (const core::GraphLaunchCounters& g : p.graph_launch_counters) {
    if (const std::optional<double>& v = g.counters.*field) {
      sum += *v;
      any = true;
    }
  }
  return any ? formatBytes(sum) : "n/a";
}

}  // namespace

// "2 CUDA graph launches counted whole, one range each (5 kernels, 1.20 ms of kernel time): DRAM
// read 16.0 MiB, written 16.1 MiB, L2 64.0 MiB (sums; table graph_launch_counter)"; "" for none.
std::string describeGraphLaunches(const core::Profile& p) {
  if (p.graph_launch_counters.empty()) return {};
  std::set<std::pair<uint32_t, uint32_t>> launches;
  for (const core::GraphLaunchCounters& g : p.graph_launch_counters) launches.insert({g.process_id, g.correlation_id});
  size_t kernels = 0;
  int64_t kernel_ns = 0;
  for (const core::KernelRow& k : p.kernels) {
    if (k.graph_id == 0 || launches.count({k.process_id, k.correlation_id}) == 0) continue;
    ++kernels;
    kernel_ns += k.durationNs();
  }
  const size_t n = p.graph_launch_counters.size();
  return fmt::format("{} CUDA graph launch{} counted whole, one range each ({} kernel{}, {} of kernel time): DRAM "
                     "read {}, written {}, L2 {} (sums; table graph_launch_counter)",
                     n, n == 1 ? "" : "es", kernels, kernels == 1 ? "" : "s",
                     formatDurationNs(static_cast<double>(kernel_ns)),
                     graphSum(p, &core::KernelCounters::dram_read_bytes),
                     graphSum(p, &core::KernelCounters::dram_write_bytes), graphSum(p, &core::KernelCounters::l2_bytes));
}

std::string fusionFinding(const FusionRow& f) {
  std::string s = f.declared && f.id != f.pattern ? quoted(f.id) + ": " + f.name : f.name;
  if (f.payoff_ns) {
    s += fmt::format(": {} ({} of kernel time) predicted over {} run{}", formatDurationNs(*f.payoff_ns),
                     formatPercent(f.payoff_share), f.instances, f.instances == 1 ? "" : "s");
    if (f.predicted_saving_ns && f.instances > 1) s += ", " + formatDurationNs(*f.predicted_saving_ns) + " a run";
  }
  if (f.measured_saving_ns) {
    s += fmt::format("; measured with the fused variant: {} a run", formatDurationNs(*f.measured_saving_ns));
  }
  return s;
}

std::vector<AppliedFusionRow> appliedFusionRows(const analysis::FusionOutcomes& outcomes,
                                                const analysis::FusionResult& base_fusion) {
  std::vector<AppliedFusionRow> rows;
  for (const analysis::FusionOutcome& o : outcomes.applied) {
    AppliedFusionRow row;
    row.name = analysis::fusionOutcomeName(o, base_fusion);
    if (!o.candidates.empty() && o.candidates.front() < base_fusion.candidates.size()) {
      row.pattern = std::string(analysis::fusionPatternName(base_fusion.candidates[o.candidates.front()].pattern));
    }
    row.matched_by = o.matched_by;
    row.instances = o.instances;
    row.launches_before = o.launches_before;
    row.launches_after = o.launches_after;
    row.predicted_saving_ns = o.predicted_saving_ns;
    row.measured_saving_ns = o.measured_saving_ns;
    row.error = o.error;
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string appliedFusionFinding(const AppliedFusionRow& f) {
  return fmt::format("{}: predicted {}, measured {} over {} instance{} ({} launches -> {}){}", f.name,
                     f.predicted_saving_ns ? formatDurationNs(*f.predicted_saving_ns) : "n/a (no prediction)",
                     formatDurationNs(f.measured_saving_ns), f.instances, f.instances == 1 ? "" : "s",
                     f.launches_before, f.launches_after,
                     f.error ? " (error " + formatSignedPercent(*f.error) + ")" : "");
}

std::string bestFusion(const ReportData& r) {
  if (r.fusion.empty() || !r.fusion.front().fuse || !r.fusion.front().payoff_ns) return "";
  const FusionRow& f = r.fusion.front();
  return fusionFinding(f) + ". Suggestion: " + f.suggestion + ".";
}

std::string bestFusion(const analysis::FusionResult& fusion, const analysis::KernelNames& names) {
  ReportData r;
  if (!fusion.candidates.empty()) r.fusion.push_back(fusionRow(fusion.candidates.front(), names));
  return bestFusion(r);
}

ReportData buildReport(const core::Profile& run, const core::Profile* baseline, const BuildOptions& options) {
  return buildReport(analysis::RunAnalysis::of(run, baseline), options);
}

ReportData buildReport(const analysis::RunAnalysis& analysed, const BuildOptions& options) {
  const core::Profile& run = analysed.profile();
  ReportData r;
  r.roofs = pickRoofs(analysed);
  // The analysis computes data flow and fusion on a second thread meanwhile.
  Built b = buildGroups(analysed);
  r.header = std::move(b.header);
  r.ops = std::move(b.ops);
  r.group_count = static_cast<int64_t>(b.all_groups.size());
  const analysis::RunDiff* diff = analysed.comparison() ? &analysed.comparison()->diff : nullptr;
  if (b.all_groups.size() > options.max_groups) {
    for (size_t i = options.max_groups; i < b.all_groups.size(); ++i) {
      ++r.omitted_groups;
      r.omitted_ns += b.all_groups[i].total_ns;
    }
    b.all_groups.resize(options.max_groups);
  }
  r.groups = std::move(b.all_groups);
  const analysis::FusionResult& fr = analysed.fusion();
  r.ranks = analysed.ranks();
  r.names = namesShown(run, r.groups, fr, diff, r.ranks);
  for (GroupRow& g : r.groups) g.short_name = r.names.shortName(g.name);
  if (diff) addBaseline(r, *analysed.baseline(), *analysed.comparison(), r.groups);
  addFusion(r, fr);
  addFindings(r);
  if (run.processes.size() > 1) addRanks(r, run);
  return r;
}

}  // namespace fprof::reports
