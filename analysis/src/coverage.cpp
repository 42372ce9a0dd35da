// Counter coverage of a run (see coverage.h).
#include "fprof/analysis/coverage.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <unordered_map>

#include "fprof/analysis/roofline.h"
#include "fprof/core/merge.h"
#include "fprof/core/metric_sets.h"

namespace fprof::analysis {
namespace {

std::string percentText(std::optional<double> share) {
  return share ? fmt::format("{:.1f}%", *share * 100.0) : std::string("n/a");
}

// Counts as (text, n) pairs, most first, then by text.
std::vector<std::pair<std::string, int64_t>> byCount(const std::map<std::string, int64_t>& counts) {
  std::vector<std::pair<std::string, int64_t>> out(counts.begin(), counts.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

// kernel_counter.source in words; a kernel replayed from a CUDA graph says so.
std::string sourceText(const std::string& source, bool in_graph) {
  if (source == core::kCounterSourceSameSignature) return in_graph ? "same signature (CUDA graph)" : "same signature";
  return source.empty() ? std::string(core::kCounterSourceProfiled) : source;
}

}  // namespace

std::optional<double> CounterCoverage::timeShare() const {
  if (kernel_ns <= 0) return std::nullopt;
  return static_cast<double>(counted_ns) / static_cast<double>(kernel_ns);
}

CounterCoverage counterCoverage(const core::Profile& p) {
  std::vector<size_t> all(p.kernels.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return counterCoverage(p, all);
}

CounterCoverage counterCoverage(const core::Profile& p, const std::vector<size_t>& kernel_indices) {
  CounterCoverage c;
  // Schema 2 says how each kernel's counters were obtained and why others have none; a version-1
  // file says neither (its counters were all profiled, and nothing records the gaps).
  const bool provenance = p.schema_version >= 2;
  // Profile::counters_missing is ordered by kernel id: a binary search per kernel.
  auto reasonOf = [&](int64_t kernel_id) -> const std::string* {
    auto it = std::lower_bound(p.counters_missing.begin(), p.counters_missing.end(), kernel_id,
                               [](const core::KernelCounterMissing& m, int64_t id) { return m.kernel_id < id; });
    return it != p.counters_missing.end() && it->kernel_id == kernel_id ? &it->reason : nullptr;
  };
  std::map<std::string, int64_t> sources, reasons;
  // A merged job may join trace-mode processes: their kernels never were to have counters.
  std::unordered_map<uint32_t, bool> trace_process;
  auto inTraceMode = [&](uint32_t process_id) {
    auto [it, inserted] = trace_process.emplace(process_id, false);
    if (inserted) it->second = core::processMeta(p, process_id, "mode") == "trace";
    return it->second;
  };
  for (size_t index : kernel_indices) {
    if (index >= p.kernels.size()) continue;
    const core::KernelRow& k = p.kernels[index];
    ++c.kernels;
    c.kernel_ns += k.durationNs();
    if (const core::KernelCounters* counters = countersFor(p, k.id)) {
      ++c.kernels_with_counters;
      c.counted_ns += k.durationNs();
      if (provenance) ++sources[sourceText(counters->source, k.graph_id != 0)];
    } else if (provenance) {
      if (const std::string* reason = reasonOf(k.id)) {
        ++reasons[*reason];
      } else {
        ++reasons[inTraceMode(k.process_id) ? "recorded in trace mode" : "no reason recorded"];
      }
    }
  }
  c.by_source = byCount(sources);
  c.missing_reasons = byCount(reasons);
  return c;
}

std::string describeCoverage(const CounterCoverage& c) {
  std::string out = fmt::format("counters for {} of {} kernels ({} of kernel time)", c.kernels_with_counters, c.kernels,
                                percentText(c.timeShare()));
  std::string sources;
  for (const auto& [text, n] : c.by_source) sources += fmt::format("{}{} {}", sources.empty() ? "" : ", ", n, text);
  return sources.empty() ? out : out + ": " + sources;
}

std::string describeMissing(const CounterCoverage& c) {
  if (c.missing_reasons.empty()) return "";
  std::string reasons;
  for (const auto& [text, n] : c.missing_reasons) {
    reasons += fmt::format("{}{} ({})", reasons.empty() ? "" : ", ", text, n);
  }
  const int64_t without = c.kernels - c.kernels_with_counters;
  return fmt::format("{} kernel{} without counters: {}", without, without == 1 ? "" : "s", reasons);
}

std::string describeGroupCounters(const CounterCoverage& c) {
  if (c.kernels == 0) return "";
  std::string out;
  for (const auto& [text, n] : c.by_source) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, text);
  if (out.empty() && c.kernels_with_counters > 0) out = fmt::format("{} with counters", c.kernels_with_counters);
  const int64_t without = c.kernels - c.kernels_with_counters;
  if (without > 0) {
    const std::string reason = c.missing_reasons.empty() ? std::string("no reason recorded") : c.missing_reasons.front().first;
    const std::string more = c.missing_reasons.size() > 1 ? fmt::format(" (and {} other reasons)", c.missing_reasons.size() - 1) : "";
    out += fmt::format("{}{} without: {}{}", out.empty() ? "" : "; ", without, reason, more);
  }
  return out;
}

namespace {

// The collector's "drain=0.120 sweep=0.004 start=1.234 ..." (metadata.metrics_launch_steps_seconds)
// as "drain 0.12 s, sweep 0.00 s, start 1.23 s, ...".
std::string launchStepsPhrase(const std::string& text) {
  std::istringstream items(text);
  std::string item, out;
  while (items >> item) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    out += fmt::format("{}{} {:.2f} s", out.empty() ? "" : ", ", item.substr(0, eq), std::atof(item.c_str() + eq + 1));
  }
  return out;
}

// The collector's "save=0.120 duplicate=0.250 restore=0.030 launches=113" as "; 0.40 s for 113
// duplicates: save 0.12 s, duplicate 0.25 s, restore 0.03 s".
std::string duplicateCostPhrase(const std::string& text) {
  std::istringstream items(text);
  std::string item, steps, launches;
  double total = 0;
  while (items >> item) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "launches") {
      launches = value;
      continue;
    }
    total += std::atof(value.c_str());
    steps += fmt::format("{}{} {:.2f} s", steps.empty() ? "" : ", ", key, std::atof(value.c_str()));
  }
  if (steps.empty()) return "";
  return fmt::format("; {:.2f} s for {} duplicates: {}", total, launches.empty() ? "the" : launches, steps);
}

// The collector's most device memory in use at a checkpoint, "1338834944", as ", the device holding
// up to 1.25 GiB at a checkpoint" ("" without it: recordings of versions that did not store it).
std::string checkpointMemoryPhrase(const std::string& bytes) {
  if (bytes.empty()) return "";
  return fmt::format(", the device holding up to {:.2f} GiB at a checkpoint", std::atof(bytes.c_str()) / double(1ull << 30));
}

// The collector's "own=80 (at most 201326592 bytes) cupti=2 (1: its module calls vprintf; 1: ...)"
// as "; fprof's own checkpoint (the program's allocations and module variables, up to 192.0 MiB)
// around 80 duplicates, CUPTI's around 2 (1: its module calls vprintf; 1: ...)" ("" without it:
// recordings of versions without fprof's own checkpoint, all of whose checkpoints were CUPTI's).
std::string checkpointKindPhrase(const std::string& text) {
  unsigned long long own = 0, bytes = 0, cupti = 0;
  if (std::sscanf(text.c_str(), "own=%llu (at most %llu bytes) cupti=%llu", &own, &bytes, &cupti) != 3) return "";
  std::string phrase = fmt::format("; fprof's own checkpoint (the program's allocations and module variables, up to "
                                   "{:.1f} MiB) around {} duplicate{}",
                                   double(bytes) / double(1 << 20), own, own == 1 ? "" : "s");
  if (cupti == 0) return phrase + ", CUPTI's around none";
  const size_t open = text.find(" (", text.find("cupti="));
  const std::string why = open == std::string::npos ? "" : text.substr(open);
  return phrase + fmt::format(", CUPTI's around {}{}", cupti, why);
}

// Which counter the L2 bytes are (core/metric_sets.h): the SMs' sectors in the sets, every request
// the L2 counted in custom lists and older recordings; "" where neither was collected.
std::string l2BytesPhrase(const core::Profile& p) {
  // One pass over the raw counters (every profiled launch's).
  bool all_requests = false;
  for (const core::KernelMetricRecord& m : p.metrics) {
    if (m.metric == core::kL2SmSectorsMetric) {
      return fmt::format("L2 bytes are the SMs' sectors ({} x {:g})", core::kL2SmSectorsMetric, core::kBytesPerSector);
    }
    all_requests = all_requests || m.metric == core::kL2BytesMetric;
  }
  return all_requests ? fmt::format("L2 bytes are every request the L2 counted ({}, with the forwarding between "
                                    "its partitions on GH100)",
                                    core::kL2BytesMetric)
                      : "";
}

}  // namespace

