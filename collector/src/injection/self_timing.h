// The collector's timers of its own work (FPROF_SELF_TIMING=1): on each application thread and
// on the writer thread, summed and reported at exit (stderr and the metadata key self_timing).
// Off (the default), a timer is one predictable branch and no clock read.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace fprof::collector {

// On the application's threads, inside CUPTI's callbacks.
enum class AppTimer : uint8_t {
  kLaunchCallback,    // a launch API callback, ENTER or EXIT, start to end (includes the rows below)
  kNvtxCallback,      // an NVTX callback, start to end
  kLaunchContext,     // at the outermost launch ENTER: the NVTX/start-end context and the begin event
  kFunctionLookup,    // the function's facts (local memory, parameter layout), cached per function
  kArgumentCapture,   // reading the 8-byte arguments and queueing the launch
  kNvtxQueueing,      // writing an NVTX event into the thread's buffer
  kArgumentProbe,     // the argument-role probe around a function's first launches (stream drains, copies)
  kCount
};

// On the writer thread.
enum class WriterTimer : uint8_t {
  kCuptiFlush,   // cuptiActivityFlushAll: CUPTI's own work, which may hold locks the launches need
  kCollect,      // replaying the threads' events: NVTX pairing and paths, launches into the matcher
  kTranslate,    // activity records -> core records, matched to their launches
  kStore,        // core::Writer: SQLite inserts and commits of each period
  kFinalWrite,   // at exit: the last period and closing the database (indexes, checkpoint)
  kCount
};

bool selfTimingEnabled();
void setSelfTimingEnabled(bool on);

inline int64_t selfTimingNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Calls are also counted by duration in powers of two (bucket b: [2^b, 2^(b+1)) ns), so the report
// can tell the usual call (the median) from rare long ones (a function's first launch, a page
// fault, a preemption), which a mean mixes.
constexpr size_t kSelfTimingBuckets = 40;
// Calls at least this long are "slow": their total is reported on its own.
constexpr int64_t kSelfTimingSlowNs = 16384;

inline size_t selfTimingBucket(int64_t elapsed_ns) {
  const uint64_t v = elapsed_ns > 0 ? static_cast<uint64_t>(elapsed_ns) : 1;
  const size_t b = static_cast<size_t>(63 - __builtin_clzll(v));
  return b < kSelfTimingBuckets ? b : kSelfTimingBuckets - 1;
}

// One application thread's totals: written by that thread only, read by the writer at exit.
struct AppTimes {
  static constexpr size_t kTimers = static_cast<size_t>(AppTimer::kCount);
  std::atomic<uint64_t> ns[kTimers] = {};
  std::atomic<uint64_t> calls[kTimers] = {};
  std::atomic<uint64_t> slow_ns[kTimers] = {};
  std::atomic<uint64_t> buckets[kTimers][kSelfTimingBuckets] = {};
  void add(AppTimer t, int64_t elapsed_ns) {
    const size_t i = static_cast<size_t>(t);
    bump(ns[i], static_cast<uint64_t>(elapsed_ns));
    bump(calls[i], 1);
    if (elapsed_ns >= kSelfTimingSlowNs) bump(slow_ns[i], static_cast<uint64_t>(elapsed_ns));
    bump(buckets[i][selfTimingBucket(elapsed_ns)], 1);
  }
  // Adds another thread's totals (the writer, for threads that exited).
  void absorb(const AppTimes& o) {
    for (size_t i = 0; i < kTimers; ++i) {
      bump(ns[i], o.ns[i].load(std::memory_order_relaxed));
      bump(calls[i], o.calls[i].load(std::memory_order_relaxed));
      bump(slow_ns[i], o.slow_ns[i].load(std::memory_order_relaxed));
      for (size_t b = 0; b < kSelfTimingBuckets; ++b) bump(buckets[i][b], o.buckets[i][b].load(std::memory_order_relaxed));
    }
  }

 private:
  static void bump(std::atomic<uint64_t>& a, uint64_t by) {
    a.store(a.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
};

// Times a scope into `times` when self-timing is on and `times` is not null.
class ScopedAppTimer {
 public:
  ScopedAppTimer(AppTimes* times, AppTimer which) : times_(times), which_(which) {
    if (times_ != nullptr) start_ns_ = selfTimingNowNs();
  }
  ~ScopedAppTimer() {
    if (times_ != nullptr) times_->add(which_, selfTimingNowNs() - start_ns_);
  }
  ScopedAppTimer(const ScopedAppTimer&) = delete;
  ScopedAppTimer& operator=(const ScopedAppTimer&) = delete;

 private:
  AppTimes* times_;
  AppTimer which_;
  int64_t start_ns_ = 0;
};

struct SelfTimingTotals {
  uint64_t app_ns[static_cast<size_t>(AppTimer::kCount)] = {};
  uint64_t app_calls[static_cast<size_t>(AppTimer::kCount)] = {};
  uint64_t app_slow_ns[static_cast<size_t>(AppTimer::kCount)] = {};
  uint64_t app_buckets[static_cast<size_t>(AppTimer::kCount)][kSelfTimingBuckets] = {};
  uint64_t writer_ns[static_cast<size_t>(WriterTimer::kCount)] = {};
  uint64_t writer_calls[static_cast<size_t>(WriterTimer::kCount)] = {};
  uint64_t writer_max_ns[static_cast<size_t>(WriterTimer::kCount)] = {};
  uint64_t launches = 0;           // launches queued
  uint64_t nvtx_events = 0;        // NVTX push/pop/start/end callbacks
  uint64_t threads = 0;            // application threads that made callbacks
  uint64_t event_bytes = 0;        // bytes of raw events the writer read
  uint64_t chunks_allocated = 0;   // event chunks allocated (not reused)
  uint64_t max_pending_launches = 0;  // launches waiting for their kernel record, at most

  void add(const AppTimes& t);
  void addWriter(WriterTimer t, int64_t elapsed_ns);
  // The duration below which `fraction` of a timer's calls lie, as the upper end of its
  // power-of-two bucket (an overestimate of at most 2x); nullopt without calls.
  std::optional<uint64_t> appPercentileNs(AppTimer t, double fraction) const;
};

// Several lines for stderr, each starting with "self-timing: ".
std::string selfTimingText(const SelfTimingTotals& t);
// One JSON object for the metadata key `self_timing`.
std::string selfTimingJson(const SelfTimingTotals& t);

}  // namespace fprof::collector
