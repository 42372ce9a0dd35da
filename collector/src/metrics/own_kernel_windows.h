// Time windows in which a context ran only the collector's own work: a profiled launch's duplicate
// (duplicate_launch.h), counted by SASS patching between a checkpoint of the context's memory and
// its restore. The duplicate runs inside the program's launch callback, so CUPTI files its kernel
// record under the program's launch's correlation id and name; the translator drops the records
// that lie inside a window of their context instead. Pure C++: tested on the CPU.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <vector>

namespace fprof::collector {

class OwnKernelWindows {
 public:
  static constexpr uint64_t kOpen = std::numeric_limits<uint64_t>::max();

  // A window from `start_ns` (CUPTI's timestamps) on, open until close(): records in it are dropped
  // even before it is closed, so a record that arrives early is never taken for the program's.
  // Windows of one context come in time order (the context is drained before each).
  void open(uint32_t context_id, uint64_t start_ns) {
    std::lock_guard lock(mu_);
    windows_[context_id].push_back({start_ns, kOpen});
  }
  // Ends the context's last window; nothing of the program's ran on the context before it.
  void close(uint32_t context_id, uint64_t end_ns) {
    std::lock_guard lock(mu_);
    auto it = windows_.find(context_id);
    if (it != windows_.end() && !it->second.empty()) it->second.back().end_ns = end_ns;
  }
  // Whether a record of the context that ran from `start_ns` to `end_ns` lies inside a window.
  bool covers(uint32_t context_id, uint64_t start_ns, uint64_t end_ns) const {
    std::lock_guard lock(mu_);
    auto it = windows_.find(context_id);
    if (it == windows_.end()) return false;
    const std::vector<Window>& w = it->second;
    // The last window starting at or before the record's start.
    auto after = std::upper_bound(w.begin(), w.end(), start_ns,
                                  [](uint64_t t, const Window& x) { return t < x.start_ns; });
    return after != w.begin() && end_ns <= std::prev(after)->end_ns;
  }

 private:
  struct Window {
    uint64_t start_ns;
    uint64_t end_ns;
  };
  mutable std::mutex mu_;
  std::map<uint32_t, std::vector<Window>> windows_;
};

}  // namespace fprof::collector
