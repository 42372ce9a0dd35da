// Application replay (see application_replay_counting.h).
#include "metrics/application_replay_counting.h"

#include <string>
#include <vector>

#include "injection/log.h"
#include "metrics/lap_seconds.h"
#include "metrics/metrics_run.h"

namespace fprof::collector {

bool ApplicationReplayCounting::setUpCacheControl(CUdevice device, std::chrono::steady_clock::time_point& mark,
                                                  RangeSetupSeconds& seconds) {
  if (run_.config.cache_control != CacheControl::kNone && !setUpSweep(device)) return false;
  seconds.sweep = lapSeconds(mark);
  if (sweep_ != nullptr) countThrowawayRange();
  seconds.throwaway_range = lapSeconds(mark);
  return true;
}

// The L2 sweep (l2_sweep.h) before each profiled launch.
bool ApplicationReplayCounting::setUpSweep(CUdevice device) {
  std::unique_ptr<CacheSweep> sweep = run_.backend.cacheSweep();
  std::string error;
  if (sweep->setup(device, error)) {
    run_.log.meta("cache_sweep_kernels", sweep->loadedFrom());
    sweep_ = std::move(sweep);
    return true;
  }
  if (run_.config.cache_control == CacheControl::kAll) {
    run_.log.note("error",
                  "hardware counters unavailable, this context stays in trace mode: --cache-control all: " + error);
    return false;
  }
  run_.log.note("warning", "caches are not invalidated before profiled launches (cache control: none): " + error);
  return true;
}

// The first range a range profiler counts in the program's own run carries DRAM writes that are not
// its kernel's (H100, CUPTI 13.0: axpy's first profiled launch 72.9 MB written where every later one
// and ncu read 49.0; the transformer's first kernel 2.6-3.0 MB where ncu reads 0; the same with the
// sweep run twice or synchronized, bench/RESULTS.md). So the code sweep is counted once at set-up,
// in a range of its own that is decoded and dropped: afterwards the first profiled launch reads as
// every later one.
void ApplicationReplayCounting::countThrowawayRange() {
  std::string error;
  if (!run_.backend.synchronizeLogged() || !profiler().start(error) || !sweep_->launchCodeSweep(nullptr, error) ||
      !profiler().stop(error) || !run_.backend.synchronizeLogged()) {
    run_.log.note("warning", "the first range: " + error);
    return;
  }
  std::vector<std::vector<double>> rows;
  std::vector<std::string> names;
  if (!profiler().stopAndDecode(rows, error, &names)) run_.log.note("warning", "decoding the first range: " + error);
  if (run_.log.debugRanges()) {
    for (size_t i = 0; i < rows.size(); ++i) {
      std::string line = "throwaway range '" + (i < names.size() ? names[i] : std::string()) + "':";
      for (double v : rows[i]) line += " " + std::to_string(v);
      logInfo("%s", line.c_str());
    }
  }
}

void ApplicationReplayCounting::beforeStart(const LaunchRequest& launch) {
  beginSteps();
  std::string error;
  if (!prepareOwnRun(launch.stream, &launch, error)) run_.log.note("warning", "before a profiled launch: " + error);
}

void ApplicationReplayCounting::afterStop() { (void)run_.backend.synchronize(); }

bool ApplicationReplayCounting::prepareOwnRun(CUstream stream, const LaunchRequest* launch, std::string& error) {
  if (!profiler().readyToCount(error)) return false;
  if (CUresult r = run_.backend.synchronize(); r != CUDA_SUCCESS) {
    error = "cuCtxSynchronize failed (" + std::to_string(static_cast<int>(r)) + ")";
    return false;
  }
  lap(LaunchStep::kDrain);
  if (launch != nullptr) beforeSweep(*launch);
  lap(LaunchStep::kDuplicate);
  const bool swept = sweep_ == nullptr || sweep_->run(stream, error);
  lap(LaunchStep::kSweep);
  return swept;
}

bool ApplicationReplayCounting::beginGraphLaunch(const LaunchRequest& launch, LaunchRef ref) {
  if (!run_.graphs.wantsWholeCount(launch.graph_exec)) return false;
  if (!useRanges(true)) return false;
  decodeIfFull();
  std::string error;
  beginSteps();
  if (!prepareOwnRun(launch.stream, nullptr, error)) run_.log.note("warning", "before a counted graph launch: " + error);
  const std::string name = "graph launch " + std::to_string(ref.correlation_id);
  if (!profiler().start(error) || !profiler().pushRange(name.c_str(), error)) {
    run_.log.note("warning", "a CUDA graph launch was not counted: " + error);
    (void)profiler().stop(error);
    return false;
  }
  lap(LaunchStep::kStart);
  run_.graphs.countedWhole(launch.graph_exec);
  ProfiledLaunch e;
  e.launch = ref;
  e.mangled = name;
  e.demangled = name;
  e.graph = true;
  batch_.push_back(std::move(e));
  return true;
}

}  // namespace fprof::collector
