// SASS counts from a duplicate in the program's own run (see duplicate_launch_counting.h).
#include "metrics/duplicate_launch_counting.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "injection/log.h"
#include "metrics/metrics_run.h"

namespace fprof::collector {
namespace {

// A duplicate that takes this long a launch (a checkpoint saved through host memory: pinned host
// memory is saved at 0.6-0.8 s a GB on an H100) costs more than a second run of most programs.
constexpr double kDuplicateLimitSeconds = 0.5;

}  // namespace

void DuplicateLaunchCounting::setUpDuplicate(CUdevice device) {
  std::string error;
  if (!run_.backend.contextId(ctx_, context_id_, error)) return run_.duplicates.stop(run_.log, error);
  std::unique_ptr<DuplicateCounting> duplicate = run_.backend.duplicateCounter();
  if (!duplicate->setup(ctx_, static_cast<int>(device), run_.allocations, run_.modules, error)) {
    return run_.duplicates.stop(run_.log, error);
  }
  duplicate_ = std::move(duplicate);
}

// The checkpoint keeps its copy of the context's memory in free device memory while there is room
// for it, and in host memory past that, at about a second a GB (pinned host memory measured on an
// H100, 0.6-0.8 s a GB). `held`: the device memory in use (the context's, fprof's own buffers
// included, and other processes').
std::string DuplicateLaunchCounting::checkpointGoesThroughHost(size_t& held) {
  size_t free_bytes = 0, total_bytes = 0;
  if (!run_.backend.memoryInfo(free_bytes, total_bytes)) return {};
  constexpr size_t kMargin = size_t{256} << 20;
  held = total_bytes - free_bytes;
  if (free_bytes >= held + kMargin) return {};
  char text[200];
  std::snprintf(text, sizeof text,
                "the program holds %.1f of the device's %.1f GiB: a checkpoint of it would go through host memory, "
                "about a second a GB",
                double(held) / double(1ull << 30), double(total_bytes) / double(1ull << 30));
  return text;
}

void DuplicateLaunchCounting::beforeSweep(const LaunchRequest& launch) {
  if (!duplicate_ || !run_.duplicates.stopped_why.empty()) return;
  const std::string name = run_.demangled(launch.symbol_name);
  if (!canRelaunch(launch.cbid) || launch.driver_params == nullptr) {
    return run_.duplicates.stop(run_.log, "a launch by a driver call fprof cannot repeat (" + name + ")");
  }
  size_t held = 0;
  if (const std::string why = checkpointGoesThroughHost(held); !why.empty()) return run_.duplicates.stop(run_.log, why);
  run_.duplicates.device_memory_held_max = std::max(run_.duplicates.device_memory_held_max, held);
  std::vector<core::SassPcFunction> functions;
  std::string error;
  const bool counted = countDuplicate(launch, functions, error);
  const DuplicateCounting::Seconds& last = duplicate_->last();
  run_.duplicates.add(last);
  if (run_.log.debugRanges()) logDuplicate(name, held);
  if (!counted) return run_.duplicates.stop(run_.log, error + " (" + name + ")");
  if (warpInstructions(functions) == 0) {
    return run_.duplicates.stop(run_.log, "the SASS Metrics API counted no instruction of a duplicate (" + name + ")");
  }
  run_.writePcCounts(core::SassPcLaunch{launch.correlation_id, launch.nested_correlation_id, std::move(functions)});
  ++run_.duplicates.counted;
  if (const double took = last.save + last.duplicate + last.restore; took > kDuplicateLimitSeconds) {
    char text[160];
    std::snprintf(text, sizeof text, "a duplicate took %.0f ms (checkpoint save %.0f, restore %.0f)", took * 1e3,
                  last.save * 1e3, last.restore * 1e3);
    run_.duplicates.stop(run_.log, text);
  }
}

// The duplicate itself, with no activity flush while functions are patched, the concurrent kernel
// records paused (the SASS Metrics API counts 0 while they are on) and its kernels' records left
// out of the trace (the run's own kernel windows).
bool DuplicateLaunchCounting::countDuplicate(const LaunchRequest& launch, std::vector<core::SassPcFunction>& functions,
                                             std::string& error) {
  CountingBackend& backend = run_.backend;
  backend.holdFlushes();
  const bool paused = backend.pauseConcurrentKernelRecords();
  if (run_.own_windows != nullptr) run_.own_windows->open(context_id_, backend.timestampNs());
  const DriverLaunchCall call{launch.cbid, launch.driver_params, launch.stream, launch.function, launch.symbol_name};
  const bool counted = duplicate_->count(call, functions, error);
  if (run_.own_windows != nullptr) run_.own_windows->close(context_id_, backend.timestampNs());
  if (paused) backend.resumeConcurrentKernelRecords();
  backend.releaseFlushes();
  return counted;
}

void DuplicateLaunchCounting::logDuplicate(const std::string& name, size_t held) {
  const DuplicateCounting::Seconds& last = duplicate_->last();
  logInfo("duplicate of %s: save %.2f ms, patched duplicate %.2f ms, restore %.2f ms, device memory in use %.0f MiB, "
          "%s checkpoint%s%s",
          name.c_str(), last.save * 1e3, last.duplicate * 1e3, last.restore * 1e3, double(held) / double(1 << 20),
          last.own_checkpoint ? "own" : "CUPTI", last.own_checkpoint ? "" : ": ", last.why_not_own.c_str());
}

void DuplicateLaunchCounting::tearDownBeforeProfiler() {
  if (!duplicate_) return;
  // The own checkpoint's copy is freed here: its release record is not the program's.
  if (run_.own_windows != nullptr) run_.own_windows->open(context_id_, run_.backend.timestampNs());
  duplicate_->teardown();
  duplicate_.reset();
  if (run_.own_windows != nullptr) run_.own_windows->close(context_id_, run_.backend.timestampNs());
}

}  // namespace fprof::collector
