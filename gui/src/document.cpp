// A loaded profile turned into plot items, roofs, fusion candidates and a diff (see document.h).
#include "fprof/gui/document.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "fprof/analysis/dataflow.h"
#include "fprof/analysis/framework_ops.h"
#include "fprof/analysis/nvtx_ops.h"
#include "fprof/analysis/origin.h"
#include "fprof/analysis/summary.h"
#include "fprof/core/text.h"

namespace fprof::gui {

const char* pointModeName(PointMode m) {
  switch (m) {
    case PointMode::kKernels: return "kernel launches";
    case PointMode::kKernelGroups: return "kernel groups";
    case PointMode::kOps: return "NVTX ops";
  }
  return "?";
}

const char* changeName(Change c) {
  switch (c) {
    case Change::kSame: return "same";
    case Change::kRegression: return "regression";
    case Change::kImprovement: return "improvement";
    case Change::kUntestable: return "slower?";
    case Change::kNew: return "new";
    case Change::kVanished: return "vanished";
  }
  return "?";
}

std::string formatDurationNs(double ns) {
  if (ns >= 1e9) return fmt::format("{:.3g} s", ns / 1e9);
  if (ns >= 1e6) return fmt::format("{:.3g} ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.3g} us", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

core::Expected<std::shared_ptr<Document>> Document::open(const std::string& path) {
  auto loaded = core::loadProfile(path);
  if (!loaded) return core::makeError(loaded.error());
  return fromProfile(std::move(*loaded));
}

std::shared_ptr<Document> Document::fromProfile(core::Profile profile) {
  std::shared_ptr<Document> d(new Document());
  d->analysis_.emplace(analysis::RunAnalysis::owning(std::move(profile)));
  d->build();
  return d;
}

const core::Profile& Document::profile() const { return analysis_->profile(); }
const analysis::FusionResult& Document::fusion() const { return analysis_->fusion(); }
const analysis::KernelNames& Document::kernelNames() const { return analysis_->kernelNames(); }

namespace {

// Adds one kernel's resources to an item (max of resources, min of theoretical occupancy).
void addKernel(Item& it, const core::Profile& p, size_t index, bool first) {
  const core::KernelRow& k = p.kernels[index];
  it.kernels.push_back(index);
  const std::array<int32_t, 3> grid = {k.grid_x, k.grid_y, k.grid_z};
  const std::array<int32_t, 3> block = {k.block_x, k.block_y, k.block_z};
  if (first) {
    it.grid = grid;
    it.block = block;
    it.theoretical_occupancy = k.theoretical_occupancy;
  } else {
    if (grid != it.grid || block != it.block) it.mixed_shapes = true;
    if (it.theoretical_occupancy && k.theoretical_occupancy) {
      it.theoretical_occupancy = std::min(*it.theoretical_occupancy, *k.theoretical_occupancy);
    } else {
      it.theoretical_occupancy.reset();
    }
  }
  it.registers_per_thread = std::max(it.registers_per_thread, k.registers_per_thread);
  it.static_shared_bytes = std::max(it.static_shared_bytes, k.static_shared_bytes);
  it.dynamic_shared_bytes = std::max(it.dynamic_shared_bytes, k.dynamic_shared_bytes);
  it.local_bytes_per_thread = std::max(it.local_bytes_per_thread, k.local_bytes_per_thread);
}

// Counter-derived fields summed over an item's kernels: work, achieved occupancy, spill traffic.
void addCounters(Item& it, const core::Profile& p) {
  bool first = true;
  double occ_weighted = 0;
  bool occ_complete = true;
  bool spill_any = false;
  double spill = 0;
  int64_t ns = 0;
  for (size_t i : it.kernels) {
    const core::KernelRow& k = p.kernels[i];
    const core::KernelCounters* c = analysis::countersFor(p, k.id);
    analysis::Work w = c ? analysis::Work::fromCounters(*c) : analysis::Work{};
    if (first) {
      it.work = w;
      first = false;
    } else {
      it.work += w;
    }
    ns += k.durationNs();
    if (c && c->achieved_occupancy) {
      occ_weighted += *c->achieved_occupancy * static_cast<double>(k.durationNs());
    } else {
      occ_complete = false;
    }
    if (c && (c->local_load_bytes || c->local_store_bytes)) {
      spill_any = true;
      spill += c->local_load_bytes.value_or(0) + c->local_store_bytes.value_or(0);
    }
  }
  if (occ_complete && ns > 0 && !it.kernels.empty()) it.achieved_occupancy = occ_weighted / static_cast<double>(ns);
  if (spill_any) it.local_traffic_bytes = spill;
}

std::optional<Precision> precisionFromName(std::string_view s) {
  for (size_t i = 0; i < kPrecisionCount; ++i) {
    if (analysis::precisionName(static_cast<Precision>(i)) == s) return static_cast<Precision>(i);
  }
  return std::nullopt;
}

std::optional<MemLevel> levelFromName(std::string_view s) {
  for (size_t i = 0; i < kMemLevelCount; ++i) {
    if (analysis::memLevelName(static_cast<MemLevel>(i)) == s) return static_cast<MemLevel>(i);
  }
  return std::nullopt;
}

}  // namespace

void Document::build() {
  const analysis::RunAnalysis& a = *analysis_;
  const core::Profile& p = a.profile();
  for (const core::KernelRow& k : p.kernels) total_kernel_ns_ += k.durationNs();
  kernels_with_counters_ = 0;
  for (const core::KernelRow& k : p.kernels) {
    if (analysis::countersFor(p, k.id)) ++kernels_with_counters_;
  }

  // Ops (for colour and the op mode): the op each kernel is reported under (the pipeline's
  // kernelOps: "aten::linear", not one op per emit_nvtx range), in first-launch order.
  const analysis::KernelOps& kernel_ops = a.kernelOps();
  std::vector<int32_t> op_of_name(kernel_ops.names.size(), -1);
  std::vector<int32_t> op_of_kernel(p.kernels.size(), -1);
  std::vector<std::vector<size_t>> op_kernels;
  for (size_t i = 0; i < p.kernels.size() && i < kernel_ops.of_kernel.size(); ++i) {
    const uint32_t id = kernel_ops.of_kernel[i];
    if (kernel_ops.names[id].empty()) continue;
    if (op_of_name[id] < 0) {
      op_of_name[id] = static_cast<int32_t>(op_names_.size());
      op_names_.push_back(kernel_ops.names[id]);
      op_kernels.emplace_back();
    }
    op_of_kernel[i] = op_of_name[id];
    op_kernels[static_cast<size_t>(op_of_name[id])].push_back(i);
  }
  // Each distinct path is named once: a million launches share a few thousand paths.
  std::unordered_map<uint32_t, std::string> ops_of_path;
  auto setPath = [&](Item& it, const core::KernelRow& k) {
    if (!k.nvtx_path_id) return;
    it.nvtx_path = p.str(*k.nvtx_path_id);
    auto [at, added] = ops_of_path.try_emplace(*k.nvtx_path_id);
    if (added) at->second = analysis::nvtxPathOpNames(it.nvtx_path);
    it.nvtx_ops = at->second;
  };

  const analysis::KernelNames& names = a.kernelNames();
  // Per kernel launch: the analyzer's own per-kernel placement.
  auto& kernels = items_[static_cast<size_t>(PointMode::kKernels)];
  kernels.reserve(p.kernels.size());
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const core::KernelRow& k = p.kernels[i];
    Item it;
    it.name = p.str(k.demangled_id);
    it.short_name = names.shortName(it.name);
    setPath(it, k);
    it.duration_ns = k.durationNs();
    addKernel(it, p, i, true);
    addCounters(it, p);
    it.placement = a.kernelPlacement(i);
    it.op = op_of_kernel[i];
    it.origin = std::string(analysis::originName(a.origin(i)));
    kernels.push_back(std::move(it));
  }

  // Per kernel group and per op: the analyzer's group placements (same rules as fprof report).
  const analysis::RunSummary& summary = a.summary();
  const analysis::RooflineResult& roofline = a.roofline();
  auto& groups = items_[static_cast<size_t>(PointMode::kKernelGroups)];
  for (size_t g = 0; g < summary.groups.size(); ++g) {
    const analysis::KernelGroup& kg = summary.groups[g];
    Item it;
    it.name = p.str(kg.demangled_id);
    it.short_name = names.shortName(it.name);
    it.calls = kg.calls;
    it.duration_ns = kg.total_ns;
    for (size_t n = 0; n < kg.kernel_indices.size(); ++n) addKernel(it, p, kg.kernel_indices[n], n == 0);
    const core::KernelRow& first = p.kernels[kg.kernel_indices.front()];
    setPath(it, first);
    it.op = op_of_kernel[kg.kernel_indices.front()];
    addCounters(it, p);
    it.placement = roofline.kernel_groups.at(g).placement;
    it.origin = std::string(analysis::originName(a.origin(kg.kernel_indices.front())));
    groups.push_back(std::move(it));
  }
  std::unordered_map<std::string, size_t> op_by_label;
  for (size_t o = 0; o < op_names_.size(); ++o) op_by_label.emplace(op_names_[o], o);
  auto& ops = items_[static_cast<size_t>(PointMode::kOps)];
  for (const analysis::GroupPlacement& gp : a.opPlacements()) {
    auto found = op_by_label.find(gp.label);
    if (found == op_by_label.end()) continue;  // cannot happen: both name ops by kernelOps
    Item it;
    it.name = gp.label;
    it.short_name = gp.label;
    it.calls = gp.calls;
    it.duration_ns = gp.placement.duration_ns;
    const auto& members = op_kernels[found->second];
    for (size_t n = 0; n < members.size(); ++n) addKernel(it, p, members[n], n == 0);
    setPath(it, p.kernels[members.front()]);
    addCounters(it, p);
    it.placement = gp.placement;
    it.op = static_cast<int32_t>(found->second);
    ops.push_back(std::move(it));
  }
  // An op has no origin: it mixes kernels of several.

  // Roofs of the first device (a run on several GPU models shows the first; the note says so).
  if (!p.devices.empty()) {
    const core::DeviceInfo& d = p.devices.front();
    roofs_.device_name = d.name;
    roofs_.datasheet = analysis::datasheetCeilings(d);
    roofs_.measured.device_name = d.name;
    for (const core::CeilingRecord& r : p.ceilings) {
      if (r.device_name != d.name || r.source != "measured") continue;
      analysis::Roof roof{r.value, analysis::CeilingSource::kMeasured, r.method};
      if (auto l = levelFromName(r.ceiling)) {
        roofs_.measured.bandwidth[static_cast<size_t>(*l)] = roof;
      } else if (auto pr = precisionFromName(r.ceiling)) {
        roofs_.measured.compute[static_cast<size_t>(*pr)] = roof;
      }
    }
    // Datasheet rows stored in the file (by fprof ceilings) stand in for computed ones.
    for (const core::CeilingRecord& r : p.ceilings) {
      if (r.device_name != d.name || r.source != "datasheet") continue;
      analysis::Roof roof{r.value, analysis::CeilingSource::kDatasheet, r.method};
      if (auto l = levelFromName(r.ceiling)) {
        roofs_.datasheet.bandwidth[static_cast<size_t>(*l)] = roof;
      } else if (auto pr = precisionFromName(r.ceiling)) {
        roofs_.datasheet.compute[static_cast<size_t>(*pr)] = roof;
      }
    }
  }

  // Fusion candidates, with the kernels of their stages found again for drawing (see FusionView).
  const analysis::OpIndex& op_index = a.nvtxOps();
  std::unordered_map<std::string, std::vector<size_t>> kernels_by_name;
  for (size_t i = 0; i < p.kernels.size(); ++i) kernels_by_name[p.str(p.kernels[i].demangled_id)].push_back(i);
  for (const analysis::FusionCandidate& c : a.fusion().candidates) {
    FusionView v;
    v.candidate = c;
    v.stage_kernels.resize(c.stages.size());
    if (c.source == analysis::PairSource::kNvtx) {
      for (const analysis::OpInstance& op : op_index.ops) {
        if (op.tags->pair != c.id) continue;
        if (op.tags->variant == "fused") {
          v.fused_kernels.insert(v.fused_kernels.end(), op.all_kernels.begin(), op.all_kernels.end());
          continue;
        }
        if (op.tags->variant != "unfused") continue;
        // The analyzer's stage order: stage children with kernels first, then loose kernels.
        std::vector<std::vector<size_t>> stages;
        for (size_t ch : op.children) {
          if (!op_index.ops[ch].all_kernels.empty()) stages.push_back(op_index.ops[ch].all_kernels.vector());
        }
        for (size_t k : op.kernels) stages.push_back({k});
        for (size_t s = 0; s < stages.size() && s < v.stage_kernels.size(); ++s) {
          v.stage_kernels[s].insert(v.stage_kernels[s].end(), stages[s].begin(), stages[s].end());
        }
      }
    } else {
      // Stages are named by op or short kernel name; their kernels' full names find the launches.
      for (size_t s = 0; s < c.stage_kernels.size() && s < v.stage_kernels.size(); ++s) {
        for (const std::string& name : c.stage_kernels[s]) {
          if (auto f = kernels_by_name.find(name); f != kernels_by_name.end()) {
            v.stage_kernels[s].insert(v.stage_kernels[s].end(), f->second.begin(), f->second.end());
          }
        }
        std::sort(v.stage_kernels[s].begin(), v.stage_kernels[s].end());
        v.stage_kernels[s].erase(std::unique(v.stage_kernels[s].begin(), v.stage_kernels[s].end()), v.stage_kernels[s].end());
      }
    }
    fusion_views_.push_back(std::move(v));
  }
}

Document::Aggregate Document::aggregate(const std::vector<size_t>& kernel_indices) const {
  Aggregate a;
  if (kernel_indices.empty()) return a;
  const core::Profile& p = profile();
  analysis::PlacementInput in;
  bool first = true;
  for (size_t i : kernel_indices) {
    const core::KernelRow& k = p.kernels[i];
    const analysis::PlacementInput ki = analysis::kernelInput(p, k, p.device(k.process_id, k.device_id));
    if (first) {
      in = ki;
      in.launches = 0;
      in.duration_ns = 0;
      first = false;
    } else {
      in.work += ki.work;
    }
    in.duration_ns += ki.duration_ns;
    in.launches += 1;
  }
  in.blocks.reset();
  in.occupancy.reset();
  a.work = in.work;
  a.duration_ns = in.duration_ns;
  const core::KernelRow& k0 = p.kernels[kernel_indices.front()];
  a.placement = analysis::place(in, analysis_->ceilings(k0.process_id, k0.device_id));
  return a;
}

std::string Document::plotNote() const {
  if (profile().kernels.empty()) return "This profile holds no kernels.";
  if (kernels_with_counters_ == 0) {
    return "Trace-only profile: no hardware counters, so no roofline points. Record with "
           "'fprof run --metrics roofline' to place kernels; the table and details below are from the trace.";
  }
  if (kernels_with_counters_ < static_cast<int64_t>(profile().kernels.size())) {
    return fmt::format("{} of {} kernel launches have counters; the others are not plotted.", kernels_with_counters_,
                       profile().kernels.size());
  }
  return "";
}

std::optional<Vec2> itemPoint(const Item& item, MemLevel level) {
  const auto& intensity = item.placement.intensity_flop_per_byte[static_cast<size_t>(level)];
  const auto& rate = item.placement.achieved_flops_per_s;
  if (!intensity || !rate || !(*intensity > 0) || !(*rate > 0)) return std::nullopt;
  return Vec2{*intensity, *rate};
}

bool itemHasPrecision(const Item& item, uint32_t precision_mask) {
  for (size_t i = 0; i < kPrecisionCount; ++i) {
    if ((precision_mask >> i & 1u) && item.work.flops[i] && *item.work.flops[i] > 0) return true;
  }
  return false;
}

namespace {

// What the tooltip and the details show of a text: a 1 MB name is cut, an ellipsis says so.
std::string shown(const std::string& s) { return core::truncateText(s, core::kMaxShownCodePoints); }

std::string optPercent(const std::optional<double>& v) {
  return v ? fmt::format("{:.1f}%", *v * 100) : std::string("n/a");
}
std::string optSi(const std::optional<double>& v, const char* unit) {
  return v ? formatSi(*v, unit) : std::string("n/a");
}
std::string levelLabel(MemLevel l) {
  switch (l) {
    case MemLevel::kDram: return "DRAM";
    case MemLevel::kL2: return "L2";
    case MemLevel::kL1: return "L1";
  }
  return "?";
}

}  // namespace

std::string tooltipText(const Item& item, MemLevel level) {
  const analysis::Placement& pl = item.placement;
  std::string s = shown(item.short_name.empty() ? item.name : item.short_name) + "\n";
  if (!item.short_name.empty() && item.short_name != item.name) s += shown(item.name) + "\n";
  s += fmt::format("time {} ({} call{})\n", formatDurationNs(static_cast<double>(item.duration_ns)), item.calls,
                   item.calls == 1 ? "" : "s");
  const auto& in = pl.intensity_flop_per_byte[static_cast<size_t>(level)];
  s += fmt::format("intensity ({}) {}\n", levelLabel(level), in ? fmt::format("{:.3g} FLOP/byte", *in) : "n/a");
  s += fmt::format("achieved {}\n", optSi(pl.achieved_flops_per_s, "FLOP/s"));
  s += fmt::format("{} of roof", optPercent(pl.roof_fraction));
  if (!pl.binding.empty()) s += fmt::format(" ({}, {})", pl.binding, analysis::ceilingSourceName(*pl.binding_source));
  s += fmt::format("\nbound: {}", analysis::boundName(pl.bound));
  return s;
}

std::string detailsText(const Item& item) {
  const analysis::Placement& pl = item.placement;
  std::string s;
  s += fmt::format("{}\n", shown(item.short_name.empty() ? item.name : item.short_name));
  if (!item.short_name.empty() && item.short_name != item.name) s += fmt::format("full name: {}\n", shown(item.name));
  if (!item.origin.empty()) s += fmt::format("origin: {}\n", item.origin);
  s += fmt::format("NVTX path: {}\n", item.nvtx_ops.empty() ? "(none)" : shown(item.nvtx_ops));
  s += fmt::format("calls: {}   time: {} (mean {})\n", item.calls, formatDurationNs(static_cast<double>(item.duration_ns)),
                   formatDurationNs(static_cast<double>(item.duration_ns) / static_cast<double>(std::max<int64_t>(item.calls, 1))));
  s += fmt::format("grid: {}x{}x{}   block: {}x{}x{}{}\n", item.grid[0], item.grid[1], item.grid[2], item.block[0],
                   item.block[1], item.block[2], item.mixed_shapes ? "   (first launch; shapes differ)" : "");
  s += fmt::format("registers/thread: {}   shared: {} B static + {} B dynamic\n", item.registers_per_thread,
                   item.static_shared_bytes, item.dynamic_shared_bytes);
  s += fmt::format("local memory/thread (stack + spills): {} B   spill traffic: {}\n", item.local_bytes_per_thread,
                   optSi(item.local_traffic_bytes, "B"));
  s += fmt::format("occupancy: theoretical {}   achieved {}\n", optPercent(item.theoretical_occupancy),
                   optPercent(item.achieved_occupancy));
  s += "bytes: ";
  for (size_t l = 0; l < kMemLevelCount; ++l) {
    s += fmt::format("{}{} {}", l ? "   " : "", levelLabel(static_cast<MemLevel>(l)), optSi(item.work.bytes[l], "B"));
  }
  s += "\nFLOPs:";
  bool any = false;
  bool counted = false;
  for (size_t i = 0; i < kPrecisionCount; ++i) {
    if (!item.work.flops[i]) continue;
    counted = true;
    if (*item.work.flops[i] == 0) continue;  // counted and zero: not worth a line
    s += fmt::format(" {} {}", analysis::precisionName(static_cast<Precision>(i)), formatSi(*item.work.flops[i], ""));
    any = true;
  }
  if (!any) s += counted ? " 0" : " n/a (no counters)";
  s += "\nintensity:";
  for (size_t l = 0; l < kMemLevelCount; ++l) {
    const auto& in = pl.intensity_flop_per_byte[l];
    s += fmt::format(" {} {}", levelLabel(static_cast<MemLevel>(l)), in ? fmt::format("{:.3g}", *in) : "n/a");
  }
  s += fmt::format(" FLOP/byte\nachieved: {}\n", optSi(pl.achieved_flops_per_s, "FLOP/s"));
  s += fmt::format("roof: {} {}   attainable {}   {} of roof\n", pl.binding.empty() ? "n/a" : pl.binding,
                   pl.binding_source ? std::string(analysis::ceilingSourceName(*pl.binding_source)) : "",
                   pl.attainable_ns ? formatDurationNs(*pl.attainable_ns) : "n/a", optPercent(pl.roof_fraction));
  s += fmt::format("bound: {} ({})\n", analysis::boundName(pl.bound), pl.reason);
  for (const std::string& m : pl.missing) s += fmt::format("missing: {}\n", m);
  return s;
}

namespace {

// The diff's kernel rows, each with the gate's verdict and the kernel-group items of both documents.
std::vector<DiffRow> kernelRows(const Document& base, const Document& cur, const analysis::RunComparison& comparison,
                                const analysis::GateOptions& opt) {
  const analysis::RunDiff& rd = comparison.diff;
  const analysis::GateResult gate = analysis::evaluateGate(rd, opt);
  auto itemKey = [](const std::string& name, const std::string& shape) { return name + '\x1f' + shape; };
  auto indexOf = [&](const Document& d) {
    std::map<std::string, size_t> m;
    const auto& items = d.items(PointMode::kKernelGroups);
    for (size_t i = 0; i < items.size(); ++i) {
      const Item& it = items[i];
      m.emplace(itemKey(it.name, fmt::format("grid {}x{}x{} block {}x{}x{}", it.grid[0], it.grid[1], it.grid[2],
                                             it.block[0], it.block[1], it.block[2])),
                i);
    }
    return m;
  };
  const auto base_items = indexOf(base), cur_items = indexOf(cur);
  // The gate's findings per kernel (name and shape: entries that differ only by NVTX path share them).
  std::map<std::string, std::vector<const analysis::GateFinding*>> findings;
  for (const analysis::GateFinding& f : gate.findings) findings[itemKey(f.kernel, f.shape)].push_back(&f);

  const analysis::KernelNames& names = comparison.names;
  std::vector<DiffRow> rows;
  for (const analysis::DiffEntry& e : rd.kernels) {
    DiffRow r;
    r.name = e.kind == analysis::MatchKind::kRenamed ? e.base_name + " -> " + e.name : e.name;
    r.short_name = e.kind == analysis::MatchKind::kRenamed
                       ? names.shortName(e.base_name) + " -> " + names.shortName(e.name)
                       : names.shortName(e.name);
    r.shape = e.shape;
    r.nvtx_path = e.nvtx_path;
    if (e.base) {
      r.base_median_ns = e.base->median_ns;
      const std::string& bname = e.base_name.empty() ? e.name : e.base_name;
      if (auto f = base_items.find(itemKey(bname, e.shape)); f != base_items.end()) r.base_item = f->second;
    }
    if (e.cur) {
      r.cur_median_ns = e.cur->median_ns;
      if (auto f = cur_items.find(itemKey(e.name, e.shape)); f != cur_items.end()) r.cur_item = f->second;
    }
    r.time_change = e.time_change;
    if (e.test) r.p_value = e.test->p_greater;
    if (e.base && e.cur) {
      const auto& b = e.base->metrics[static_cast<size_t>(analysis::CounterMetric::kDramBytes)];
      const auto& c = e.cur->metrics[static_cast<size_t>(analysis::CounterMetric::kDramBytes)];
      if (b && c && *b > 0) r.dram_bytes_change = *c / *b - 1;
    }
    if (e.kind == analysis::MatchKind::kNew) r.change = Change::kNew;
    if (e.kind == analysis::MatchKind::kVanished) r.change = Change::kVanished;
    bool regression = false, improved = false, untestable = false;
    if (auto f = findings.find(itemKey(e.name, e.shape)); f != findings.end()) {
      for (const analysis::GateFinding* g : f->second) {
        r.why += (r.why.empty() ? "" : "; ") + g->message;
        regression = regression || g->regression;
        improved = improved || g->kind == analysis::GateFinding::Kind::kImproved;
        untestable = untestable || g->kind == analysis::GateFinding::Kind::kFolded;
      }
    }
    if (regression) {
      r.change = Change::kRegression;
    } else if (r.change == Change::kSame) {
      r.change = improved ? Change::kImprovement : untestable ? Change::kUntestable : Change::kSame;
    }
    rows.push_back(std::move(r));
  }
  // Regressions first, then the rest in the analyzer's order (largest change in total time first).
  std::stable_sort(rows.begin(), rows.end(), [](const DiffRow& a, const DiffRow& b) {
    auto rank = [](Change c) {
      switch (c) {
        case Change::kRegression: return 0;
        case Change::kUntestable: return 1;
        case Change::kImprovement: return 2;
        case Change::kNew:
        case Change::kVanished: return 3;
        case Change::kSame: return 4;
      }
      return 4;
    };
    return rank(a.change) < rank(b.change);
  });
  return rows;
}

// The applied fusions, named as fprof diff names them.
std::vector<AppliedFusion> appliedFusions(const analysis::FusionOutcomes& outcomes, const analysis::FusionResult& base) {
  std::vector<AppliedFusion> out;
  for (const analysis::FusionOutcome& o : outcomes.applied) {
    AppliedFusion f;
    f.name = analysis::fusionOutcomeName(o, base);
    if (!o.candidates.empty() && o.candidates.front() < base.candidates.size()) {
      f.pattern = std::string(analysis::fusionPatternName(base.candidates[o.candidates.front()].pattern));
    }
    f.outcome = o;
    out.push_back(std::move(f));
  }
  return out;
}

std::string signedPercent(const std::optional<double>& v) {
  return v ? fmt::format("{:+.1f}%", *v * 100) : std::string("n/a");
}

}  // namespace

DocumentDiff compareDocuments(const Document& base, const Document& cur, const analysis::GateOptions& opt) {
  const analysis::RunComparison comparison = analysis::compareRuns(base.analysis(), cur.analysis());
  DocumentDiff d;
  d.kernels = kernelRows(base, cur, comparison, opt);
  d.fusions = appliedFusions(comparison.fusions, base.fusion());
  d.outcomes = comparison.fusions;
  for (const analysis::SetupDifference& s : comparison.diff.setup_differences) d.warnings.push_back(s.message);
  return d;
}

std::vector<DiffRow> diffDocuments(const Document& base, const Document& cur, const analysis::GateOptions& opt) {
  return compareDocuments(base, cur, opt).kernels;
}

std::string appliedFusionsSummary(const DocumentDiff& d) {
  const analysis::FusionOutcomes& o = d.outcomes;
  if (o.candidates == 0) return "The baseline has no fusion candidate.";
  size_t fused = 0;
  for (const analysis::FusionOutcome& f : o.applied) fused += f.candidates.size();
  return fmt::format("{} of the baseline's {} fusion candidates run{} fused here (compared over {}); {} ran as before, "
                     "{} changed without fewer launches.",
                     fused, o.candidates, fused == 1 ? "s" : "", o.scope, o.unchanged, o.changed_not_fused);
}

std::string appliedFusionText(const AppliedFusion& f) {
  const analysis::FusionOutcome& o = f.outcome;
  return fmt::format("{}: predicted {}, measured {} over {} instance{} ({} launches -> {}){}", f.name,
                     o.predicted_saving_ns ? formatDurationNs(*o.predicted_saving_ns) : "n/a (no prediction)",
                     formatDurationNs(o.measured_saving_ns), o.instances, o.instances == 1 ? "" : "s",
                     o.launches_before, o.launches_after, o.error ? " (error " + signedPercent(o.error) + ")" : "");
}

std::array<std::string, 7> appliedFusionCells(const AppliedFusion& f) {
  const analysis::FusionOutcome& o = f.outcome;
  return {o.matched_by == "the same NVTX op ranges" ? "op ranges" : "neighbours",
          std::to_string(o.instances),
          fmt::format("{} -> {}", o.launches_before, o.launches_after),
          o.predicted_saving_ns ? formatDurationNs(*o.predicted_saving_ns) : "n/a",
          formatDurationNs(o.measured_saving_ns),
          signedPercent(o.error),
          f.name};
}

}  // namespace fprof::gui
