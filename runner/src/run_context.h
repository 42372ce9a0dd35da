// What the steps of one `fprof run` share (runner.cpp, second_run.cpp, after_run.cpp).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fprof/core/environment.h"
#include "fprof/runner/child_env.h"
#include "fprof/runner/child_process.h"
#include "fprof/runner/run_options.h"
#include "fprof/runner/run_plan.h"
#include "fprof/runner/runner.h"

namespace fprof::runner {

struct RunContext {
  const RunOptions& options;
  const RunPlan& plan;
  const Tools& tools;
  Injection injection;
  std::string output;                  // where the collector writes (OutputPlace::workingOutput)
  std::vector<std::string> inherited;  // fprof's environment, "NAME=value"
  core::env::Lookup parent;            // the same, looked up
  std::string scratch;                 // metrics mode: the run's own folder (makeScratchFolder)
};

// Starts the program as `run` with `files`, waits for it (until `deadline`), and says on stderr
// when it could not be started.
WaitOutcome runProgramOnce(const RunContext& context, const PlannedRun& run, const RunFiles& files,
                           std::optional<std::chrono::steady_clock::time_point> deadline = {});

// The exit code of a wait status as `fprof run` passes it on (128 + N for signal N).
int exitCodeOf(int status);
// How the program ended, as metadata: exit_code or exit_signal, and a sentence (exit_status).
std::map<std::string, std::string> exitFacts(int status);

void sayReplay(const std::string& line);
inline constexpr const char* kSassCountersLost = "FLOPs and instructions stay unknown";

// One run of application replay: each database whose duplicates counted every profiled launch gets
// those SASS counters; the databases where they stopped, or that have none, are returned for the
// second run.
std::vector<std::string> joinDuplicateCounts(const RunContext& context, const std::vector<std::string>& complete,
                                             const std::string& cubin_dir);

// The second run of application replay for the first run's databases `firsts` (see second_run.cpp).
void runSecondTime(const RunContext& context, const PlannedRun& second, const std::vector<std::string>& firsts,
                   int first_code, double first_run_seconds);

// After the runs: the SASS step and the measured ceilings, for one database.
void completeDatabase(const RunContext& context, const std::string& db, const std::string& cubin_dir);

}  // namespace fprof::runner
