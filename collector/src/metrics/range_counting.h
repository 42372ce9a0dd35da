// What kernel replay and application replay share: the range profiler of one context, started
// and stopped around each profiled launch (auto range: one range per kernel; user ranges: a graph
// launch), its ranges decoded in batches, because a decode synchronizes the context, and matched
// to the batch's launches by name and order (range_matching.h).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "metrics/counting_backend.h"
#include "metrics/counting_strategy.h"

namespace fprof::collector {

// What a context's setup took, in metadata.metrics_setup_seconds.
struct RangeSetupSeconds {
  double profiler = 0, sweep = 0, throwaway_range = 0, duplicates = 0;
  std::string text() const;  // "profiler=0.210 sweep=0.003 throwaway_range=0.020 duplicates=0.000"
};

class RangeCounting : public CountingStrategy {
 public:
  RangeCounting(MetricsRun& run, std::unique_ptr<RangeCounter> profiler)
      : CountingStrategy(run), profiler_(std::move(profiler)) {}

  std::string begin(const LaunchRequest& launch, ProfiledLaunch e, WindowClaims& claims) override;
  void end(CUresult result) override;
  void decodePending(CUcontext ctx) override;
  void finish(CUcontext ctx, TeardownSeconds& took) override;
  // The context's counting facts, into the metadata once its setup is done.
  void recordSetupFacts();

 protected:
  // Before counting starts for a kernel launch (a full batch already decoded): the method's own
  // steps, which begin the launch's timed steps (beginSteps).
  virtual void beforeStart(const LaunchRequest& launch) = 0;
  virtual void afterStop() {}
  virtual bool sweepsCaches() const { return false; }
  // At the run's end, after the last decode and before the profiler goes.
  virtual void tearDownBeforeProfiler() {}

  // User ranges for a graph launch counted whole, auto range for kernels. The range mode changes
  // only with nothing left to decode (the profiler is enabled again).
  bool useRanges(bool user);
  void decodeIfFull();
  void decode();
  RangeCounter& profiler() { return *profiler_; }

  std::vector<ProfiledLaunch> batch_;  // profiled launches whose ranges are not decoded yet

 private:
  void keepRanges(const std::vector<std::vector<double>>& rows, const std::vector<std::string>& names);
  void missingNotANumber(const ProfiledLaunch& e);

  std::unique_ptr<RangeCounter> profiler_;  // null once the run has ended
};

// The range profiler set up on the current context, and the strategy for the replay it chose.
std::unique_ptr<CountingStrategy> setUpRangeCounting(MetricsRun& run, CUcontext ctx, CUdevice device,
                                                     bool& counts_programs_own_run);

}  // namespace fprof::collector
