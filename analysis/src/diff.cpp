// Run diff and gate (see diff.h and docs/gate.md).
#include "fprof/analysis/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "fprof/analysis/roofline.h"
#include "fprof/analysis/run_analysis.h"

namespace fprof::analysis {

std::string_view counterMetricName(CounterMetric m) {
  static constexpr std::array<std::string_view, kCounterMetricCount> kNames = {
      "dram_bytes",         "l2_bytes",   "l1_bytes", "flops", "local_memory_bytes", "registers_per_thread",
      "local_bytes_per_thread", "theoretical_occupancy", "achieved_occupancy"};
  return kNames[static_cast<size_t>(m)];
}

bool higherIsWorse(CounterMetric m) {
  return m != CounterMetric::kTheoreticalOccupancy && m != CounterMetric::kAchievedOccupancy;
}

std::string_view matchKindName(MatchKind k) {
  switch (k) {
    case MatchKind::kMatched: return "matched";
    case MatchKind::kRenamed: return "renamed";
    case MatchKind::kNew: return "new";
    case MatchKind::kVanished: return "vanished";
  }
  return "?";
}

std::string_view findingKindName(GateFinding::Kind k) {
  switch (k) {
    case GateFinding::Kind::kTime: return "time";
    case GateFinding::Kind::kCounter: return "counter";
    case GateFinding::Kind::kNew: return "new";
    case GateFinding::Kind::kVanished: return "vanished";
    case GateFinding::Kind::kRenamed: return "renamed";
    case GateFinding::Kind::kFolded: return "folded";
    case GateFinding::Kind::kImproved: return "improved";
    case GateFinding::Kind::kGroupTime: return "group";
    case GateFinding::Kind::kRun: return "run";
  }
  return "?";
}

std::string_view timeCheckName(TimeCheck c) {
  switch (c) {
    case TimeCheck::kAlone: return "alone";
    case TimeCheck::kKernel: return "kernel";
    case TimeCheck::kPool: return "pool";
    case TimeCheck::kTotalsOnly: return "totals";
  }
  return "?";
}

namespace {

struct Accum {
  std::string name, shape, op, path;
  bool one_path = true;  // every launch had `path`
  SideStats s;
  // Sums for means; a metric stays only if every launch had it.
  std::array<double, kCounterMetricCount> sum{};
  std::array<int64_t, kCounterMetricCount> present{};
  std::array<std::optional<double>, kCounterMetricCount> extreme{};
};

std::string shapeOf(const core::KernelRow& k) {
  return fmt::format("grid {}x{}x{} block {}x{}x{}", k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z);
}

std::string groupKey(const std::string& name, const std::string& shape, const std::string& op) {
  return name + '\x1f' + shape + '\x1f' + op;
}

// The GPU a launch ran on, as summary.cpp counts busy time: two processes sharing a GPU share it.
uint64_t gpuKey(const core::Profile& p, const core::KernelRow& k) {
  if (const core::DeviceInfo* d = p.device(k.process_id, k.device_id); d && !d->uuid.empty()) {
    return std::hash<std::string>{}(d->uuid) | (uint64_t{1} << 63);
  }
  return (uint64_t{k.process_id} << 32) | k.device_id;
}

void addKernel(Accum& a, const core::Profile& p, const core::KernelRow& k) {
  const double d = static_cast<double>(k.durationNs());
  a.s.calls += 1;
  a.s.samples_ns.push_back(d);
  a.s.total_ns += d;
  a.s.spans.push_back({gpuKey(p, k), k.ownStartNs(), k.end_ns});
  auto mean = [&](CounterMetric m, std::optional<double> v) {
    const auto i = static_cast<size_t>(m);
    if (!v) return;
    a.sum[i] += *v;
    a.present[i] += 1;
  };
  auto ext = [&](CounterMetric m, std::optional<double> v, bool max) {
    const auto i = static_cast<size_t>(m);
    if (!v) return;
    a.present[i] += 1;
    if (!a.extreme[i] || (max ? *v > *a.extreme[i] : *v < *a.extreme[i])) a.extreme[i] = v;
  };
  if (const core::KernelCounters* c = countersFor(p, k.id)) {
    const Work w = Work::fromCounters(*c);
    mean(CounterMetric::kDramBytes, c->dramBytes());
    mean(CounterMetric::kL2Bytes, c->l2_bytes);
    mean(CounterMetric::kL1Bytes, c->l1_bytes);
    mean(CounterMetric::kFlops, w.totalFlops());
    if (c->local_load_bytes || c->local_store_bytes) {
      mean(CounterMetric::kLocalBytes, c->local_load_bytes.value_or(0) + c->local_store_bytes.value_or(0));
    }
    mean(CounterMetric::kAchievedOccupancy, c->achieved_occupancy);
  }
  ext(CounterMetric::kRegistersPerThread, static_cast<double>(k.registers_per_thread), true);
  ext(CounterMetric::kLocalBytesPerThread, static_cast<double>(k.local_bytes_per_thread), true);
  ext(CounterMetric::kTheoreticalOccupancy, k.theoretical_occupancy, false);
}

SideStats finish(Accum& a) {
  SideStats s = std::move(a.s);
  s.median_ns = median(s.samples_ns);
  if (!s.samples_ns.empty()) {
    const double mean = s.total_ns / static_cast<double>(s.samples_ns.size());
    for (double x : s.samples_ns) s.squared_deviation_ns2 += (x - mean) * (x - mean);
  }
  for (size_t i = 0; i < kCounterMetricCount; ++i) {
    if (a.present[i] != s.calls || s.calls == 0) continue;  // missing for some launch: not comparable
    const double v = a.extreme[i] ? *a.extreme[i] : a.sum[i] / static_cast<double>(s.calls);
    // A sum that overflowed (a damaged file's counters near 1e308) is no measurement: n/a, not inf.
    if (std::isfinite(v)) s.metrics[i] = v;
  }
  return s;
}

// A launch group (key): kernel, launch shape and op. The op, not the NVTX path: emit_nvtx writes
// each call's op_id and sizes into its range, which would make every launch a key of its own.
std::map<std::string, Accum> groupKernels(const core::Profile& p, const KernelOps& ops) {
  std::map<std::string, Accum> out;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const core::KernelRow& k = p.kernels[i];
    const std::string& name = p.str(k.demangled_id);
    const std::string& op = i < ops.of_kernel.size() ? ops.names[ops.of_kernel[i]] : ops.names.front();
    const std::string path = k.nvtx_path_id ? p.str(*k.nvtx_path_id) : "";
    const std::string shape = shapeOf(k);
    Accum& a = out[groupKey(name, shape, op)];
    if (a.s.calls == 0) {
      a.name = name;
      a.shape = shape;
      a.op = op;
      a.path = path;
    } else if (a.one_path && a.path != path) {
      a.one_path = false;
    }
    addKernel(a, p, k);
  }
  return out;
}

// One kernel's time in one instance (NVTX range) of an op.
struct InstanceTime {
  Accum* op = nullptr;
  uint64_t range_key = 0;
  double ns = 0;
};

// One sample per op instance: its kernels' times summed, in launch order; each op's samples in
// range-key order.
void addInstanceSamples(std::vector<InstanceTime>& instances) {
  std::stable_sort(instances.begin(), instances.end(), [](const InstanceTime& a, const InstanceTime& b) {
    return a.op != b.op ? std::less<>()(a.op, b.op) : a.range_key < b.range_key;
  });
  for (size_t i = 0; i < instances.size();) {
    double ns = 0;
    size_t j = i;
    for (; j < instances.size() && instances[j].op == instances[i].op && instances[j].range_key == instances[i].range_key; ++j) {
      ns += instances[j].ns;
    }
    instances[i].op->s.samples_ns.push_back(ns);
    i = j;
  }
}

// Ops: kernels grouped by NVTX path, its framework ranges by their op names (framework_ops.h,
// nvtxPathOpNames: "aten::linear/aten::addmm", not emit_nvtx's op_id and sizes of each call, which
// would make every call an op of its own and match nothing once one run calls one op more); one
// sample per range instance (the kernels under one range).
std::map<std::string, Accum> groupOps(const core::Profile& p) {
  std::map<std::string, Accum> out;
  std::vector<InstanceTime> instances;  // one per kernel in an op
  std::unordered_map<uint32_t, Accum*> op_of_path;  // by recorded path id; map values stay put
  for (const core::KernelRow& k : p.kernels) {
    if (!k.nvtx_path_id) continue;
    auto [named, added] = op_of_path.try_emplace(*k.nvtx_path_id, nullptr);
    if (added) {
      std::string path = nvtxPathOpNames(p.str(*k.nvtx_path_id));
      Accum& a = out[path];
      a.name = path;
      a.path = std::move(path);
      named->second = &a;
    }
    Accum& a = *named->second;
    a.s.calls += 1;
    a.s.total_ns += static_cast<double>(k.durationNs());
    instances.push_back({&a, k.nvtx_range_key.value_or(0), static_cast<double>(k.durationNs())});
  }
  addInstanceSamples(instances);
  return out;
}

void compare(DiffEntry& e) {
  if (!e.base || !e.cur) return;
  if (e.base->median_ns && e.cur->median_ns && *e.base->median_ns > 0) {
    e.time_change = *e.cur->median_ns / *e.base->median_ns - 1;
  }
  e.test = mannWhitneyGreater(e.base->samples_ns, e.cur->samples_ns);
  e.test_faster = mannWhitneyGreater(e.cur->samples_ns, e.base->samples_ns);
}

// Launch groups (or NVTX ops) with their statistics final, by key.
using Finished = std::map<std::string, LaunchGroupStats>;

Finished finished(std::map<std::string, Accum> groups) {
  Finished out;
  for (auto& [key, a] : groups) {
    out.emplace(key, LaunchGroupStats{a.name, a.shape, a.op, a.one_path ? a.path : "", finish(a)});
  }
  return out;
}

DiffEntry entryOf(MatchKind kind, const LaunchGroupStats& g) {
  DiffEntry e;
  e.kind = kind;
  e.name = g.name;
  if (kind != MatchKind::kNew) e.base_name = g.name;
  e.shape = g.shape;
  e.op = g.op;
  e.nvtx_path = g.nvtx_path;
  return e;
}

void markRenamed(std::vector<DiffEntry>& out);

std::vector<DiffEntry> diffGroups(Finished base, Finished cur, bool rename) {
  std::vector<DiffEntry> out;
  for (auto& [key, g] : base) {
    auto it = cur.find(key);
    DiffEntry e = entryOf(it != cur.end() ? MatchKind::kMatched : MatchKind::kVanished, g);
    e.base = std::move(g.stats);
    if (it != cur.end()) {
      e.cur = std::move(it->second.stats);
      compare(e);
    }
    out.push_back(std::move(e));
  }
  for (auto& [key, g] : cur) {
    if (base.count(key)) continue;
    DiffEntry e = entryOf(MatchKind::kNew, g);
    e.cur = std::move(g.stats);
    out.push_back(std::move(e));
  }
  if (rename) markRenamed(out);
  return out;
}

// A vanished and a new kernel with the same launch shape and op, each the only one so placed, are
// taken as one kernel renamed.
void markRenamed(std::vector<DiffEntry>& out) {
  std::map<std::string, std::vector<size_t>> v, n;
  for (size_t i = 0; i < out.size(); ++i) {
    const std::string place = out[i].shape + '\x1f' + out[i].op;
    if (out[i].kind == MatchKind::kVanished) v[place].push_back(i);
    if (out[i].kind == MatchKind::kNew) n[place].push_back(i);
  }
  std::vector<bool> drop(out.size(), false);
  for (const auto& [place, vi] : v) {
    auto it = n.find(place);
    if (it == n.end() || vi.size() != 1 || it->second.size() != 1) continue;
    DiffEntry& old_e = out[vi.front()];
    DiffEntry& new_e = out[it->second.front()];
    old_e.kind = MatchKind::kRenamed;
    old_e.name = new_e.name;
    old_e.cur = std::move(new_e.cur);
    compare(old_e);
    drop[it->second.front()] = true;
  }
  std::vector<DiffEntry> kept;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!drop[i]) kept.push_back(std::move(out[i]));
  }
  out = std::move(kept);
}

