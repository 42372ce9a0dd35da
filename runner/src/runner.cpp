// `fprof run` as a list of steps (see runner.h).
#include "fprof/runner/runner.h"

#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "fprof/core/child_output.h"
#include "fprof/core/environment.h"
#include "fprof/core/output.h"
#include "fprof/core/store.h"
#include "fprof/core/text.h"
#include "fprof/runner/run_files.h"
#include "fprof/runner/sass_step.h"
#include "fprof/runner/step_timer.h"
#include "run_context.h"

extern char** environ;

namespace fprof::runner {
namespace {

namespace fs = std::filesystem;

int inputError(const std::string& message) {
  std::fprintf(stderr, "fprof: run: %s\n", core::cleanText(message).c_str());
  return 2;
}

// Replay passes the CUPTI host API gives these metrics on this machine's GPU (fprof-metrics-host,
// no GPU work), or none where the tool is missing or cannot say.
std::optional<int> hardwarePasses(const std::string& tool, const std::vector<std::string>& metrics) {
  if (tool.empty() || metrics.empty()) return std::nullopt;
  std::vector<std::string> args{tool};
  args.insert(args.end(), metrics.begin(), metrics.end());  // as arguments: no shell reads them
  const core::Expected<core::ChildOutput> out = core::childOutput(std::move(args), core::ChildErrors::kDiscarded);
  if (!out || out->exit_status != 0) return std::nullopt;
  std::optional<int> passes;
  std::istringstream lines(out->text);
  for (std::string line; std::getline(lines, line);) {
    if (int n = 0; std::sscanf(line.c_str(), "passes %d", &n) == 1 && n > 0) passes = n;
  }
  return passes;
}

// --cupti, else FPROF_CUPTI, as an absolute path; "" for the toolkit's.
core::Expected<std::string> chosenCupti(const RunOptions& opt) {
  std::string cupti = opt.cupti;
  if (cupti.empty()) cupti = core::env::Parser(core::env::processEnvironment()).text(core::env::Var::kCupti);
  if (cupti.empty()) return cupti;
  std::error_code ec;
  if (!fs::exists(cupti, ec)) return core::makeError("--cupti " + cupti + " does not exist");
  return fs::absolute(cupti).string();
}

// The checks made before any planning: a program, no other injector, an output to write.
core::Expected<std::string> checkedOutput(const RunOptions& opt) {
  if (opt.program.empty() && !opt.explain) {
    return core::makeError("no program given; usage: fprof run [-o FILE] PROGRAM [ARGS...]");
  }
  if (const char* other = std::getenv("CUDA_INJECTION64_PATH"); other && *other && !opt.explain) {
    return core::makeError(std::string("CUDA_INJECTION64_PATH is already set (") + other +
                           "): another profiler or tool (nsys, ncu, a sanitizer) injects into CUDA; run fprof "
                           "outside it or unset the variable");
  }
  const std::string output =
      !opt.output.empty() ? opt.output : defaultOutput(opt.program.empty() ? "PROGRAM" : opt.program[0]);
  if (output == "-") {
    return core::makeError("-: the run's database cannot be written to standard output; name a file (./- for a file "
                           "named '-')");
  }
  std::error_code ec;
  if (fs::is_directory(output, ec) && !opt.explain) {  // --force replaces a file, never a folder
    return core::makeError(output + ": is a directory; name a file for the run's database");
  }
  if (fs::exists(output, ec) && !opt.force && !opt.explain) {
    return core::makeError(output + " exists; choose another name with -o or overwrite it with --force");
  }
  return output;
}

// The metadata every database of the run gets once the program has ended.
std::map<std::string, std::string> endingFacts(const RunPlan& plan, const WaitOutcome& waited) {
  std::map<std::string, std::string> facts = exitFacts(waited.status);
  facts["run_plan"] = plan.text();
  std::string forwarded;
  for (int sig : waited.forwarded) forwarded += (forwarded.empty() ? "" : ",") + signalName(sig);
  if (!forwarded.empty()) facts["forwarded_signals"] = forwarded;
  return facts;
}

// The first run's databases, checked, each with how the program ended recorded.
std::vector<std::string> completeDatabases(const std::vector<std::string>& files, const RunPlan& plan,
                                           const WaitOutcome& waited) {
  StepTimer timer;
  std::vector<std::string> complete;
  for (const std::string& f : files) {
    const core::Status checked = core::checkDatabase(f);
    timer.done("check the database");
    if (!checked) {
      std::fprintf(stderr, "[fprof] %s is incomplete: %s\n", f.c_str(), checked.error().c_str());
      continue;
    }
    if (core::Status recorded = core::appendMetadata(f, endingFacts(plan, waited)); !recorded) {
      std::fprintf(stderr, "[fprof] how the program ended was not recorded: %s\n", recorded.error().c_str());
    }
    timer.done("record how the program ended");
    complete.push_back(f);
  }
  return complete;
}

// The SASS counters of a set that needs them apart: from the first run's duplicates, else a
// second run of the program.
void countSassCounters(const RunContext& c, const std::vector<std::string>& complete, const std::string& cubin_dir,
                       bool duplicates, int code, double first_run_seconds) {
  const PlannedRun* second = c.plan.run(PlannedRun::Role::kSecond);
  if (second == nullptr || complete.empty()) return;
  StepTimer timer;
  std::vector<std::string> again = complete;
  if (duplicates) {
    again = joinDuplicateCounts(c, complete, cubin_dir);
    timer.done("the duplicates' SASS counts");
  }
  if (!again.empty()) runSecondTime(c, *second, again, code, first_run_seconds);
  timer.done("application replay's second run");
}

// Moves the databases into place (with --force) and names them, the one holding the program's
// kernels last.
void putInPlace(OutputPlace& place, const std::vector<std::string>& complete) {
  std::vector<std::string> problems;
  const std::vector<std::string> placed = place.publish(complete, problems);
  for (const std::string& p : problems) std::fprintf(stderr, "[fprof] %s\n", p.c_str());
  if (problems.empty()) place.discard();
  for (const std::string& line : readyReport(placed, place.output()).lines) {
    std::fprintf(stderr, "[fprof] %s\n", line.c_str());
  }
}

// What is said when fprof stops waiting at a second SIGINT: the program runs on, and its
// collector completes its database where it writes it.
int abandoned(const RunContext& c) {
  const std::string cubins =
      c.scratch.empty() ? "" : "; the cubins and counts it saves stay in " + c.scratch + ", for you to remove";
  std::fprintf(stderr,
               "[fprof] a second SIGINT: fprof stops waiting for %s, which runs on; its collector completes %s "
               "when it ends (no SASS step, ceilings or second run then)%s\n",
               c.options.program[0].c_str(), c.output.c_str(), cubins.c_str());
  return 130;
}

// Metrics mode: the run's own folder (c.scratch) and in it the one where the collector saves each
// module's cubin, whose path is returned.
core::Expected<std::string> makeCubinFolder(RunContext& c) {
  const core::Expected<std::string> scratch = makeScratchFolder(c.output);
  if (!scratch) return core::Error{scratch.error()};
  const std::string cubin_dir = *scratch + "/cubins";
  std::error_code ec;
  if (!fs::create_directory(cubin_dir, ec)) {
    const std::string cause = core::systemCause(ec.value());
    fs::remove_all(*scratch, ec);
    return core::makeError("cannot create " + cubin_dir + " for the saved cubins: " + cause);
  }
  c.scratch = *scratch;
  return cubin_dir;
}

// The first (or only) run and everything after it.
int profile(RunContext& c, OutputPlace& place) {
  std::string cubin_dir;  // metrics mode: the collector saves each module's cubin here
  if (c.plan.metrics_mode) {
    const core::Expected<std::string> cubins = makeCubinFolder(c);
    if (!cubins) {
      place.discard();
      return inputError(cubins.error());
    }
    cubin_dir = *cubins;
  }
  const PlannedRun& first = c.plan.runs.front();
  const bool duplicates = first.sass_duplicate && !cubin_dir.empty();
  const auto started = fs::file_time_type::clock::now();
  const auto first_started = std::chrono::steady_clock::now();
  std::optional<SassPrefetch> prefetch;  // the duplicates' functions decoded while the program runs
  if (duplicates) prefetch.emplace(cubin_dir);
  const WaitOutcome waited = runProgramOnce(c, first, RunFiles{c.output, cubin_dir, ""});
  const double first_run_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - first_started).count();
  StepTimer timer;
  if (prefetch) prefetch->finish();
  timer.done("the decoding under way as the program ended");
  if (waited.ending == WaitOutcome::Ending::kNotStarted) {
    std::error_code ec;
    if (!c.scratch.empty()) fs::remove_all(c.scratch, ec);
    place.discard();
    return waited.status;
  }
  if (waited.ending == WaitOutcome::Ending::kAbandoned) return abandoned(c);
  const int code = std::max(exitCodeOf(waited.status), 0);
  if (WIFSIGNALED(waited.status)) {
    std::fprintf(stderr, "[fprof] %s was killed by signal %d (%s)\n", c.options.program[0].c_str(),
                 WTERMSIG(waited.status), strsignal(WTERMSIG(waited.status)));
  }
  const std::vector<std::string> files = producedFiles(c.output, started);
  if (files.empty()) {
    std::fprintf(stderr,
                 "[fprof] no database was written: the program made no CUDA calls, or the collector was off (see "
                 "messages above)\n");
  }
  const std::vector<std::string> complete = completeDatabases(files, c.plan, waited);
  countSassCounters(c, complete, cubin_dir, duplicates, code, first_run_seconds);
  for (const std::string& f : complete) completeDatabase(c, f, cubin_dir);
  std::error_code ec;
  if (!c.scratch.empty()) fs::remove_all(c.scratch, ec);
  timer.done("remove the saved cubins");
  putInPlace(place, complete);
  return code;
}

}  // namespace

