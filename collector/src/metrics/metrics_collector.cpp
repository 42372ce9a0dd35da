// Metrics mode's dispatcher: windows, launch decisions, one strategy per context (see metrics_collector.h).
#include "metrics/metrics_collector.h"

#include <unistd.h>

#include "injection/log.h"

namespace fprof::collector {
namespace {
// True while this thread is inside the metrics collector: a driver call made from here (a decode
// synchronizes) may come back as a callback, which must not lock again.
thread_local bool t_inside = false;
struct Inside {
  Inside() { t_inside = true; }
  ~Inside() { t_inside = false; }
};

// The window this thread holds, from a launch's (or copy's) ENTER to its EXIT.
struct Window {
  std::unique_lock<std::mutex> lock;
  void* state = nullptr;  // MetricsCollector::ContextState*
  bool profiled = false;
  WindowClaims claims;  // what the strategy took that the EXIT gives back
  int depth = 0;  // a runtime launch wraps a driver launch: only the outermost driver call counts
};
thread_local Window t_window;

// The launch's entry while it is counted.
ProfiledLaunch profiledLaunch(const LaunchRequest& launch, const LaunchFacts& facts, const Decision& decision,
                              LaunchRef ref) {
  ProfiledLaunch e;
  e.launch = ref;
  e.mangled = launch.symbol_name != nullptr ? launch.symbol_name : "";
  e.demangled = facts.demangled_name;
  e.launch_index = decision.launch_index;
  e.signature = launch.signature;
  e.loose_signature = launch.loose_signature;
  e.graph_key = launch.graph_key;
  e.loose_check = decision.loose_check;
  e.loose_first_signature = decision.loose_first_signature;
  return e;
}

}  // namespace

bool MetricsCollector::configure(const MetricsConfig& config) {
  run_.config = config;
  enabled_ = config.enabled && config.errors.empty() && !config.metrics.empty();
  for (const std::string& e : config.errors) logWarning("metrics mode off: %s", e.c_str());
  if (!enabled_) return false;
  enabled_ = run_.start();
  started_at_ = last_progress_ = std::chrono::steady_clock::now();
  return enabled_;
}

CountingStrategy* MetricsCollector::strategyOf(ContextState& s) {
  if (s.set_up) return s.strategy != nullptr && !s.strategy->failed() ? s.strategy.get() : nullptr;
  s.set_up = true;
  CUcontext ctx = nullptr;
  CUdevice device = 0;
  if (!run_.backend.currentContextAndDevice(ctx, device)) return nullptr;
  s.strategy = setUpCountingStrategy(run_, ctx, device, s.counts_programs_own_run);
  return s.strategy.get();
}

void MetricsCollector::openWindow(const LaunchRequest& launch, ContextState& s) {
  LaunchFacts facts;
  facts.demangled_name = run_.demangled(launch.symbol_name);
  facts.nvtx_path = launch.nvtx_path;
  facts.selected_elsewhere = launch.selected_elsewhere;
  facts.graph_launch = launch.graph_launch;
  facts.cooperative = launch.cooperative;
  facts.signature = launch.signature;
  facts.loose_signature = launch.loose_signature;
  // A launch into a capturing stream runs nothing and makes no range: its kernels run, and are
  // decided, when the graph is launched.
  if (launch.capturing) return;
  const LaunchRef ref{launch.correlation_id, launch.nested_correlation_id};
  if (launch.graph_launch) return openGraphWindow(launch, facts, s, ref);
  const Decision decision = run_.selector->decide(facts);
  switch (decision.kind) {
    case LaunchDecision::kSkipUnsafe:
      if (unsafe_skips_[decision.reason]++ == 0) {
        run_.log.note("info", "not profiling " + facts.demangled_name + " (and others like it): " + decision.reason);
      }
      [[fallthrough]];
    case LaunchDecision::kSkipFiltered:
      return run_.ledger.missing(ref, decision.reason);
    case LaunchDecision::kCopy:
      return run_.ledger.copyOrWait(decision.source_index, ref);
    case LaunchDecision::kProfile:
      return countLaunch(launch, facts, decision, s, ref);
    case LaunchDecision::kGraph:  // decideGraphLaunch's alone
      return;
  }
}

void MetricsCollector::countLaunch(const LaunchRequest& launch, const LaunchFacts& facts, const Decision& decision,
                                   ContextState& s, LaunchRef ref) {
  CountingStrategy* strategy = strategyOf(s);
  if (strategy == nullptr) return run_.ledger.missing(ref, kCountersUnavailableReason);
  std::string reason = strategy->begin(launch, profiledLaunch(launch, facts, decision, ref), t_window.claims);
  if (!reason.empty()) return run_.ledger.missing(ref, std::move(reason));
  t_window.profiled = true;
  ++run_.profiled;
  progress();
}

// Every kernel of a graph launch gets the decision's reason unless the launch is counted whole
// (its kernels get theirs when its range is decoded) or its node finds a profiled launch to copy.
void MetricsCollector::openGraphWindow(const LaunchRequest& launch, const LaunchFacts& facts, ContextState& s,
                                       LaunchRef ref) {
  const Decision decision = run_.selector->decideGraphLaunch(facts);
  const bool selected = decision.kind == LaunchDecision::kGraph;
  const bool counted = selected && countGraphLaunch(launch, s, ref);
  if (selected) run_.graphs.selected(launch.correlation_id, s.counts_programs_own_run);
  if (!counted) run_.ledger.missing(ref, decision.reason);
}

bool MetricsCollector::countGraphLaunch(const LaunchRequest& launch, ContextState& s, LaunchRef ref) {
  if (launch.graph_exec == 0) return false;
  CountingStrategy* strategy = strategyOf(s);
  if (strategy == nullptr || !strategy->beginGraphLaunch(launch, ref)) return false;
  t_window.profiled = true;
  return true;
}

void MetricsCollector::beforeLaunch(const LaunchRequest& launch) {
  if (!enabled_ || t_inside) return;
  if (t_window.depth++ > 0) return;
  Inside inside;
  ContextState* s = nullptr;
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    s = &contexts_[launch.context];
  }
  // The window first, then the collector's lock: the order every path takes.
  t_window.lock = std::unique_lock<std::mutex>(s->window);
  t_window.state = s;
  t_window.profiled = false;
  std::lock_guard lock(mu_);
  if (finished_) return;
  openWindow(launch, *s);
}