// Kernels by how much their total time changed, largest first.
void sortByChange(std::vector<DiffEntry>& kernels) {
  std::stable_sort(kernels.begin(), kernels.end(), [](const DiffEntry& a, const DiffEntry& b) {
    auto delta = [](const DiffEntry& e) {
      return std::abs((e.cur ? e.cur->total_ns : 0) - (e.base ? e.base->total_ns : 0));
    };
    return delta(a) > delta(b);
  });
}

}  // namespace

DiffSide diffSideOf(const core::Profile& p, const KernelOps& ops) {
  DiffSide side;
  for (const auto& k : p.kernels) side.total_ns += static_cast<double>(k.durationNs());
  side.kernels = finished(groupKernels(p, ops));
  side.ops = finished(groupOps(p));
  side.setup = recordingSetup(p);
  return side;
}

RunDiff diffSides(DiffSide base, DiffSide cur) {
  RunDiff d;
  d.base_total_ns = base.total_ns;
  d.cur_total_ns = cur.total_ns;
  d.kernels = diffGroups(std::move(base.kernels), std::move(cur.kernels), true);
  sortByChange(d.kernels);
  d.ops = diffGroups(std::move(base.ops), std::move(cur.ops), false);
  d.setup_differences = setupDifferences(base.setup, cur.setup);
  return d;
}

