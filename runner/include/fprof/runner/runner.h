// `fprof run` as a library: validate the options, plan the runs (run_plan.h), start the program
// with the collector injected and wait for it (child_process.h), make the second run where the
// plan needs one, join the runs' counters, the SASS step and the ceilings, and put the databases
// in place. The command line (cli/cmd_run.cpp) only maps its flags to RunOptions.
#pragma once

#include <functional>
#include <string>

#include "fprof/runner/run_options.h"

namespace fprof::runner {

// What fprof finds installed beside itself.
struct Tools {
  std::string collector;     // libfprof_collector.so ("" = none: `fprof run` cannot profile)
  std::string preload;       // libfprof_preload.so ("" = none)
  std::string metrics_host;  // fprof-metrics-host: the replay passes of a metric set, no GPU work ("" = none)
  // Where `fprof ceilings` keeps the latest measurement of a GPU model.
  std::function<std::string(const std::string& device_name)> ceilings_cache_path;
};

// Runs the program as `options` say; the exit code of `fprof run`: the program's own (128 + N for
// signal N), 2 for bad input, 127 where the program could not be started.
int runProgram(const RunOptions& options, const Tools& tools);

}  // namespace fprof::runner
