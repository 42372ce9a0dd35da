// The second run of two-run application replay: no replay and no range profiler; each profiled
// launch's functions are patched by CUPTI's SASS Metrics API to count every instruction
// (sass_patching.h). Its per-PC counts go to FPROF_SASS_PC_FILE (the SASS counters are derived from
// them after the run, once the functions' SASS is read); the launch keeps its warp instructions,
// which say whether identical launches did the same work.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "metrics/counting_backend.h"
#include "metrics/counting_strategy.h"

namespace fprof::collector {

class SassPatchingCounting final : public CountingStrategy {
 public:
  // Null where the SASS Metrics API cannot be had on the current context (the reason noted).
  static std::unique_ptr<SassPatchingCounting> setUp(MetricsRun& run, CUcontext ctx, CUdevice device);

  std::string begin(const LaunchRequest& launch, ProfiledLaunch e, WindowClaims& claims) override;
  void end(CUresult result) override;
  void finish(CUcontext ctx, TeardownSeconds& took) override;

 private:
  SassPatchingCounting(MetricsRun& run, std::unique_ptr<SassCounter> patching)
      : CountingStrategy(run), patching_(std::move(patching)) {}
  void keepCounts(const ProfiledLaunch& e, std::vector<core::SassPcFunction> functions, bool counted,
                  const std::string& error);
  void logPatchTimes(const ProfiledLaunch& e, double in_launch, const SassCounter::Seconds& before,
                     const SassCounter::Seconds& after);

  std::unique_ptr<SassCounter> patching_;  // null once the run has ended
  std::optional<ProfiledLaunch> counting_;  // the launch in the window
};

}  // namespace fprof::collector