RunDiff diffProfiles(const core::Profile& base, const KernelOps& base_ops, const core::Profile& cur,
                     const KernelOps& cur_ops) {
  return diffSides(diffSideOf(base, base_ops), diffSideOf(cur, cur_ops));
}

RunDiff diffProfiles(const core::Profile& base, const core::Profile& cur) {
  auto opsOf = [](const core::Profile& p) { return nameKernelOps(p, indexOps(p), indexFrameworkOps(p)); };
  return diffProfiles(base, opsOf(base), cur, opsOf(cur));
}

std::vector<LaunchGroupStats> launchGroupStats(const core::Profile& p, const KernelOps& ops) {
  std::vector<LaunchGroupStats> out;
  for (auto& [key, g] : finished(groupKernels(p, ops))) out.push_back(std::move(g));
  return out;
}

LaunchGroupStats summarized(LaunchGroupStats g) {
  g.stats.samples_ns = orderStatistics(std::move(g.stats.samples_ns), kSummarySamples);
  g.stats.spans.clear();
  g.stats.spans.shrink_to_fit();
  return g;
}

RunDiff diffLaunchGroups(std::vector<LaunchGroupStats> base, std::vector<LaunchGroupStats> cur) {
  RunDiff d;
  auto keyed = [](std::vector<LaunchGroupStats> groups, double& total_ns) {
    Finished out;
    for (LaunchGroupStats& g : groups) {
      total_ns += g.stats.total_ns;
      std::string key = groupKey(g.name, g.shape, g.op);
      out.emplace(std::move(key), std::move(g));
    }
    return out;
  };
  Finished b = keyed(std::move(base), d.base_total_ns);
  Finished c = keyed(std::move(cur), d.cur_total_ns);
  d.kernels = diffGroups(std::move(b), std::move(c), true);
  sortByChange(d.kernels);
  return d;
}

