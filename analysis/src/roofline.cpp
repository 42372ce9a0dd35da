// Roofline placement (see roofline.h and docs/analysis.md for the rules).
#include "fprof/analysis/roofline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_map>

#include "fprof/analysis/origin.h"
#include "fprof/analysis/summary.h"

namespace fprof::analysis {

std::string_view boundName(Bound b) {
  switch (b) {
    case Bound::kMemory: return "memory";
    case Bound::kCompute: return "compute";
    case Bound::kLatency: return "latency";
    case Bound::kLaunch: return "launch";
    case Bound::kUnknown: return "n/a";
  }
  return "n/a";
}

Work Work::fromCounters(const core::KernelCounters& c) {
  Work w;
  w.has_counters = true;
  const std::array<const std::optional<double>*, kPrecisionCount> f = {
      &c.flops_fp64,        &c.flops_fp32,        &c.flops_fp16,        &c.flops_bf16,        &c.flops_tensor_fp16,
      &c.flops_tensor_bf16, &c.flops_tensor_tf32, &c.flops_tensor_fp8,  &c.flops_tensor_fp64, &c.ops_tensor_int8};
  for (size_t i = 0; i < kPrecisionCount; ++i) w.flops[i] = *f[i];
  w.bytes[static_cast<size_t>(MemLevel::kDram)] = c.dramBytes();
  w.bytes[static_cast<size_t>(MemLevel::kL2)] = c.l2_bytes;
  w.bytes[static_cast<size_t>(MemLevel::kL1)] = c.l1_bytes;
  return w;
}

Work& Work::operator+=(const Work& o) {
  auto add = [](std::optional<double>& a, const std::optional<double>& b) {
    if (a && b) {
      *a += *b;
    } else {
      a.reset();
    }
  };
  for (size_t i = 0; i < kPrecisionCount; ++i) add(flops[i], o.flops[i]);
  for (size_t i = 0; i < kMemLevelCount; ++i) add(bytes[i], o.bytes[i]);
  has_counters = has_counters && o.has_counters;
  return *this;
}

std::optional<double> Work::totalFlops() const {
  std::optional<double> total;
  for (const auto& f : flops) {
    if (f) total = total.value_or(0) + *f;
  }
  return total;
}

namespace {

struct Terms {
  std::optional<double> compute_ns;
  std::optional<double> effective_peak;
  std::string compute_label;
  std::optional<CeilingSource> compute_source;
  std::array<std::optional<double>, kMemLevelCount> memory_ns{};
  std::vector<std::string> missing;
};

Terms terms(const Work& w, const Ceilings& c) {
  Terms t;
  double flops_total = 0;
  double compute_s = 0;
  bool any = false, complete = true;
  std::vector<std::pair<double, size_t>> shares;  // time share per precision, for the label
  for (size_t i = 0; i < kPrecisionCount; ++i) {
    if (!w.flops[i] || *w.flops[i] <= 0) continue;
    any = true;
    const auto& roof = c.compute[i];
    if (!roof) {
      complete = false;
      t.missing.push_back(fmt::format("{} roof", precisionName(static_cast<Precision>(i))));
      continue;
    }
    const double s = *w.flops[i] / roof->value;
    compute_s += s;
    flops_total += *w.flops[i];
    shares.emplace_back(s, i);
    // The label's source is the weakest one used: one datasheet roof makes the mix a datasheet roof.
    if (!t.compute_source || roof->source == CeilingSource::kDatasheet) t.compute_source = roof->source;
  }
  if (any && complete) {
    t.compute_ns = compute_s * 1e9;
    t.effective_peak = flops_total / compute_s;
    std::sort(shares.begin(), shares.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [s, i] : shares) {
      t.compute_label += (t.compute_label.empty() ? "" : "+") + std::string(precisionName(static_cast<Precision>(i)));
    }
  }
  for (size_t l = 0; l < kMemLevelCount; ++l) {
    if (!w.bytes[l]) continue;
    const auto& roof = c.bandwidth[l];
    if (!roof) {
      if (*w.bytes[l] > 0) t.missing.push_back(fmt::format("{} bandwidth roof", memLevelName(static_cast<MemLevel>(l))));
      continue;
    }
    t.memory_ns[l] = *w.bytes[l] / roof->value * 1e9;
  }
  return t;
}

}  // namespace

std::optional<double> rooflineTimeNs(const Work& w, const Ceilings& c) {
  const Terms t = terms(w, c);
  std::optional<double> best = t.compute_ns;
  for (const auto& m : t.memory_ns) {
    if (m) best = std::max(best.value_or(0), *m);
  }
  // A counted quantity whose roof is missing makes the time unknowable rather than optimistic.
  if (!t.missing.empty()) return std::nullopt;
  return best;
}

// Which of the latency rules applies (docs/analysis.md): too few blocks for the SMs, or too low an
// occupancy; neither where the kernel already reaches its roof. A kernel built for few warps per
// SM is held to neither its theoretical occupancy nor its tiles nearly filling the GPU: only a grid
// leaving more than half of the SMs idle counts for it.
enum class LatencyRule { kNone, kFewBlocks, kLowOccupancy };

LatencyRule latencyRule(const PlacementInput& in, const RooflineOptions& opt, bool roof_binds) {
  if (roof_binds) return LatencyRule::kNone;
  if (in.blocks && in.sm_count) {
    const bool few = in.few_warps_by_design ? 2 * *in.blocks < int64_t{*in.sm_count} : *in.blocks < *in.sm_count;
    if (few) return LatencyRule::kFewBlocks;
  }
  const bool by_design = in.few_warps_by_design && !in.occupancy_achieved;
  if (in.occupancy && *in.occupancy < opt.low_occupancy && !by_design) return LatencyRule::kLowOccupancy;
  return LatencyRule::kNone;
}

// Counters near the top of the double range (a damaged file) overflow sums and rates to infinity:
// such a number is no measurement, so it reads n/a (STYLE.md rule 6), and the roof it set binds no more.
void dropNonFinite(Placement& p) {
  auto drop = [](std::optional<double>& v) {
    if (v && !std::isfinite(*v)) v.reset();
  };
  for (std::optional<double>* v : {&p.total_flops, &p.achieved_flops_per_s, &p.compute_time_ns,
                                   &p.effective_peak_flops_per_s, &p.attainable_ns, &p.roof_fraction}) {
    drop(*v);
  }
  for (auto& v : p.flops_per_s) drop(v);
  for (auto& v : p.bytes_per_s) drop(v);
  for (auto& v : p.intensity_flop_per_byte) drop(v);
  for (auto& v : p.memory_time_ns) drop(v);
  if (!p.attainable_ns) {
    p.binding.clear();
    p.binding_source.reset();
    p.roof_fraction.reset();
  }
}

Placement place(const PlacementInput& in, const Ceilings& c, const RooflineOptions& opt) {
  Placement p;
  p.duration_ns = in.duration_ns;
  p.has_counters = in.work.has_counters;
  const double dur_s = static_cast<double>(in.duration_ns) * 1e-9;
  if (p.has_counters) {
    const Work& w = in.work;
    p.total_flops = w.totalFlops();
    for (size_t i = 0; i < kPrecisionCount; ++i) {
      if (w.flops[i] && dur_s > 0) p.flops_per_s[i] = *w.flops[i] / dur_s;
    }
    if (p.total_flops && dur_s > 0) p.achieved_flops_per_s = *p.total_flops / dur_s;
    for (size_t l = 0; l < kMemLevelCount; ++l) {
      if (!w.bytes[l]) continue;
      if (dur_s > 0) p.bytes_per_s[l] = *w.bytes[l] / dur_s;
      // Intensity is undefined with no bytes moved (STYLE.md: optional, never inf).
      if (p.total_flops && *w.bytes[l] > 0) p.intensity_flop_per_byte[l] = *p.total_flops / *w.bytes[l];
    }
    Terms t = terms(w, c);
    p.compute_time_ns = t.compute_ns;
    p.effective_peak_flops_per_s = t.effective_peak;
    p.memory_time_ns = t.memory_ns;
    p.missing = std::move(t.missing);
    if (t.compute_ns) {
      p.attainable_ns = t.compute_ns;
      p.binding = t.compute_label;
      p.binding_source = t.compute_source;
    }
    for (size_t l = 0; l < kMemLevelCount; ++l) {
      if (t.memory_ns[l] && (!p.attainable_ns || *t.memory_ns[l] > *p.attainable_ns)) {
        p.attainable_ns = t.memory_ns[l];
        p.binding = std::string(memLevelName(static_cast<MemLevel>(l)));
        p.binding_source = c.bandwidth[l]->source;
      }
    }
    if (p.attainable_ns && in.duration_ns > 0) p.roof_fraction = *p.attainable_ns / static_cast<double>(in.duration_ns);
  } else {
    p.missing.push_back("counters (record with fprof run --metrics roofline)");
  }
  dropNonFinite(p);

  // Bound label, first rule that applies (docs/analysis.md).
  const double per_launch_ns =
      static_cast<double>(in.duration_ns) / static_cast<double>(std::max<int64_t>(in.launches, 1));
  const bool roof_binds = p.roof_fraction && *p.roof_fraction >= opt.roof_fraction_binds;
  const LatencyRule latency = latencyRule(in, opt, roof_binds);
  if (per_launch_ns < static_cast<double>(opt.launch_overhead_ns)) {
    p.bound = Bound::kLaunch;
    p.reason = fmt::format("{:.0f} ns per launch, shorter than the ~{} ns launch overhead", per_launch_ns,
                           opt.launch_overhead_ns);
  } else if (latency == LatencyRule::kFewBlocks) {
    p.bound = Bound::kLatency;
    p.reason = in.few_warps_by_design
                   ? fmt::format("{} blocks for {} SMs: more than half the SMs idle", *in.blocks, *in.sm_count)
                   : fmt::format("{} blocks for {} SMs: too little work in flight", *in.blocks, *in.sm_count);
  } else if (latency == LatencyRule::kLowOccupancy) {
    p.bound = Bound::kLatency;
    p.reason = fmt::format("{} occupancy {:.1f}% < {:.0f}%: too little work in flight",
                           in.occupancy_achieved ? "achieved" : "theoretical", *in.occupancy * 100,
                           opt.low_occupancy * 100);
  } else if (!p.binding.empty()) {
    const bool memory = p.binding == "dram" || p.binding == "l2" || p.binding == "l1";
    p.bound = memory ? Bound::kMemory : Bound::kCompute;
    // No fraction without a positive measured time (a damaged file's kernel may end before it starts).
    p.reason = p.roof_fraction ? fmt::format("{} roof binds ({}), at {:.1f}% of it", p.binding,
                                             ceilingSourceName(*p.binding_source), *p.roof_fraction * 100)
                               : fmt::format("{} roof binds ({}); no measured time to compare with", p.binding,
                                             ceilingSourceName(*p.binding_source));
  } else {
    p.bound = Bound::kUnknown;
    if (p.has_counters) {
      p.reason = "counters present but no roof could be computed (missing ceilings)";
    } else if (in.few_warps_by_design && in.occupancy && *in.occupancy < opt.low_occupancy) {
      p.reason = fmt::format(
          "no counters: theoretical occupancy {:.1f}% is by design for a library GEMM or warp-specialized kernel, "
          "not a sign of latency; its bound needs counters",
          *in.occupancy * 100);
    } else {
      p.reason = "trace only: no counters, so no intensity or roof; not launch or latency bound";
    }
  }
  return p;
}

Bound classifyBound(const PlacementInput& in, const Ceilings& c, const RooflineOptions& opt) {
  // The rules of place(), without its text: used for every kernel of a large run.
  std::optional<double> attainable;
  bool memory = false;
  if (in.work.has_counters) {
    double compute_s = 0;
    bool any = false, complete = true;
    for (size_t i = 0; i < kPrecisionCount; ++i) {
      const auto& f = in.work.flops[i];
      if (!f || *f <= 0) continue;
      any = true;
      if (!c.compute[i]) {
        complete = false;
        continue;
      }
      compute_s += *f / c.compute[i]->value;
    }
    if (any && complete) attainable = compute_s * 1e9;
    for (size_t l = 0; l < kMemLevelCount; ++l) {
      if (!in.work.bytes[l] || !c.bandwidth[l]) continue;
      const double t = *in.work.bytes[l] / c.bandwidth[l]->value * 1e9;
      if (!attainable || t > *attainable) {
        attainable = t;
        memory = true;
      }
    }
  }
  std::optional<double> roof_fraction;
  if (attainable && in.duration_ns > 0) roof_fraction = *attainable / static_cast<double>(in.duration_ns);
  const double per_launch_ns =
      static_cast<double>(in.duration_ns) / static_cast<double>(std::max<int64_t>(in.launches, 1));
  const bool roof_binds = roof_fraction && *roof_fraction >= opt.roof_fraction_binds;
  if (per_launch_ns < static_cast<double>(opt.launch_overhead_ns)) return Bound::kLaunch;
  if (latencyRule(in, opt, roof_binds) != LatencyRule::kNone) return Bound::kLatency;
  if (attainable) return memory ? Bound::kMemory : Bound::kCompute;
  return Bound::kUnknown;
}

const core::KernelCounters* countersFor(const core::Profile& p, int64_t kernel_id) {
  auto it = std::lower_bound(p.counters.begin(), p.counters.end(), kernel_id,
                             [](const core::KernelCounters& c, int64_t id) { return c.kernel_id < id; });
  return it != p.counters.end() && it->kernel_id == kernel_id ? &*it : nullptr;
}

const Ceilings& CeilingCache::get(uint32_t process_id, uint32_t device_id) {
  const uint64_t key = (uint64_t{process_id} << 32) | device_id;
  for (const auto& [k, c] : cache_) {
    if (k == key) return c;
  }
  const core::DeviceInfo* d = p_.device(process_id, device_id);
  cache_.emplace_back(key, d ? ceilingsFor(p_, *d) : Ceilings{});
  return cache_.back().second;
}

namespace {

PlacementInput inputOf(const core::KernelRow& k, const core::DeviceInfo* device, const core::KernelCounters* c,
                       bool few_warps_by_design) {
  PlacementInput in;
  in.few_warps_by_design = few_warps_by_design;
  in.duration_ns = k.durationNs();
  in.blocks = k.blocks();
  if (device && device->sm_count > 0) in.sm_count = device->sm_count;
  in.occupancy = k.theoretical_occupancy;
  if (c) {
    in.work = Work::fromCounters(*c);
    if (c->achieved_occupancy) {
      in.occupancy = c->achieved_occupancy;
      in.occupancy_achieved = true;
    }
  }
  return in;
}

// Kernel id -> its counters, for a pass over every kernel: one array read instead of countersFor's
// binary search per kernel, same answers. Empty in trace mode, and where countersFor is kept:
// counters out of kernel_id order, or ids too sparse for an array.
std::vector<int32_t> counterIndex(const core::Profile& p) {
  std::vector<int32_t> index;
  if (p.counters.empty() || p.counters.size() > size_t{INT32_MAX}) return index;
  auto by_id = [](const core::KernelCounters& a, const core::KernelCounters& b) { return a.kernel_id < b.kernel_id; };
  if (!std::is_sorted(p.counters.begin(), p.counters.end(), by_id)) return index;
  const int64_t first = p.counters.front().kernel_id, last = p.counters.back().kernel_id;
  if (first < 0 || last > 4 * static_cast<int64_t>(p.counters.size()) + 1024) return index;
  index.assign(static_cast<size_t>(last) + 1, -1);
  // Backwards, so that a repeated id keeps its first row, as the binary search finds.
  for (size_t i = p.counters.size(); i-- > 0;) {
    index[static_cast<size_t>(p.counters[i].kernel_id)] = static_cast<int32_t>(i);
  }
  return index;
}

}  // namespace

PlacementInput kernelInput(const core::Profile& p, const core::KernelRow& k, const core::DeviceInfo* device) {
  return inputOf(k, device, countersFor(p, k.id), fewWarpsByDesign(p.str(k.demangled_id)));
}

PlacementInput kernelInput(const core::KernelRow& k, const core::DeviceInfo* device, const core::KernelCounters* counters,
                           std::string_view demangled_name) {
  return inputOf(k, device, counters, fewWarpsByDesign(demangled_name));
}

Placement placeKernel(const core::Profile& p, size_t kernel_index, CeilingCache& ceilings,
                      const RooflineOptions& opt) {
  const core::KernelRow& k = p.kernels.at(kernel_index);
  return place(kernelInput(p, k, ceilings.device(k.process_id, k.device_id)), ceilings.get(k.process_id, k.device_id),
               opt);
}

namespace {

// Accumulates kernels into one placement input: times add, work adds, occupancy and blocks are
// taken as the time-weighted picture only where every member has them.
struct GroupAccumulator {
  PlacementInput in;
  bool first = true;
  uint32_t process_id = 0, device_id = 0;
  bool mixed_devices = false;
  double occupancy_weighted = 0;
  bool occupancy_complete = true;
  bool achieved = true;

