// What a helper program prints: run as a child process with its standard output read through a
// pipe, for fprof to use or print itself (nvdisasm's text, fprof-metrics-host's table).
#pragma once

#include <string>
#include <vector>

#include "fprof/core/expected.h"

namespace fprof::core {

struct ChildOutput {
  std::string text;     // its standard output
  int exit_status = 0;  // its exit code, or 128 + the signal that killed it
};

enum class ChildErrors {
  kShown,      // its standard error goes where fprof's goes (its messages are the user's)
  kDiscarded,  // to /dev/null
};

// Runs args[0] (a path) with args, without the variables that would inject fprof or another tool
// into it (LD_PRELOAD, CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH). An error where it cannot
// be started, with the system's cause.
Expected<ChildOutput> childOutput(std::vector<std::string> args, ChildErrors errors);

}  // namespace fprof::core
