// The strategy a context counts with (see counting_strategy.h).
#include "metrics/counting_strategy.h"

#include "metrics/metrics_run.h"
#include "metrics/range_counting.h"
#include "metrics/sass_patching_counting.h"

namespace fprof::collector {

void CountingStrategy::beginSteps() {
  launch_started_ = std::chrono::steady_clock::now();
  phase_mark_ = launch_started_;
}

void CountingStrategy::lap(LaunchStep step) {
  const auto now = std::chrono::steady_clock::now();
  run_.seconds.steps[static_cast<size_t>(step)] += std::chrono::duration<double>(now - phase_mark_).count();
  phase_mark_ = now;
}

double CountingStrategy::secondsSinceLaunchStarted() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - launch_started_).count();
}

std::unique_ptr<CountingStrategy> setUpCountingStrategy(MetricsRun& run, CUcontext ctx, CUdevice device,
                                                        bool& counts_programs_own_run) {
  if (run.config.replay == ReplayMode::kSassPatching) return SassPatchingCounting::setUp(run, ctx, device);
  return setUpRangeCounting(run, ctx, device, counts_programs_own_run);
}

}  // namespace fprof::collector