  void add(const PlacementInput& k, uint32_t proc, uint32_t dev) {
    if (first) {
      in.work = k.work;
      in.duration_ns = 0;
      in.launches = 0;
      in.sm_count = k.sm_count;
      in.few_warps_by_design = k.few_warps_by_design;
      process_id = proc;
      device_id = dev;
      first = false;
    } else {
      in.work += k.work;
      in.few_warps_by_design = in.few_warps_by_design && k.few_warps_by_design;
      if (proc != process_id || dev != device_id) mixed_devices = true;
    }
    in.duration_ns += k.duration_ns;
    in.launches += 1;
    if (k.occupancy) {
      occupancy_weighted += *k.occupancy * static_cast<double>(k.duration_ns);
    } else {
      occupancy_complete = false;
    }
    achieved = achieved && k.occupancy_achieved;
  }
  PlacementInput finish() {
    if (occupancy_complete && in.duration_ns > 0) {
      in.occupancy = occupancy_weighted / static_cast<double>(in.duration_ns);
      in.occupancy_achieved = achieved;
    }
    in.blocks.reset();  // blocks < SMs is a per-launch test; groups use occupancy and time per launch
    return in;
  }
};

}  // namespace

RooflineResult analyzeRoofline(const core::Profile& p, const RooflineOptions& opt) {
  return analyzeRoofline(p, summarize(p), opt);
}

RooflineResult analyzeRoofline(const core::Profile& p, const RunSummary& s, const RooflineOptions& opt) {
  RooflineResult r;
  CeilingCache cache(p);
  std::vector<GroupAccumulator> ops;
  std::unordered_map<uint32_t, size_t> op_index;
  std::vector<uint32_t> op_path;
  std::vector<GroupAccumulator> groups(s.groups.size());
  std::vector<int32_t> group_of(p.kernels.size(), -1);
  for (size_t g = 0; g < s.groups.size(); ++g) {
    for (size_t i : s.groups[g].kernel_indices) group_of[i] = static_cast<int32_t>(g);
  }
  const core::DeviceInfo* last_device = nullptr;
  uint64_t last_key = ~uint64_t{0};
  const std::vector<int32_t> counter_of = counterIndex(p);
  std::unordered_map<uint32_t, bool> few_warps;  // by demangled name id
  auto counters = [&](int64_t kernel_id) -> const core::KernelCounters* {
    if (counter_of.empty()) return p.counters.empty() ? nullptr : countersFor(p, kernel_id);
    if (kernel_id < 0 || static_cast<size_t>(kernel_id) >= counter_of.size()) return nullptr;
    const int32_t c = counter_of[static_cast<size_t>(kernel_id)];
    return c < 0 ? nullptr : &p.counters[static_cast<size_t>(c)];
  };
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const core::KernelRow& k = p.kernels[i];
    const uint64_t key = (uint64_t{k.process_id} << 32) | k.device_id;
    if (key != last_key) {
      last_device = p.device(k.process_id, k.device_id);
      last_key = key;
    }
    auto design = few_warps.find(k.demangled_id);
    if (design == few_warps.end()) design = few_warps.emplace(k.demangled_id, fewWarpsByDesign(p.str(k.demangled_id))).first;
    const PlacementInput in = inputOf(k, last_device, counters(k.id), design->second);
    const Bound bound = classifyBound(in, cache.get(k.process_id, k.device_id), opt);
    r.kernels_by_bound[static_cast<size_t>(bound)] += 1;
    r.ns_by_bound[static_cast<size_t>(bound)] += k.durationNs();
    if (in.work.has_counters) ++r.kernels_with_counters;
    groups[static_cast<size_t>(group_of[i])].add(in, k.process_id, k.device_id);
    if (k.nvtx_path_id) {
      auto [it, inserted] = op_index.try_emplace(*k.nvtx_path_id, ops.size());
      if (inserted) {
        ops.emplace_back();
        op_path.push_back(*k.nvtx_path_id);
      }
      ops[it->second].add(in, k.process_id, k.device_id);
    }
  }
  auto finish = [&](GroupAccumulator& acc, std::string label) {
    GroupPlacement gp;
    gp.label = std::move(label);
    gp.calls = acc.in.launches;
    const PlacementInput in = acc.finish();
    gp.placement = place(in, cache.get(acc.process_id, acc.device_id), opt);
    if (acc.mixed_devices) gp.placement.missing.push_back("group spans several devices; the first one's roofs are used");
    return gp;
  };
  for (size_t g = 0; g < groups.size(); ++g) r.kernel_groups.push_back(finish(groups[g], p.str(s.groups[g].demangled_id)));
  for (size_t o = 0; o < ops.size(); ++o) r.ops.push_back(finish(ops[o], p.str(op_path[o])));
  std::stable_sort(r.ops.begin(), r.ops.end(), [](const GroupPlacement& a, const GroupPlacement& b) {
    return a.placement.duration_ns > b.placement.duration_ns;
  });
  return r;
}

