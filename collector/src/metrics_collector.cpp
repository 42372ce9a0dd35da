// Metrics mode (see metrics_collector.h).
#include "metrics_collector.h"

#include <cupti.h>
#include <cxxabi.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string_view>

#include "checks.h"
#include "cupti_activity_api.h"
#include "lap_seconds.h"
#include "fprof/core/metric_sets.h"
#include "log.h"
#include "range_matching.h"

namespace fprof::collector {
namespace {
// True while this thread is inside the metrics collector: a driver call made from here (a decode
// synchronizes) may come back as a callback, which must not lock again.
thread_local bool t_inside = false;
struct Inside {
  Inside() { t_inside = true; }
  ~Inside() { t_inside = false; }
};

// A context made current on this thread for as long as it lives (decoding needs it current).
class CurrentContext {
 public:
  explicit CurrentContext(CUcontext ctx) : ctx_(ctx) {
    (void)cuCtxGetCurrent(&previous_);
    if (previous_ != ctx_) (void)cuCtxPushCurrent(ctx_);
  }
  ~CurrentContext() {
    if (previous_ != ctx_) (void)cuCtxPopCurrent(nullptr);
  }
  CurrentContext(const CurrentContext&) = delete;
  CurrentContext& operator=(const CurrentContext&) = delete;

 private:
  CUcontext ctx_;
  CUcontext previous_ = nullptr;
};

// The window this thread holds, from a launch's (or copy's) ENTER to its EXIT.
struct Window {
  std::unique_lock<std::mutex> lock;
  void* state = nullptr;  // MetricsCollector::ContextState*
  bool profiled = false;
  bool holds_flushes = false;  // a launch counted by SASS patching (CuptiActivityApi::holdFlushes)
  int depth = 0;  // a runtime launch wraps a driver launch: only the outermost driver call counts
};
thread_local Window t_window;

// Counts whose equality says two launches did the same work (bytes and time vary run to run).
bool isDeterministic(const std::string& metric) {
  return metric.find("inst_executed") != std::string::npos || metric.find("ops_path_tensor") != std::string::npos;
}

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

bool sameDeterministicCounts(const std::vector<std::pair<std::string, double>>& a,
                             const std::vector<std::pair<std::string, double>>& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (isDeterministic(a[i].first) && a[i].second != b[i].second) return false;
  }
  return true;
}

// Executed warp instructions over every PC counted: 0 means the count failed (every kernel executes
// an instruction).
double warpInstructions(const std::vector<core::SassPcFunction>& functions) {
  double warp_inst = 0;
  for (const core::SassPcFunction& f : functions) {
    for (const core::SassPcCount& p : f.pcs) warp_inst += static_cast<double>(p.warp_inst);
  }
  return warp_inst;
}

}  // namespace

// A CUPTI newer than the driver (the 13.4 wheel on a 13.0 driver, for its cache control) counted 0
// for every SASS instruction metric on an H100 (bench/RESULTS.md, issue 15): those metrics are
// left out there rather than recorded as zeros, so FLOPs read unknown, never 0.
namespace {
bool sassCountersUnreliable(std::string& why) {
  uint32_t cupti = 0;
  int driver = 0;
  if (cuptiGetVersion(&cupti) != CUPTI_SUCCESS || cuDriverGetVersion(&driver) != CUDA_SUCCESS) return false;
  const int cupti_release = static_cast<int>(cupti / 100);  // 130401 -> 1304
  const int driver_release = driver / 10;                   // 13000 -> 1300
  if (cupti_release <= driver_release) return false;
  why = "CUPTI " + std::to_string(cupti_release / 100) + "." + std::to_string(cupti_release % 100) +
        " is newer than the driver's CUDA " + std::to_string(driver_release / 100) + "." +
        std::to_string(driver_release % 100) +
        ", and counts 0 for SASS instruction metrics there: FLOP and instruction-mix counters are not collected in "
        "this run (a CUPTI as old as the driver collects them, without cache control)";
  return true;
}
}  // namespace

bool MetricsCollector::configure(const MetricsConfig& config) {
  config_ = config;
  enabled_ = config.enabled && config.errors.empty() && !config.metrics.empty();
  for (const std::string& e : config.errors) logWarning("metrics mode off: %s", e.c_str());
  if (!enabled_) return false;
  if (std::string why; sassCountersUnreliable(why)) {
    std::erase_if(config_.metrics, core::isSassInstrumented);
    note("warning", why);
    if (config_.metrics.empty()) {
      enabled_ = false;
      return false;
    }
  }
  selector_ = std::make_unique<LaunchSelector>(config_);
  debug_ranges_ = config_.debug_ranges;
  auto commaList = [](const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& i : items) out += (out.empty() ? "" : ",") + i;
    return out;
  };
  metadata_.emplace_back("metric_set", config_.selection);
  metadata_.emplace_back("metrics", commaList(config_.metrics));
  if (!config_.nvtx_include.empty()) {
    metadata_.emplace_back("nvtx_include", commaList(config_.nvtx_include));
    metadata_.emplace_back("nvtx_scope", config_.nvtx_process_scope ? "process" : "thread");
  }
  metadata_.emplace_back("samples_per_launch_kind", config_.samples_per_signature == 0
                                                        ? std::string("every launch")
                                                        : std::to_string(config_.samples_per_signature));
  started_at_ = last_progress_ = std::chrono::steady_clock::now();
  return true;
}

const std::string& MetricsCollector::demangled(const char* symbol) {
  static const std::string none;
  if (symbol == nullptr) return none;
  auto it = demangled_.find(symbol);
  if (it != demangled_.end()) return it->second;
  int status = 0;
  char* d = abi::__cxa_demangle(symbol, nullptr, nullptr, &status);
  std::string name = (status == 0 && d != nullptr) ? d : symbol;
  std::free(d);
  return demangled_.emplace(symbol, std::move(name)).first->second;
}

// Stored as a collector event; shown on stderr, as a warning unless it is only information.
void MetricsCollector::note(const char* severity, const std::string& message) {
  notes_.emplace_back(severity, message);
  if (std::string_view(severity) == "info") {
    logInfo("%s", message.c_str());
  } else {
    logWarning("%s", message.c_str());
  }
}

void MetricsCollector::missing(LaunchRef launch, std::string reason) {
  LaunchCounterResult r;
  r.launch = launch;
  r.missing_reason = std::move(reason);
  results_.push_back(std::move(r));
}

