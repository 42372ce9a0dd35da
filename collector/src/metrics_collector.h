// Metrics mode: hardware counters per kernel through the CUPTI range profiler (auto range,
// kernel replay), one profiler per context. Selected launches run with the profiler started;
// any other launch first stops it (decoding the batch), so it runs at full speed and can never
// be mistaken for a profiled range.
#pragma once

#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "fprof/core/model.h"
#include "metrics_config.h"
#include "range_profiler.h"

namespace fprof::collector {

struct LaunchCounterResult {
  uint32_t correlation_id = 0;
  uint32_t nested_correlation_id = 0;
  core::KernelCounters counters;
  std::vector<std::pair<std::string, double>> raw;
};

struct LaunchRequest {
  CUcontext context = nullptr;
  uint32_t correlation_id = 0;
  uint32_t nested_correlation_id = 0;
  const char* symbol_name = nullptr;  // mangled
  const std::string* nvtx_path = nullptr;
  bool graph_launch = false;
  bool cooperative = false;
};

class MetricsCollector {
 public:
  // Returns false (and keeps metrics off) when the configuration cannot be used.
  bool configure(const MetricsConfig& config);
  bool enabled() const { return enabled_; }

  // At the driver launch callback (ENTER), just before the launch is submitted.
  void beforeLaunch(const LaunchRequest& launch);
  // At a driver memset/memcpy (ENTER): the driver may run it as a kernel, so the profiler stops.
  void beforeMemoryOperation(CUcontext context);
  // Stops and decodes every context (teardown, exit, signals). Safe to call repeatedly.
  void finishAll();

  std::vector<LaunchCounterResult> takeResults();
  std::vector<std::pair<std::string, std::string>> takeNotes();      // (severity, message)
  std::vector<std::pair<std::string, std::string>> takeMetadata();   // (key, value)

 private:
  struct ContextState {
    std::unique_ptr<RangeProfiler> profiler;
    std::vector<std::pair<uint32_t, uint32_t>> batch;  // correlation ids of the started ranges
    bool failed = false;
  };
  ContextState* contextState(CUcontext ctx);
  void decode(ContextState& s);
  void note(const char* severity, const std::string& message);
  void progress();
  std::string demangled(const char* symbol);

  std::mutex mu_;
  bool enabled_ = false;
  bool finished_ = false;
  MetricsConfig config_;
  std::unique_ptr<LaunchSelector> selector_;
  std::map<CUcontext, ContextState> contexts_;
  std::map<std::string, std::string> demangled_;
  std::vector<LaunchCounterResult> results_;
  std::vector<std::pair<std::string, std::string>> notes_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  std::map<std::string, uint64_t> unsafe_skips_;
  uint64_t profiled_ = 0;
  uint64_t mismatched_batches_ = 0;
  size_t passes_ = 0;
  std::chrono::steady_clock::time_point started_at_{};
  std::chrono::steady_clock::time_point last_progress_{};
};

}  // namespace fprof::collector
