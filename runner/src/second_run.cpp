// The SASS counters of application replay: joined from the duplicates of the first run, or
// counted by a second run of the program and joined rank by rank (run_plan.h says which).
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "fprof/core/replay_merge.h"
#include "fprof/core/sass_pc.h"
#include "fprof/core/store.h"
#include "fprof/runner/run_files.h"
#include "fprof/runner/sass_step.h"
#include "run_context.h"

namespace fprof::runner {
namespace {

namespace fs = std::filesystem;

// What a second run counted by SASS patching leaves beside its database: the per-PC counts and the
// cubins of the modules it loaded, which turn those counts into counters (sass_step.h).
struct PatchedRunFiles {
  std::string pc_file;
  std::string cubin_dir;
  void remove() const {
    std::error_code ec;
    fs::remove(pc_file, ec);
    fs::remove_all(cubin_dir, ec);
  }
};

// The label before each line about one of several databases.
std::string labelOf(const std::string& db, const std::string& output, size_t databases) {
  return databases > 1 || !processTag(db, output).empty() ? db + ": " : "";
}

// The SASS counters by launch computed after a second run by SASS patching (its database holds
// them under kernel replay: none then).
core::Expected<core::LaunchRawCounters> countersComputedAfter(const PlannedRun& second, const std::string& db,
                                                              const PatchedRunFiles& files, const std::string& label) {
  if (!second.writes_pc_counts) return core::LaunchRawCounters{};
  std::string summary;
  auto counted = sassCountersOfPatchedRun(db, files.pc_file, files.cubin_dir, summary);
  if (counted) sayReplay(label + summary);
  return counted;
}

// Joins a second run that ended well to `first`, and says what it did.
void joinSecondRun(const RunContext& c, const PlannedRun& second, const std::string& first,
                   const std::string& second_db, const PatchedRunFiles& files, const std::string& label) {
  const auto by_launch = countersComputedAfter(second, second_db, files, label);
  if (!by_launch) {
    return sayReplay(label + "the SASS counts could not be read: " + by_launch.error() + "; " + kSassCountersLost);
  }
  auto merged = core::mergeSecondRun(first, second_db, *by_launch);
  if (!merged) return sayReplay(label + "joining the second run failed: " + merged.error() + "; " + kSassCountersLost);
  sayReplay(label + std::to_string(merged->kernels_joined) + " kernels got the second run's counters" +
            (merged->kernels_without > 0
                 ? ", " + std::to_string(merged->kernels_without) + " found no twin (see fprof info)"
                 : std::string()));
  (void)core::appendMetadata(first, {{"metric_set", c.options.metrics}, {"second_run_replay", second.replay}});
}

// The first run's databases that a second run can give counters to: in metrics mode, and named
// by rank where there are several (a process known only by its pid has no twin to pair with).
std::vector<std::string> databasesToCountAgain(const std::vector<std::string>& firsts, const std::string& output) {
  std::vector<std::string> out;
  for (const std::string& f : firsts) {
    const std::string tag = processTag(f, output);
    const std::string label = firsts.size() > 1 ? f + ": " : "";
    if (!tag.empty() && tag.rfind(".rank", 0) != 0) {
      sayReplay(label + "a process without a rank (RANK, ...) cannot be paired with its second run; " +
                kSassCountersLost);
      continue;
    }
    auto facts = core::loadProfile(f);
    if (!facts || facts->meta("mode") != "metrics") {
      sayReplay(label + "the first run collected no counters: nothing to count again");
      continue;
    }
    out.push_back(f);
  }
  return out;
}

// Whether a first run that ended so can be run again for its SASS counters: it ended by itself (an
// exit code, or a crash it will crash again at, whose launches before it the second run counts),
// not stopped from outside (SIGINT, SIGTERM, SIGKILL: the user or a time limit).
bool endedByItself(int code) {
  if (code <= 128) return true;
  const int sig = code - 128;
  return sig == SIGABRT || sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
}

// Joins each of the first run's databases to the second run's database of the same process tag
// (rank), with that rank's per-PC counts.
void joinEachProcess(const RunContext& c, const PlannedRun& second, const std::string& scratch,
                     const std::vector<std::string>& counted, const std::vector<std::string>& produced,
                     const PatchedRunFiles& files) {
  for (const std::string& f : counted) {
    const std::string tag = processTag(f, c.output);
    const std::string label = labelOf(f, c.output, counted.size());
    const auto twin = std::find_if(produced.begin(), produced.end(),
                                   [&](const std::string& p) { return processTag(p, scratch) == tag; });
    if (twin == produced.end()) {
      sayReplay(label + "the second run wrote no database for this process; " + kSassCountersLost);
      continue;
    }
    joinSecondRun(c, second, f, *twin, PatchedRunFiles{files.pc_file + tag, files.cubin_dir}, label);
  }
}

// Where a second run by SASS patching stood when it was stopped, from each process's PC file (the
// launch after the last counted one did not return), kept in each first run's database as
// second_run_patching_stopped. Returns the first process's.
std::string recordPatchedRunStop(const std::vector<std::string>& counted, const std::string& output,
                                 const PatchedRunFiles& files, const std::string& limit_seconds) {
  std::string first;
  for (const std::string& f : counted) {
    const std::string progress = patchedRunProgress(files.pc_file + processTag(f, output));
    if (first.empty()) first = progress;
    (void)core::appendMetadata(f, {{"second_run_patching_stopped", "after " + limit_seconds + " s: " + progress}});
  }
  return first;
}

// The scratch files of one second run: its databases (SCRATCH, SCRATCH.rank<N>, ...) and, by SASS
// patching, each process's per-PC counts and the cubins.
struct SecondRunScratch {
  std::string db;
  PatchedRunFiles patched;
  std::vector<std::string> tags;  // the counted processes' tags, for their per-PC files