void MetricsCollector::closeWindow(CUresult result) {
  auto* s = static_cast<ContextState*>(t_window.state);
  if (s == nullptr || !t_window.profiled || s->strategy == nullptr) return;
  s->strategy->end(result);
}

void MetricsCollector::afterLaunch(CUresult result) {
  if (!enabled_ || t_inside || t_window.depth == 0) return;
  if (--t_window.depth > 0) return;
  Inside inside;
  {
    std::lock_guard lock(mu_);
    closeWindow(result);
  }
  t_window.state = nullptr;
  t_window.profiled = false;
  if (t_window.claims.holds_flushes) {
    run_.backend.releaseFlushes();
    t_window.claims.holds_flushes = false;
  }
  if (t_window.lock.owns_lock()) t_window.lock.unlock();
}

void MetricsCollector::beforeMemoryOperation(CUcontext context) {
  if (!enabled_ || t_inside) return;
  if (t_window.depth++ > 0) return;
  ContextState* s = nullptr;
  {
    std::lock_guard lock(mu_);
    auto it = contexts_.find(context);
    if (finished_ || it == contexts_.end()) return;
    s = &it->second;
  }
  t_window.lock = std::unique_lock<std::mutex>(s->window);
  t_window.state = nullptr;  // nothing to stop: counting runs only inside profiled launches
}

void MetricsCollector::afterMemoryOperation() {
  if (!enabled_ || t_inside || t_window.depth == 0) return;
  if (--t_window.depth > 0) return;
  if (t_window.lock.owns_lock()) t_window.lock.unlock();
}

