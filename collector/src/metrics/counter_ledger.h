// What every kernel of a metrics run ends with, whichever strategy counted it: counters (counted,
// or copied from an identical launch), or a reason. The ledger keeps each signature's first sample,
// says when identical launches did different work, hands copies out as soon as their source is
// decoded, and keeps, per graph key, the launch a CUDA graph's kernels may copy. Pure C++.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fprof/core/model.h"
#include "metrics/metrics_config.h"
#include "metrics/run_log.h"

namespace fprof::collector {

struct LaunchRef {
  uint32_t correlation_id = 0;
  uint32_t nested_correlation_id = 0;  // the driver call inside a runtime launch (0 = none)
  uint64_t graph_node_id = 0;          // not 0: the kernel of this node in a graph launch
};

// What the writer gets for one launch: counters (profiled or copied from `source`), or a reason.
struct LaunchCounterResult {
  LaunchRef launch;
  core::KernelCounters counters;
  std::vector<std::pair<std::string, double>> raw;
  std::optional<LaunchRef> source;  // copied from this profiled launch
  std::string missing_reason;       // not empty: no counters, and why
};

// A launch being counted, from its window's opening until its counters are read.
struct ProfiledLaunch {
  LaunchRef launch;
  std::string mangled;
  std::string demangled;
  uint64_t launch_index = 0;
  std::optional<uint64_t> signature;
  std::optional<uint64_t> loose_signature;
  std::optional<uint64_t> graph_key;
  std::optional<uint64_t> loose_check;  // see Decision::loose_check
  uint64_t loose_first_signature = 0;
  bool graph = false;  // a whole graph launch in one user range
};

// A counted launch that copies may come from.
struct CountedLaunch {
  core::KernelCounters counters;
  std::vector<std::pair<std::string, double>> raw;
  LaunchRef launch;
  uint64_t signature = 0;
};

// What graph kernels copy, by graph key: the first decoded launch, and whether launches with the
// key differed in their cluster shape (never copied from) or in their 1-byte parameters (copied
// from when the selector's check said those do not matter).
struct GraphSource {
  CountedLaunch first;
  uint64_t loose = 0;
  bool several_loose = false;
  bool several_signatures = false;
};

class CounterLedger {
 public:
  CounterLedger(const MetricsConfig& config, RunLog& log) : config_(config), log_(log) {}
  void useSelector(LaunchSelector* selector) { selector_ = selector; }

  void missing(LaunchRef launch, std::string reason);
  // A profiled launch without counters, and the copies waiting on it.
  void missingWithCopies(const ProfiledLaunch& e, const std::string& why, const std::string& copies_why);
  // A launch identical to the selected launch `source_index`: its values now, or once decoded.
  void copyOrWait(uint64_t source_index, LaunchRef launch);
  // A profiled kernel launch's range (one value per configured metric).
  void keepDecoded(const ProfiledLaunch& e, const std::vector<double>& row, const std::string& range_name);
  // A profiled launch's counters: kept for copies and the signature checks, then handed out.
  void keepCounted(const ProfiledLaunch& e, LaunchCounterResult r, const std::string& range_name);
  // A copy of `source` for a CUDA graph's kernel.
  void addGraphKernelCopy(const CountedLaunch& source, LaunchRef kernel) { results_.push_back(copiedFrom(source, kernel)); }
  const GraphSource* graphSource(uint64_t graph_key) const;
  // The run's end: copies still waiting get the reason that their source was never decoded.
  void giveUpWaitingCopies();

  uint64_t copied() const { return copied_; }
  std::vector<LaunchCounterResult> takeResults();

 private:
  LaunchCounterResult copiedFrom(const CountedLaunch& source, LaunchRef launch) const;
  void checkLooseSignature(const ProfiledLaunch& e, const LaunchCounterResult& r);
  void keepGraphSource(const ProfiledLaunch& e, const LaunchCounterResult& r);

  const MetricsConfig& config_;
  RunLog& log_;
  LaunchSelector* selector_ = nullptr;
  std::vector<LaunchCounterResult> results_;
  std::unordered_map<uint64_t, CountedLaunch> decoded_;                  // by selected-launch index
  std::unordered_map<uint64_t, std::vector<LaunchRef>> waiting_copies_;  // by source index
  std::unordered_map<uint64_t, std::vector<std::pair<std::string, double>>> first_sample_;  // by signature
  std::unordered_map<uint64_t, bool> signature_varies_;
  std::unordered_map<uint64_t, GraphSource> graph_sources_;  // by graph key
  uint64_t copied_ = 0;
};

}  // namespace fprof::collector
