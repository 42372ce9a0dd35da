// The range profiler's share of kernel and application replay (see range_counting.h).
#include "metrics/range_counting.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "injection/log.h"
#include "metrics/application_replay_counting.h"
#include "metrics/duplicate_launch_counting.h"
#include "metrics/kernel_replay_counting.h"
#include "metrics/lap_seconds.h"
#include "metrics/metrics_run.h"
#include "metrics/range_matching.h"

namespace fprof::collector {
namespace {

bool allFinite(const std::vector<double>& row) {
  return std::all_of(row.begin(), row.end(), [](double v) { return std::isfinite(v); });
}

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::string RangeSetupSeconds::text() const {
  char out[160];
  std::snprintf(out, sizeof out, "profiler=%.3f sweep=%.3f throwaway_range=%.3f duplicates=%.3f", profiler, sweep,
                throwaway_range, duplicates);
  return out;
}

std::string RangeCounting::begin(const LaunchRequest& launch, ProfiledLaunch e, WindowClaims& claims) {
  (void)claims;
  if (!useRanges(false)) return kCountersUnavailableReason;
  decodeIfFull();
  beforeStart(launch);
  std::string error;
  if (!profiler_->start(error)) {
    run_.log.note("error", "starting the range profiler: " + error);
    failed_ = true;
    return "the range profiler could not be started";
  }
  lap(LaunchStep::kStart);
  batch_.push_back(std::move(e));
  return "";
}

void RangeCounting::end(CUresult result) {
  if (!profiler_) return;  // the run ended inside this launch (an exit from its callback)
  std::string error;
  lap(LaunchStep::kLaunch);
  if (profiler_->userRanges() && !profiler_->popRange(error)) {
    run_.log.note("warning", "ending a graph launch's range: " + error);
  }
  if (!profiler_->stop(error)) run_.log.note("warning", "stopping the range profiler: " + error);
  lap(LaunchStep::kStop);
  afterStop();
  lap(LaunchStep::kEnd);
  run_.seconds.replay += secondsSinceLaunchStarted();  // the launch call, kernel replay included
  if (result != CUDA_SUCCESS && !batch_.empty()) {
    // A failed launch runs no kernel and makes no range; its kernel row will not exist either.
    if (!batch_.back().graph) --run_.profiled;
    batch_.pop_back();
  }
}

bool RangeCounting::useRanges(bool user) {
  if (profiler_->userRanges() == user) return true;
  decode();
  std::string error;
  if (profiler_->useUserRanges(user, error)) return true;
  run_.log.note("error", std::string("hardware counters stop here: enabling the range profiler again with ") +
                             (user ? "user ranges for a graph launch: " : "auto range after a graph launch: ") + error);
  failed_ = true;
  return false;
}

void RangeCounting::decodeIfFull() {
  if (batch_.size() >= run_.config.batch_ranges) decode();
}

void RangeCounting::decode() {
  if (batch_.empty()) return;
  const auto decode_started = std::chrono::steady_clock::now();
  std::vector<std::vector<double>> rows;
  std::vector<std::string> names;
  std::string error;
  if (!profiler_->stopAndDecode(rows, error, &names)) run_.log.note("warning", "decoding counters: " + error);
  if (run_.log.debugRanges()) {
    for (size_t i = 0; i < rows.size(); ++i) {
      logInfo("decoded range %zu '%s', first value %g", i, i < names.size() ? names[i].c_str() : "",
              rows[i].empty() ? 0.0 : rows[i][0]);
    }
  }
  keepRanges(rows, names);
  batch_.clear();
  run_.seconds.decode += secondsSince(decode_started);
}

// Each launch of the batch gets its range's values, or the reason it has none.
void RangeCounting::keepRanges(const std::vector<std::vector<double>>& rows, const std::vector<std::string>& names) {
  std::vector<ProfiledLaunchName> launches;
  launches.reserve(batch_.size());
  for (const ProfiledLaunch& e : batch_) launches.push_back({e.mangled, e.demangled});
  const std::vector<std::optional<size_t>> match = matchRangesToLaunches(names, rows.size(), launches);
  size_t matched = 0;
  for (size_t i = 0; i < batch_.size(); ++i) {
    const ProfiledLaunch& e = batch_[i];
    if (match[i]) {
      ++matched;
      const std::vector<double>& row = rows[*match[i]];
      if (!allFinite(row)) {
        missingNotANumber(e);
      } else if (e.graph) {
        run_.graphs.keepCountedWhole(e, row);
      } else {
        run_.ledger.keepDecoded(e, row, *match[i] < names.size() ? names[*match[i]] : std::string());
      }
    } else if (e.graph) {
      run_.ledger.missing(e.launch, "CUDA graph kernel: its graph launch was to be counted as one range, but the "
                                    "range profiler returned no range for it");
    } else {
      run_.ledger.missingWithCopies(e, "the range profiler returned no counter range for this launch",
                                    "the identical launch it would copy from got no counter range");
    }
  }
  if (matched != rows.size() || matched != batch_.size()) {
    run_.unmatched_ranges += rows.size() - matched;
    run_.log.note("warning", std::to_string(rows.size()) + " counter ranges for " + std::to_string(batch_.size()) +
                                 " profiled launches; " + std::to_string(matched) +
                                 " matched by kernel name and order, the others have no counters (with the reason "
                                 "stored)");
  }
}

// A range whose values are not numbers gives no counters, with the reason: stored, they failed the
// whole database's write (NOT NULL constraint on kernel_metric.value). CUPTI 13.0 returned one on an
// H100 after a user range named by a 100-character cuBLAS kernel name, whose name came back cut at
// 59 characters (bench/RESULTS.md).
void RangeCounting::missingNotANumber(const ProfiledLaunch& e) {
  static constexpr const char* kReason = "the range profiler returned a value that is not a number for its range";
  if (e.graph) return run_.ledger.missing(e.launch, std::string("CUDA graph kernel: ") + kReason);
  run_.ledger.missingWithCopies(e, kReason, "the identical launch it would copy from got a value that is not a number");
}

void RangeCounting::decodePending(CUcontext ctx) {
  if (!profiler_) return;
  CurrentContext current(run_.backend, ctx);
  decode();
}

void RangeCounting::finish(CUcontext ctx, TeardownSeconds& took) {
  if (!profiler_) return;
  CurrentContext current(run_.backend, ctx);
  // Decoded with the SASS Metrics API still configured, as every batch decoded during the run
  // (the transformer's 337 profiled launches, 256 a batch, on an H100: bench/RESULTS.md).
  auto mark = std::chrono::steady_clock::now();
  decode();
  took.decode += lapSeconds(mark);
  tearDownBeforeProfiler();
  took.duplicates += lapSeconds(mark);
  // Disable while the context lives: a range profiler still enabled when the context is
  // destroyed at exit crashed the target on an H200.
  profiler_->teardown();
  profiler_.reset();
  took.profiler += lapSeconds(mark);
}

void RangeCounting::recordSetupFacts() {
  const bool application = countsProgramsOwnRun();
  const bool cache_control = sweepsCaches() || profiler_->cacheControlApplied();
  run_.log.meta("replay_mode", application ? "application" : "kernel");
  if (application) {
    run_.log.meta("counting_session", profiler_->sessionKeptOpen()
                                          ? "one profiler session, counting switched on around each launch"
                                          : "a range profiler start and stop around each launch");
  }
  run_.log.meta("cache_control", cache_control ? "all" : "none");
  // Which caches fprof empties itself before a profiled launch (application replay): older
  // recordings, without this key, swept the L2 alone and counted a kernel's code fetches warm.
  if (sweepsCaches()) run_.log.meta("cache_sweep", "instruction caches, L2");
  if (run_.config.cache_control == CacheControl::kAllIfSupported && !cache_control && !application) {
    run_.log.note("info",
                  "caches are not invalidated between replay passes (cache control: none): the loaded CUPTI is older "
                  "than 13.4; DRAM bytes depend on what ran before each kernel (fprof run --cupti takes a newer "
                  "libcupti)");
  }
  run_.log.meta("metrics_passes", std::to_string(run_.passes));
  run_.log.meta("chip", profiler_->chip());
  run_.log.meta("mode", "metrics");
}

namespace {

// The replay's own part of the setup, after the profiler's: application replay's cache control,
// and the duplicates where asked for. Null where the context cannot count.
std::unique_ptr<RangeCounting> setUpReplay(MetricsRun& run, CUcontext ctx, CUdevice device,
                                           std::unique_ptr<RangeCounter> profiler,
                                           std::chrono::steady_clock::time_point& mark, RangeSetupSeconds& seconds) {
  if (profiler->replay() != ReplayMode::kApplication) {
    auto kernel = std::make_unique<KernelReplayCounting>(run, std::move(profiler));
    seconds.sweep = lapSeconds(mark);
    seconds.throwaway_range = lapSeconds(mark);
    seconds.duplicates = lapSeconds(mark);
    return kernel;
  }
  DuplicateLaunchCounting* duplicates = nullptr;
  std::unique_ptr<ApplicationReplayCounting> application;
  if (run.config.sass_duplicate) {
    auto d = std::make_unique<DuplicateLaunchCounting>(run, std::move(profiler), ctx);
    duplicates = d.get();
    application = std::move(d);
  } else {
    application = std::make_unique<ApplicationReplayCounting>(run, std::move(profiler));
  }
  if (!application->setUpCacheControl(device, mark, seconds)) return nullptr;
  if (duplicates != nullptr) duplicates->setUpDuplicate(device);
  seconds.duplicates = lapSeconds(mark);
  return application;
}

}  // namespace

std::unique_ptr<CountingStrategy> setUpRangeCounting(MetricsRun& run, CUcontext ctx, CUdevice device,
                                                     bool& counts_programs_own_run) {
  auto mark = std::chrono::steady_clock::now();
  std::unique_ptr<RangeCounter> profiler = run.backend.rangeCounter();
  profiler->keepSessionOpen(run.config.toggled_session);
  std::string error;
  const bool ready = profiler->setup(ctx, static_cast<int>(device), run.config.metrics, run.config.batch_ranges,
                                     run.config.cache_control, run.config.replay, error);
  RangeSetupSeconds seconds;
  seconds.profiler = lapSeconds(mark);
  if (!ready) {
    profiler.reset();
    run.log.note("error", "hardware counters unavailable, this context stays in trace mode: " + error);
    run.log.meta("mode", "trace");
    return nullptr;
  }
  run.passes = profiler->passes();
  counts_programs_own_run = profiler->replay() == ReplayMode::kApplication;
  std::unique_ptr<RangeCounting> strategy = setUpReplay(run, ctx, device, std::move(profiler), mark, seconds);
  if (strategy == nullptr) {
    run.log.meta("mode", "trace");
    return nullptr;
  }
  run.log.meta("metrics_setup_seconds", seconds.text());
  if (run.config.sass_duplicate && !counts_programs_own_run) {
    run.duplicates.stop(run.log, "the range profiler counts under kernel replay here");
  }
  strategy->recordSetupFacts();
  return strategy;
}

}  // namespace fprof::collector