std::vector<std::pair<CUcontext, MetricsCollector::ContextState*>> MetricsCollector::contextStates() {
  std::vector<std::pair<CUcontext, ContextState*>> states;
  for (auto& [ctx, s] : contexts_) states.emplace_back(ctx, &s);
  return states;
}

void MetricsCollector::decodeOnFatalSignal() {
  if (!enabled_) return;
  Inside inside;
  std::vector<std::pair<CUcontext, ContextState*>> states;
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    states = contextStates();
  }
  for (auto& [ctx, s] : states) {
    std::unique_lock<std::mutex> window(s->window, std::try_to_lock);
    if (!window.owns_lock()) continue;  // the dying thread was inside a launch: its batch is lost
    std::lock_guard lock(mu_);
    if (s->strategy != nullptr) s->strategy->decodePending(ctx);
  }
}

void MetricsCollector::finishAll() {
  if (!enabled_ || t_inside) return;
  Inside inside;
  std::vector<std::pair<CUcontext, ContextState*>> states;
  {
    std::lock_guard lock(mu_);
    states = contextStates();
  }
  TeardownSeconds took;
  for (auto& [ctx, s] : states) {
    // A window held by this very thread (exit from inside a launch callback) is not waited for.
    std::unique_lock<std::mutex> window(s->window, std::defer_lock);
    if (!(t_window.lock.owns_lock() && t_window.lock.mutex() == &s->window)) window.lock();
    std::lock_guard lock(mu_);
    if (s->strategy != nullptr) s->strategy->finish(ctx, took);
  }
  std::lock_guard lock(mu_);
  run_.closePcFile();
  // Launches after this point (a program that goes on after cudaDeviceReset) run unprofiled.
  if (!finished_) {
    run_.ledger.giveUpWaitingCopies();
    run_.recordRunFacts(took.text());
  }
  finished_ = true;
}

void MetricsCollector::noteGraphNode(uint64_t node_id, std::optional<uint64_t> graph_key) {
  if (!enabled_) return;
  std::lock_guard lock(mu_);
  run_.graphs.noteNode(node_id, graph_key);
}

void MetricsCollector::noteGraphNodesUntrusted() {
  std::lock_guard lock(mu_);
  run_.graphs.untrustNodes();
}

void MetricsCollector::noteGraphNodeChanged(uint64_t node_id) {
  if (!enabled_) return;
  std::lock_guard lock(mu_);
  run_.graphs.noteNodeChanged(node_id);
}

void MetricsCollector::addGraphKernels(const std::vector<core::KernelRecord>& kernels) {
  if (!enabled_) return;
  std::lock_guard lock(mu_);
  run_.graphs.addKernels(kernels);
}

std::vector<LaunchCounterResult> MetricsCollector::takeResults() {
  std::lock_guard lock(mu_);
  run_.graphs.resolveKernels(finished_);
  return run_.ledger.takeResults();
}

std::vector<core::GraphLaunchCounters> MetricsCollector::takeGraphLaunchResults() {
  std::lock_guard lock(mu_);
  return run_.graphs.takeLaunchResults();
}

std::vector<std::pair<std::string, std::string>> MetricsCollector::takeNotes() {
  std::lock_guard lock(mu_);
  return run_.log.takeNotes();
}

std::vector<std::pair<std::string, std::string>> MetricsCollector::takeMetadata() {
  std::lock_guard lock(mu_);
  return run_.log.takeMetadata();
}

// Like the CLI's progress lines: only where someone watches (stderr a terminal), so logs of
// batch jobs and CI stay free of them.
void MetricsCollector::progress() {
  static const bool watched = ::isatty(STDERR_FILENO) == 1;
  if (!watched) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_progress_ < std::chrono::seconds(2)) return;
  last_progress_ = now;
  const double elapsed = std::chrono::duration<double>(now - started_at_).count();
  logInfo("metrics: %llu kernels profiled (%zu passes each), %llu identical launches given their values, %.1f s",
          static_cast<unsigned long long>(run_.profiled), run_.passes,
          static_cast<unsigned long long>(run_.ledger.copied()), elapsed);
}

}  // namespace fprof::collector
