// What `fprof run` is asked to do: its options, as the command line gives them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fprof::runner {

struct RunOptions {
  std::string output;    // "" = PROGRAM.fprof, PROGRAM-2.fprof, ... (never an existing file)
  std::string ceilings;  // measured ceilings to attach ("" = the per-user cache of `fprof ceilings`)
  bool force = false;    // replace existing databases of the same names once the run has written its own
  bool explain = false;  // print the plan and exit, without running the program
  std::string metrics;   // "" = trace mode; else a set or metric names
  std::string kernel_regex;
  std::vector<std::string> nvtx_include;
  std::string nvtx_scope;  // "" = the collector's default (process)
  std::vector<std::string> ops;
  int64_t launch_skip = 0;
  int64_t launch_count = 0;             // 0 = no limit
  int64_t samples_per_launch_kind = 0;  // 0 = the collector's default (1)
  bool every_launch = false;
  bool gpu_fault_safe = false;  // kernel timestamps in pinned host memory
  std::string cache_control;    // "" = all where the CUPTI can, else none
  std::string replay;           // "" or "auto" = chosen by the plan; kernel; application
  std::string second_run;       // "" = duplicates in the first run; patching; kernel
  std::string cupti;            // a libcupti.so.13 to use instead of the toolkit's ("" = FPROF_CUPTI, else none)
  std::vector<std::string> program;
};

}  // namespace fprof::runner