MetricsCollector::ContextState& MetricsCollector::stateOf(CUcontext ctx) { return contexts_[ctx]; }

// Cache control under application replay: the L2 sweep (l2_sweep.h) before each profiled launch.
bool MetricsCollector::setUpSweep(ContextState& s, CUdevice device) {
  auto sweep = std::make_unique<L2Sweep>();
  std::string error;
  if (sweep->setup(device, error)) {
    metadata_.emplace_back("cache_sweep_kernels", sweep->loadedFrom());
    s.sweep = std::move(sweep);
    return true;
  }
  if (config_.cache_control == CacheControl::kAll) {
    note("error", "hardware counters unavailable, this context stays in trace mode: --cache-control all: " + error);
    return false;
  }
  note("warning", "caches are not invalidated before profiled launches (cache control: none): " + error);
  return true;
}

// Kernel replay saves and restores the device memory a kernel may write; once the program holds
// more than half of the device that goes through host memory, seconds a profiled kernel (12 s
// with 48 of 80 GiB held, bench/RESULTS.md issue 15; JAX preallocates 75% by default). Said once
// a context, at the first profiled launch that finds it so.
void MetricsCollector::warnIfReplayGoesThroughHost(ContextState& s) {
  if (s.warned_footprint) return;
  size_t free_bytes = 0, total_bytes = 0;
  if (cuMemGetInfo(&free_bytes, &total_bytes) != CUDA_SUCCESS || total_bytes == 0) return;
  const size_t held = total_bytes - free_bytes;
  if (held <= total_bytes / 2) return;
  s.warned_footprint = true;
  char text[512];
  std::snprintf(text, sizeof text,
                "the program holds %.1f of the device's %.1f GiB: kernel replay saves and restores the memory a "
                "kernel may write through host memory past about half of the device, seconds a profiled kernel; "
                "--replay application counts the program's own run without replay (JAX: or "
                "XLA_PYTHON_CLIENT_PREALLOCATE=false)",
                double(held) / double(1ull << 30), double(total_bytes) / double(1ull << 30));
  note("warning", text);
}

// The first range a range profiler counts in the program's own run carries DRAM writes that are not
// its kernel's (H100, CUPTI 13.0: axpy's first profiled launch 72.9 MB written where every later one
// and ncu read 49.0; the transformer's first kernel 2.6-3.0 MB where ncu reads 0; the same with the
// sweep run twice or synchronized, bench/RESULTS.md issue 15). So the code sweep is counted once at
// set-up, in a range of its own that is decoded and dropped: afterwards the first profiled launch
// reads as every later one.
void MetricsCollector::countThrowawayRange(ContextState& s) {
  std::string error;
  if (!FPROF_CU_OK(cuCtxSynchronize()) || !s.profiler->start(error) || !s.sweep->launchCodeSweep(nullptr, error) ||
      !s.profiler->stop(error) || !FPROF_CU_OK(cuCtxSynchronize())) {
    note("warning", "the first range: " + error);
    return;
  }
  std::vector<std::vector<double>> rows;
  std::vector<std::string> names;
  if (!s.profiler->stopAndDecode(rows, error, &names)) note("warning", "decoding the first range: " + error);
  if (debug_ranges_) {
    for (size_t i = 0; i < rows.size(); ++i) {
      std::string line = "throwaway range '" + (i < names.size() ? names[i] : std::string()) + "':";
      for (double v : rows[i]) line += " " + std::to_string(v);
      logInfo("%s", line.c_str());
    }
  }
}

bool MetricsCollector::setUp(ContextState& s) {
  if (s.set_up) return !s.failed;
  s.set_up = true;
  CUcontext ctx = nullptr;
  CUdevice device = 0;
  std::string error;
  if (!FPROF_CU_OK(cuCtxGetCurrent(&ctx)) || !FPROF_CU_OK(cuCtxGetDevice(&device))) {
    s.failed = true;
    return false;
  }
  if (config_.replay == ReplayMode::kSassPatching) return setUpPatching(s, ctx, device);
  auto mark = std::chrono::steady_clock::now();
  s.profiler = std::make_unique<RangeProfiler>();
  s.profiler->keepSessionOpen(config_.toggled_session);
  const bool profiler_ready = s.profiler->setup(ctx, static_cast<int>(device), config_.metrics, config_.batch_ranges,
                                                config_.cache_control, config_.replay, error);
  const double profiler_seconds = lapSeconds(mark);
  if (!profiler_ready) {
    s.failed = true;
    s.profiler.reset();
    note("error", "hardware counters unavailable, this context stays in trace mode: " + error);
    metadata_.emplace_back("mode", "trace");
    return false;
  }
  passes_ = s.profiler->passes();
  s.application = s.profiler->replay() == ReplayMode::kApplication;
  if (s.application && config_.cache_control != CacheControl::kNone && !setUpSweep(s, device)) {
    s.failed = true;
    s.profiler.reset();
    metadata_.emplace_back("mode", "trace");
    return false;
  }
  const double sweep_seconds = lapSeconds(mark);
  if (s.sweep != nullptr) countThrowawayRange(s);
  const double throwaway_seconds = lapSeconds(mark);
  if (config_.sass_duplicate && s.application) setUpDuplicates(s, ctx, device);
  char setup[160];
  std::snprintf(setup, sizeof setup, "profiler=%.3f sweep=%.3f throwaway_range=%.3f duplicates=%.3f", profiler_seconds,
                sweep_seconds, throwaway_seconds, lapSeconds(mark));
  metadata_.emplace_back("metrics_setup_seconds", setup);
  if (config_.sass_duplicate && !s.application) stopDuplicates("the range profiler counts under kernel replay here");
  const bool cache_control = s.sweep != nullptr || s.profiler->cacheControlApplied();
  metadata_.emplace_back("replay_mode", s.application ? "application" : "kernel");
  if (s.application) {
    metadata_.emplace_back("counting_session", s.profiler->sessionKeptOpen()
                                                   ? "one profiler session, counting switched on around each launch"
                                                   : "a range profiler start and stop around each launch");
  }
  metadata_.emplace_back("cache_control", cache_control ? "all" : "none");
  // Which caches fprof empties itself before a profiled launch (application replay): recordings made
  // before session 15 swept the L2 alone and counted a kernel's code fetches warm.
  if (s.sweep != nullptr) metadata_.emplace_back("cache_sweep", "instruction caches, L2");
  if (config_.cache_control == CacheControl::kAllIfSupported && !cache_control && !s.application) {
    note("info",
         "caches are not invalidated between replay passes (cache control: none): the loaded CUPTI is older than "
         "13.4; DRAM bytes depend on what ran before each kernel (fprof run --cupti takes a newer libcupti)");
  }
  metadata_.emplace_back("metrics_passes", std::to_string(passes_));
  metadata_.emplace_back("chip", s.profiler->chip());
  metadata_.emplace_back("mode", "metrics");
  return true;
}

