// Run diff and gate (see diff.h and docs/gate.md).
#include "fprof/analysis/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "fprof/analysis/roofline.h"

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
    case GateFinding::Kind::kUntestable: return "untestable";
    case GateFinding::Kind::kImproved: return "improved";
  }
  return "?";
}

namespace {

struct Accum {
  std::string name, shape, path;
  SideStats s;
  // Sums for means; a metric stays only if every launch had it.
  std::array<double, kCounterMetricCount> sum{};
  std::array<int64_t, kCounterMetricCount> present{};
  std::array<std::optional<double>, kCounterMetricCount> extreme{};
};

std::string shapeOf(const core::KernelRow& k) {
  return fmt::format("grid {}x{}x{} block {}x{}x{}", k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z);
}

void addKernel(Accum& a, const core::Profile& p, const core::KernelRow& k) {
  const double d = static_cast<double>(k.durationNs());
  a.s.calls += 1;
  a.s.samples_ns.push_back(d);
  a.s.total_ns += d;
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
  for (size_t i = 0; i < kCounterMetricCount; ++i) {
    if (a.present[i] != s.calls || s.calls == 0) continue;  // missing for some launch: not comparable
    s.metrics[i] = a.extreme[i] ? a.extreme[i] : std::optional<double>(a.sum[i] / static_cast<double>(s.calls));
  }
  return s;
}

std::map<std::string, Accum> groupKernels(const core::Profile& p) {
  std::map<std::string, Accum> out;
  for (const core::KernelRow& k : p.kernels) {
    const std::string& name = p.str(k.demangled_id);
    const std::string path = k.nvtx_path_id ? p.str(*k.nvtx_path_id) : "";
    const std::string shape = shapeOf(k);
    std::string key = name + '\x1f' + shape + '\x1f' + path;
    Accum& a = out[key];
    if (a.s.calls == 0) {
      a.name = name;
      a.shape = shape;
      a.path = path;
    }
    addKernel(a, p, k);
  }
  return out;
}

// Ops: kernels grouped by NVTX path; one sample per range instance (the kernels under one range).
std::map<std::string, Accum> groupOps(const core::Profile& p) {
  std::map<std::string, Accum> out;
  std::map<std::pair<std::string, uint64_t>, double> instance_ns;
  for (const core::KernelRow& k : p.kernels) {
    if (!k.nvtx_path_id) continue;
    const std::string& path = p.str(*k.nvtx_path_id);
    Accum& a = out[path];
    a.name = path;
    a.path = path;
    a.s.calls += 1;
    a.s.total_ns += static_cast<double>(k.durationNs());
    instance_ns[{path, k.nvtx_range_key.value_or(0)}] += static_cast<double>(k.durationNs());
  }
  for (const auto& [key, ns] : instance_ns) out[key.first].s.samples_ns.push_back(ns);
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

std::vector<DiffEntry> diffGroups(std::map<std::string, Accum> base, std::map<std::string, Accum> cur, bool rename) {
  std::vector<DiffEntry> out;
  std::vector<std::string> vanished, added;
  for (auto& [key, a] : base) {
    DiffEntry e;
    e.name = e.base_name = a.name;
    e.shape = a.shape;
    e.nvtx_path = a.path;
    e.base = finish(a);
    auto it = cur.find(key);
    if (it != cur.end()) {
      e.cur = finish(it->second);
      e.kind = MatchKind::kMatched;
      compare(e);
    } else {
      e.kind = MatchKind::kVanished;
    }
    out.push_back(std::move(e));
  }
  for (auto& [key, a] : cur) {
    if (base.count(key)) continue;
    DiffEntry e;
    e.kind = MatchKind::kNew;
    e.name = a.name;
    e.shape = a.shape;
    e.nvtx_path = a.path;
    e.cur = finish(a);
    out.push_back(std::move(e));
  }
  if (rename) {
    // A vanished and a new kernel with the same launch shape and NVTX path, each the only one
    // so placed, are taken as one kernel renamed.
    std::map<std::string, std::vector<size_t>> v, n;
    for (size_t i = 0; i < out.size(); ++i) {
      const std::string place = out[i].shape + '\x1f' + out[i].nvtx_path;
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
  return out;
}

}  // namespace

RunDiff diffProfiles(const core::Profile& base, const core::Profile& cur) {
  RunDiff d;
  for (const auto& k : base.kernels) d.base_total_ns += static_cast<double>(k.durationNs());
  for (const auto& k : cur.kernels) d.cur_total_ns += static_cast<double>(k.durationNs());
  d.kernels = diffGroups(groupKernels(base), groupKernels(cur), true);
  std::stable_sort(d.kernels.begin(), d.kernels.end(), [](const DiffEntry& a, const DiffEntry& b) {
    auto delta = [](const DiffEntry& e) {
      return std::abs((e.cur ? e.cur->total_ns : 0) - (e.base ? e.base->total_ns : 0));
    };
    return delta(a) > delta(b);
  });
  d.ops = diffGroups(groupOps(base), groupOps(cur), false);
  return d;
}

std::string shortMessage(const GateFinding& f, const KernelNames& names) {
  std::string text = f.message;
  if (f.base_kernel.empty()) return text;
  if (const size_t at = text.find(f.base_kernel); at != std::string::npos) {
    text.replace(at, f.base_kernel.size(), names.shortName(f.base_kernel));
  }
  return text;
}

GateResult evaluateGate(const RunDiff& diff, const GateOptions& opt) {
  GateResult g;
  for (const DiffEntry& e : diff.kernels) {
    bool ignored = false;
    for (const auto& pattern : opt.ignore) {
      if (!pattern.empty() && (e.name.find(pattern) != std::string::npos || e.base_name.find(pattern) != std::string::npos)) {
        ignored = true;
      }
    }
    if (ignored) continue;
    if (opt.min_share > 0 && diff.base_total_ns > 0 && e.base &&
        e.base->total_ns / diff.base_total_ns < opt.min_share) {
      continue;
    }
    GateFinding f;
    f.kernel = e.name;
    f.shape = e.shape;
    if (e.kind == MatchKind::kNew) {
      f.kind = GateFinding::Kind::kNew;
      f.regression = opt.fail_on_new;
      f.cur_value = e.cur->total_ns;
      f.message = fmt::format("new kernel: {} launches, {:.0f} ns", e.cur->calls, e.cur->total_ns);
      g.findings.push_back(f);
      continue;
    }
    if (e.kind == MatchKind::kVanished) {
      f.kind = GateFinding::Kind::kVanished;
      f.regression = opt.fail_on_vanished;
      f.base_value = e.base->total_ns;
      f.message = fmt::format("vanished: {} launches, {:.0f} ns in the base run", e.base->calls, e.base->total_ns);
      g.findings.push_back(f);
      continue;
    }
    ++g.kernels_checked;
    if (e.kind == MatchKind::kRenamed) {
      GateFinding r = f;
      r.kind = GateFinding::Kind::kRenamed;
      r.message = fmt::format("renamed from {} (same launch shape and NVTX path); compared as one kernel", e.base_name);
      r.base_kernel = e.base_name;
      g.findings.push_back(r);
    }
    // Time: a median slowdown beyond the threshold that the Mann-Whitney test finds significant.
    if (e.time_change && e.test) {
      GateFinding t = f;
      t.metric = "time";
      t.base_value = e.base->median_ns;
      t.cur_value = e.cur->median_ns;
      t.change = e.time_change;
      t.p_value = e.test->p_greater;
      if (*e.time_change > opt.time_threshold) {
        // The smallest p-value these sample sizes can give; if it exceeds alpha no slowdown can be shown.
        const auto best = mannWhitneyGreater(std::vector<double>(e.base->samples_ns.size(), 0.0),
                                             std::vector<double>(e.cur->samples_ns.size(), 1.0));
        if (e.test->p_greater < opt.alpha) {
          t.kind = GateFinding::Kind::kTime;
          t.regression = true;
          t.message = fmt::format("{:+.1f}% median time ({:.0f} -> {:.0f} ns), Mann-Whitney p = {:.2g} < {}",
                                  *e.time_change * 100, *t.base_value, *t.cur_value, *t.p_value, opt.alpha);
          g.findings.push_back(t);
        } else if (best && best->p_greater >= opt.alpha) {
          t.kind = GateFinding::Kind::kUntestable;
          t.message = fmt::format(
              "{:+.1f}% median time but {} vs {} launches cannot reach p < {}: repeat the kernel or the run",
              *e.time_change * 100, e.base->samples_ns.size(), e.cur->samples_ns.size(), opt.alpha);
          g.findings.push_back(t);
        }
      } else if (*e.time_change < -opt.time_threshold && e.test_faster && e.test_faster->p_greater < opt.alpha) {
        t.kind = GateFinding::Kind::kImproved;
        t.p_value = e.test_faster->p_greater;
        t.message = fmt::format("{:+.1f}% median time ({:.0f} -> {:.0f} ns), Mann-Whitney p = {:.2g}",
                                *e.time_change * 100, *t.base_value, *t.cur_value, *t.p_value);
        g.findings.push_back(t);
      }
    }
    // Counters: deterministic, so any change past the (small) threshold in the bad direction.
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
      GateFinding cf = f;
      cf.kind = GateFinding::Kind::kCounter;
      cf.regression = true;
      cf.metric = std::string(counterMetricName(m));
      cf.base_value = *b;
      cf.cur_value = *c;
      if (*b != 0) cf.change = change;
      cf.message = *b == 0 ? fmt::format("{}: 0 -> {:.6g} per launch", cf.metric, *c)
                           : fmt::format("{}: {:.6g} -> {:.6g} per launch ({:+.2f}%)", cf.metric, *b, *c, change * 100);
      g.findings.push_back(cf);
    }
  }
  std::stable_sort(g.findings.begin(), g.findings.end(),
                   [](const GateFinding& a, const GateFinding& b) { return a.regression > b.regression; });
  for (const auto& f : g.findings) g.regressions += f.regression ? 1 : 0;
  return g;
}

}  // namespace fprof::analysis
