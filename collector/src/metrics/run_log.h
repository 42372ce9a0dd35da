// What a metrics run tells the user and the database beside the counters: collector events (notes,
// also on stderr), metadata, and the range-debugging switch. Pure C++.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fprof::collector {

class RunLog {
 public:
  // Stored as a collector event; shown on stderr, as a warning unless it is only information.
  void note(const char* severity, const std::string& message);
  void meta(std::string key, std::string value) { metadata_.emplace_back(std::move(key), std::move(value)); }
  std::vector<std::pair<std::string, std::string>> takeNotes();     // (severity, message)
  std::vector<std::pair<std::string, std::string>> takeMetadata();  // (key, value)

  // FPROF_DEBUG_RANGES=1: each decoded range and where it went, logged.
  bool debugRanges() const { return debug_ranges_; }
  void setDebugRanges(bool on) { debug_ranges_ = on; }

 private:
  std::vector<std::pair<std::string, std::string>> notes_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  bool debug_ranges_ = false;
};

}  // namespace fprof::collector