  void removePatchedFiles() const {
    for (const std::string& tag : tags) PatchedRunFiles{patched.pc_file + tag, ""}.remove();
    patched.remove();
  }
};

SecondRunScratch prepareScratch(const RunContext& c, const PlannedRun& second, const std::vector<std::string>& counted) {
  SecondRunScratch s;
  s.db = c.scratch + "/second-run.fprof";
  for (const std::string& stale : runDatabases(s.db)) removeDatabaseFiles(stale);
  for (const std::string& f : counted) s.tags.push_back(processTag(f, c.output));
  if (second.writes_pc_counts) {
    s.patched = {s.db + ".pcs", s.db + ".cubins"};
    s.removePatchedFiles();
    std::error_code ec;
    fs::create_directories(s.patched.cubin_dir, ec);
  }
  return s;
}

}  // namespace

void sayReplay(const std::string& line) { std::fprintf(stderr, "[fprof] application replay: %s\n", line.c_str()); }

// The second run of application replay: the program again, counting the SASS metrics (by SASS
// patching, or under kernel replay) into scratch databases, one per rank, each joined to the first
// run's database of the same rank and removed. A program that failed or crashed in its first run
// is run again only if it ended by itself, and its second run must end the same way. A run by SASS
// patching that passes its limit is stopped and the second run made again under kernel replay.
void runSecondTime(const RunContext& c, const PlannedRun& second, const std::vector<std::string>& firsts,
                   int first_code, double first_run_seconds) {
  if (!endedByItself(first_code)) {
    return sayReplay("the first run was stopped (exit code " + std::to_string(first_code) + "): no second run; " +
                     kSassCountersLost);
  }
  const std::vector<std::string> counted = databasesToCountAgain(firsts, c.output);
  if (counted.empty()) return;
  const SecondRunScratch scratch = prepareScratch(c, second, counted);
  sayReplay("running " + c.options.program[0] + " again for the SASS counters (FLOPs, instructions) " +
            (second.writes_pc_counts ? "by SASS patching (no replay)" : "under kernel replay"));
  const auto started = fs::file_time_type::clock::now();
  std::optional<std::chrono::steady_clock::time_point> deadline;
  const double limit_seconds = patchedRunLimitSeconds(first_run_seconds);
  if (second.time_limited) {
    deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                      std::chrono::duration<double>(limit_seconds));
  }
  const WaitOutcome waited =
      runProgramOnce(c, second, RunFiles{scratch.db, scratch.patched.cubin_dir, scratch.patched.pc_file}, deadline);
  const std::vector<std::string> produced = producedFiles(scratch.db, started);
  auto removeScratch = [&] {
    for (const std::string& f : produced) removeDatabaseFiles(f);
    if (second.writes_pc_counts) scratch.removePatchedFiles();
  };
  if (waited.ending == WaitOutcome::Ending::kTimedOut) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%.0f", limit_seconds);
    const std::string where = recordPatchedRunStop(counted, c.output, scratch.patched, limit);
    removeScratch();
    sayReplay(std::string("the second run by SASS patching did not end within ") + limit +
              " s (3 x the first run + 60 s) and was stopped (" + where + "); counting under kernel replay instead");
    const PlannedRun* again = c.plan.run(PlannedRun::Role::kSecondOnKernel);
    if (again != nullptr) runSecondTime(c, *again, counted, first_code, first_run_seconds);
    return;
  }
  if (waited.ending != WaitOutcome::Ending::kEnded || exitCodeOf(waited.status) != first_code) {
    const std::string ending = waited.ending == WaitOutcome::Ending::kEnded ? exitFacts(waited.status).at("exit_status")
                               : waited.ending == WaitOutcome::Ending::kNotStarted ? std::string("it did not start")
                                                                                   : std::string("not waited for");
    sayReplay("the second run ended otherwise than the first (" + ending + "); " + kSassCountersLost);
    return removeScratch();
  }
  joinEachProcess(c, second, scratch.db, counted, produced, scratch.patched);
  removeScratch();
}

