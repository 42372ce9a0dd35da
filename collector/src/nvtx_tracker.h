// NVTX range bookkeeping for trace mode: per-thread push/pop stacks (one per domain, interleaved
// in push order), process-wide start/end ranges, and a cheap snapshot of "where am I" for each
// kernel launch. Pure C++: the CUPTI callback decodes NVTX parameters and calls in here.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "fprof/core/model.h"

namespace fprof::collector {

// The NVTX context of one launch. path points at an interned string that lives as long as the
// tracker, so a launch carries it for the price of a pointer.
struct NvtxSnapshot {
  uint64_t innermost_key = 0;  // 0 = no range open
  const std::string* path = nullptr;
};

// One thread's push/pop ranges. The caller keeps one per thread (thread_local).
struct NvtxThreadStack {
  struct Entry {
    uint64_t key = 0;
    const void* domain = nullptr;
    const std::string* path = nullptr;  // interned "seg/seg/..." of this entry and those below it
    std::string segment;                // "domain::message" or "message"
    core::NvtxRangeRecord record;
  };
  std::vector<Entry> entries;
  // Snapshot cache: valid while the top entry and the start/end generation are unchanged.
  uint64_t cached_top_key = ~uint64_t{0};
  uint64_t cached_start_end_generation = ~uint64_t{0};
  NvtxSnapshot cached;
};

class NvtxTracker {
 public:
  void registerDomain(const void* handle, const std::string& name);
  void registerString(const void* handle, const std::string& text);
  std::string domainName(const void* handle) const;  // "" for the default domain (nullptr)
  std::string registeredString(const void* handle) const;

  void push(NvtxThreadStack& stack, const void* domain, const std::string& message,
            std::optional<uint64_t> payload, uint32_t thread_id, int64_t timestamp_ns);
  // Pops the innermost range of `domain` on this thread. False when none is open (an unmatched
  // pop in the target), which is counted and otherwise ignored.
  bool pop(NvtxThreadStack& stack, const void* domain, int64_t timestamp_ns);
  void start(uint64_t range_id, const void* domain, const std::string& message,
             std::optional<uint64_t> payload, uint32_t thread_id, int64_t timestamp_ns);
  bool end(uint64_t range_id, int64_t timestamp_ns);

  NvtxSnapshot snapshot(NvtxThreadStack& stack);

  // Range records produced since the last call: each range once when it opens (no end) and again
  // when it closes; the store keeps the last record of a key.
  std::vector<core::NvtxRangeRecord> takeRecords();
  uint64_t unmatchedPops() const { return unmatched_pops_.load(std::memory_order_relaxed); }

 private:
  const std::string* intern(std::string text);  // requires mu_
  void emit(const core::NvtxRangeRecord& record);
  std::string segment(const void* domain, const std::string& message) const;  // requires mu_

  struct OpenStartEnd {
    uint64_t key = 0;
    uint64_t order = 0;
    std::string segment;
    core::NvtxRangeRecord record;
  };

  mutable std::mutex mu_;
  std::unordered_map<const void*, std::string> domains_;
  std::unordered_map<const void*, std::string> strings_;
  std::unordered_set<std::string> interned_;
  std::unordered_map<uint64_t, OpenStartEnd> open_start_end_;  // by nvtxRangeId_t
  uint64_t start_order_ = 0;
  std::vector<core::NvtxRangeRecord> records_;
  std::atomic<uint64_t> next_key_{1};
  std::atomic<uint64_t> start_end_generation_{0};
  std::atomic<int> open_start_end_count_{0};
  std::atomic<uint64_t> unmatched_pops_{0};
};

}  // namespace fprof::collector
