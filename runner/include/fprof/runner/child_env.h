// The environment one run of the profiled program is given: the collector injected, and the
// FPROF_* contract (core/environment.h, docs/environment.md) set from the options and the plan.
#pragma once

#include <string>
#include <vector>

#include "fprof/core/environment.h"
#include "fprof/runner/run_options.h"
#include "fprof/runner/run_plan.h"

namespace fprof::runner {

// The paths one run of the program writes to.
struct RunFiles {
  std::string output;     // FPROF_OUTPUT
  std::string cubin_dir;  // FPROF_CUBIN_DIR ("" = none)
  std::string pc_file;    // FPROF_SASS_PC_FILE ("" = none)
};

// What is injected into the program.
struct Injection {
  std::string collector;  // libfprof_collector.so: CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH
  // libfprof_preload.so (one CUPTI for the whole process, and the guard that lets torch.profiler
  // take CUPTI over: collector/preload/cupti_guard.cpp); "" = none found, the program's own
  // libcupti is used then.
  std::string preload;
  std::string cupti;  // a libcupti.so.13 preloaded before everything ("" = the toolkit's)
};

// The variables `run` of the program is given, beyond what it inherits; `parent` is looked up for
// LD_PRELOAD and LD_LIBRARY_PATH, which are extended rather than replaced. The run's duplicates
// are asked for only where its cubins are saved (`files.cubin_dir`).
core::env::Assignments childEnvironment(const RunOptions& options, const PlannedRun& run, const RunFiles& files,
                                        const Injection& injection, const core::env::Lookup& parent);

// The whole environment of the child: `inherited` ("NAME=value" entries) less every contract
// variable (`fprof run` alone sets those) and less the names assigned, then `assigned`.
std::vector<std::string> mergedEnvironment(const std::vector<std::string>& inherited,
                                           const core::env::Assignments& assigned);

}  // namespace fprof::runner
