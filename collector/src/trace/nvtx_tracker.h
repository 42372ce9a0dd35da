// NVTX range bookkeeping for trace mode, off the application's threads: the writer thread
// replays each thread's push/pop events through an NvtxPathStack, which pairs pops with pushes,
// builds the range records and resolves the path of each launch. Start/end ranges are
// process-wide and rare; they are kept under a lock when they happen (StartEndRanges), and a
// launch refers to an immutable snapshot of the open ones. Pure C++: no CUPTI.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fprof/core/model.h"

namespace fprof::collector {

// Names of NVTX domains and registered strings, registered on the thread that created them and
// read wherever ranges are resolved.
class NvtxNames {
 public:
  void registerDomain(const void* handle, std::string_view name);
  void registerString(const void* handle, std::string_view text);
  std::string domainName(const void* handle) const;  // "" for the default domain (nullptr)
  std::string registeredString(const void* handle) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<const void*, std::string> domains_;
  std::unordered_map<const void*, std::string> strings_;
};

// The open start/end ranges at some moment: immutable once built, shared by the launches made
// while they were open.
struct StartEndState {
  std::string path;  // the open ranges' segments, oldest first, joined by '/'
  uint64_t innermost_key = 0;  // the newest open range (0 = none open)
  bool any_open = false;
};

// Process-wide start/end ranges (nvtxRangeStart/End), which any thread may end.
class StartEndRanges {
 public:
  void start(uint64_t range_id, uint64_t key, std::string domain, std::string segment, std::string message,
             std::optional<uint64_t> payload, uint32_t thread_id, int64_t timestamp_ns);
  bool end(uint64_t range_id, int64_t timestamp_ns);

  // Changes with every start and end; a thread compares it with the last state it used.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // The current state and its generation, together.
  std::pair<std::shared_ptr<const StartEndState>, uint64_t> current() const;
  std::vector<core::NvtxRangeRecord> takeRecords();

 private:
  struct Open {
    uint64_t order = 0;
    std::string segment;
    core::NvtxRangeRecord record;
  };
  void publish();  // requires mu_

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Open> open_;  // by nvtxRangeId_t
  uint64_t order_ = 0;
  std::vector<core::NvtxRangeRecord> records_;
  std::shared_ptr<const StartEndState> current_;
  std::atomic<uint64_t> generation_{0};
};

// Interned NVTX paths, so a launch carries its path for the price of a pointer and a repeated
// path is built once: a child path is found by (parent path, domain, message) without building
// the string again. Single-threaded: the writer thread has one; in metrics mode each
// application thread has its own.
class NvtxPathTable {
 public:
  const std::string* child(const std::string* parent, const void* domain, std::string_view message,
                           const NvtxNames& names);
  // The path of a launch under open start/end ranges: `state.path` + "/" + `path`.
  const std::string* join(const StartEndState& state, const std::string* path);
  size_t size() const { return strings_.size(); }

 private:
  struct KeyView {
    const std::string* parent;
    const void* domain;
    std::string_view message;
  };
  struct Key {
    const std::string* parent;
    const void* domain;
    std::string message;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(const KeyView& k) const;
    size_t operator()(const Key& k) const { return (*this)(KeyView{k.parent, k.domain, k.message}); }
  };
  struct Eq {
    using is_transparent = void;
    static KeyView view(const Key& k) { return {k.parent, k.domain, k.message}; }
    static KeyView view(const KeyView& k) { return k; }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      const KeyView x = view(a), y = view(b);
      return x.parent == y.parent && x.domain == y.domain && x.message == y.message;
    }
  };
  struct PairHash {
    size_t operator()(const std::pair<const std::string*, const std::string*>& p) const;
  };

  const std::string* intern(std::string text);

  std::deque<std::string> strings_;  // stable addresses
  std::unordered_map<std::string_view, const std::string*> by_text_;
  std::unordered_map<Key, const std::string*, Hash, Eq> children_;
  std::unordered_map<std::pair<const std::string*, const std::string*>, const std::string*, PairHash> joined_;
};

// One thread's push/pop ranges, replayed in the order the thread made them.
class NvtxPathStack {
 public:
  struct Snapshot {
    uint64_t innermost_key = 0;  // 0 = no range open
    const std::string* path = nullptr;
  };

  void push(uint64_t key, const void* domain, std::string message, std::optional<uint64_t> payload,
            uint32_t thread_id, int64_t timestamp_ns);
  // Pops the innermost range of `domain` and, with `records`, appends its record. False when no
  // range of `domain` is open (an unmatched pop in the target).
  bool pop(const void* domain, int64_t timestamp_ns, const NvtxNames& names,
           std::vector<core::NvtxRangeRecord>* records);
  // The NVTX context of a launch made now: innermost range and path.
  Snapshot snapshot(const std::shared_ptr<const StartEndState>& start_end, NvtxPathTable& paths,
                    const NvtxNames& names);
  // Ends one collection: appends a record (no end yet) for each range pushed since the last
  // call and still open, so a crash keeps it. A range opened and closed within one collection
  // gets one record, at its pop; one that spans collections gets one per state it was seen in.
  void endCollection(const NvtxNames& names, std::vector<core::NvtxRangeRecord>& records);
  size_t depth() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t key = 0;
    const void* domain = nullptr;
    std::string message;
    std::optional<uint64_t> payload;
    std::optional<uint64_t> parent_key;
    int64_t start_ns = 0;
    uint32_t thread_id = 0;
    int32_t depth = 0;
    bool recorded = false;              // its open record went out in an earlier collection
    const std::string* path = nullptr;  // computed when a launch needs it; reset when it changes
  };
  static core::NvtxRangeRecord record(const Entry& e, std::string message, const NvtxNames& names);
  const std::string* pathOf(size_t index, NvtxPathTable& paths, const NvtxNames& names);

  std::vector<Entry> entries_;
  // Snapshot cache: valid while the top entry, its path and the start/end state are unchanged.
  uint64_t cached_top_key_ = ~uint64_t{0};
  std::shared_ptr<const StartEndState> cached_state_;
  Snapshot cached_;
};

}  // namespace fprof::collector
