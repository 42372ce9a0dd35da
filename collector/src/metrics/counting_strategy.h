// How one context's profiled launches are counted: one strategy per method, behind one interface,
// chosen once per context at its first profiled launch (setUpCountingStrategy):
//
//   KernelReplayCounting       CUPTI's kernel replay: each profiled kernel run once per pass,
//                              device memory saved and restored around the passes
//   ApplicationReplayCounting  the program's own run of the launch, its context drained and the
//                              caches swept before it; CUDA graph launches counted whole
//   DuplicateLaunchCounting    the same, and before it a duplicate of the launch counted by SASS
//                              patching between a checkpoint (fprof's own or CUPTI's) and its restore
//   SassPatchingCounting       the second run: each profiled launch's functions patched to count
//                              every SASS instruction, nothing replayed
//
// The metrics collector (metrics_collector.h) holds each launch's window, decides which launches
// are counted and calls the strategy; the strategy talks to CUPTI through the counting backend and
// puts what it counted into the run's ledger (metrics_run.h).
#pragma once

#include <cuda.h>
#include <cupti_callbacks.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "metrics/counter_ledger.h"

namespace fprof::collector {

struct MetricsRun;
struct TeardownSeconds;
enum class LaunchStep;

struct LaunchRequest {
  CUcontext context = nullptr;
  CUstream stream = nullptr;  // where the kernel runs (the per-thread stream resolved)
  uint32_t correlation_id = 0;
  uint32_t nested_correlation_id = 0;
  const char* symbol_name = nullptr;  // mangled
  const std::string* nvtx_path = nullptr;
  bool selected_elsewhere = false;  // see LaunchFacts::selected_elsewhere
  bool graph_launch = false;
  uint64_t graph_exec = 0;  // the CUgraphExec a graph launch runs (0 = unknown)
  bool cooperative = false;
  bool capturing = false;             // the stream records a graph: nothing runs now
  std::optional<uint64_t> signature;  // see LaunchFacts::signature
  std::optional<uint64_t> loose_signature;  // see LaunchFacts::loose_signature
  std::optional<uint64_t> graph_key;        // the loose signature without the cluster shape
  // The driver call itself, for a duplicate of the launch (MetricsConfig::sass_duplicate).
  CUpti_CallbackId cbid = 0;
  const void* driver_params = nullptr;
  CUfunction function = nullptr;  // the context's function behind the launch's handle (null: unknown)
};

// What a strategy's begin leaves for the collector to undo at the launch's EXIT, after its own lock.
struct WindowClaims {
  bool holds_flushes = false;  // the activity API's flushes held (CountingBackend::holdFlushes)
};

// The reason a launch gets where its context cannot count (setup failed, or a strategy failed since).
inline constexpr const char* kCountersUnavailableReason =
    "hardware counters unavailable on this context (see the collector's error)";

class CountingStrategy {
 public:
  explicit CountingStrategy(MetricsRun& run) : run_(run) {}
  virtual ~CountingStrategy() = default;
  CountingStrategy(const CountingStrategy&) = delete;
  CountingStrategy& operator=(const CountingStrategy&) = delete;

  // Counting failed past recovery on this context: later launches get kCountersUnavailableReason.
  bool failed() const { return failed_; }
  // The program's own run is counted (application replay), which can count graph launches whole.
  virtual bool countsProgramsOwnRun() const { return false; }

  // A profiled kernel launch, at its driver callback's ENTER: what it needs before the launch is
  // submitted, then counting on. "" when it is counted (`e` kept until its counters are read);
  // otherwise the reason its kernel has no counters.
  virtual std::string begin(const LaunchRequest& launch, ProfiledLaunch e, WindowClaims& claims) = 0;
  // A graph launch to count whole, as one range; false where it is not counted (its kernels keep
  // the graph reason). Only application replay can.
  virtual bool beginGraphLaunch(const LaunchRequest& launch, LaunchRef ref) {
    (void)launch, (void)ref;
    return false;
  }
  // At the EXIT of a launch that begin (or beginGraphLaunch) counted.
  virtual void end(CUresult result) = 0;
  // On a fatal signal: the launches counted since the last batch decoded, with `ctx` made current.
  virtual void decodePending(CUcontext ctx) { (void)ctx; }
  // The run's end on this context (made current here): everything decoded, CUPTI's objects gone.
  virtual void finish(CUcontext ctx, TeardownSeconds& took) = 0;

 protected:
  void beginSteps();            // a profiled launch's window opens
  void lap(LaunchStep step);    // the step that just ended
  double secondsSinceLaunchStarted() const;

  MetricsRun& run_;
  bool failed_ = false;

 private:
  std::chrono::steady_clock::time_point launch_started_{};  // of the profiled launch in its window
  std::chrono::steady_clock::time_point phase_mark_{};      // the end of its last timed step
};

// The strategy for the current context (`ctx`, device `device`) from the run's configuration and,
// for the range profiler, the replay its setup chose; null where the context cannot count (the
// reason noted, metadata mode=trace). `counts_programs_own_run` is set as soon as the replay is
// known, also where a later step of the setup failed.
std::unique_ptr<CountingStrategy> setUpCountingStrategy(MetricsRun& run, CUcontext ctx, CUdevice device,
                                                        bool& counts_programs_own_run);

}  // namespace fprof::collector
