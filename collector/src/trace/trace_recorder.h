// The collector's per-event work over plain structs, with no CUPTI or driver call: what the
// application's threads do in launch and NVTX callbacks, and what the writer thread makes of it
// (launches for the translator, NVTX range records). collector.cpp decodes CUPTI's callback data
// into these calls; the unit tests and bench/collector_hotpath_bench call them directly.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fprof/core/model.h"
#include "injection/self_timing.h"
#include "trace/function_cache.h"
#include "trace/translate.h"

namespace fprof::collector {

// One launch API callback (ENTER), decoded.
struct LaunchCall {
  uint32_t correlation_id = 0;
  const char* launch_api = "";  // static string
  bool driver = false;          // a driver API callback: the last stop before the launch is submitted
  bool graph_launch = false;
};

// The launch a thread is inside, between its outermost ENTER and the moment it is queued.
struct OpenLaunch {
  uint32_t correlation_id = 0;         // the outermost launch API's
  uint32_t nested_correlation_id = 0;  // a driver launch inside a runtime launch (0 = none)
  bool graph_launch = false;
};

// An NVTX message: characters (NVTX copies them during the call, so must we) or, when
// `registered` is set, a handle from nvtxDomainRegisterString.
struct NvtxText {
  std::string_view chars;
  const void* registered = nullptr;
};

class TraceRecorder {
 public:
  struct Options {
    // Metrics mode selects launches by NVTX path on the launching thread: keep each thread's path
    // there too (trace mode resolves paths on the writer thread only).
    bool paths_on_threads = false;
    // The thread id recorded with launches and ranges; gettid() when null (tests and the bench's
    // reproducible runs pass their own).
    uint32_t (*thread_id)() = nullptr;
    // The writer gives each thread fresh event chunks, their pages touched, for the next period
    // (EventBuffer::prefill); off (bench/collector_hotpath_bench --no-prefill), a thread whose backlog
    // grows allocates and faults them in itself.
    bool prefill_chunks = true;
    // With paths_on_threads: whether a thread's own NVTX path selects launches for every thread
    // of the process (metrics mode's --nvtx-include under --nvtx-scope process). Evaluated at the
    // thread's pushes and pops; anotherThreadSelects() asks it. Empty: not tracked.
    std::function<bool(const std::string& path)> selects_path;
  };
  TraceRecorder();
  explicit TraceRecorder(Options options);
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // ---- Application threads ----
  // A launch callback's ENTER. Returns the thread's open launch when this callback is where it
  // must be queued (the first driver callback of the launch, before submission): the caller may
  // then ask for its NVTX path and must call submitLaunch(). Otherwise nullptr.
  const OpenLaunch* enterLaunch(const LaunchCall& call);
  // The NVTX path of the open launch when paths_on_threads is set; nullptr when none is open or
  // the option is off.
  const std::string* openLaunchNvtxPath();
  // Whether another thread is inside a range whose path selects launches (Options::selects_path):
  // a launch on this thread is then selected too. False when not tracked.
  bool anotherThreadSelects();
  // Queues the open launch with what the driver says about its function (null: not known, as for
  // graph launches) and its 8-byte arguments, read from kernel_params or an `extra` buffer;
  // `programmatic`: launched with programmatic stream serialization.
  void submitLaunch(const FunctionInfo* function, void** kernel_params, void** extra, bool programmatic = false);
  // A launch callback's EXIT. Queues the launch at the outermost EXIT if no driver callback did.
  void exitLaunch();

  void pushRange(const void* domain, NvtxText message, std::optional<uint64_t> payload, int64_t timestamp_ns);
  // Pops the innermost range of `domain` on this thread (another domain's range above it stays).
  void popRange(const void* domain, int64_t timestamp_ns);
  void startRange(uint64_t range_id, const void* domain, NvtxText message, std::optional<uint64_t> payload,
                  int64_t timestamp_ns);
  void endRange(uint64_t range_id, int64_t timestamp_ns);
  void registerDomain(const void* handle, std::string_view name);
  void registerString(const void* handle, std::string_view text);
  // This thread's self-timing totals (null if the thread could not be registered).
  AppTimes* threadTimes();

  // ---- Writer thread ----
  // Moves what the application threads recorded since the last call: each launch into the
  // translator (before the kernel records of the same period are translated), and NVTX range
  // records into `ranges` (a range's last record is its state: the store keeps the last one).
  void collect(Translator& translator, std::vector<core::NvtxRangeRecord>& ranges);
  // NVTX pops without a matching push, counted where pops are matched (the writer thread).
  uint64_t unmatchedPops() const;
  // Adds every thread's timers and the event counts to `totals` (writer thread, at exit).
  void addTotals(SelfTimingTotals& totals) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace fprof::collector
