// How much of a run has hardware counters: kernels and kernel time with counters, how the
// counters were obtained, and why the other kernels have none. fprof info prints it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fprof/core/store.h"

namespace fprof::analysis {

struct CounterCoverage {
  int64_t kernels = 0;
  int64_t kernels_with_counters = 0;
  int64_t kernel_ns = 0;   // summed durations of every kernel
  int64_t counted_ns = 0;  // of the kernels with counters
  // Kernels with counters by how they were obtained ("profiled", "same signature": copied from a
  // profiled launch of the same signature, "same signature (CUDA graph)": the same for a kernel
  // replayed from a graph), most first; empty when the database does not say
  // (schema 1, whose counters were all profiled).
  std::vector<std::pair<std::string, int64_t>> by_source;
  // Kernels without counters by the reason the collector gave (kernel_counter_missing), else
  // "recorded in trace mode" (a trace-mode process of a merged job) or "no reason recorded"; most
  // first; empty for schema 1.
  std::vector<std::pair<std::string, int64_t>> missing_reasons;

  // Share of kernel time with counters; none without kernel time.
  std::optional<double> timeShare() const;
};

CounterCoverage counterCoverage(const core::Profile& p);
// The same for some kernels (indices into p.kernels), e.g. one kernel group of the report.
CounterCoverage counterCoverage(const core::Profile& p, const std::vector<size_t>& kernel_indices);

// "counters for 700 of 719 kernels (98.1% of kernel time): 650 profiled, 50 same signature".
std::string describeCoverage(const CounterCoverage& c);
// "19 kernels without counters: cooperative launch: not replayed (12), not selected (7)"; "" when
// the database gives no reasons.
std::string describeMissing(const CounterCoverage& c);
// One kernel group's provenance in a table cell: "1 profiled, 299 same signature", "12 without:
// cooperative launch: not replayed", "2 profiled; 1 without: ..."; "" for no kernels. For schema 1
// (no provenance recorded): "N with counters".
std::string describeGroupCounters(const CounterCoverage& c);
// How a metrics run collected its counters, from its metadata: "metric set roofline; kernel replay
// (7 passes); caches flushed before each pass (cache control all); 1 profiled launch per launch
// signature, ..."; "" for a trace run or a file that does not say.
std::string describeCollection(const core::Profile& p);

}  // namespace fprof::analysis
