// Metrics mode (see metrics_collector.h).
#include "metrics_collector.h"

#include <cupti.h>
#include <cxxabi.h>

#include <cstdlib>

#include "checks.h"
#include "log.h"
#include "fprof/core/metric_sets.h"

namespace fprof::collector {
namespace {
// True while this thread is inside the metrics collector: a driver call made from here (a decode
// synchronizes) may come back as a callback, which must not lock the mutex again.
thread_local bool t_inside = false;
struct Inside {
  Inside() { t_inside = true; }
  ~Inside() { t_inside = false; }
};
}  // namespace

bool MetricsCollector::configure(const MetricsConfig& config) {
  config_ = config;
  enabled_ = config.enabled && config.errors.empty() && !config.metrics.empty();
  for (const std::string& e : config.errors) logWarning("metrics mode off: %s", e.c_str());
  if (!enabled_) return false;
  selector_ = std::make_unique<LaunchSelector>(config_);
  std::string list;
  for (const std::string& m : config_.metrics) list += (list.empty() ? "" : ",") + m;
  metadata_.emplace_back("metric_set", config_.selection);
  metadata_.emplace_back("metrics", list);
  metadata_.emplace_back("cache_control", "none");
  metadata_.emplace_back("replay_mode", "kernel");
  started_at_ = last_progress_ = std::chrono::steady_clock::now();
  return true;
}

std::string MetricsCollector::demangled(const char* symbol) {
  if (symbol == nullptr) return {};
  auto it = demangled_.find(symbol);
  if (it != demangled_.end()) return it->second;
  int status = 0;
  char* d = abi::__cxa_demangle(symbol, nullptr, nullptr, &status);
  std::string name = (status == 0 && d != nullptr) ? d : symbol;
  std::free(d);
  demangled_.emplace(symbol, name);
  return name;
}

void MetricsCollector::note(const char* severity, const std::string& message) {
  notes_.emplace_back(severity, message);
  logWarning("%s", message.c_str());
}

MetricsCollector::ContextState* MetricsCollector::contextState(CUcontext ctx) {
  auto it = contexts_.find(ctx);
  if (it != contexts_.end()) return it->second.failed ? nullptr : &it->second;
  ContextState& s = contexts_[ctx];
  CUdevice device = 0;
  std::string error;
  if (!FPROF_CU_OK(cuCtxGetDevice(&device))) {
    s.failed = true;
    return nullptr;
  }
  s.profiler = std::make_unique<RangeProfiler>();
  if (!s.profiler->setup(ctx, static_cast<int>(device), config_.metrics, config_.batch_ranges, error)) {
    s.failed = true;
    s.profiler.reset();
    note("error", "hardware counters unavailable, this context stays in trace mode: " + error);
    metadata_.emplace_back("mode", "trace");
    return nullptr;
  }
  passes_ = s.profiler->passes();
  metadata_.emplace_back("metrics_passes", std::to_string(passes_));
  metadata_.emplace_back("chip", s.profiler->chip());
  metadata_.emplace_back("mode", "metrics");
  return &s;
}

void MetricsCollector::decode(ContextState& s) {
  if (!s.profiler || s.batch.empty()) return;
  std::vector<std::vector<double>> rows;
  std::string error;
  const bool ok = s.profiler->stopAndDecode(rows, error);
  if (!ok) note("warning", "decoding counters: " + error);
  if (rows.size() != s.batch.size()) {
    // Some launch became a range without passing our callback (or the reverse): no row can be
    // trusted to belong to its kernel, so none is kept.
    ++mismatched_batches_;
    note("warning", "counter ranges (" + std::to_string(rows.size()) + ") and profiled launches (" +
                        std::to_string(s.batch.size()) + ") differ; the batch's counters were discarded");
  } else {
    for (size_t i = 0; i < rows.size(); ++i) {
      LaunchCounterResult r;
      r.correlation_id = s.batch[i].first;
      r.nested_correlation_id = s.batch[i].second;
      r.counters = core::deriveCounters(config_.metrics, rows[i]);
      for (size_t m = 0; m < config_.metrics.size() && m < rows[i].size(); ++m) {
        r.raw.emplace_back(config_.metrics[m], rows[i][m]);
      }
      results_.push_back(std::move(r));
    }
  }
  s.batch.clear();
}

void MetricsCollector::progress() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_progress_ < std::chrono::seconds(2)) return;
  last_progress_ = now;
  const double elapsed = std::chrono::duration<double>(now - started_at_).count();
  logInfo("metrics: %llu kernels profiled (%zu passes each), %.1f s", static_cast<unsigned long long>(profiled_),
          passes_, elapsed);
}

