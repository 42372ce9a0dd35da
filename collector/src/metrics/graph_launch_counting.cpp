// CUDA graphs in a metrics run (see graph_launch_counting.h).
#include "metrics/graph_launch_counting.h"

#include <string>

#include "fprof/core/metric_sets.h"
#include "injection/log.h"

namespace fprof::collector {

void GraphLaunchCounting::noteNode(uint64_t node_id, std::optional<uint64_t> graph_key) {
  nodes_[node_id] = nodes_trusted_ ? graph_key : std::nullopt;
  if (log_.debugRanges()) {
    logInfo("graph node %llu: graph key %016llx%s", static_cast<unsigned long long>(node_id),
            static_cast<unsigned long long>(graph_key.value_or(0)), graph_key ? "" : " (unknown)");
  }
}

void GraphLaunchCounting::selected(uint32_t correlation_id, bool counts_programs_own_run) {
  if (!launches_.insert(correlation_id).second || launches_.size() != 1 || config_.second_run) return;
  log_.note("info", std::string("kernels of CUDA graphs are not replayed; each takes the counters of a profiled launch "
                                "with its node's signature (function, shape, non-pointer arguments) where there is one") +
                        (counts_programs_own_run ? "" : "; --replay application also counts each executable graph's "
                                                        "first launch whole, as one range"));
}

bool GraphLaunchCounting::wantsWholeCount(uint64_t graph_exec) {
  const uint64_t counted = exec_counts_[graph_exec];
  return config_.samples_per_signature == 0 || counted < config_.samples_per_signature;
}

void GraphLaunchCounting::countedWhole(uint64_t graph_exec) {
  if (counted_++ == 0) {
    log_.note("info",
              "CUDA graph launches are counted whole, each as one range (table graph_launch_counter): the first " +
                  (config_.samples_per_signature == 0 ? std::string("every launch")
                                                      : std::to_string(config_.samples_per_signature)) +
                  " of each executable graph");
  }
  ++exec_counts_[graph_exec];
}

void GraphLaunchCounting::keepCountedWhole(const ProfiledLaunch& e, const std::vector<double>& row) {
  core::GraphLaunchCounters g;
  g.correlation_id = e.launch.correlation_id;
  g.alt_correlation_id = e.launch.nested_correlation_id;
  g.counters = core::deriveCounters(config_.metrics, row);
  for (size_t m = 0; m < config_.metrics.size() && m < row.size(); ++m) g.raw.emplace_back(config_.metrics[m], row[m]);
  results_.push_back(std::move(g));
  ledger_.missing(e.launch, kGraphCountedWholeReason);
}

void GraphLaunchCounting::addKernels(const std::vector<core::KernelRecord>& kernels) {
  for (const core::KernelRecord& k : kernels) {
    // Bounded: a kernel beyond it keeps its launch's reason (8M graph kernels waiting on sources).
    if (k.graph_node_id == 0 || launches_.count(k.correlation_id) == 0) continue;
    if (pending_kernels_.size() >= (size_t{1} << 23)) return;
    pending_kernels_.push_back(LaunchRef{k.correlation_id, 0, k.graph_node_id});
  }
}

// A graph kernel whose node's graph key has one decoded source gets its counters; the rest keep
// their launch's reason.
void GraphLaunchCounting::resolveKernels(bool finished) {
  if (!finished) return;  // records arriving later (the last flush) are resolved at the next call
  for (const LaunchRef& k : pending_kernels_) {
    auto node = nodes_.find(k.graph_node_id);
    if (node == nodes_.end() || !node->second) continue;  // unknown or changed parameters
    const GraphSource* g = ledger_.graphSource(*node->second);
    if (g == nullptr) continue;
    if (g->several_loose || (g->several_signatures && !selector_->looseSame(g->loose))) continue;  // ambiguous
    ++kernels_copied_;
    ledger_.addGraphKernelCopy(g->first, k);
  }
  pending_kernels_.clear();
  if (!launches_.empty() && copies_in_metadata_ != kernels_copied_) {
    log_.meta("metrics_graph_kernels_copied", std::to_string(kernels_copied_));
    copies_in_metadata_ = kernels_copied_;
  }
}

std::vector<core::GraphLaunchCounters> GraphLaunchCounting::takeLaunchResults() {
  if (counted_ != counted_in_metadata_) {
    log_.meta("metrics_graph_launches_counted", std::to_string(counted_));
    counted_in_metadata_ = counted_;
  }
  std::vector<core::GraphLaunchCounters> out;
  out.swap(results_);
  return out;
}

}  // namespace fprof::collector
