// Counter coverage of a run (see coverage.h).
#include "fprof/analysis/coverage.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "fprof/analysis/roofline.h"

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

std::string listCounts(const std::vector<std::pair<std::string, int64_t>>& counts) {
  std::string out;
  for (const auto& [text, n] : counts) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, text);
  return out;
}

}  // namespace

std::optional<double> CounterCoverage::timeShare() const {
  if (kernel_ns <= 0) return std::nullopt;
  return static_cast<double>(counted_ns) / static_cast<double>(kernel_ns);
}

CounterCoverage counterCoverage(const core::Profile& p) {
  CounterCoverage c;
  for (const core::KernelRow& k : p.kernels) {
    ++c.kernels;
    c.kernel_ns += k.durationNs();
    if (countersFor(p, k.id)) {
      ++c.kernels_with_counters;
      c.counted_ns += k.durationNs();
    }
  }
  // Schema 2 says how each kernel's counters were obtained and why others have none: the counts
  // by source and by reason go into by_source and missing_reasons here.
  c.by_source = byCount({});
  c.missing_reasons = byCount({});
  return c;
}

std::string describeCoverage(const CounterCoverage& c) {
  std::string out = fmt::format("counters for {} of {} kernels ({} of kernel time)", c.kernels_with_counters, c.kernels,
                                percentText(c.timeShare()));
  if (!c.by_source.empty()) out += ": " + listCounts(c.by_source);
  const int64_t without = c.kernels - c.kernels_with_counters;
  if (without > 0 && !c.missing_reasons.empty()) {
    out += fmt::format("; none for {}: {}", without, listCounts(c.missing_reasons));
  }
  return out;
}

}  // namespace fprof::analysis
