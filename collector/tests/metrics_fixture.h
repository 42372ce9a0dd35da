// The metrics collector on the fake counting backend: launches go through their windows as the
// collector's callbacks send them, kernels "run" with the values a test gives, and what the
// collector hands the writer (results, notes, metadata) is read back.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fake_counting_backend.h"
#include "metrics/metrics_collector.h"

namespace fprof::collector::testing {

// One byte count and one deterministic count per range (bytes vary run to run, instructions do not).
inline const std::vector<std::string> kTwoMetrics = {"dram__bytes_read.sum", "sm__inst_executed.sum"};

class MetricsFixture : public ::testing::Test {
 protected:
  MetricsFixture() {
    config.enabled = true;
    config.metrics = kTwoMetrics;
    config.selection = "dram__bytes_read.sum,sm__inst_executed.sum";
  }

  bool start() { return collector.configure(config); }

  // One launch through its window, its kernel running with `values` (nothing runs where the
  // collector counts nothing).
  void launch(const LaunchRequest& r, std::vector<double> values = {1000, 64}, CUresult result = CUDA_SUCCESS) {
    collector.beforeLaunch(r);
    if (result == CUDA_SUCCESS) backend.kernelRan(r.symbol_name != nullptr ? r.symbol_name : "", std::move(values));
    collector.afterLaunch(result);
  }
  void launch(const char* name, uint32_t correlation_id, std::optional<uint64_t> signature,
              std::vector<double> values = {1000, 64}) {
    launch(launchOf(name, correlation_id, signature), std::move(values));
  }

  // What the writer gets, read as its drain reads it (results before notes and metadata).
  void drain() {
    for (LaunchCounterResult& r : collector.takeResults()) results.push_back(std::move(r));
    for (auto& g : collector.takeGraphLaunchResults()) graph_results.push_back(std::move(g));
    for (auto& n : collector.takeNotes()) notes.push_back(std::move(n));
    for (auto& [key, value] : collector.takeMetadata()) metadata[key] = value;  // the last value of a key stays
  }
  void finish() {
    collector.finishAll();
    drain();
  }

  const LaunchCounterResult* resultOf(uint32_t correlation_id, uint64_t graph_node_id = 0) const {
    for (const LaunchCounterResult& r : results) {
      if (r.launch.correlation_id == correlation_id && r.launch.graph_node_id == graph_node_id) return &r;
    }
    return nullptr;
  }
  std::string reasonOf(uint32_t correlation_id) const {
    const LaunchCounterResult* r = resultOf(correlation_id);
    return r == nullptr ? "(no result)" : r->missing_reason;
  }
  bool noted(const std::string& severity, const std::string& part) const {
    for (const auto& [s, m] : notes) {
      if (s == severity && m.find(part) != std::string::npos) return true;
    }
    return false;
  }
  // The calls made since the last look, then forgotten.
  std::vector<std::string> takeCalls() {
    std::vector<std::string> out;
    out.swap(backend.calls);
    return out;
  }

  FakeCountingBackend backend;
  MetricsConfig config;
  MetricsCollector collector{backend};
  std::vector<LaunchCounterResult> results;
  std::vector<core::GraphLaunchCounters> graph_results;
  std::vector<std::pair<std::string, std::string>> notes;
  std::map<std::string, std::string> metadata;
};

}  // namespace fprof::collector::testing