namespace {

// How a launch group's per-launch counter combines over launches (addKernel's choice for each).
enum class CounterCombine { kMean, kMax, kMin };

CounterCombine combineOf(CounterMetric m) {
  switch (m) {
    case CounterMetric::kRegistersPerThread:
    case CounterMetric::kLocalBytesPerThread: return CounterCombine::kMax;
    case CounterMetric::kTheoreticalOccupancy: return CounterCombine::kMin;
    default: return CounterCombine::kMean;
  }
}

}  // namespace

LaunchGroupCombiner::LaunchGroupCombiner(size_t runs, size_t max_samples)
    : per_run_samples_(std::max<size_t>(1, max_samples / std::max<size_t>(1, runs))) {}

void LaunchGroupCombiner::add(const std::vector<LaunchGroupStats>& run) {
  for (const LaunchGroupStats& g : run) {
    auto [it, fresh] = groups_.try_emplace(groupKey(g.name, g.shape, g.op));
    Combined& c = it->second;
    const SideStats& s = g.stats;
    std::vector<double> samples = orderStatistics(s.samples_ns, per_run_samples_);
    if (fresh) {
      c.g = LaunchGroupStats{g.name, g.shape, g.op, g.nvtx_path, {}};
      c.present.fill(true);
    } else if (c.g.nvtx_path != g.nvtx_path) {
      c.g.nvtx_path.clear();
    }
    SideStats& t = c.g.stats;
    // Spread of two sets of launches together: each one's own, and that of their means.
    if (t.calls > 0 && s.calls > 0) {
      const double n = static_cast<double>(t.calls + s.calls);
      const double delta = s.total_ns / static_cast<double>(s.calls) - t.total_ns / static_cast<double>(t.calls);
      t.squared_deviation_ns2 += delta * delta * static_cast<double>(t.calls) * static_cast<double>(s.calls) / n;
    }
    t.squared_deviation_ns2 += s.squared_deviation_ns2;
    t.calls += s.calls;
    t.total_ns += s.total_ns;
    t.samples_ns.insert(t.samples_ns.end(), samples.begin(), samples.end());
    for (size_t i = 0; i < kCounterMetricCount; ++i) {
      if (!s.metrics[i]) {
        c.present[i] = false;
        continue;
      }
      const double v = *s.metrics[i];
      switch (combineOf(static_cast<CounterMetric>(i))) {
        case CounterCombine::kMean: c.value[i] += v * static_cast<double>(s.calls); break;
        case CounterCombine::kMax: c.value[i] = fresh ? v : std::max(c.value[i], v); break;
        case CounterCombine::kMin: c.value[i] = fresh ? v : std::min(c.value[i], v); break;
      }
    }
  }
}

std::vector<LaunchGroupStats> LaunchGroupCombiner::groups() const {
  std::vector<LaunchGroupStats> out;
  out.reserve(groups_.size());
  for (const auto& [key, c] : groups_) {
    LaunchGroupStats g = c.g;
    SideStats& s = g.stats;
    s.median_ns = median(s.samples_ns);
    for (size_t i = 0; i < kCounterMetricCount; ++i) {
      if (!c.present[i] || s.calls == 0) continue;
      const bool mean = combineOf(static_cast<CounterMetric>(i)) == CounterCombine::kMean;
      s.metrics[i] = mean ? c.value[i] / static_cast<double>(s.calls) : c.value[i];
    }
    out.push_back(std::move(g));
  }
  return out;
}

namespace {

// The device names of a run, each once, in name order: "NVIDIA H100 80GB HBM3 (sm_90)".
std::string deviceNames(const core::Profile& p) {
  std::set<std::string> names;
  for (const core::DeviceInfo& d : p.devices) {
    names.insert(fmt::format("{} (sm_{}{})", d.name, d.compute_major, d.compute_minor));
  }
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none recorded" : out;
}

std::string metricSet(const RecordingSetup& r) {
  if (r.metrics.empty()) return r.metric_set;
  const auto count = 1 + std::count(r.metrics.begin(), r.metrics.end(), ',');
  return fmt::format("{}{}{} metrics", r.metric_set, r.metric_set.empty() ? "" : ", ", count);
}

}  // namespace

RecordingSetup recordingSetup(const core::Profile& p) {
  return {deviceNames(p), p.meta("mode", "unknown"), p.meta("metric_set"), p.meta("metrics")};
}

std::vector<SetupDifference> setupDifferences(const RecordingSetup& base, const RecordingSetup& cur) {
  std::vector<SetupDifference> out;
  if (base.devices != cur.devices) {
    out.push_back({"devices", base.devices, cur.devices,
                   fmt::format("the runs were recorded on different GPUs (base: {}; current: {}): times and "
                               "counters are not those of one machine",
                               base.devices, cur.devices)});
  }
  if (base.mode != cur.mode) {
    out.push_back({"mode", base.mode, cur.mode,
                   fmt::format("the runs were recorded in different modes (base: {}; current: {}): metrics mode "
                               "replays kernels to count, so its times and counters differ from a trace's",
                               base.mode, cur.mode)});
  } else if (base.metrics != cur.metrics || base.metric_set != cur.metric_set) {
    const std::string b = metricSet(base), c = metricSet(cur);
    out.push_back({"metrics", b, c,
                   fmt::format("the runs collected different counters (base: {}; current: {}): a counter only one "
                               "run has is not compared",
                               b.empty() ? "none" : b, c.empty() ? "none" : c)});
  }
  return out;
}