bool MetricsCollector::setUpPatching(ContextState& s, CUcontext ctx, CUdevice device) {
  s.patching = std::make_unique<SassPatching>();
  std::string error;
  if (!s.patching->setup(ctx, static_cast<int>(device), error)) {
    s.failed = true;
    s.patching.reset();
    note("error", "SASS instruction counts unavailable, this context stays in trace mode: " + error);
    metadata_.emplace_back("mode", "trace");
    return false;
  }
  passes_ = 1;
  metadata_.emplace_back("replay_mode", "sass_patching");
  metadata_.emplace_back("metrics_passes", "1");
  metadata_.emplace_back("chip", s.patching->chip());
  metadata_.emplace_back("mode", "metrics");
  return true;
}

void MetricsCollector::writePcCounts(const core::SassPcLaunch& launch) {
  // A second run's processes share FPROF_SASS_PC_FILE per rank; duplicates write one per database.
  if (pc_file_ == nullptr) pc_file_ = std::fopen(config_.sass_pc_file.c_str(), config_.sass_duplicate ? "we" : "ae");
  if (pc_file_ == nullptr) return;
  const std::string text = core::sassPcLaunchText(launch);
  std::fwrite(text.data(), 1, text.size(), pc_file_);
  std::fflush(pc_file_);  // a crash later keeps what was counted
}

// After a launch counted by SASS patching: its per-PC counts go to the PC file (the FLOP counters
// are derived from them after the run); the launch keeps its warp instructions, which say whether
// identical launches did the same work.
void MetricsCollector::countPatched(ContextState& s, CUresult result) {
  std::vector<core::SassPcFunction> functions;
  std::string error;
  const SassPatching::Seconds before = s.patching->seconds();
  const double in_launch = secondsSince(s.launch_started);
  const bool counted = s.patching->end(functions, error);
  replay_seconds_ += secondsSince(s.launch_started);
  if (s.batch.empty()) return;
  Entry e = std::move(s.batch.back());
  s.batch.pop_back();
  if (debug_ranges_) logPatchTimes(e, in_launch, before, s.patching->seconds());
  if (result != CUDA_SUCCESS) {  // no kernel ran, and no kernel row will exist
    --profiled_;
    return;
  }
  const double warp_inst = warpInstructions(functions);
  if (!counted || warp_inst == 0) {  // every kernel executes an instruction: 0 is a failed count
    const std::string why = counted ? "the SASS Metrics API counted no instruction of this launch"
                                    : "the SASS Metrics API's counts could not be read: " + error;
    if (patch_failures_++ == 0) note("warning", why + " (" + e.demangled + "; later ones are in kernel_counter_missing)");
    missingWithCopies(e, why, "the identical launch it would copy from was not counted");
    return;
  }
  writePcCounts(core::SassPcLaunch{e.launch.correlation_id, e.launch.nested_correlation_id, std::move(functions)});
  LaunchCounterResult r;
  r.launch = e.launch;
  r.raw = {{core::kInstructionsSassMetric, warp_inst}};
  r.counters = core::deriveCounters({core::kInstructionsSassMetric}, {warp_inst});
  keepCounted(e, std::move(r), "");
}

void MetricsCollector::logPatchTimes(const Entry& e, double in_launch, const SassPatching::Seconds& before,
                                     const SassPatching::Seconds& after) {
  logInfo("SASS patching %s: until the launch returned %.2f ms (enable %.2f), wait %.2f, read %.2f, disable %.2f",
          e.mangled.c_str(), in_launch * 1e3, (after.enable - before.enable) * 1e3, (after.wait - before.wait) * 1e3,
          (after.read - before.read) * 1e3, (after.disable - before.disable) * 1e3);
}

// A profiled launch without counters, and the copies waiting on it.
void MetricsCollector::missingWithCopies(const Entry& e, const std::string& why, const std::string& copies_why) {
  missing(e.launch, why);
  for (const LaunchRef& c : waiting_copies_[e.launch_index]) missing(c, copies_why);
  waiting_copies_.erase(e.launch_index);
}

// Copies go out as soon as their source is decoded; until then they wait on it.
void MetricsCollector::copyOrWait(uint64_t source_index, LaunchRef launch) {
  auto it = decoded_.find(source_index);
  if (it == decoded_.end()) {
    waiting_copies_[source_index].push_back(launch);
    return;
  }
  ++copied_;
  results_.push_back(copiedFrom(it->second, launch));
}

LaunchCounterResult MetricsCollector::copiedFrom(const Profiled& source, LaunchRef launch) const {
  LaunchCounterResult r;
  r.launch = launch;
  r.counters = source.counters;
  r.counters.source = core::kCounterSourceSameSignature;
  r.raw = source.raw;
  r.source = source.launch;
  if (auto varies = signature_varies_.find(source.signature); varies != signature_varies_.end()) {
    r.counters.signature_varies = varies->second;
  }
  return r;
}

void MetricsCollector::keepDecoded(const Entry& e, const std::vector<double>& row, const std::string& range_name) {
  if (e.graph) {
    core::GraphLaunchCounters g;
    g.correlation_id = e.launch.correlation_id;
    g.alt_correlation_id = e.launch.nested_correlation_id;
    g.counters = core::deriveCounters(config_.metrics, row);
    for (size_t m = 0; m < config_.metrics.size() && m < row.size(); ++m) g.raw.emplace_back(config_.metrics[m], row[m]);
    graph_results_.push_back(std::move(g));
    missing(e.launch, kGraphCountedWholeReason);
    return;
  }
  LaunchCounterResult r;
  r.launch = e.launch;
  r.counters = core::deriveCounters(config_.metrics, row);
  for (size_t m = 0; m < config_.metrics.size() && m < row.size(); ++m) r.raw.emplace_back(config_.metrics[m], row[m]);
  keepCounted(e, std::move(r), range_name);
}

