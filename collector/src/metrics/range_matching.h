// Which counter range belongs to which profiled launch. The range profiler (auto range) makes one
// range per kernel it saw while started; a launch that failed makes none, and a kernel the
// collector did not see (it should not happen: every launch holds the context's profiling window)
// would make one too many. Matching by name and order, not by position alone, keeps one such
// surprise from shifting every later kernel's counters onto its neighbour. Pure C++: unit-tested.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace fprof::collector {

struct ProfiledLaunchName {
  std::string mangled;
  std::string demangled;
};

// True when a range's name names this launch's function. CUPTI names auto ranges after the kernel;
// the mangled name, the demangled one and the demangled one without its parameter list are taken.
bool rangeNameMatches(const std::string& range_name, const ProfiledLaunchName& launch);

// For each launch (in launch order), the index of its range (in range order), or none. With no
// range names (or none that names any launch), ranges are matched by position only when the counts
// agree; otherwise no launch gets a range.
std::vector<std::optional<size_t>> matchRangesToLaunches(const std::vector<std::string>& range_names,
                                                         size_t range_count,
                                                         const std::vector<ProfiledLaunchName>& launches);

}  // namespace fprof::collector