std::vector<SetupDifference> setupDifferences(const core::Profile& base, const core::Profile& cur) {
  return setupDifferences(recordingSetup(base), recordingSetup(cur));
}

std::string shortMessage(const GateFinding& f, const KernelNames& names) {
  std::string text = f.message;
  if (f.base_kernel.empty()) return text;
  if (const size_t at = text.find(f.base_kernel); at != std::string::npos) {
    text.replace(at, f.base_kernel.size(), names.shortName(f.base_kernel));
  }
  return text;
}

bool canReachSignificance(size_t base_launches, size_t cur_launches, double alpha) {
  if (base_launches == 0 || cur_launches == 0) return false;
  // Every current launch slower than every base one, no ties: the smallest p these sizes give.
  std::vector<double> base(base_launches), cur(cur_launches);
  for (size_t i = 0; i < base_launches; ++i) base[i] = static_cast<double>(i);
  for (size_t i = 0; i < cur_launches; ++i) cur[i] = static_cast<double>(base_launches + i);
  const auto best = mannWhitneyGreater(base, cur);
  return best && best->p_greater < alpha;
}

namespace {

bool ignored(const DiffEntry& e, const GateOptions& opt) {
  for (const auto& pattern : opt.ignore) {
    if (!pattern.empty() &&
        (e.name.find(pattern) != std::string::npos || e.base_name.find(pattern) != std::string::npos)) {
      return true;
    }
  }
  return false;
}

GateFinding findingOf(const DiffEntry& e) {
  GateFinding f;
  f.kernel = e.name;
  f.shape = e.shape;
  f.op = e.op;
  return f;
}

void checkNewOrVanished(const DiffEntry& e, const GateOptions& opt, GateResult& g) {
  GateFinding f = findingOf(e);
  if (e.kind == MatchKind::kNew) {
    f.kind = GateFinding::Kind::kNew;
    f.regression = opt.fail_on_new;
    f.cur_value = e.cur->total_ns;
    f.message = fmt::format("new kernel: {} launches, {:.0f} ns", e.cur->calls, e.cur->total_ns);
  } else {
    f.kind = GateFinding::Kind::kVanished;
    f.regression = opt.fail_on_vanished;
    f.base_value = e.base->total_ns;
    f.message = fmt::format("vanished: {} launches, {:.0f} ns in the base run", e.base->calls, e.base->total_ns);
  }
  g.findings.push_back(std::move(f));
}

// Time of a key with enough launches for its own test: a median slowdown beyond the threshold that
// the Mann-Whitney test finds significant.
void checkTimeAlone(const DiffEntry& e, const GateOptions& opt, GateResult& g) {
  if (!e.time_change || !e.test) return;
  GateFinding t = findingOf(e);
  t.metric = "time";
  t.base_value = e.base->median_ns;
  t.cur_value = e.cur->median_ns;
  t.change = e.time_change;
  if (*e.time_change > opt.time_threshold && e.test->p_greater < opt.alpha) {
    t.kind = GateFinding::Kind::kTime;
    t.regression = true;
    t.p_value = e.test->p_greater;
    t.message = fmt::format("{:+.1f}% median time ({:.0f} -> {:.0f} ns), Mann-Whitney p = {:.2g} < {}",
                            *e.time_change * 100, *t.base_value, *t.cur_value, *t.p_value, opt.alpha);
    g.findings.push_back(std::move(t));
  } else if (*e.time_change < -opt.time_threshold && e.test_faster && e.test_faster->p_greater < opt.alpha) {
    t.kind = GateFinding::Kind::kImproved;
    t.p_value = e.test_faster->p_greater;
    t.message = fmt::format("{:+.1f}% median time ({:.0f} -> {:.0f} ns), Mann-Whitney p = {:.2g}",
                            *e.time_change * 100, *t.base_value, *t.cur_value, *t.p_value);
    g.findings.push_back(std::move(t));
  }
}

// Counters: deterministic, so any change past the (small) threshold in the bad direction.
void checkCounters(const DiffEntry& e, const GateOptions& opt, GateResult& g) {
  for (size_t i = 0; i < kCounterMetricCount; ++i) {
    const auto m = static_cast<CounterMetric>(i);
    const auto& b = e.base->metrics[i];
    const auto& c = e.cur->metrics[i];
    if (!b || !c) continue;
    double change;
    if (*b == 0) {
      if (*c == 0) continue;
      change = 1e300;  // from nothing to something
    } else {
      change = *c / *b - 1;
    }
    const double worse = higherIsWorse(m) ? change : -change;
    if (worse <= opt.counter_threshold) continue;
    GateFinding cf = findingOf(e);
    cf.kind = GateFinding::Kind::kCounter;
    cf.regression = true;
    cf.metric = std::string(counterMetricName(m));
    cf.base_value = *b;
    cf.cur_value = *c;
    if (*b != 0) cf.change = change;
    cf.message = *b == 0 ? fmt::format("{}: 0 -> {:.6g} per launch", cf.metric, *c)
                         : fmt::format("{}: {:.6g} -> {:.6g} per launch ({:+.2f}%)", cf.metric, *b, *c, change * 100);
    g.findings.push_back(std::move(cf));
  }
}

// Launches of rare keys pooled for one test: each launch's time over its key's median of both
// runs, so that keys of different lengths compare on one scale (a uniform slowdown s moves every
// ratio by s; noise leaves them around 1).
struct Pooled {
  std::vector<size_t> entries;
  std::vector<double> base, cur;
  int64_t base_launches = 0, cur_launches = 0;
};

void addToPool(Pooled& pool, size_t index, const DiffEntry& e) {
  std::vector<double> both = e.base->samples_ns;
  both.insert(both.end(), e.cur->samples_ns.begin(), e.cur->samples_ns.end());
  const std::optional<double> m = median(std::move(both));
  pool.entries.push_back(index);
  pool.base_launches += e.base->calls;
  pool.cur_launches += e.cur->calls;
  if (!m || *m <= 0) return;  // zero-length launches: nothing to scale; the totals count them
  for (double x : e.base->samples_ns) pool.base.push_back(x / *m);
  for (double x : e.cur->samples_ns) pool.cur.push_back(x / *m);
}

GateGroup testPool(const Pooled& pool, TimeCheck check, const std::string& kernel, const GateOptions& opt) {
  GateGroup grp;
  grp.check = check;
  grp.kernel = kernel;
  grp.keys = static_cast<int64_t>(pool.entries.size());
  grp.base_launches = pool.base_launches;
  grp.cur_launches = pool.cur_launches;
  const auto mb = median(pool.base), mc = median(pool.cur);
  if (mb && mc && *mb > 0) grp.change = *mc / *mb - 1;
  if (const auto t = mannWhitneyGreater(pool.base, pool.cur)) grp.p_value = t->p_greater;
  grp.regression = grp.change && grp.p_value && *grp.change > opt.time_threshold && *grp.p_value < opt.alpha;
  return grp;
}

void addGroupFinding(const GateGroup& grp, const GateOptions& opt, GateResult& g) {
  if (!grp.regression) return;
  GateFinding f;
  f.kind = GateFinding::Kind::kGroupTime;
  f.regression = true;
  f.kernel = grp.kernel;
  f.metric = "time";
  f.change = grp.change;
  f.p_value = grp.p_value;
  f.message = fmt::format(
      "{:+.1f}% median time over {} launch groups too rare to test alone ({} vs {} launches, each relative to "
      "its group's median), Mann-Whitney p = {:.2g} < {}",
      *grp.change * 100, grp.keys, grp.base_launches, grp.cur_launches, *grp.p_value, opt.alpha);
  g.findings.push_back(std::move(f));
}

// A key slower past the threshold that its own launches cannot prove: said, with where it was tested.
void addFoldedFinding(const DiffEntry& e, TimeCheck check, const GateOptions& opt, GateResult& g) {
  if (!e.time_change || *e.time_change <= opt.time_threshold) return;
  GateFinding f = findingOf(e);
  f.kind = GateFinding::Kind::kFolded;
  f.metric = "time";
  f.base_value = e.base->median_ns;
  f.cur_value = e.cur->median_ns;
  f.change = e.time_change;
  const char* where = check == TimeCheck::kKernel ? "with the other rare launch groups of this kernel"
                      : check == TimeCheck::kPool ? "in the pool of rare kernels"
                                                  : "by the whole-run checks only";
  f.message = fmt::format("{:+.1f}% median time; {} vs {} launches are too few to test alone: tested {}",
                          *e.time_change * 100, e.base->calls, e.cur->calls, where);
  g.findings.push_back(std::move(f));
}

// Rare keys: by kernel where the kernel's rare launches can be tested, else all of them pooled,
// else the whole-run checks only; each entry's check goes to g.entry_checks.
void foldRareKeys(const RunDiff& diff, const std::vector<size_t>& rare, const GateOptions& opt, GateResult& g) {
  std::map<std::string, Pooled> by_kernel;
  for (size_t i : rare) addToPool(by_kernel[diff.kernels[i].name], i, diff.kernels[i]);
  Pooled leftover;
  for (const auto& [kernel, pool] : by_kernel) {
    if (!canReachSignificance(pool.base.size(), pool.cur.size(), opt.alpha)) {
      for (size_t i : pool.entries) addToPool(leftover, i, diff.kernels[i]);
      continue;
    }
    g.groups.push_back(testPool(pool, TimeCheck::kKernel, kernel, opt));
    for (size_t i : pool.entries) g.entry_checks[i] = TimeCheck::kKernel;
  }
  if (!leftover.entries.empty() && canReachSignificance(leftover.base.size(), leftover.cur.size(), opt.alpha)) {
    g.groups.push_back(testPool(leftover, TimeCheck::kPool, "", opt));
    for (size_t i : leftover.entries) g.entry_checks[i] = TimeCheck::kPool;
  }
  for (const GateGroup& grp : g.groups) addGroupFinding(grp, opt, g);
  for (size_t i : rare) addFoldedFinding(diff.kernels[i], g.entry_checks[i], opt, g);
}

// ---- Whole-run checks -------------------------------------------------------------------------

struct SideTotals {
  double kernel_ns = 0;
  int64_t launches = 0;  // of the launch groups both runs have
  std::vector<LaunchSpan> spans;
  std::vector<const SideStats*> keys;
};

// Time during which at least one kernel ran, per device, summed over the devices.
double busyNs(std::vector<LaunchSpan> spans) {
  std::sort(spans.begin(), spans.end(), [](const LaunchSpan& a, const LaunchSpan& b) {
    return a.device_key != b.device_key ? a.device_key < b.device_key : a.start_ns < b.start_ns;
  });
  double busy = 0;
  for (size_t i = 0; i < spans.size();) {
    int64_t start = spans[i].start_ns, end = spans[i].end_ns;
    size_t j = i + 1;
    for (; j < spans.size() && spans[j].device_key == spans[i].device_key && spans[j].start_ns <= end; ++j) {
      end = std::max(end, spans[j].end_ns);
    }
    busy += static_cast<double>(std::max<int64_t>(0, end - start));
    i = j;
  }
  return busy;
}

// Kernels replayed under the range profiler carry no trace timestamps (start 0): a run with one
// has no timeline to take a busy time from (summary.cpp's rule).
bool timelineKnown(const std::vector<LaunchSpan>& spans) {
  return spans.size() < 2 || std::none_of(spans.begin(), spans.end(), [](const LaunchSpan& s) { return s.start_ns == 0; });
}

// The variance of a run's kernel time that launch-to-launch noise alone would give: for a key of
// n >= 2 launches n times their sample variance; for a key of one launch its time squared times
// the squared coefficient of variation pooled over the repeated keys. None where no key repeats.
std::optional<double> noiseVariance(const std::vector<const SideStats*>& keys) {
  double cv2_sum = 0, dof = 0;
  for (const SideStats* s : keys) {
    if (s->calls < 2) continue;
    const double mean = s->total_ns / static_cast<double>(s->calls);
    if (mean <= 0) continue;
    cv2_sum += s->squared_deviation_ns2 / (mean * mean);
    dof += static_cast<double>(s->calls - 1);
  }
  if (dof == 0) return std::nullopt;
  const double cv2 = cv2_sum / dof;
  double var = 0;
  for (const SideStats* s : keys) {
    if (s->calls >= 2) {
      const auto n = static_cast<double>(s->calls);
      var += s->squared_deviation_ns2 / (n - 1) * n;
    } else {
      var += cv2 * s->total_ns * s->total_ns;
    }
  }
  return var;
}

// A run total that grew: past the threshold, and (where the noise can be estimated) more than the
// launches' own spread would make it, one-sided z test at alpha.
RunCheck timeTotalCheck(std::string metric, const char* what, double base, double cur,
                        std::optional<double> noise_var, const GateOptions& opt) {
  RunCheck c;
  c.metric = std::move(metric);
  c.base = base;
  c.cur = cur;
  if (base > 0) c.change = cur / base - 1;
  if (noise_var && *noise_var > 0) {
    c.p_value = 0.5 * std::erfc((cur - base) / std::sqrt(*noise_var) / std::sqrt(2.0));
  }
  const bool significant = noise_var ? (c.p_value ? *c.p_value < opt.alpha : cur != base) : true;
  c.regression = c.change && *c.change > opt.time_threshold && significant;
  const std::string test = c.p_value ? fmt::format(", p = {:.2g} against the launches' noise", *c.p_value)
                           : noise_var ? std::string()
                                       : std::string(", no repeated launches to estimate the noise");
  c.message = fmt::format("{}: {:.0f} -> {:.0f} ns ({}){}", what, base, cur,
                          c.change ? fmt::format("{:+.1f}%", *c.change * 100) : "n/a", test);
  return c;
}

// Launches of the launch groups both runs have (new kernels are the time check's and fail_on_new's):
// deterministic for the same program and input, like a counter.
RunCheck launchCountCheck(double base, double cur, const GateOptions& opt) {
  RunCheck c;
  c.metric = "launches";
  c.base = base;
  c.cur = cur;
  if (base > 0) c.change = cur / base - 1;
  c.regression = c.change && *c.change > opt.counter_threshold;
  c.message = fmt::format("launches of the kernels both runs have: {:.0f} -> {:.0f} ({})", base, cur,
                          c.change ? fmt::format("{:+.1f}%", *c.change * 100) : "n/a");
  return c;
}

// Time moved into kernels the base run did not have: the new kernels' time less the vanished
// kernels' time, as a share of the base run's kernel time.
RunCheck newKernelTimeCheck(double new_ns, double vanished_ns, int64_t new_keys, int64_t vanished_keys,
                            double base_kernel_ns, const GateOptions& opt) {
  RunCheck c;
  c.metric = "new_kernel_time_ns";
  c.base = vanished_ns;
  c.cur = new_ns;
  if (base_kernel_ns > 0) c.change = (new_ns - vanished_ns) / base_kernel_ns;
  c.regression = c.change && *c.change > opt.time_threshold;
  c.message = fmt::format(
      "time in new kernels: {:.0f} ns in {} new launch groups, {:.0f} ns in {} vanished: net {} of the base run's "
      "kernel time",
      new_ns, new_keys, vanished_ns, vanished_keys, c.change ? fmt::format("{:+.1f}%", *c.change * 100) : "n/a");
  return c;
}

void checkWholeRun(const RunDiff& diff, const GateOptions& opt, GateResult& g) {
  SideTotals b, c;
  double new_ns = 0, vanished_ns = 0;
  int64_t new_keys = 0, vanished_keys = 0;
  for (const DiffEntry& e : diff.kernels) {
    if (ignored(e, opt)) continue;
    for (auto [side, t] : {std::pair{&e.base, &b}, std::pair{&e.cur, &c}}) {
      if (!*side) continue;
      t->kernel_ns += (*side)->total_ns;
      if (e.base && e.cur) t->launches += (*side)->calls;
      t->spans.insert(t->spans.end(), (*side)->spans.begin(), (*side)->spans.end());
      t->keys.push_back(&**side);
    }
    if (e.kind == MatchKind::kNew) {
      new_ns += e.cur->total_ns;
      ++new_keys;
    } else if (e.kind == MatchKind::kVanished) {
      vanished_ns += e.base->total_ns;
      ++vanished_keys;
    }
  }
  std::optional<double> noise;
  const auto vb = noiseVariance(b.keys), vc = noiseVariance(c.keys);
  if (vb || vc) noise = vb.value_or(0) + vc.value_or(0);
  g.run_checks.push_back(timeTotalCheck("kernel_time_ns", "total kernel time", b.kernel_ns, c.kernel_ns, noise, opt));
  // The busy time's noise is taken as the kernel time's: the same launches make both.
  if (diff.busy && diff.busy->base_ns && diff.busy->cur_ns) {
    g.run_checks.push_back(
        timeTotalCheck("busy_time_ns", "GPU busy time", *diff.busy->base_ns, *diff.busy->cur_ns, noise, opt));
  } else if (!diff.busy && timelineKnown(b.spans) && timelineKnown(c.spans)) {
    g.run_checks.push_back(timeTotalCheck("busy_time_ns", "GPU busy time", busyNs(std::move(b.spans)),
                                          busyNs(std::move(c.spans)), noise, opt));
  } else {
    RunCheck busy;
    busy.metric = "busy_time_ns";
    busy.known = false;
    busy.message = "GPU busy time: n/a (kernels replayed for their counters carry no timestamps)";
    g.run_checks.push_back(std::move(busy));
  }
  g.run_checks.push_back(launchCountCheck(static_cast<double>(b.launches), static_cast<double>(c.launches), opt));
  g.run_checks.push_back(newKernelTimeCheck(new_ns, vanished_ns, new_keys, vanished_keys, b.kernel_ns, opt));
  for (const RunCheck& rc : g.run_checks) {
    if (!rc.regression) continue;
    GateFinding f;
    f.kind = GateFinding::Kind::kRun;
    f.regression = true;
    f.metric = rc.metric;
    f.base_value = rc.base;
    f.cur_value = rc.cur;
    f.change = rc.change;
    f.p_value = rc.p_value;
    f.message = "whole run: " + rc.message;
    g.findings.push_back(std::move(f));
  }
}

}  // namespace

