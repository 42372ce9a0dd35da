// How `fprof run` will profile a program, decided before it starts: which runs of the program,
// what each counts and how, how their results are joined, and each fallback with its trigger.
// Pure C++ (no CUDA, no process started): `fprof run --explain` prints it, and each database it
// writes keeps it in metadata `run_plan`.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fprof/core/expected.h"
#include "fprof/runner/run_options.h"

namespace fprof::runner {

// What planning asks of the machine, only where the plan depends on it.
struct PlanFacts {
  std::string cupti;  // the libcupti.so.13 chosen by --cupti or FPROF_CUPTI ("" = the toolkit's)
  // The replay passes these hardware counters take on this machine's GPU (CUPTI's host API, no
  // GPU work), or none where that cannot be told.
  std::function<std::optional<int>(const std::vector<std::string>& metrics)> hardware_passes;
};

// One run of the program, and what the collector is told for it.
struct PlannedRun {
  enum class Role {
    kOnly,            // trace mode, or one metrics run
    kFirst,           // application replay's own run of the program
    kSecond,          // the program again, for the SASS counters
    kSecondOnKernel,  // the second run again under kernel replay, where the one by patching was stopped
  };
  Role role = Role::kOnly;
  std::string metrics;        // FPROF_METRICS ("" in trace mode)
  std::string replay;         // FPROF_REPLAY ("" = not set: the collector's default, auto)
  std::string cache_control;  // FPROF_CACHE_CONTROL ("" = not set: all where the CUPTI can)
  bool sass_duplicate = false;    // FPROF_SASS_DUPLICATE=1: SASS counts from duplicates in this run
  bool saves_cubins = false;      // FPROF_CUBIN_DIR: for the SASS steps after the run
  bool writes_pc_counts = false;  // FPROF_SASS_PC_FILE: counted by SASS patching
  bool second = false;            // FPROF_SECOND_RUN=1
  bool time_limited = false;      // stopped past patchedRunLimitSeconds(the first run's time)
  std::string when;               // when it is made, for people
  std::string counts;             // what it counts and how, for people
};

// A fallback: what the runner does (`action`) when `trigger` happens.
struct Fallback {
  std::string trigger;
  std::string action;
};

struct RunPlan {
  bool metrics_mode = false;
  std::string metric_set;                  // as asked (--metrics)
  std::vector<std::string> metrics;        // the set expanded
  std::vector<std::string> hardware_metrics;  // counted by the range profiler
  std::vector<std::string> sass_metrics;      // SASS-instrumented (FLOPs, instructions)
  std::string replay;          // how launches are counted: application, kernel, or the collector's choice
  std::string replay_reason;   // why, one sentence
  bool duplicates = false;     // the first run counts the SASS counters from duplicates of its launches
  std::vector<PlannedRun> runs;  // runs[0] is always made; the others only as their `when` says
  std::vector<std::string> joins;
  std::vector<Fallback> fallbacks;
  std::vector<std::string> after;     // the steps after the runs
  std::vector<std::string> warnings;  // said before the program starts

  const PlannedRun* run(PlannedRun::Role role) const;
  // The plan for people (fprof run --explain, metadata run_plan).
  std::string text() const;
};

// The options' own consistency, checked first by planRun: a bad metric selection or regular
// expression, a metrics option without --metrics.
core::Status checkOptions(const RunOptions& options);

// The plan for `options`, or the one-sentence reason the options cannot be planned (a bad metric
// selection or regular expression, a metrics option without --metrics, --second-run without
// application replay).
core::Expected<RunPlan> planRun(const RunOptions& options, const PlanFacts& facts);

// How long a second run by SASS patching may take: 3 x the first run + 60 s. Patching slows only
// the profiled launches, so a run past that is taken for stuck.
double patchedRunLimitSeconds(double first_run_seconds);

}  // namespace fprof::runner
