// Counter coverage of a run (see coverage.h).
#include "fprof/analysis/coverage.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "fprof/analysis/roofline.h"
#include "fprof/core/merge.h"

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

// kernel_counter.source in words.
std::string sourceText(const std::string& source) {
  if (source == core::kCounterSourceSameSignature) return "same signature";
  return source.empty() ? std::string(core::kCounterSourceProfiled) : source;
}

}  // namespace

std::optional<double> CounterCoverage::timeShare() const {
  if (kernel_ns <= 0) return std::nullopt;
  return static_cast<double>(counted_ns) / static_cast<double>(kernel_ns);
}

CounterCoverage counterCoverage(const core::Profile& p) {
  CounterCoverage c;
  // Schema 2 says how each kernel's counters were obtained and why others have none; a version-1
  // file says neither (its counters were all profiled, and nothing records the gaps).
  const bool provenance = p.schema_version >= 2;
  std::unordered_map<int64_t, const std::string*> reason_of;
  for (const core::KernelCounterMissing& m : p.counters_missing) reason_of.emplace(m.kernel_id, &m.reason);
  std::map<std::string, int64_t> sources, reasons;
  // A merged job may join trace-mode processes: their kernels never were to have counters.
  std::unordered_map<uint32_t, bool> trace_process;
  auto inTraceMode = [&](uint32_t process_id) {
    auto [it, inserted] = trace_process.emplace(process_id, false);
    if (inserted) it->second = core::processMeta(p, process_id, "mode") == "trace";
    return it->second;
  };
  for (const core::KernelRow& k : p.kernels) {
    ++c.kernels;
    c.kernel_ns += k.durationNs();
    if (const core::KernelCounters* counters = countersFor(p, k.id)) {
      ++c.kernels_with_counters;
      c.counted_ns += k.durationNs();
      if (provenance) ++sources[sourceText(counters->source)];
    } else if (provenance) {
      const auto it = reason_of.find(k.id);
      if (it != reason_of.end()) {
        ++reasons[*it->second];
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

}  // namespace fprof::analysis
