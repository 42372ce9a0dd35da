// What one metrics run shares across its contexts and counting strategies: the configuration, the
// counting backend, the ledger of results, graph launches, notes and metadata, and what counting
// cost. The metrics collector owns it and hands it to the strategies it sets up; every use is
// under the collector's lock. Pure C++.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cupti/own_checkpoint_map.h"
#include "fprof/core/sass_pc.h"
#include "metrics/counter_ledger.h"
#include "metrics/counting_backend.h"
#include "metrics/graph_launch_counting.h"
#include "metrics/metrics_config.h"
#include "metrics/own_kernel_windows.h"
#include "metrics/run_log.h"

namespace fprof::collector {

// The steps of a profiled launch's window, timed apart (metadata.metrics_launch_steps_seconds).
enum class LaunchStep { kDrain, kDuplicate, kSweep, kStart, kLaunch, kStop, kEnd, kCount };

// What profiling cost: the profiled launches' calls (kernel replay runs inside them), by step, and decoding.
struct CountingSeconds {
  double replay = 0, decode = 0;
  std::array<double, static_cast<size_t>(LaunchStep::kCount)> steps{};  // `replay` by step
  // "drain=0.120 duplicate=0.000 sweep=0.004 start=1.234 launch=0.456 stop=1.111 end=0.222"
  // (drain: the program's earlier work; end: the counted kernel and what CUPTI runs with it).
  std::string launchStepsText() const;
};

// Where the end of a metrics run's time goes, per step, summed over contexts (seconds).
struct TeardownSeconds {
  double patching = 0, decode = 0, duplicates = 0, profiler = 0;
  std::string text() const;  // "patching=0.000 decode=0.120 duplicates=0.000 profiler=0.015"
};

// The duplicates of profiled launches counted in the program's own run (duplicate_launch_counting.h),
// over every context: they stop, for the rest of the run, at the first reason to.
struct DuplicateTally {
  uint64_t counted = 0;       // profiled launches whose duplicate was counted
  std::string stopped_why;    // why duplicates stopped (or never started): "" = they did not
  DuplicateCounting::Seconds seconds;  // summed (its own_checkpoint fields unused)
  uint64_t own_checkpoints = 0;
  uint64_t own_checkpoint_bytes_max = 0;
  std::map<std::string, uint64_t> cupti_checkpoints;  // why CUPTI's held a duplicate -> launches
  size_t device_memory_held_max = 0;  // the most device memory in use at a checkpoint

  // The first reason stops them, said once (as info: the counts come from a second run instead).
  void stop(RunLog& log, const std::string& why);
  void add(const DuplicateCounting::Seconds& last);
  // "save=0.120 duplicate=0.250 restore=0.030 launches=113": what the duplicates cost.
  std::string secondsText() const;
  // "own=80 (at most 201326592 bytes) cupti=35 (30: its module calls vprintf ...; 5: ...)": which
  // checkpoint held each duplicate's memory, and why the CUPTI one where it did.
  std::string checkpointsText() const;
};

// Executed warp instructions over every PC counted: 0 means the count failed (every kernel
// executes an instruction).
double warpInstructions(const std::vector<core::SassPcFunction>& functions);

struct MetricsRun {
  explicit MetricsRun(CountingBackend& counting_backend)
      : backend(counting_backend), ledger(config, log), graphs(config, log, ledger) {}
  MetricsRun(const MetricsRun&) = delete;
  MetricsRun& operator=(const MetricsRun&) = delete;
  ~MetricsRun() { closePcFile(); }

  // The run begins with `config` set: the SASS metrics the loaded CUPTI cannot count left out (said
  // so), the launch selector made, the configuration into the metadata. False where no metric is left.
  bool start();
  // The per-PC counts of a launch counted by SASS patching, appended to config.sass_pc_file (a
  // second run's processes share it per rank; duplicates write one per database).
  void writePcCounts(const core::SassPcLaunch& launch);
  void closePcFile();
  const std::string& demangled(const char* symbol);
  // What the run's counting cost and covered, into the metadata once at its end.
  void recordRunFacts(const std::string& teardown);

  CountingBackend& backend;
  MetricsConfig config;
  RunLog log;
  std::unique_ptr<LaunchSelector> selector;
  CounterLedger ledger;
  GraphLaunchCounting graphs;
  DuplicateTally duplicates;
  CountingSeconds seconds;
  uint64_t profiled = 0;          // launches counted (graph launches counted whole are not)
  size_t passes = 0;              // replay passes a profiled launch takes
  uint64_t unmatched_ranges = 0;  // ranges no profiled launch matched
  uint64_t patch_failures = 0;    // kSassPatching: profiled launches without counts
  OwnKernelWindows* own_windows = nullptr;  // where a duplicate and its checkpoint ran
  const AllocationMap* allocations = nullptr;  // what fprof's own checkpoint reads
  const ModuleWritesIndex* modules = nullptr;

 private:
  void recordConfiguration();
  std::FILE* pc_file_ = nullptr;  // opened at the first count
  std::unordered_map<std::string, std::string> demangled_;
};

}  // namespace fprof::collector
