// Application replay: the program's own execution of each profiled launch is counted, in one pass
// (CUPTI's user replay, no memory saved). Nothing else may run on the device meanwhile, so the
// context's earlier work is drained first and the launch's window keeps other threads' launches out
// until the kernel has finished; fprof empties the caches itself before it (l2_sweep.h), as ncu's
// --cache-control all. A CUDA graph launch can be counted whole here, as one user range.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "metrics/range_counting.h"

namespace fprof::collector {

class ApplicationReplayCounting : public RangeCounting {
 public:
  using RangeCounting::RangeCounting;

  // The cache sweep set up (unless cache control is none) and the first range counted and
  // dropped; false where the context cannot count. Each step's time into `seconds`.
  bool setUpCacheControl(CUdevice device, std::chrono::steady_clock::time_point& mark, RangeSetupSeconds& seconds);
  bool countsProgramsOwnRun() const override { return true; }
  // The first launches of each executable graph (samples per signature of them), as one range.
  bool beginGraphLaunch(const LaunchRequest& launch, LaunchRef ref) override;

 protected:
  void beforeStart(const LaunchRequest& launch) override;
  // The counted kernel ends before anything else starts (the synchronizations cost nothing
  // measurable: 44.1 ms a profiled launch without them, 44.2 with, bench/RESULTS.md).
  void afterStop() override;
  bool sweepsCaches() const override { return sweep_ != nullptr; }
  // A kernel launch's own run, between the drain and the sweep: the duplicate's place.
  virtual void beforeSweep(const LaunchRequest& launch) { (void)launch; }

 private:
  bool setUpSweep(CUdevice device);
  void countThrowawayRange();
  // Drains the context, counts the launch's duplicate (a kernel launch: `launch`; a graph launch:
  // none), sweeps the caches.
  bool prepareOwnRun(CUstream stream, const LaunchRequest* launch, std::string& error);

  std::unique_ptr<CacheSweep> sweep_;  // null: cache control none
};

}  // namespace fprof::collector