std::vector<std::string> joinDuplicateCounts(const RunContext& c, const std::vector<std::string>& complete,
                                             const std::string& cubin_dir) {
  std::vector<std::string> again;
  const PlannedRun* second = c.plan.run(PlannedRun::Role::kSecond);
  for (const std::string& f : complete) {
    const std::string label = labelOf(f, c.output, complete.size());
    auto facts = core::loadProfile(f);
    if (!facts || facts->meta("mode") != "metrics") {
      again.push_back(f);  // the second run's checks say what it is
      continue;
    }
    if (const std::string said = facts->meta("sass_in_first_run"); said != "every profiled launch") {
      sayReplay(label + "SASS counts from duplicates of the profiled launches " +
                (said.empty() ? std::string("were not recorded as complete (the program ended before the collector's "
                                            "end of run)")
                              : "were " + said) +
                "; counting them in a second run");
      again.push_back(f);
      continue;
    }
    std::string summary;
    auto counted = sassCountersOfPatchedRun(f, core::duplicatesPcFile(f, cubin_dir), cubin_dir, summary);
    if (!counted) {
      sayReplay(label + "the duplicates' SASS counts could not be read: " + counted.error() + "; " + kSassCountersLost);
      continue;
    }
    auto joined = core::joinLaunchCounters(f, *facts, *counted);
    if (!joined) {
      sayReplay(label + "joining the duplicates' SASS counts failed: " + joined.error() + "; " + kSassCountersLost);
      continue;
    }
    // The set as asked for, and every metric counted (the run's own and the duplicates').
    (void)core::appendMetadata(f, {{"metric_set", c.options.metrics},
                                   {"metrics", facts->meta("metrics") + "," + (second ? second->metrics : "")}});
    sayReplay(label + "one run: SASS counts from a duplicate of each profiled launch, " + summary + "; " +
              std::to_string(joined->kernels_joined) + " kernels got them" +
              (joined->kernels_without > 0 ? ", " + std::to_string(joined->kernels_without) + " did not (see fprof info)"
                                           : std::string()));
  }
  return again;
}

}  // namespace fprof::runner
