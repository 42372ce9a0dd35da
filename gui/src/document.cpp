// A loaded profile turned into plot items, roofs, fusion candidates and a diff (see document.h).
#include "fprof/gui/document.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <span>
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
  analysis::AnalysisOptions options;
  // The viewer cuts a job's rank views out of its profile (core::selectRank): a file of several
  // processes keeps the tables data flow reads. (The NVTX ranges stay too: a comparison with a
  // baseline reads them.)
  options.release_launch_tables = profile.processes.size() <= 1;
  d->analysis_.emplace(analysis::RunAnalysis::owning(std::move(profile), std::nullopt, options));
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

// The resources of an item's kernels (addKernel, the first launch's shape).
void addKernels(Item& it, const core::Profile& p, std::span<const size_t> kernels) {
  for (size_t n = 0; n < kernels.size(); ++n) addKernel(it, p, kernels[n], n == 0);
}

// Counter-derived fields summed over an item's kernels: work, achieved occupancy, spill traffic.
void addCounters(Item& it, const core::Profile& p, std::span<const size_t> kernels) {
  bool first = true;
  analysis::Work work;
  double occ_weighted = 0;
  bool occ_complete = true;
  bool spill_any = false;
  double spill = 0;
  int64_t ns = 0;
  for (size_t i : kernels) {
    const core::KernelRow& k = p.kernels[i];
    const core::KernelCounters* c = analysis::countersFor(p, k.id);
    analysis::Work w = c ? analysis::Work::fromCounters(*c) : analysis::Work{};
    if (first) {
      work = w;
      first = false;
    } else {
      work += w;
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
  it.work = ItemWork(work);
  if (occ_complete && ns > 0 && !kernels.empty()) it.achieved_occupancy = occ_weighted / static_cast<double>(ns);
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

// The op each kernel is reported under (the pipeline's kernelOps: "aten::linear", not one op per
// emit_nvtx range), numbered in first-launch order, and each op's kernels.
struct OpsOfKernels {
  std::vector<std::string> names;
  std::vector<int32_t> of_kernel;  // -1: in no op
  std::vector<std::vector<size_t>> kernels;
};

OpsOfKernels opsOfKernels(const core::Profile& p, const analysis::KernelOps& kernel_ops) {
  OpsOfKernels o;
  std::vector<int32_t> op_of_name(kernel_ops.names.size(), -1);
  o.of_kernel.assign(p.kernels.size(), -1);
  for (size_t i = 0; i < p.kernels.size() && i < kernel_ops.of_kernel.size(); ++i) {
    const uint32_t id = kernel_ops.of_kernel[i];
    if (kernel_ops.names[id].empty()) continue;
    if (op_of_name[id] < 0) {
      op_of_name[id] = static_cast<int32_t>(o.names.size());
      o.names.push_back(kernel_ops.names[id]);
      o.kernels.emplace_back();
    }
    o.of_kernel[i] = op_of_name[id];
    o.kernels[static_cast<size_t>(op_of_name[id])].push_back(i);
  }
  return o;
}

// The roofs of a device: measured ones as stored, datasheet ones computed and replaced by those
// stored in the file (by fprof ceilings).
RoofSet roofsOf(const core::Profile& p, const core::DeviceInfo& d) {
  RoofSet roofs;
  roofs.device_name = d.name;
  roofs.datasheet = analysis::datasheetCeilings(d);
  roofs.measured.device_name = d.name;
  auto store = [](analysis::Ceilings& into, const core::CeilingRecord& r, analysis::CeilingSource source) {
    analysis::Roof roof{r.value, source, r.method};
    if (auto l = levelFromName(r.ceiling)) {
      into.bandwidth[static_cast<size_t>(*l)] = roof;
    } else if (auto pr = precisionFromName(r.ceiling)) {
      into.compute[static_cast<size_t>(*pr)] = roof;
    }
  };
  for (const core::CeilingRecord& r : p.ceilings) {
    if (r.device_name == d.name && r.source == "measured") store(roofs.measured, r, analysis::CeilingSource::kMeasured);
  }
  for (const core::CeilingRecord& r : p.ceilings) {
    if (r.device_name == d.name && r.source == "datasheet") store(roofs.datasheet, r, analysis::CeilingSource::kDatasheet);
  }
  return roofs;
}

// A fusion candidate with the kernels of its stages found again for drawing (see FusionView).
FusionView fusionView(const analysis::OpIndex& op_index,
                      const std::unordered_map<std::string_view, std::vector<size_t>>& kernels_by_name,
                      const analysis::FusionCandidate& c) {
  FusionView v;
  v.candidate = c;
  v.stage_kernels.resize(c.stages.size());
  if (c.source == analysis::PairSource::kNvtx) {
    for (const analysis::OpInstance& op : op_index.ops) {
      if (op.tags->pair != c.id) continue;
      if (op.tags->variant == "fused") {
        v.fused_kernels.insert(v.fused_kernels.end(), op.allKernels().begin(), op.allKernels().end());
        continue;
      }
      if (op.tags->variant != "unfused") continue;
      // The analyzer's stage order: stage children with kernels first, then loose kernels.
      std::vector<std::vector<size_t>> stages;
      for (size_t ch : op.children()) {
        if (!op_index.ops[ch].allKernels().empty()) stages.push_back(op_index.ops[ch].allKernels().vector());
      }
      for (size_t k : op.kernels()) stages.push_back({k});
      for (size_t s = 0; s < stages.size() && s < v.stage_kernels.size(); ++s) {
        v.stage_kernels[s].insert(v.stage_kernels[s].end(), stages[s].begin(), stages[s].end());
      }
    }
    return v;
  }
  // Stages are named by op or short kernel name; their kernels' full names find the launches.
  for (size_t s = 0; s < c.stage_kernels.size() && s < v.stage_kernels.size(); ++s) {
    std::vector<size_t>& ks = v.stage_kernels[s];
    for (const std::string& name : c.stage_kernels[s]) {
      if (auto f = kernels_by_name.find(name); f != kernels_by_name.end()) ks.insert(ks.end(), f->second.begin(), f->second.end());
    }
    std::sort(ks.begin(), ks.end());
    ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  }
  return v;
}

}  // namespace

ItemWork::ItemWork(const analysis::Work& w) : total_flops(w.totalFlops()) {
  for (size_t i = 0; i < kPrecisionCount; ++i) flops[i] = w.flops[i];
  for (size_t l = 0; l < kMemLevelCount; ++l) bytes[l] = w.bytes[l];
}

std::string_view Document::shortName(uint32_t demangled_id) {
  auto [at, added] = short_names_.try_emplace(demangled_id);
  if (added) at->second = analysis_->kernelNames().shortName(profile().str(demangled_id));
  return at->second;
}

std::string_view Document::pathOps(uint32_t nvtx_path_id) {
  auto [at, added] = path_ops_.try_emplace(nvtx_path_id);
  if (added) at->second = analysis::nvtxPathOpNames(profile().str(nvtx_path_id));
  return at->second;
}

ItemPlacement Document::itemPlacement(const analysis::Placement& pl) {
  ItemPlacement ip;
  for (size_t l = 0; l < kMemLevelCount; ++l) ip.intensity_flop_per_byte[l] = pl.intensity_flop_per_byte[l];
  ip.achieved_flops_per_s = pl.achieved_flops_per_s;
  ip.roof_fraction = pl.roof_fraction;
  ip.attainable_ns = pl.attainable_ns;
  ip.binding = *roof_names_.insert(pl.binding).first;
  ip.binding_source = pl.binding_source;
  ip.bound = pl.bound;
  return ip;
}

void Document::build() {
  const analysis::RunAnalysis& a = *analysis_;
  const core::Profile& p = a.profile();
  for (const core::KernelRow& k : p.kernels) {
    total_kernel_ns_ += k.durationNs();
    if (analysis::countersFor(p, k.id)) ++kernels_with_counters_;
  }
  OpsOfKernels ops = opsOfKernels(p, a.kernelOps());
  op_names_ = std::move(ops.names);
  auto setPath = [&](Item& it, const core::KernelRow& k) {
    if (!k.nvtx_path_id) return;
    it.nvtx_path = p.str(*k.nvtx_path_id);
    it.nvtx_ops = pathOps(*k.nvtx_path_id);
  };

  // Per kernel launch: the analyzer's own per-kernel placement.
  auto& launches = items_[static_cast<size_t>(PointMode::kKernels)];
  launches.reserve(p.kernels.size());
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const core::KernelRow& k = p.kernels[i];
    Item it;
    it.index = i;
    it.name = p.str(k.demangled_id);
    it.short_name = shortName(k.demangled_id);
    setPath(it, k);
    it.duration_ns = k.durationNs();
    addKernels(it, p, {&i, 1});
    addCounters(it, p, {&i, 1});
    it.placement = itemPlacement(a.kernelPlacement(i));
    it.op = ops.of_kernel[i];
    it.origin = analysis::originName(a.origin(i));
    launches.push_back(it);
  }

  // Per kernel group and per op: the analyzer's group placements (same rules as fprof report).
  const analysis::RunSummary& summary = a.summary();
  const analysis::RooflineResult& roofline = a.roofline();
  auto& groups = items_[static_cast<size_t>(PointMode::kKernelGroups)];
  for (size_t g = 0; g < summary.groups.size(); ++g) {
    const analysis::KernelGroup& kg = summary.groups[g];
    const size_t first = kg.kernel_indices.front();
    Item it;
    it.index = g;
    it.name = p.str(kg.demangled_id);
    it.short_name = shortName(kg.demangled_id);
    it.calls = kg.calls;
    it.duration_ns = kg.total_ns;
    addKernels(it, p, kg.kernel_indices);
    setPath(it, p.kernels[first]);
    it.op = ops.of_kernel[first];
    addCounters(it, p, kg.kernel_indices);
    it.placement = itemPlacement(roofline.kernel_groups.at(g).placement);
    it.origin = analysis::originName(a.origin(first));
    groups.push_back(it);
  }
  std::unordered_map<std::string_view, size_t> op_by_label;
  for (size_t o = 0; o < op_names_.size(); ++o) op_by_label.emplace(op_names_[o], o);
  auto& op_items = items_[static_cast<size_t>(PointMode::kOps)];
  const std::vector<analysis::GroupPlacement>& op_placements = a.opPlacements();
  for (size_t o = 0; o < op_placements.size(); ++o) {
    const analysis::GroupPlacement& gp = op_placements[o];
    auto found = op_by_label.find(gp.label);
    if (found == op_by_label.end()) continue;  // cannot happen: both name ops by kernelOps
    const std::vector<size_t>& members = ops.kernels[found->second];
    Item it;
    it.index = o;
    it.name = gp.label;
    it.short_name = gp.label;
    it.calls = gp.calls;
    it.duration_ns = gp.placement.duration_ns;
    addKernels(it, p, members);
    setPath(it, p.kernels[members.front()]);
    addCounters(it, p, members);
    it.placement = itemPlacement(gp.placement);
    it.op = static_cast<int32_t>(found->second);
    op_items.push_back(it);
  }
  // An op has no origin: it mixes kernels of several.

  // Roofs of the first device (a run on several GPU models shows the first; the note says so).
  if (!p.devices.empty()) roofs_ = roofsOf(p, p.devices.front());

  std::unordered_map<std::string_view, std::vector<size_t>> kernels_by_name;
  for (size_t i = 0; i < p.kernels.size(); ++i) kernels_by_name[p.str(p.kernels[i].demangled_id)].push_back(i);
  for (const analysis::FusionCandidate& c : a.fusion().candidates) {
    fusion_views_.push_back(fusionView(a.nvtxOps(), kernels_by_name, c));
  }
}

analysis::Placement Document::placement(PointMode m, size_t item) const {
  const Item& it = items(m).at(item);
  switch (m) {
    case PointMode::kKernels: return analysis_->kernelPlacement(it.index);
    case PointMode::kKernelGroups: return analysis_->roofline().kernel_groups.at(it.index).placement;
    case PointMode::kOps: return analysis_->opPlacements().at(it.index).placement;
  }
  return {};
}

std::string Document::details(PointMode m, size_t item) const { return detailsText(items(m).at(item), placement(m, item)); }

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
std::string shown(std::string_view s) { return core::truncateText(s, core::kMaxShownCodePoints); }

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
  const ItemPlacement& pl = item.placement;
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

std::string detailsText(const Item& item, const analysis::Placement& pl) {
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
  auto itemKey = [](std::string_view name, std::string_view shape) { return fmt::format("{}\x1f{}", name, shape); };
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