// A profiled launch's counters: kept for copies and the signature checks, then handed out.
void MetricsCollector::keepCounted(const Entry& e, LaunchCounterResult r, const std::string& range_name) {
  if (e.signature) {
    // A later sample of a signature says whether identical launches do identical work.
    auto [first, is_first] = first_sample_.try_emplace(*e.signature, r.raw);
    if (!is_first) {
      const bool varies = !sameDeterministicCounts(first->second, r.raw);
      bool& known = signature_varies_[*e.signature];
      if (varies && !known) {
        note("warning", "launches of " + e.demangled +
                            " with the same grid, block and arguments executed different instruction counts: its "
                            "work depends on data, so copied values are approximate");
      }
      known = known || varies;
      r.counters.signature_varies = known;
    } else if (config_.samples_per_signature > 0) {
      decoded_[e.launch_index] = Profiled{r.counters, r.raw, e.launch, *e.signature};  // copies come from first samples
    }
  }
  checkLooseSignature(e, r);
  keepGraphSource(e, r);
  if (debug_ranges_) {
    logInfo("range '%s' -> launch %u (%s), signature %016llx", range_name.c_str(), e.launch.correlation_id,
            e.mangled.c_str(), static_cast<unsigned long long>(e.signature.value_or(0)));
  }
  results_.push_back(std::move(r));
  if (auto waiting = waiting_copies_.find(e.launch_index); waiting != waiting_copies_.end()) {
    std::vector<LaunchRef> copies = std::move(waiting->second);
    waiting_copies_.erase(waiting);
    for (const LaunchRef& c : copies) copyOrWait(e.launch_index, c);
  }
}

namespace {
bool allFinite(const std::vector<double>& row) {
  return std::all_of(row.begin(), row.end(), [](double v) { return std::isfinite(v); });
}
}  // namespace

// A range whose values are not numbers gives no counters, with the reason: stored, they failed the
// whole database's write (NOT NULL constraint on kernel_metric.value). CUPTI 13.0 returned one on an
// H100 after a user range named by a 100-character cuBLAS kernel name, whose name came back cut at
// 59 characters (bench/RESULTS.md issue 15, session 17).
void MetricsCollector::missingNotANumber(const Entry& e) {
  static constexpr const char* kReason = "the range profiler returned a value that is not a number for its range";
  if (e.graph) return missing(e.launch, std::string("CUDA graph kernel: ") + kReason);
  missingWithCopies(e, kReason, "the identical launch it would copy from got a value that is not a number");
}

void MetricsCollector::decode(ContextState& s) {
  if (!s.profiler || s.batch.empty()) return;
  const auto decode_started = std::chrono::steady_clock::now();
  std::vector<std::vector<double>> rows;
  std::vector<std::string> names;
  std::string error;
  if (!s.profiler->stopAndDecode(rows, error, &names)) note("warning", "decoding counters: " + error);
  if (debug_ranges_) {
    for (size_t i = 0; i < rows.size(); ++i) {
      logInfo("decoded range %zu '%s', first value %g", i, i < names.size() ? names[i].c_str() : "",
              rows[i].empty() ? 0.0 : rows[i][0]);
    }
  }
  std::vector<ProfiledLaunchName> launches;
  launches.reserve(s.batch.size());
  for (const Entry& e : s.batch) launches.push_back({e.mangled, e.demangled});
  const std::vector<std::optional<size_t>> match = matchRangesToLaunches(names, rows.size(), launches);
  size_t matched = 0;
  for (size_t i = 0; i < s.batch.size(); ++i) {
    if (match[i]) {
      ++matched;
      const std::vector<double>& row = rows[*match[i]];
      if (!allFinite(row)) {
        missingNotANumber(s.batch[i]);
      } else {
        keepDecoded(s.batch[i], row, *match[i] < names.size() ? names[*match[i]] : std::string());
      }
    } else if (s.batch[i].graph) {
      missing(s.batch[i].launch, "CUDA graph kernel: its graph launch was to be counted as one range, but the range "
                                 "profiler returned no range for it");
    } else {
      missingWithCopies(s.batch[i], "the range profiler returned no counter range for this launch",
                        "the identical launch it would copy from got no counter range");
    }
  }
  if (matched != rows.size() || matched != s.batch.size()) {
    unmatched_ranges_ += rows.size() - matched;
    note("warning", std::to_string(rows.size()) + " counter ranges for " + std::to_string(s.batch.size()) +
                        " profiled launches; " + std::to_string(matched) +
                        " matched by kernel name and order, the others have no counters (with the reason stored)");
  }
  s.batch.clear();
  decode_seconds_ += secondsSince(decode_started);
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
          static_cast<unsigned long long>(profiled_), passes_, static_cast<unsigned long long>(copied_), elapsed);
}

// Application replay counts the program's own execution of the launch, so nothing else may run
// on the device meanwhile: the context's earlier work is drained first (the window keeps other
// threads' launches out until the kernel has finished, closeWindow), then the L2 is swept.
bool MetricsCollector::prepareOwnRun(ContextState& s, CUstream stream, const LaunchRequest* launch,
                                     std::string& error) {
  if (!s.profiler->readyToCount(error)) return false;
  if (CUresult r = cuCtxSynchronize(); r != CUDA_SUCCESS) {
    error = "cuCtxSynchronize failed (" + std::to_string(static_cast<int>(r)) + ")";
    return false;
  }
  lap(s, LaunchStep::kDrain);
  if (launch != nullptr) countDuplicate(s, *launch);
  lap(s, LaunchStep::kDuplicate);
  const bool swept = s.sweep == nullptr || s.sweep->run(stream, error);
  lap(s, LaunchStep::kSweep);
  return swept;
}

// SASS counts in this run: each profiled launch's duplicate, counted between a checkpoint and its
// restore (duplicate_launch.h). Where that cannot be set up, the counts come from a second run.
void MetricsCollector::setUpDuplicates(ContextState& s, CUcontext ctx, CUdevice device) {
  std::string error;
  if (CUptiResult r = cuptiGetContextId(ctx, &s.context_id); r != CUPTI_SUCCESS) {
    return stopDuplicates(profilerErrorText("cuptiGetContextId", r));
  }
  auto duplicate = std::make_unique<DuplicateCounter>();
  if (!duplicate->setup(ctx, static_cast<int>(device), allocations_, modules_, error)) return stopDuplicates(error);
  s.duplicate = std::move(duplicate);
}