void MetricsCollector::beforeLaunch(const LaunchRequest& launch) {
  if (!enabled_ || t_inside) return;
  Inside inside;
  std::lock_guard lock(mu_);
  if (finished_) return;
  LaunchFacts facts;
  facts.demangled_name = demangled(launch.symbol_name);
  facts.nvtx_path = launch.nvtx_path;
  facts.graph_launch = launch.graph_launch;
  facts.cooperative = launch.cooperative;
  std::string unsafe;
  const LaunchDecision decision = selector_->decide(facts, &unsafe);
  if (decision == LaunchDecision::kSkipUnsafe && unsafe_skips_[unsafe]++ == 0) {
    note("info", "not profiling " + facts.demangled_name + " (and others like it): " + unsafe +
                     "; they run unprofiled, in trace mode");
  }
  auto it = contexts_.find(launch.context);
  if (decision != LaunchDecision::kProfile) {
    // Not profiled: stop so this kernel runs natively and is no range. Ranges of several
    // start/stop sessions accumulate until one decode (checked on an H200), so no decode here.
    if (it != contexts_.end() && it->second.profiler && it->second.profiler->started()) {
      std::string error;
      if (!it->second.profiler->stop(error)) note("warning", "stopping the range profiler: " + error);
    }
    return;
  }
  ContextState* s = contextState(launch.context);
  if (s == nullptr) return;
  if (s->batch.size() >= config_.batch_ranges) decode(*s);
  std::string error;
  if (!s->profiler->start(error)) {
    note("error", "starting the range profiler: " + error);
    s->failed = true;
    return;
  }
  s->batch.emplace_back(launch.correlation_id, launch.nested_correlation_id);
  ++profiled_;
  progress();
}

void MetricsCollector::beforeMemoryOperation(CUcontext context) {
  if (!enabled_ || t_inside) return;
  std::lock_guard lock(mu_);
  auto it = contexts_.find(context);
  if (it == contexts_.end() || !it->second.profiler || !it->second.profiler->started()) return;
  std::string error;
  if (!it->second.profiler->stop(error)) note("warning", "stopping the range profiler: " + error);
}

void MetricsCollector::finishAll() {
  if (!enabled_ || t_inside) return;
  Inside inside;
  std::lock_guard lock(mu_);
  // Launches after this point (a program that goes on after cudaDeviceReset) run unprofiled.
  finished_ = true;
  for (auto& [ctx, s] : contexts_) {
    if (s.profiler == nullptr) continue;
    // Decoding needs the context current on this thread.
    CUcontext previous = nullptr;
    (void)cuCtxGetCurrent(&previous);
    if (previous != ctx) (void)cuCtxPushCurrent(ctx);
    decode(s);
    // Disable while the context lives: a range profiler still enabled when the context is
    // destroyed at exit crashed the target on an H200.
    s.profiler->teardown();
    s.profiler.reset();
    if (previous != ctx) (void)cuCtxPopCurrent(nullptr);
  }
  if (mismatched_batches_ > 0) {
    metadata_.emplace_back("metrics_discarded_batches", std::to_string(mismatched_batches_));
  }
  metadata_.emplace_back("metrics_kernels_profiled", std::to_string(profiled_));
}

std::vector<LaunchCounterResult> MetricsCollector::takeResults() {
  std::lock_guard lock(mu_);
  std::vector<LaunchCounterResult> out;
  out.swap(results_);
  return out;
}

std::vector<std::pair<std::string, std::string>> MetricsCollector::takeNotes() {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, std::string>> out;
  out.swap(notes_);
  return out;
}

std::vector<std::pair<std::string, std::string>> MetricsCollector::takeMetadata() {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, std::string>> out;
  out.swap(metadata_);
  return out;
}

}  // namespace fprof::collector
