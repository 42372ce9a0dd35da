// Application replay in two runs (`fprof run --replay application` with a set holding SASS
// counters, e.g. roofline): the first run counts the hardware counters in the program's own
// execution of each profiled launch (caches emptied before it); the second run of the same program
// counts the SASS-instrumented counters (FLOPs per precision, instructions, local sectors), which
// need kernel replay. This joins the second run's raw counters to the first run's kernels, launch
// by launch, and derives the kernel_counter columns again from both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fprof/core/expected.h"

namespace fprof::core {

struct Profile;  // store.h

struct SecondRunMerge {
  size_t first_run_kernels = 0;
  size_t second_run_kernels = 0;
  size_t kernels_joined = 0;   // first-run kernels with counters that got the second run's values
  size_t kernels_without = 0;  // first-run kernels with counters that found no twin with counters
};

// Twins are the n-th launches of the same function (mangled name) with the same grid, block,
// cluster and dynamic shared memory, in launch order (correlation id), in each run: a deterministic
// program launches the same sequence twice. A kernel without a twin keeps its first-run values and
// unknown FLOPs; the count is returned and written as a collector event. Updates `first_db` in one
// transaction (on error nothing changes); `second_db` is only read.
//
// `by_launch`: raw counters the second run's database does not hold, by a launch's correlation id
// (the runtime call's and the driver call's both map to its values): the SASS counters a second run
// counted by patching (core/sass_pc.h), computed after it ended. A second-run kernel takes those of
// its own launch or, copied counters, those of its source launch; they replace its stored values
// of the same names.
using LaunchRawCounters = std::unordered_map<uint32_t, std::vector<std::pair<std::string, double>>>;
Expected<SecondRunMerge> mergeSecondRun(const std::string& first_db, const std::string& second_db,
                                        const LaunchRawCounters& by_launch = {});

// Application replay in one run: the SASS counters of each profiled launch came from its duplicate,
// counted in the same run (the collector's duplicate_launch.h) and computed after it, by the
// launch's correlation id (as mergeSecondRun's by_launch). Each kernel with counters takes its own
// launch's, or, copied counters, its source launch's; kernel_counter's derived columns are computed
// again. Kernels with counters that find none are counted (an event says so). One transaction.
struct LaunchCountersJoin {
  size_t kernels_joined = 0;
  size_t kernels_without = 0;
};
Expected<LaunchCountersJoin> joinLaunchCounters(const std::string& db, const LaunchRawCounters& by_launch);
// The same with `db` already loaded as `profile` (nothing read again).
Expected<LaunchCountersJoin> joinLaunchCounters(const std::string& db, const Profile& profile,
                                                const LaunchRawCounters& by_launch);

}  // namespace fprof::core
