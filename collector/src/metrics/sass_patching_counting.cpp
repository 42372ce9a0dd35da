// The second run, counted by SASS patching (see sass_patching_counting.h).
#include "metrics/sass_patching_counting.h"

#include <chrono>
#include <cstdio>
#include <vector>

#include "fprof/core/metric_sets.h"
#include "injection/log.h"
#include "metrics/lap_seconds.h"
#include "metrics/metrics_run.h"

namespace fprof::collector {

std::unique_ptr<SassPatchingCounting> SassPatchingCounting::setUp(MetricsRun& run, CUcontext ctx, CUdevice device) {
  std::unique_ptr<SassCounter> patching = run.backend.sassCounter();
  std::string error;
  if (!patching->setup(ctx, static_cast<int>(device), error)) {
    patching.reset();
    run.log.note("error", "SASS instruction counts unavailable, this context stays in trace mode: " + error);
    run.log.meta("mode", "trace");
    return nullptr;
  }
  run.passes = 1;
  run.log.meta("replay_mode", "sass_patching");
  run.log.meta("metrics_passes", "1");
  run.log.meta("chip", patching->chip());
  run.log.meta("mode", "metrics");
  return std::unique_ptr<SassPatchingCounting>(new SassPatchingCounting(run, std::move(patching)));
}

std::string SassPatchingCounting::begin(const LaunchRequest& launch, ProfiledLaunch e, WindowClaims& claims) {
  beginSteps();
  if (run_.log.debugRanges()) logInfo("SASS patching begins: %s", launch.symbol_name ? launch.symbol_name : "?");
  run_.backend.holdFlushes();  // released after the launch's EXIT
  claims.holds_flushes = true;
  std::string error;
  if (!patching_->begin(error)) {
    run_.log.note("error", "enabling SASS instruction counts: " + error);
    failed_ = true;
    return "the SASS Metrics API could not be enabled";
  }
  lap(LaunchStep::kStart);
  counting_ = std::move(e);
  return "";
}

void SassPatchingCounting::end(CUresult result) {
  if (!patching_) return;  // the run ended inside this launch (an exit from its callback)
  std::vector<core::SassPcFunction> functions;
  std::string error;
  const SassCounter::Seconds before = patching_->seconds();
  const double in_launch = secondsSinceLaunchStarted();
  const bool counted = patching_->end(functions, error);
  run_.seconds.replay += secondsSinceLaunchStarted();
  if (!counting_) return;
  const ProfiledLaunch e = std::move(*counting_);
  counting_.reset();
  if (run_.log.debugRanges()) logPatchTimes(e, in_launch, before, patching_->seconds());
  if (result != CUDA_SUCCESS) {  // no kernel ran, and no kernel row will exist
    --run_.profiled;
    return;
  }
  keepCounts(e, std::move(functions), counted, error);
}

// The launch's per-PC counts go to the PC file (the FLOP counters are derived from them after the
// run); the launch keeps its warp instructions.
void SassPatchingCounting::keepCounts(const ProfiledLaunch& e, std::vector<core::SassPcFunction> functions,
                                      bool counted, const std::string& error) {
  const double warp_inst = warpInstructions(functions);
  if (!counted || warp_inst == 0) {  // every kernel executes an instruction: 0 is a failed count
    const std::string why = counted ? "the SASS Metrics API counted no instruction of this launch"
                                    : "the SASS Metrics API's counts could not be read: " + error;
    if (run_.patch_failures++ == 0) {
      run_.log.note("warning", why + " (" + e.demangled + "; later ones are in kernel_counter_missing)");
    }
    run_.ledger.missingWithCopies(e, why, "the identical launch it would copy from was not counted");
    return;
  }
  run_.writePcCounts(core::SassPcLaunch{e.launch.correlation_id, e.launch.nested_correlation_id, std::move(functions)});
  LaunchCounterResult r;
  r.launch = e.launch;
  r.raw = {{core::kInstructionsSassMetric, warp_inst}};
  r.counters = core::deriveCounters({core::kInstructionsSassMetric}, {warp_inst});
  run_.ledger.keepCounted(e, std::move(r), "");
}

void SassPatchingCounting::logPatchTimes(const ProfiledLaunch& e, double in_launch, const SassCounter::Seconds& before,
                                         const SassCounter::Seconds& after) {
  logInfo("SASS patching %s: until the launch returned %.2f ms (enable %.2f), wait %.2f, read %.2f, disable %.2f",
          e.mangled.c_str(), in_launch * 1e3, (after.enable - before.enable) * 1e3, (after.wait - before.wait) * 1e3,
          (after.read - before.read) * 1e3, (after.disable - before.disable) * 1e3);
}

void SassPatchingCounting::finish(CUcontext ctx, TeardownSeconds& took) {
  if (!patching_) return;
  const SassCounter::Seconds& t = patching_->seconds();
  char text[160];
  std::snprintf(text, sizeof text, "enable %.3f, wait for the kernel %.3f, read %.3f, disable %.3f", t.enable, t.wait,
                t.read, t.disable);
  run_.log.meta("sass_patching_seconds", text);
  CurrentContext current(run_.backend, ctx);
  auto mark = std::chrono::steady_clock::now();
  patching_->teardown();
  patching_.reset();
  took.patching += lapSeconds(mark);
}

}  // namespace fprof::collector