std::string describeCollection(const core::Profile& p) {
  if (p.meta("mode") != "metrics") return "";
  std::vector<std::string> parts;
  if (const std::string set = p.meta("metric_set"); !set.empty()) parts.push_back("metric set " + set);
  if (p.meta("application_runs") == "2") {
    // Recordings without second_run_replay made their second run under kernel replay.
    const bool patched = p.meta("second_run_replay") == "sass_patching";
    const std::string stopped = p.meta("second_run_patching_stopped");
    parts.push_back(std::string("application replay in two runs of the program (SASS counters in the second, ") +
                    (patched           ? "by SASS patching, no replay)"
                     : stopped.empty() ? "under kernel replay)"
                                       : "under kernel replay: the run by SASS patching was stopped " + stopped + ")"));
  } else if (p.meta("sass_counted_by") == "duplicate") {
    parts.push_back("application replay in one run (SASS counters from a duplicate of each profiled launch, by SASS "
                    "patching between a checkpoint of the device memory and its restore" +
                    duplicateCostPhrase(p.meta("sass_duplicate_seconds")) +
                    checkpointMemoryPhrase(p.meta("sass_duplicate_device_memory_held_bytes")) +
                    checkpointKindPhrase(p.meta("sass_duplicate_checkpoints")) + ")");
  } else if (const std::string replay = p.meta("replay_mode"); !replay.empty()) {
    const std::string passes = p.meta("metrics_passes");
    parts.push_back(replay + " replay" +
                    (passes.empty() ? "" : fmt::format(" ({} pass{})", passes, passes == "1" ? "" : "es")));
  }
  if (const std::string replay = p.meta("metrics_replay_seconds"); !replay.empty()) {
    const std::string profiled = p.meta("metrics_kernels_profiled");
    const std::string steps = launchStepsPhrase(p.meta("metrics_launch_steps_seconds"));
    const std::string where =
        steps.empty() ? "" : fmt::format(" ({}{})", p.meta("application_runs") == "2" ? "the first run's: " : "", steps);
    parts.push_back(fmt::format("{} launches profiled in {:.1f} s of replay{}, {:.1f} s of decoding",
                                profiled.empty() ? "0" : profiled, std::atof(replay.c_str()), where,
                                std::atof(p.meta("metrics_decode_seconds").c_str())));
  }
  if (const std::string cache = p.meta("cache_control"); !cache.empty()) {
    const bool own_run = p.meta("replay_mode") == "application";
    const bool code_too = p.meta("cache_sweep").find("instruction") != std::string::npos;
    parts.push_back(cache != "all"         ? "caches not flushed (cache control none)"
                    : own_run && code_too ? "instruction caches and L2 emptied before each profiled launch (cache control all)"
                    : own_run             ? "L2 emptied before each profiled launch (cache control all)"
                                          : "caches flushed before each pass (cache control all)");
  }
  if (const std::string l2 = l2BytesPhrase(p); !l2.empty()) parts.push_back(l2);
  if (const std::string include = p.meta("nvtx_include"); !include.empty()) {
    parts.push_back("kernels inside NVTX ranges containing '" + include + "'" +
                    (p.meta("nvtx_scope") == "thread" ? " on the launching thread"
                                                      : " on any thread (--nvtx-scope process)"));
  }
  if (const std::string samples = p.meta("samples_per_launch_kind"); !samples.empty()) {
    parts.push_back(samples == "every launch"
                        ? std::string("every launch profiled")
                        : samples + (samples == "1" ? " profiled launch" : " profiled launches") +
                              " per launch signature, the others given the values of an identical launch");
  }
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : "; ") + part;
  return out;
}

}  // namespace fprof::analysis