WaitOutcome runProgramOnce(const RunContext& c, const PlannedRun& run, const RunFiles& files,
                           std::optional<std::chrono::steady_clock::time_point> deadline) {
  const core::env::Assignments assigned = childEnvironment(c.options, run, files, c.injection, c.parent);
  const StartedProgram started = startProgram(c.options.program, mergedEnvironment(c.inherited, assigned));
  if (started.pid < 0) {
    std::fprintf(stderr, "fprof: run: %s %s: %s\n", started.exec_failed ? "cannot start" : "cannot fork for",
                 c.options.program[0].c_str(), core::systemCause(started.error).c_str());
    WaitOutcome failed;
    failed.ending = WaitOutcome::Ending::kNotStarted;
    failed.status = started.exec_failed ? 127 : 2;  // as a shell says a program it cannot run
    return failed;
  }
  WaitOutcome waited = waitForProgram(started.pid, deadline);
  for (int sig : waited.forwarded) {
    std::fprintf(stderr, "[fprof] passed %s on to %s\n", signalName(sig).c_str(), c.options.program[0].c_str());
  }
  return waited;
}

int runProgram(const RunOptions& opt, const Tools& tools) {
  for (const std::string& p : core::env::problemsOf(core::env::processEnvironment(), core::env::kFprof)) {
    std::fprintf(stderr, "fprof: warning: %s\n", p.c_str());
  }
  const auto output = checkedOutput(opt);
  if (!output) return inputError(output.error());
  if (core::Status checked = checkOptions(opt); !checked) return inputError(checked.error());
  const auto cupti = chosenCupti(opt);
  if (!cupti) return inputError(cupti.error());
  const PlanFacts facts{*cupti,
                        [&tools](const std::vector<std::string>& m) { return hardwarePasses(tools.metrics_host, m); }};
  const auto plan = planRun(opt, facts);
  if (!plan) return inputError(plan.error());
  for (const std::string& w : plan->warnings) std::fprintf(stderr, "[fprof] %s\n", w.c_str());
  if (opt.explain) {
    std::printf("output: %s (per rank NAME.rank<N>.fprof beside it)\n%s", output->c_str(), plan->text().c_str());
    return 0;
  }
  if (tools.collector.empty()) {
    return inputError("libfprof_collector.so not found next to fprof (this build has no CUPTI collector; build with "
                      "the CUDA toolkit, or set FPROF_COLLECTOR)");
  }
  std::error_code ec;
  if (const fs::path dir = fs::path(*output).parent_path(); !dir.empty() && !fs::is_directory(dir, ec)) {
    return inputError("output directory " + dir.string() + " does not exist");
  }
  auto place = OutputPlace::prepare(*output, opt.force);
  if (!place) return inputError(place.error());
  std::vector<std::string> inherited;
  for (char** e = environ; *e != nullptr; ++e) inherited.emplace_back(*e);
  RunContext context{opt, *plan, tools, Injection{tools.collector, tools.preload, *cupti}, place->workingOutput(),
                     inherited, core::env::processEnvironment(), {}};
  return profile(context, *place);
}

}  // namespace fprof::runner
