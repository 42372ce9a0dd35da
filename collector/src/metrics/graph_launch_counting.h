// CUDA graphs in a metrics run. Their kernels are not replayed: under application replay the first
// launches of each executable graph (samples_per_signature of them; every one with --every-launch)
// are counted whole, as one user range (ApplicationReplayCounting::beginGraphLaunch), into table
// graph_launch_counter, and their kernels keep a reason that says so. Besides, a kernel whose node
// has the graph key of a profiled launch (LaunchSignatures, read when the node was made) takes that
// launch's counters, marked same_signature like any copy, once the run has ended (a later launch
// could make a source ambiguous). Pure C++.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "fprof/core/model.h"
#include "metrics/counter_ledger.h"
#include "metrics/metrics_config.h"
#include "metrics/run_log.h"

namespace fprof::collector {

class GraphLaunchCounting {
 public:
  GraphLaunchCounting(const MetricsConfig& config, RunLog& log, CounterLedger& ledger)
      : config_(config), log_(log), ledger_(ledger) {}
  void useSelector(const LaunchSelector* selector) { selector_ = selector; }

  // From the resource callbacks: a kernel node made (key unknown: nullopt), and a node whose
  // parameters changed after it was made (no copies then).
  void noteNode(uint64_t node_id, std::optional<uint64_t> graph_key);
  void noteNodeChanged(uint64_t node_id) { nodes_[node_id] = std::nullopt; }
  // Node changes cannot be seen (their callbacks failed): graph kernels then get no copies.
  void untrustNodes() { nodes_trusted_ = false; }

  // A graph launch the filters selected; `counts_programs_own_run`: its context counts the
  // program's own run (application replay), which can count graph launches whole.
  void selected(uint32_t correlation_id, bool counts_programs_own_run);
  // Whether the executable graph `graph_exec` still wants a launch counted whole (under its
  // samples per signature), and, once one was, that it was.
  bool wantsWholeCount(uint64_t graph_exec);
  void countedWhole(uint64_t graph_exec);
  // A graph launch's decoded range: its sums, and its kernels' reason.
  void keepCountedWhole(const ProfiledLaunch& e, const std::vector<double>& row);

  // From the writer thread: the kernel records of a period; those of selected graph launches are
  // resolved once the run has ended (`finished`: every profiled launch decoded).
  void addKernels(const std::vector<core::KernelRecord>& kernels);
  void resolveKernels(bool finished);
  std::vector<core::GraphLaunchCounters> takeLaunchResults();  // process_id left 0

 private:
  const MetricsConfig& config_;
  RunLog& log_;
  CounterLedger& ledger_;
  const LaunchSelector* selector_ = nullptr;
  std::unordered_map<uint64_t, std::optional<uint64_t>> nodes_;  // node id -> graph key
  bool nodes_trusted_ = true;
  std::unordered_set<uint32_t> launches_;           // correlation ids of the graph launches selected
  std::unordered_map<uint64_t, uint64_t> exec_counts_;  // graph launches counted whole, by CUgraphExec
  std::vector<core::GraphLaunchCounters> results_;
  uint64_t counted_ = 0;
  uint64_t counted_in_metadata_ = 0;
  std::vector<LaunchRef> pending_kernels_;
  uint64_t kernels_copied_ = 0;
  std::optional<uint64_t> copies_in_metadata_;
};

}  // namespace fprof::collector