// Each key: new and vanished said; counters compared; time tested alone where its launches can
// show a slowdown, else folded (foldRareKeys); then the whole-run checks.
GateResult evaluateGate(const RunDiff& diff, const GateOptions& opt) {
  GateResult g;
  g.setup_differences = diff.setup_differences;
  g.entry_checks.assign(diff.kernels.size(), TimeCheck::kTotalsOnly);
  std::vector<size_t> rare;
  for (size_t i = 0; i < diff.kernels.size(); ++i) {
    const DiffEntry& e = diff.kernels[i];
    if (ignored(e, opt)) continue;
    if (e.kind == MatchKind::kNew || e.kind == MatchKind::kVanished) {
      checkNewOrVanished(e, opt, g);
      continue;
    }
    ++g.kernels_checked;
    if (e.kind == MatchKind::kRenamed) {
      GateFinding r = findingOf(e);
      r.kind = GateFinding::Kind::kRenamed;
      r.message = fmt::format("renamed from {} (same launch shape and op); compared as one kernel", e.base_name);
      r.base_kernel = e.base_name;
      g.findings.push_back(std::move(r));
    }
    checkCounters(e, opt, g);
    if (opt.min_share > 0 && diff.base_total_ns > 0 && e.base->total_ns / diff.base_total_ns < opt.min_share) continue;
    if (canReachSignificance(e.base->samples_ns.size(), e.cur->samples_ns.size(), opt.alpha)) {
      g.entry_checks[i] = TimeCheck::kAlone;
      checkTimeAlone(e, opt, g);
    } else {
      rare.push_back(i);
    }
  }
  foldRareKeys(diff, rare, opt, g);
  checkWholeRun(diff, opt, g);
  for (size_t i = 0; i < diff.kernels.size(); ++i) {
    const DiffEntry& e = diff.kernels[i];
    if (!e.base || !e.cur || ignored(e, opt)) continue;
    const auto c = static_cast<size_t>(g.entry_checks[i]);
    g.coverage.keys[c] += 1;
    g.coverage.launches[c] += e.cur->calls;
  }
  std::stable_sort(g.findings.begin(), g.findings.end(),
                   [](const GateFinding& a, const GateFinding& b) { return a.regression > b.regression; });
  for (const auto& f : g.findings) g.regressions += f.regression ? 1 : 0;
  return g;
}

}  // namespace fprof::analysis