std::vector<GroupPlacement> placeKernelGroups(const core::Profile& p, const std::vector<int32_t>& group_of,
                                              const std::vector<std::string>& labels, const RooflineOptions& opt) {
  CeilingCache cache(p);
  std::vector<GroupAccumulator> groups(labels.size());
  std::unordered_map<uint32_t, bool> few_warps;  // by demangled name id
  for (size_t i = 0; i < p.kernels.size() && i < group_of.size(); ++i) {
    if (group_of[i] < 0 || static_cast<size_t>(group_of[i]) >= labels.size()) continue;
    const core::KernelRow& k = p.kernels[i];
    auto design = few_warps.find(k.demangled_id);
    if (design == few_warps.end()) design = few_warps.emplace(k.demangled_id, fewWarpsByDesign(p.str(k.demangled_id))).first;
    const PlacementInput in =
        inputOf(k, p.device(k.process_id, k.device_id), p.counters.empty() ? nullptr : countersFor(p, k.id),
                design->second);
    groups[static_cast<size_t>(group_of[i])].add(in, k.process_id, k.device_id);
  }
  std::vector<GroupPlacement> out;
  for (size_t g = 0; g < groups.size(); ++g) {
    GroupAccumulator& acc = groups[g];
    if (acc.first) continue;  // no kernel
    GroupPlacement gp;
    gp.label = labels[g];
    gp.calls = acc.in.launches;
    gp.placement = place(acc.finish(), cache.get(acc.process_id, acc.device_id), opt);
    if (acc.mixed_devices) gp.placement.missing.push_back("group spans several devices; the first one's roofs are used");
    out.push_back(std::move(gp));
  }
  std::stable_sort(out.begin(), out.end(), [](const GroupPlacement& a, const GroupPlacement& b) {
    return a.placement.duration_ns > b.placement.duration_ns;
  });
  return out;
}

}  // namespace fprof::analysis
