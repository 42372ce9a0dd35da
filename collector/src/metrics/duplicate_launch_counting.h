// Application replay with SASS counts in the same run: before each profiled launch's own run, a
// duplicate of the launch is counted by SASS patching between a checkpoint of the context's memory
// (fprof's own where it can vouch for everything the launch may write, CUPTI's elsewhere) and its
// restore (duplicate_launch.h); its per-PC counts go to the file core::duplicatesPcFile names (in
// the run's cubin folder). Where a
// duplicate cannot be had (a launch fprof cannot repeat, a checkpoint through host memory, a slow
// or failed count), duplicates stop for the rest of the run and `fprof run` counts the SASS
// counters in a second run instead.
#pragma once

#include <cstdint>
#include <memory>

#include "metrics/application_replay_counting.h"
#include "metrics/counting_backend.h"

namespace fprof::collector {

class DuplicateLaunchCounting final : public ApplicationReplayCounting {
 public:
  DuplicateLaunchCounting(MetricsRun& run, std::unique_ptr<RangeCounter> profiler, CUcontext ctx)
      : ApplicationReplayCounting(run, std::move(profiler)), ctx_(ctx) {}
  // The checkpoint and SASS patching on this context; where they cannot be had, the run's
  // duplicates stop (and this context counts as plain application replay).
  void setUpDuplicate(CUdevice device);

 protected:
  void beforeSweep(const LaunchRequest& launch) override;
  void tearDownBeforeProfiler() override;

 private:
  // Why the duplicate of a launch would cost more than a second run (its checkpoint through host
  // memory), or ""; `held`: the device memory in use.
  std::string checkpointGoesThroughHost(size_t& held);
  bool countDuplicate(const LaunchRequest& launch, std::vector<core::SassPcFunction>& functions, std::string& error);
  void logDuplicate(const std::string& name, size_t held);

  CUcontext ctx_;
  uint32_t context_id_ = 0;  // CUPTI's, for the run's own kernel windows
  std::unique_ptr<DuplicateCounting> duplicate_;
};

}  // namespace fprof::collector
