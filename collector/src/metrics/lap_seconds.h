// Timing the steps of one piece of work: the seconds since a mark, and the mark moved to now.
#pragma once

#include <chrono>

namespace fprof::collector {

inline double lapSeconds(std::chrono::steady_clock::time_point& mark) {
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - mark).count();
  mark = now;
  return seconds;
}

}  // namespace fprof::collector