void MetricsCollector::stopDuplicates(const std::string& why) {
  if (!duplicates_stopped_.empty()) return;
  duplicates_stopped_ = why + " (after " + std::to_string(duplicates_) + " profiled launches)";
  note("info", "SASS counts (FLOPs, instructions) stop being counted in this run: " + duplicates_stopped_ +
                   "; fprof run counts them in a second run of the program");
}

namespace {

// The checkpoint keeps its copy of the context's memory in free device memory while there is room
// for it, and in host memory past that, at about a second a GB (pinned host memory measured on an
// H100, 0.6-0.8 s a GB): a reason to stop the duplicates, or "" while the device has room. `held`:
// the device memory in use (the context's, fprof's own buffers included, and other processes').
std::string checkpointGoesThroughHost(size_t& held) {
  size_t free_bytes = 0, total_bytes = 0;
  if (cuMemGetInfo(&free_bytes, &total_bytes) != CUDA_SUCCESS) return {};
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

// A duplicate that takes this long a launch (a checkpoint saved through host memory: pinned host
// memory is saved at 0.6-0.8 s a GB on an H100) costs more than a second run of most programs.
constexpr double kDuplicateLimitSeconds = 0.5;

}  // namespace

void MetricsCollector::countDuplicate(ContextState& s, const LaunchRequest& launch) {
  if (!s.duplicate || !duplicates_stopped_.empty()) return;
  const std::string name = demangled(launch.symbol_name);
  if (!canRelaunch(launch.cbid) || launch.driver_params == nullptr) {
    return stopDuplicates("a launch by a driver call fprof cannot repeat (" + name + ")");
  }
  size_t held = 0;
  if (const std::string why = checkpointGoesThroughHost(held); !why.empty()) return stopDuplicates(why);
  duplicate_memory_held_max_ = std::max(duplicate_memory_held_max_, held);
  std::vector<core::SassPcFunction> functions;
  std::string error;
  CuptiActivityApi& activity = CuptiActivityApi::instance();
  activity.holdFlushes();  // no activity flush while functions are patched
  const bool paused = activity.pauseConcurrentKernelRecords();
  if (own_windows_ != nullptr) own_windows_->open(s.context_id, CuptiActivityApi::timestampNs());
  const DriverLaunchCall call{launch.cbid, launch.driver_params, launch.stream, launch.function, launch.symbol_name};
  const bool counted = s.duplicate->count(call, functions, error);
  if (own_windows_ != nullptr) own_windows_->close(s.context_id, CuptiActivityApi::timestampNs());
  if (paused) activity.resumeConcurrentKernelRecords();
  activity.releaseFlushes();
  const DuplicateCounter::Seconds& last = s.duplicate->last();
  duplicate_seconds_.save += last.save;
  duplicate_seconds_.duplicate += last.duplicate;
  duplicate_seconds_.restore += last.restore;
  countCheckpoint(last);
  if (debug_ranges_) {
    logInfo("duplicate of %s: save %.2f ms, patched duplicate %.2f ms, restore %.2f ms, device memory in use %.0f MiB, "
            "%s checkpoint%s%s",
            name.c_str(), last.save * 1e3, last.duplicate * 1e3, last.restore * 1e3, double(held) / double(1 << 20),
            last.own_checkpoint ? "own" : "CUPTI", last.own_checkpoint ? "" : ": ", last.why_not_own.c_str());
  }
  if (!counted) return stopDuplicates(error + " (" + name + ")");
  if (warpInstructions(functions) == 0) return stopDuplicates("the SASS Metrics API counted no instruction of a duplicate (" + name + ")");
  writePcCounts(core::SassPcLaunch{launch.correlation_id, launch.nested_correlation_id, std::move(functions)});
  ++duplicates_;
  if (const double took = last.save + last.duplicate + last.restore; took > kDuplicateLimitSeconds) {
    char text[160];
    std::snprintf(text, sizeof text, "a duplicate took %.0f ms (checkpoint save %.0f, restore %.0f)", took * 1e3,
                  last.save * 1e3, last.restore * 1e3);
    stopDuplicates(text);
  }
}

void MetricsCollector::countCheckpoint(const DuplicateCounter::Seconds& last) {
  if (last.own_checkpoint) {
    ++own_checkpoints_;
    own_checkpoint_bytes_max_ = std::max(own_checkpoint_bytes_max_, last.own_bytes);
  } else {
    ++cupti_checkpoints_[last.why_not_own];
  }
}

// "own=80 (at most 201326592 bytes) cupti=35 (30: its module calls vprintf ...; 5: ...)": which
// checkpoint held each duplicate's memory, and why the CUPTI one where it did.
std::string MetricsCollector::checkpointsText() const {
  uint64_t cupti = 0;
  std::string reasons;
  for (const auto& [why, n] : cupti_checkpoints_) {
    cupti += n;
    reasons += (reasons.empty() ? "" : "; ") + std::to_string(n) + ": " + why;
  }
  std::string text = "own=" + std::to_string(own_checkpoints_) + " (at most " +
                     std::to_string(own_checkpoint_bytes_max_) + " bytes) cupti=" + std::to_string(cupti);
  return reasons.empty() ? text : text + " (" + reasons + ")";
}

// "save=0.120 duplicate=0.250 restore=0.030 launches=113": what the duplicates cost.
std::string MetricsCollector::duplicatesText() const {
  char text[160];
  std::snprintf(text, sizeof text, "save=%.3f duplicate=%.3f restore=%.3f launches=%llu", duplicate_seconds_.save,
                duplicate_seconds_.duplicate, duplicate_seconds_.restore, static_cast<unsigned long long>(duplicates_));
  return text;
}

void MetricsCollector::beginSteps(ContextState& s) {
  s.launch_started = std::chrono::steady_clock::now();
  s.phase_mark = s.launch_started;
}

void MetricsCollector::lap(ContextState& s, LaunchStep step) {
  const auto now = std::chrono::steady_clock::now();
  step_seconds_[static_cast<size_t>(step)] += std::chrono::duration<double>(now - s.phase_mark).count();
  s.phase_mark = now;
}

// "drain=0.120 sweep=0.004 start=1.234 launch=0.456 stop=1.111 end=0.222": where replay_seconds_ went
// (drain: the program's earlier work; end: the counted kernel and what CUPTI runs with it).
std::string MetricsCollector::launchStepsText() const {
  static constexpr const char* kNames[] = {"drain", "duplicate", "sweep", "start", "launch", "stop", "end"};
  static_assert(std::size(kNames) == static_cast<size_t>(LaunchStep::kCount));
  std::string text;
  for (size_t i = 0; i < step_seconds_.size(); ++i) {
    char item[48];
    std::snprintf(item, sizeof item, "%s%s=%.3f", i ? " " : "", kNames[i], step_seconds_[i]);
    text += item;
  }
  return text;
}

// User ranges for a graph launch counted whole, auto range for kernels. The range mode changes
// only with nothing left to decode (the profiler is enabled again).
bool MetricsCollector::useRanges(ContextState& s, bool user) {
  if (s.profiler->userRanges() == user) return true;
  decode(s);
  std::string error;
  if (s.profiler->useUserRanges(user, error)) return true;
  note("error", std::string("hardware counters stop here: enabling the range profiler again with ") +
                    (user ? "user ranges for a graph launch: " : "auto range after a graph launch: ") + error);
  s.failed = true;
  return false;
}

// Counts a graph launch whole, as one user range (application replay only; the first
// samples_per_signature launches of each executable graph). False: not counted (the kernels keep
// the graph reason).
bool MetricsCollector::countGraphLaunch(const LaunchRequest& launch, ContextState& s, LaunchRef ref) {
  if (launch.graph_exec == 0 || !setUp(s) || !s.application) return false;
  uint64_t& counted = graph_exec_counts_[launch.graph_exec];
  if (config_.samples_per_signature > 0 && counted >= config_.samples_per_signature) return false;
  if (!useRanges(s, true)) return false;
  if (s.batch.size() >= config_.batch_ranges) decode(s);
  std::string error;
  beginSteps(s);
  if (!prepareOwnRun(s, launch.stream, nullptr, error)) note("warning", "before a counted graph launch: " + error);
  const std::string name = "graph launch " + std::to_string(ref.correlation_id);
  if (!s.profiler->start(error) || !s.profiler->pushRange(name.c_str(), error)) {
    note("warning", "a CUDA graph launch was not counted: " + error);
    (void)s.profiler->stop(error);
    return false;
  }
  lap(s, LaunchStep::kStart);
  if (graph_launches_counted_++ == 0) {
    note("info", "CUDA graph launches are counted whole, each as one range (table graph_launch_counter): the first " +
                     (config_.samples_per_signature == 0 ? std::string("every launch")
                                                         : std::to_string(config_.samples_per_signature)) +
                     " of each executable graph");
  }
  ++counted;
  Entry e;
  e.launch = ref;
  e.mangled = name;
  e.demangled = name;
  e.graph = true;
  s.batch.push_back(std::move(e));
  t_window.profiled = true;
  return true;
}

void MetricsCollector::openWindow(const LaunchRequest& launch, ContextState& s) {
  LaunchFacts facts;
  facts.demangled_name = demangled(launch.symbol_name);
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
  if (launch.graph_launch) {
    // Every kernel of the launch gets this reason unless its node finds a profiled launch to copy.
    const Decision decision = selector_->decideGraphLaunch(facts);
    const bool selected = decision.kind == LaunchDecision::kGraph;
    const bool counted = selected && countGraphLaunch(launch, s, ref);
    if (selected && graph_launches_.insert(launch.correlation_id).second && graph_launches_.size() == 1 &&
        !config_.second_run) {
      note("info", std::string("kernels of CUDA graphs are not replayed; each takes the counters of a profiled launch "
                               "with its node's signature (function, shape, non-pointer arguments) where there is one") +
                       (s.application ? "" : "; --replay application also counts each executable graph's first launch "
                                             "whole, as one range"));
    }
    // A counted launch's kernels get their reason when its range is decoded (keepDecoded, decode).
    if (!counted) missing(ref, decision.reason);
    return;
  }
  const Decision decision = selector_->decide(facts);
  switch (decision.kind) {
    case LaunchDecision::kSkipUnsafe:
      if (unsafe_skips_[decision.reason]++ == 0) {
        note("info", "not profiling " + facts.demangled_name + " (and others like it): " + decision.reason);
      }
      [[fallthrough]];
    case LaunchDecision::kSkipFiltered:
      missing(ref, decision.reason);
      return;
    case LaunchDecision::kCopy:
      copyOrWait(decision.source_index, ref);
      return;
    case LaunchDecision::kProfile:
      break;
    case LaunchDecision::kGraph:  // decideGraphLaunch's alone
      return;
  }
  if (!setUp(s) || (s.profiler && !useRanges(s, false))) {
    missing(ref, "hardware counters unavailable on this context (see the collector's error)");
    return;
  }
  if (s.batch.size() >= config_.batch_ranges) decode(s);
  if (s.profiler && !s.application) warnIfReplayGoesThroughHost(s);
  beginSteps(s);
  std::string error;
  if (s.application && !prepareOwnRun(s, launch.stream, &launch, error)) {
    note("warning", "before a profiled launch: " + error);
  }
  if (s.patching) {
    if (debug_ranges_) logInfo("SASS patching begins: %s", launch.symbol_name ? launch.symbol_name : "?");
    CuptiActivityApi::instance().holdFlushes();  // released in afterLaunch
    t_window.holds_flushes = true;
    if (!s.patching->begin(error)) {
      note("error", "enabling SASS instruction counts: " + error);
      s.failed = true;
      missing(ref, "the SASS Metrics API could not be enabled");
      return;
    }
  }
  if (s.profiler && !s.profiler->start(error)) {
    note("error", "starting the range profiler: " + error);
    s.failed = true;
    missing(ref, "the range profiler could not be started");
    return;
  }
  lap(s, LaunchStep::kStart);
  Entry e;
  e.launch = ref;
  e.mangled = launch.symbol_name != nullptr ? launch.symbol_name : "";
  e.demangled = facts.demangled_name;
  e.launch_index = decision.launch_index;
  e.signature = launch.signature;
  e.loose_signature = launch.loose_signature;
  e.graph_key = launch.graph_key;
  e.loose_check = decision.loose_check;
  e.loose_first_signature = decision.loose_first_signature;
  s.batch.push_back(std::move(e));
  t_window.profiled = true;
  ++profiled_;
  progress();
}

void MetricsCollector::beforeLaunch(const LaunchRequest& launch) {
  if (!enabled_ || t_inside) return;
  if (t_window.depth++ > 0) return;
  Inside inside;
  ContextState* s = nullptr;
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    s = &stateOf(launch.context);
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
  if (s == nullptr || !t_window.profiled) return;
  if (s->patching) return countPatched(*s, result);
  if (!s->profiler) return;
  std::string error;
  lap(*s, LaunchStep::kLaunch);
  if (s->profiler->userRanges() && !s->profiler->popRange(error)) note("warning", "ending a graph launch's range: " + error);
  if (!s->profiler->stop(error)) note("warning", "stopping the range profiler: " + error);
  lap(*s, LaunchStep::kStop);
  // The counted kernel ends before anything else starts (the two synchronizations cost nothing
  // measurable: 44.1 ms a profiled launch without them, 44.2 with, bench/RESULTS.md issue 15).
  if (s->application) (void)cuCtxSynchronize();
  lap(*s, LaunchStep::kEnd);
  replay_seconds_ += secondsSince(s->launch_started);  // the launch call, kernel replay included
  if (result != CUDA_SUCCESS && !s->batch.empty()) {
    // A failed launch runs no kernel and makes no range; its kernel row will not exist either.
    if (!s->batch.back().graph) --profiled_;
    s->batch.pop_back();
  }
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
  if (t_window.holds_flushes) {
    CuptiActivityApi::instance().releaseFlushes();
    t_window.holds_flushes = false;
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
  t_window.state = nullptr;  // nothing to stop: the profiler runs only inside profiled launches
}

void MetricsCollector::afterMemoryOperation() {
  if (!enabled_ || t_inside || t_window.depth == 0) return;
  if (--t_window.depth > 0) return;
  if (t_window.lock.owns_lock()) t_window.lock.unlock();
}

void MetricsCollector::decodeOnFatalSignal() {
  if (!enabled_) return;
  Inside inside;
  std::vector<std::pair<CUcontext, ContextState*>> states;
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    for (auto& [ctx, s] : contexts_) states.emplace_back(ctx, &s);
  }
  for (auto& [ctx, s] : states) {
    std::unique_lock<std::mutex> window(s->window, std::try_to_lock);
    if (!window.owns_lock()) continue;  // the dying thread was inside a launch: its batch is lost
    std::lock_guard lock(mu_);
    if (s->profiler == nullptr) continue;
    CurrentContext current(ctx);
    decode(*s);
  }
}

namespace {
// Where the end of a metrics run's time goes, per step, summed over contexts (seconds).
struct TeardownSeconds {
  double patching = 0, decode = 0, duplicates = 0, profiler = 0;
};

std::string teardownText(const TeardownSeconds& took) {
  char text[160];
  std::snprintf(text, sizeof text, "patching=%.3f decode=%.3f duplicates=%.3f profiler=%.3f", took.patching,
                took.decode, took.duplicates, took.profiler);
  return text;
}
}  // namespace

void MetricsCollector::finishAll() {
  if (!enabled_ || t_inside) return;
  Inside inside;
  std::vector<std::pair<CUcontext, ContextState*>> states;
  {
    std::lock_guard lock(mu_);
    for (auto& [ctx, s] : contexts_) states.emplace_back(ctx, &s);
  }
  TeardownSeconds took;
  for (auto& [ctx, s] : states) {
    // A window held by this very thread (exit from inside a launch callback) is not waited for.
    std::unique_lock<std::mutex> window(s->window, std::defer_lock);
    if (!(t_window.lock.owns_lock() && t_window.lock.mutex() == &s->window)) window.lock();
    std::lock_guard lock(mu_);
    if (s->patching) {
      const SassPatching::Seconds& t = s->patching->seconds();
      char text[160];
      std::snprintf(text, sizeof text, "enable %.3f, wait for the kernel %.3f, read %.3f, disable %.3f", t.enable, t.wait,
                    t.read, t.disable);
      metadata_.emplace_back("sass_patching_seconds", text);
      CurrentContext current(ctx);
      auto mark = std::chrono::steady_clock::now();
      s->patching->teardown();
      s->patching.reset();
      took.patching += lapSeconds(mark);
    }
    if (s->profiler == nullptr) continue;
    CurrentContext current(ctx);
    // Decoded with the SASS Metrics API still configured, as every batch decoded during the run
    // (the transformer's 337 profiled launches, 256 a batch, on an H100: bench/RESULTS.md issue 15).
    auto mark = std::chrono::steady_clock::now();
    decode(*s);
    took.decode += lapSeconds(mark);
    if (s->duplicate) {
      // The own checkpoint's copy is freed here: its release record is not the program's.
      if (own_windows_ != nullptr) own_windows_->open(s->context_id, CuptiActivityApi::timestampNs());
      s->duplicate->teardown();
      s->duplicate.reset();
      if (own_windows_ != nullptr) own_windows_->close(s->context_id, CuptiActivityApi::timestampNs());
    }
    took.duplicates += lapSeconds(mark);
    // Disable while the context lives: a range profiler still enabled when the context is
    // destroyed at exit crashed the target on an H200.
    s->profiler->teardown();
    s->profiler.reset();
    took.profiler += lapSeconds(mark);
  }
  std::lock_guard lock(mu_);
  if (pc_file_ != nullptr) {
    std::fclose(pc_file_);
    pc_file_ = nullptr;
  }
  // Launches after this point (a program that goes on after cudaDeviceReset) run unprofiled.
  if (!finished_) {
    for (auto& [source, copies] : waiting_copies_) {
      for (const LaunchRef& c : copies) missing(c, "the identical launch it would copy from was never decoded");
    }
    waiting_copies_.clear();
    recordRunFacts(teardownText(took));
  }
  finished_ = true;
}

// What the run's counting cost and covered, into the metadata once at its end (under mu_).
void MetricsCollector::recordRunFacts(const std::string& teardown) {
  metadata_.emplace_back("metrics_teardown_seconds", teardown);
  metadata_.emplace_back("metrics_kernels_profiled", std::to_string(profiled_));
  metadata_.emplace_back("metrics_kernels_copied", std::to_string(copied_));
  if (unmatched_ranges_ > 0) metadata_.emplace_back("metrics_unmatched_ranges", std::to_string(unmatched_ranges_));
  char cost[64];
  std::snprintf(cost, sizeof cost, "%.3f", replay_seconds_);
  metadata_.emplace_back("metrics_replay_seconds", cost);
  std::snprintf(cost, sizeof cost, "%.3f", decode_seconds_);
  metadata_.emplace_back("metrics_decode_seconds", cost);
  if (profiled_ > 0 && config_.replay != ReplayMode::kSassPatching) {
    metadata_.emplace_back("metrics_launch_steps_seconds", launchStepsText());
  }
  if (config_.sass_duplicate) {
    metadata_.emplace_back("sass_in_first_run", duplicates_stopped_.empty() ? "every profiled launch"
                                                                           : "stopped: " + duplicates_stopped_);
    metadata_.emplace_back("sass_duplicate_seconds", duplicatesText());
    metadata_.emplace_back("sass_duplicate_device_memory_held_bytes", std::to_string(duplicate_memory_held_max_));
    metadata_.emplace_back("sass_duplicate_checkpoints", checkpointsText());
  }
}

// A launch profiled to check whether its 1-byte parameters matter: they do not when its
// deterministic counts equal the first sample's (a set without deterministic counters cannot tell).
void MetricsCollector::checkLooseSignature(const Entry& e, const LaunchCounterResult& r) {
  if (!e.loose_check) return;
  auto first = first_sample_.find(e.loose_first_signature);
  if (first == first_sample_.end()) return;  // the first sample was not decoded: stays unchecked
  const bool any = std::any_of(r.raw.begin(), r.raw.end(), [](const auto& m) { return isDeterministic(m.first); });
  const bool same = any && sameDeterministicCounts(first->second, r.raw);
  selector_->looseChecked(*e.loose_check, same);
  if (debug_ranges_) logInfo("1-byte parameters of %s: %s", e.mangled.c_str(), same ? "no effect" : "matter");
}

// A decoded launch graph kernels may copy from, by its graph key (see GraphSource).
void MetricsCollector::keepGraphSource(const Entry& e, const LaunchCounterResult& r) {
  if (!e.signature || !e.loose_signature || !e.graph_key) return;
  auto [it, first] = graph_sources_.try_emplace(*e.graph_key);
  GraphSource& g = it->second;
  if (first) {
    g.first = Profiled{r.counters, r.raw, r.launch, *e.signature};
    g.loose = *e.loose_signature;
    return;
  }
  g.several_loose = g.several_loose || g.loose != *e.loose_signature;
  g.several_signatures = g.several_signatures || g.first.signature != *e.signature;
}

void MetricsCollector::noteGraphNode(uint64_t node_id, std::optional<uint64_t> graph_key) {
  if (!enabled_) return;
  std::lock_guard lock(mu_);
  graph_nodes_[node_id] = graph_nodes_trusted_ ? graph_key : std::nullopt;
  if (debug_ranges_) {
    logInfo("graph node %llu: graph key %016llx%s", static_cast<unsigned long long>(node_id),
            static_cast<unsigned long long>(graph_key.value_or(0)), graph_key ? "" : " (unknown)");
  }
}

void MetricsCollector::noteGraphNodesUntrusted() {
  std::lock_guard lock(mu_);
  graph_nodes_trusted_ = false;
}

void MetricsCollector::noteGraphNodeChanged(uint64_t node_id) {
  if (!enabled_) return;
  std::lock_guard lock(mu_);
  graph_nodes_[node_id] = std::nullopt;
}

void MetricsCollector::addGraphKernels(const std::vector<core::KernelRecord>& kernels) {
  if (!enabled_) return;
  std::lock_guard lock(mu_);
  for (const core::KernelRecord& k : kernels) {
    // Bounded: a kernel beyond it keeps its launch's reason (8M graph kernels waiting on sources).
    if (k.graph_node_id == 0 || graph_launches_.count(k.correlation_id) == 0) continue;
    if (pending_graph_kernels_.size() >= (size_t{1} << 23)) return;
    pending_graph_kernels_.push_back(LaunchRef{k.correlation_id, 0, k.graph_node_id});
  }
}

// At the end of the run, when every profiled launch is decoded (a later launch could make a
// source ambiguous): a graph kernel whose node's graph key has one decoded source gets its counters;
// the rest keep their launch's reason.
void MetricsCollector::resolveGraphKernels() {
  if (!finished_) return;  // records arriving later (the last flush) are resolved at the next call
  for (const LaunchRef& k : pending_graph_kernels_) {
    auto node = graph_nodes_.find(k.graph_node_id);
    if (node == graph_nodes_.end() || !node->second) continue;  // unknown or changed parameters
    auto source = graph_sources_.find(*node->second);
    if (source == graph_sources_.end()) continue;
    const GraphSource& g = source->second;
    if (g.several_loose || (g.several_signatures && !selector_->looseSame(g.loose))) continue;  // ambiguous
    ++graph_kernels_copied_;
    results_.push_back(copiedFrom(g.first, k));
  }
  pending_graph_kernels_.clear();
  if (!graph_launches_.empty() && graph_copies_in_metadata_ != graph_kernels_copied_) {
    metadata_.emplace_back("metrics_graph_kernels_copied", std::to_string(graph_kernels_copied_));
    graph_copies_in_metadata_ = graph_kernels_copied_;
  }
}

std::vector<LaunchCounterResult> MetricsCollector::takeResults() {
  std::lock_guard lock(mu_);
  resolveGraphKernels();
  std::vector<LaunchCounterResult> out;
  out.swap(results_);
  return out;
}

std::vector<core::GraphLaunchCounters> MetricsCollector::takeGraphLaunchResults() {
  std::lock_guard lock(mu_);
  if (graph_launches_counted_ != graph_counted_in_metadata_) {
    metadata_.emplace_back("metrics_graph_launches_counted", std::to_string(graph_launches_counted_));
    graph_counted_in_metadata_ = graph_launches_counted_;
  }
  std::vector<core::GraphLaunchCounters> out;
  out.swap(graph_results_);
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
