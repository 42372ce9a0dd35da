// The collector's timers of its own work (FPROF_SELF_TIMING=1): on each application thread and
// on the writer thread, summed and reported at exit (stderr and the metadata key self_timing).
// Off (the default), a timer is one predictable branch and no clock read.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
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

// One application thread's totals: written by that thread only, read by the writer at exit.
struct AppTimes {
  std::atomic<uint64_t> ns[static_cast<size_t>(AppTimer::kCount)] = {};
  std::atomic<uint64_t> calls[static_cast<size_t>(AppTimer::kCount)] = {};
  void add(AppTimer t, int64_t elapsed_ns) {
    const size_t i = static_cast<size_t>(t);
    ns[i].store(ns[i].load(std::memory_order_relaxed) + static_cast<uint64_t>(elapsed_ns), std::memory_order_relaxed);
    calls[i].store(calls[i].load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
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
};

// Several lines for stderr, each starting with "self-timing: ".
std::string selfTimingText(const SelfTimingTotals& t);
// One JSON object for the metadata key `self_timing`.
std::string selfTimingJson(const SelfTimingTotals& t);

}  // namespace fprof::collector
