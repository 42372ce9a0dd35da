// Kernel replay: CUPTI's range profiler runs each profiled kernel once per pass inside its launch
// call, saving and restoring the device memory the kernel may write around the passes, so any
// number of passes is counted from one launch of the program; caches are invalidated between the
// passes where the loaded CUPTI can (13.4, cacheControlMode).
#pragma once

#include <memory>

#include "metrics/range_counting.h"

namespace fprof::collector {

class KernelReplayCounting final : public RangeCounting {
 public:
  using RangeCounting::RangeCounting;

 protected:
  void beforeStart(const LaunchRequest& launch) override;

 private:
  void warnIfReplayGoesThroughHost();
  bool warned_footprint_ = false;  // warnIfReplayGoesThroughHost said it once
};

}  // namespace fprof::collector
