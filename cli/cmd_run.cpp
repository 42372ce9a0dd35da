// fprof run: runs a program with the CUPTI collector injected and says where the database went.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "child_wait.h"
#include "command.h"
#include "paths.h"
#include "sass_step.h"
#include "step_timer.h"
#include "fprof/core/environment.h"
#include "fprof/core/metric_sets.h"
#include "fprof/core/replay_merge.h"
#include "fprof/core/sass_pc.h"
#include "fprof/core/store.h"

namespace fprof::cli {
namespace {

namespace fs = std::filesystem;

struct RunOptions {
  std::string output;
  std::string ceilings;
  bool force = false;
  std::string metrics;  // empty = trace mode
  std::string kernel_regex;
  std::vector<std::string> nvtx_include;
  std::string nvtx_scope;  // empty = the collector's default (process)
  std::vector<std::string> ops;
  int64_t launch_skip = 0;
  int64_t launch_count = 0;  // 0 = no limit
  int64_t samples_per_launch_kind = 0;  // 0 = the collector's default (1)
  bool every_launch = false;
  bool gpu_fault_safe = false;  // kernel timestamps in pinned host memory (FPROF_CUPTI_HOST_PINNED)
  std::string cache_control;  // "" = all where the CUPTI can, else none
  std::string replay;         // "" = auto
  std::string second_run;     // "" = duplicates in the first run: how application replay counts SASS (--second-run)
  std::string cupti;          // a libcupti.so.13 to use instead of the toolkit's (FPROF_CUPTI)
  std::vector<std::string> program;
};

// The collector sits in ../lib next to bin/fprof, in the build tree and when installed.
std::string findCollector() {
  if (std::string asked = core::env::Parser(core::env::processEnvironment()).text(core::env::Var::kCollector);
      !asked.empty()) {
    return asked;
  }
  return findSibling("libfprof_collector.so");
}

// "./model" -> "model.fprof", then "model-2.fprof", ... so an earlier profile is never overwritten.
std::string defaultOutput(const std::string& program) {
  std::string stem = fs::path(program).filename().string();
  if (stem.empty() || stem == "." || stem == "..") stem = "profile";
  std::error_code ec;
  std::string candidate = stem + ".fprof";
  for (int n = 2; fs::exists(candidate, ec); ++n) candidate = stem + "-" + std::to_string(n) + ".fprof";
  return candidate;
}

// The named database and the per-rank / per-process siblings the collector writes beside it
// (run.rank3.fprof, run.pid812.fprof: collector/src/injection/config.cpp), as they are on disk now.
std::vector<fs::path> runDatabases(const std::string& output) {
  std::vector<fs::path> files;
  const fs::path out(output);
  const fs::path dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  const std::string stem = out.stem().string();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const bool same = e.path().filename() == out.filename();
    const bool sibling = name.rfind(stem + ".rank", 0) == 0 || name.rfind(stem + ".pid", 0) == 0;
    if ((same || sibling) && e.path().extension() == ".fprof") {
      files.push_back(out.parent_path().empty() ? e.path().filename() : e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Databases this run produced: those of runDatabases written since it started.
std::vector<std::string> producedFiles(const std::string& output, fs::file_time_type started) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const fs::path& f : runDatabases(output)) {
    if (fs::last_write_time(f, ec) >= started) files.push_back(f.string());
  }
  return files;
}

// Copies measured ceilings of the run's GPU model into the run, so its analysis has both kinds of
// roofs: from --ceilings FILE, else from the per-user cache that `fprof ceilings` fills.
void attachCeilings(const std::string& run_file, const std::string& ceilings_file) {
  auto run = core::loadProfile(run_file);
  if (!run) return;
  for (const core::DeviceInfo& d : run->devices) {
    const std::string source = ceilings_file.empty() ? ceilingsCachePath(d.name) : ceilings_file;
    std::error_code ec;
    if (!fs::exists(source, ec)) {
      std::fprintf(stderr,
                   "[fprof] no measured ceilings for %s yet: run 'fprof ceilings' once on this GPU (the analysis "
                   "uses datasheet roofs meanwhile)\n",
                   d.name.c_str());
      continue;
    }
    auto measured = core::loadProfile(source);
    if (!measured) {
      std::fprintf(stderr, "[fprof] ceilings not attached: %s\n", measured.error().c_str());
      continue;
    }
    std::vector<core::CeilingRecord> rows;
    for (const core::CeilingRecord& c : measured->ceilings) {
      if (c.device_name == d.name) rows.push_back(c);
    }
    if (rows.empty()) {
      std::fprintf(stderr, "[fprof] %s holds no ceilings for %s; not attached\n", source.c_str(), d.name.c_str());
      continue;
    }
    if (core::Status s = core::appendCeilings(run_file, rows); !s) {
      std::fprintf(stderr, "[fprof] ceilings not attached: %s\n", s.error().c_str());
    } else {
      std::fprintf(stderr, "[fprof] attached %zu ceilings of %s from %s\n", rows.size(), d.name.c_str(),
                   source.c_str());
    }
  }
}

// How the program ended, as metadata: exit_code or exit_signal, and a sentence (exit_status).
std::map<std::string, std::string> exitFacts(int status) {
  if (WIFEXITED(status)) {
    return {{"exit_code", std::to_string(WEXITSTATUS(status))},
            {"exit_status", "exited with " + std::to_string(WEXITSTATUS(status))}};
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    const std::string name = abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
    return {{"exit_signal", name}, {"exit_status", "killed by " + name + (WCOREDUMP(status) ? " (core dumped)" : "")}};
  }
  return {{"exit_status", "unknown (wait status " + std::to_string(status) + ")"}};
}

// A database and the SQLite files beside it.
void removeDatabaseFiles(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix, ec);
}

std::string commaJoined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

// What one run of the program is told beyond the user's options.
struct ChildRun {
  std::string output;
  std::string cubin_dir;      // "" = no cubins saved
  std::string metrics;        // FPROF_METRICS
  std::string replay;         // FPROF_REPLAY ("" = the collector's default)
  std::string cache_control;  // "" = the user's --cache-control
  bool second = false;        // the second run of application replay (FPROF_SECOND_RUN)
  std::string sass_pc_file;   // FPROF_SASS_PC_FILE (replay sass_patching)
  bool sass_duplicate = false;  // FPROF_SASS_DUPLICATE: SASS counts from duplicates in this run
};

// Starts the program with the collector injected; the child's pid, or -1 where fork failed.
pid_t startChild(const RunOptions& opt, const std::string& collector, const std::string& cupti, const ChildRun& run) {
  std::vector<char*> argv;
  for (const std::string& a : opt.program) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t child = fork();
  if (child != 0) return child;
  // One CUPTI for the whole process, and a guard that lets torch.profiler take CUPTI over:
  // collector/preload/cupti_guard.cpp. Absent (FPROF_COLLECTOR pointing elsewhere), the
  // collector still works; the program's own libcupti is used then.
  if (const std::string preload = findSibling("libfprof_preload.so"); !preload.empty()) {
    const char* existing = std::getenv("LD_PRELOAD");
    std::string value = existing && *existing ? preload + ":" + existing : preload;
    // A chosen libcupti goes first: its soname then satisfies the collector's and the preload's.
    if (!cupti.empty()) value = cupti + ":" + value;
    setenv("LD_PRELOAD", value.c_str(), 1);
  }
  if (!cupti.empty()) {
    // libnvperf_host/target of the same CUPTI release sit beside it.
    const std::string dir = fs::path(cupti).parent_path().string();
    const char* existing = std::getenv("LD_LIBRARY_PATH");
    setenv("LD_LIBRARY_PATH", (existing && *existing ? dir + ":" + existing : dir).c_str(), 1);
  }
  setenv("CUDA_INJECTION64_PATH", collector.c_str(), 1);
  setenv("NVTX_INJECTION64_PATH", collector.c_str(), 1);
  setenv("FPROF_OUTPUT", fs::absolute(run.output).c_str(), 1);
  setenv("FPROF_FORCE", opt.force ? "1" : "0", 1);
  setenv("FPROF_MODE", opt.metrics.empty() ? "trace" : "metrics", 1);
  if (!run.cubin_dir.empty()) setenv("FPROF_CUBIN_DIR", run.cubin_dir.c_str(), 1);
  const std::string& cache_control = run.cache_control.empty() ? opt.cache_control : run.cache_control;
  if (!cache_control.empty()) setenv("FPROF_CACHE_CONTROL", cache_control.c_str(), 1);
  if (!run.replay.empty()) setenv("FPROF_REPLAY", run.replay.c_str(), 1);
  if (run.second) setenv("FPROF_SECOND_RUN", "1", 1);
  if (!run.sass_pc_file.empty()) setenv("FPROF_SASS_PC_FILE", run.sass_pc_file.c_str(), 1);
  if (run.sass_duplicate) setenv("FPROF_SASS_DUPLICATE", "1", 1);
  if (opt.gpu_fault_safe) setenv("FPROF_CUPTI_HOST_PINNED", "1", 1);
  if (opt.every_launch) {
    setenv("FPROF_SAMPLES_PER_LAUNCH_KIND", "0", 1);
  } else if (opt.samples_per_launch_kind > 0) {
    setenv("FPROF_SAMPLES_PER_LAUNCH_KIND", std::to_string(opt.samples_per_launch_kind).c_str(), 1);
  }
  if (!opt.metrics.empty()) {
    setenv("FPROF_METRICS", run.metrics.c_str(), 1);
    if (!opt.kernel_regex.empty()) setenv("FPROF_KERNEL_REGEX", opt.kernel_regex.c_str(), 1);
    if (!opt.nvtx_include.empty()) setenv("FPROF_NVTX_INCLUDE", commaJoined(opt.nvtx_include).c_str(), 1);
    if (!opt.nvtx_scope.empty()) setenv("FPROF_NVTX_SCOPE", opt.nvtx_scope.c_str(), 1);
    if (!opt.ops.empty()) setenv("FPROF_OPS", commaJoined(opt.ops).c_str(), 1);
    if (opt.launch_skip > 0) setenv("FPROF_LAUNCH_SKIP", std::to_string(opt.launch_skip).c_str(), 1);
    if (opt.launch_count > 0) setenv("FPROF_LAUNCH_COUNT", std::to_string(opt.launch_count).c_str(), 1);
  }
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "fprof: run: cannot start %s: %s\n", argv[0], std::strerror(errno));
  _exit(127);
}

// How many times the program runs, and what each run counts. Under --replay application the
// program's own run of a profiled launch cannot count the SASS-instrumented counters of the set:
// where every one comes from per-PC counts (core/sass_pc.h), a duplicate of each profiled launch
// counts them in the same run, by SASS patching between a checkpoint of the context's memory and
// its restore; otherwise, or where the duplicates stopped, or with --second-run, a second run of the
// program counts them (by SASS patching, or under kernel replay with --second-run kernel), joined
// by core/replay_merge.h.
struct ReplayPlan {
  std::string first_metrics;   // FPROF_METRICS of the first (or only) run
  std::string first_replay;    // FPROF_REPLAY of the first run ("" = the collector's default)
  std::string second_metrics;  // "" = one run
  std::string second_replay;   // FPROF_REPLAY of the second run: sass_patching or kernel
  bool own_run = false;        // the program's own execution is counted (application replay)
  // The first run counts the SASS counters too, from a duplicate of each profiled launch between a
  // checkpoint and its restore (the collector's duplicate_launch.h); the second run is made only
  // for a process where that stopped.
  bool duplicates = false;
};

// Replay passes the CUPTI host API gives these metrics on this machine's GPU (fprof-metrics-host,
// no GPU work), or none where the tool is missing or cannot say.
std::optional<int> hardwarePasses(const std::vector<std::string>& metrics) {
  const std::string tool = findSibling("fprof-metrics-host");
  if (tool.empty() || metrics.empty()) return std::nullopt;
  std::string command = "'" + tool + "'";
  for (const std::string& m : metrics) command += " '" + m + "'";  // metric names: [a-z0-9_.]
  std::FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::optional<int> passes;
  char line[512];
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    if (int n = 0; std::sscanf(line, "passes %d", &n) == 1 && n > 0) passes = n;
  }
  return pclose(pipe) == 0 ? passes : std::nullopt;
}

// Whether the run counts the program's own execution (application replay): asked for; or, by
// default, wherever the caches can be emptied that way and the hardware counters fit the one pass
// the program's own run gives (kernel replay empties caches only with a CUPTI 13.4 given by
// --cupti, costs more a launch, and saves device memory the program holds: bench/RESULTS.md, issue
// 15); or asked for implicitly by --cache-control all without --cupti. `hardware`: the selection's
// metrics that are not SASS-instrumented.
bool countsOwnRun(const RunOptions& opt, const std::string& cupti, const std::vector<std::string>& hardware) {
  if (opt.replay == "application") return true;
  const bool automatic = opt.replay.empty() || opt.replay == "auto";
  if (!automatic || !cupti.empty() || opt.cache_control == "none" || opt.metrics.empty()) return false;
  return opt.cache_control == "all" || hardwarePasses(hardware) == 1;
}

ReplayPlan planRuns(const RunOptions& opt, const std::string& cupti) {
  std::vector<std::string> own_run, sass;
  if (auto metrics = core::expandMetricSelection(opt.metrics)) {
    for (const std::string& m : *metrics) (core::isSassInstrumented(m) ? sass : own_run).push_back(m);
  }
  ReplayPlan plan{opt.metrics, opt.replay, "", "", countsOwnRun(opt, cupti, own_run)};
  if (!plan.own_run || opt.metrics.empty()) return plan;
  plan.first_replay = "application";
  if (sass.empty() || own_run.empty()) return plan;  // one run; the collector says what it cannot count
  const bool patching =
      std::all_of(sass.begin(), sass.end(), core::countedFromPcCounts) && opt.second_run != "kernel";
  return {commaJoined(own_run), "application", commaJoined(sass), patching ? "sass_patching" : "kernel", true,
          patching && opt.second_run.empty()};
}

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

void sayReplay(const std::string& line) { std::fprintf(stderr, "[fprof] application replay: %s\n", line.c_str()); }

constexpr const char* kSassCountersLost = "FLOPs and instructions stay unknown";

// The SASS counters by launch computed after a second run by SASS patching (its database holds
// them under kernel replay: none then).
core::Expected<core::LaunchRawCounters> countersComputedAfter(const ReplayPlan& plan, const std::string& second,
                                                              const PatchedRunFiles& files, const std::string& label) {
  if (plan.second_replay != "sass_patching") return core::LaunchRawCounters{};
  std::string summary;
  auto counted = sassCountersOfPatchedRun(second, files.pc_file, files.cubin_dir, summary);
  if (counted) sayReplay(label + summary);
  return counted;
}

// Joins a second run that ended well to `first`, and says what it did (each line after `label`:
// the first run's database where the program ran as several ranks).
void joinSecondRun(const RunOptions& opt, const ReplayPlan& plan, const std::string& first, const std::string& second,
                   const PatchedRunFiles& files, const std::string& label) {
  const auto by_launch = countersComputedAfter(plan, second, files, label);
  if (!by_launch) {
    return sayReplay(label + "the SASS counts could not be read: " + by_launch.error() + "; " + kSassCountersLost);
  }
  auto merged = core::mergeSecondRun(first, second, *by_launch);
  if (!merged) return sayReplay(label + "joining the second run failed: " + merged.error() + "; " + kSassCountersLost);
  sayReplay(label + std::to_string(merged->kernels_joined) + " kernels got the second run's counters" +
            (merged->kernels_without > 0
                 ? ", " + std::to_string(merged->kernels_without) + " found no twin (see fprof info)"
                 : std::string()));
  (void)core::appendMetadata(first, {{"metric_set", opt.metrics}, {"second_run_replay", plan.second_replay}});
}

// How long a second run by SASS patching may take: 3 x the first run + 60 s. Patching slows only
// the profiled launches, so a run past that is taken for stuck (one hung: bench/RESULTS.md, issue 15).
double patchedRunLimitSeconds(double first_run_seconds) { return 3 * first_run_seconds + 60; }

// Starts the second run and waits for it: its wait status, or none where a run by SASS patching
// passed its limit and was stopped.
std::optional<int> secondRunStatus(const RunOptions& opt, const std::string& collector, const std::string& cupti,
                                   const ChildRun& run, bool patching, double first_run_seconds) {
  const pid_t child = startChild(opt, collector, cupti, run);
  if (!patching) return waitForChild(child);
  const auto limit = std::chrono::duration<double>(patchedRunLimitSeconds(first_run_seconds));
  return waitForChildUntil(child, std::chrono::steady_clock::now() +
                                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(limit));
}

// The part of a database's name that tells the processes of one run apart: "" for `output`
// itself, ".rank3" for run.rank3.fprof beside run.fprof, ".pid812" for run.pid812.fprof.
std::string processTag(const std::string& file, const std::string& output) {
  const std::string stem = fs::path(output).stem().string();
  const std::string name = fs::path(file).stem().string();
  return name.size() > stem.size() && name.rfind(stem, 0) == 0 ? name.substr(stem.size()) : "";
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

// The exit code of a wait status as `fprof run` passes it on (128 + N for signal N).
int exitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
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
void joinEachProcess(const RunOptions& opt, const ReplayPlan& plan, const std::string& output,
                     const std::string& scratch, const std::vector<std::string>& counted,
                     const std::vector<std::string>& produced, const PatchedRunFiles& files) {
  for (const std::string& f : counted) {
    const std::string tag = processTag(f, output);
    const std::string label = counted.size() > 1 || !tag.empty() ? f + ": " : "";
    const auto twin = std::find_if(produced.begin(), produced.end(),
                                   [&](const std::string& p) { return processTag(p, scratch) == tag; });
    if (twin == produced.end()) {
      sayReplay(label + "the second run wrote no database for this process; " + kSassCountersLost);
      continue;
    }
    joinSecondRun(opt, plan, f, *twin, PatchedRunFiles{files.pc_file + tag, files.cubin_dir}, label);
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

// The second run of application replay: the program again, counting the SASS metrics (by SASS
// patching, or under kernel replay) into scratch databases, one per rank, each joined to the first
// run's database of the same rank and removed. A program that failed or crashed in its first run
// is run again only if it ended by itself, and its second run must end the same way. A run by SASS
// patching that passes its limit is stopped and the second run made again under kernel replay.
void runSecondTime(const RunOptions& opt, const std::string& collector, const std::string& cupti,
                   const ReplayPlan& plan, const std::string& output, const std::vector<std::string>& firsts,
                   int first_code, double first_run_seconds) {
  if (!endedByItself(first_code)) {
    return sayReplay("the first run was stopped (exit code " + std::to_string(first_code) + "): no second run; " +
                     kSassCountersLost);
  }
  const std::vector<std::string> counted = databasesToCountAgain(firsts, output);
  if (counted.empty()) return;
  const std::string scratch = fs::absolute(output).string() + ".second-run.fprof";
  for (const fs::path& stale : runDatabases(scratch)) removeDatabaseFiles(stale.string());
  const bool patching = plan.second_replay == "sass_patching";
  PatchedRunFiles files;
  auto removePatchedFiles = [&] {
    for (const std::string& f : counted) PatchedRunFiles{files.pc_file + processTag(f, output), ""}.remove();
    files.remove();
  };
  if (patching) {
    files = {scratch + ".pcs", scratch + ".cubins"};
    removePatchedFiles();
    std::error_code ec;
    fs::create_directories(files.cubin_dir, ec);
  }
  sayReplay("running " + opt.program[0] + " again for the SASS counters (FLOPs, instructions) " +
            (patching ? "by SASS patching (no replay)" : "under kernel replay"));
  const auto started = fs::file_time_type::clock::now();
  const ChildRun run{scratch, files.cubin_dir, plan.second_metrics, plan.second_replay, "none", true, files.pc_file};
  const std::optional<int> waited = secondRunStatus(opt, collector, cupti, run, patching, first_run_seconds);
  const std::vector<std::string> produced = producedFiles(scratch, started);
  auto removeScratch = [&] {
    for (const std::string& f : produced) removeDatabaseFiles(f);
    if (patching) removePatchedFiles();
  };
  if (!waited) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%.0f", patchedRunLimitSeconds(first_run_seconds));
    const std::string where = recordPatchedRunStop(counted, output, files, limit);
    removeScratch();
    sayReplay(std::string("the second run by SASS patching did not end within ") + limit +
              " s (3 x the first run + 60 s) and was stopped (" + where + "); counting under kernel replay instead");
    ReplayPlan kernel = plan;
    kernel.second_replay = "kernel";
    return runSecondTime(opt, collector, cupti, kernel, output, counted, first_code, first_run_seconds);
  }
  const int status = *waited;
  if (status == kNotStarted || exitCodeOf(status) != first_code) {
    sayReplay("the second run ended otherwise than the first (" + exitFacts(status).at("exit_status") + "); " +
              kSassCountersLost);
    return removeScratch();
  }
  joinEachProcess(opt, plan, output, scratch, counted, produced, files);
  removeScratch();
}

// Where the collector wrote the per-PC counts of a database's duplicates (MetricsCollector::setDatabasePath).
std::string duplicatesPcFile(const std::string& db) { return db + ".pcs"; }

// One run of application replay: each database whose duplicates counted every profiled launch gets
// those SASS counters (core::joinLaunchCounters); the databases where they stopped, or that have
// none, are returned for the second run.
std::vector<std::string> joinDuplicateCounts(const RunOptions& opt, const ReplayPlan& plan, const std::string& output,
                                             const std::vector<std::string>& complete, const std::string& cubin_dir) {
  std::vector<std::string> again;
  for (const std::string& f : complete) {
    const std::string tag = processTag(f, output);
    const std::string label = complete.size() > 1 || !tag.empty() ? f + ": " : "";
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
    auto counted = sassCountersOfPatchedRun(f, duplicatesPcFile(f), cubin_dir, summary);
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
    (void)core::appendMetadata(f, {{"metric_set", opt.metrics}, {"metrics", facts->meta("metrics") + "," + plan.second_metrics}});
    sayReplay(label + "one run: SASS counts from a duplicate of each profiled launch, " + summary + "; " +
              std::to_string(joined->kernels_joined) + " kernels got them" +
              (joined->kernels_without > 0 ? ", " + std::to_string(joined->kernels_without) + " did not (see fprof info)"
                                           : std::string()));
  }
  return again;
}

int runProgram(const RunOptions& opt) {
  if (opt.program.empty()) return inputError("run: no program given; usage: fprof run [-o FILE] PROGRAM [ARGS...]");
  if (const char* other = std::getenv("CUDA_INJECTION64_PATH"); other && *other) {
    return inputError(std::string("run: CUDA_INJECTION64_PATH is already set (") + other +
                      "): another profiler or tool (nsys, ncu, a sanitizer) injects into CUDA; run fprof outside "
                      "it or unset the variable");
  }
  const std::string output = opt.output.empty() ? defaultOutput(opt.program[0]) : opt.output;
  std::error_code ec;
  if (fs::exists(output, ec) && !opt.force) {
    return inputError("run: " + output + " exists; choose another name with -o or overwrite it with --force");
  }
  if (!opt.metrics.empty()) {
    if (auto m = core::expandMetricSelection(opt.metrics); !m) return inputError("run: " + m.error());
  }
  if (!opt.kernel_regex.empty()) {
    try {
      std::regex check(opt.kernel_regex);
    } catch (const std::regex_error& e) {
      return inputError("run: --kernel-regex '" + opt.kernel_regex + "' is not a valid regular expression: " + e.what());
    }
  }
  if (!opt.nvtx_scope.empty() && opt.nvtx_include.empty()) {
    return inputError("run: --nvtx-scope says how --nvtx-include selects; add --nvtx-include");
  }
  const bool selects = !opt.kernel_regex.empty() || !opt.nvtx_include.empty() || !opt.ops.empty() ||
                       opt.launch_skip != 0 || opt.launch_count != 0 || opt.samples_per_launch_kind != 0 ||
                       opt.every_launch || !opt.cache_control.empty() || !opt.replay.empty() || !opt.second_run.empty();
  if (selects && opt.metrics.empty()) {
    return inputError("run: --kernel-regex, --nvtx-include, --ops, --launch-skip, --launch-count, "
                      "--samples-per-launch-kind, --every-launch, --cache-control, --replay and --second-run choose "
                      "what --metrics profiles; add --metrics roofline (or memory, full)");
  }
  std::string cupti = opt.cupti;
  if (cupti.empty()) {
    cupti = core::env::Parser(core::env::processEnvironment()).text(core::env::Var::kCupti);
  }
  if (!cupti.empty()) {
    if (!fs::exists(cupti, ec)) return inputError("run: --cupti " + cupti + " does not exist");
    cupti = fs::absolute(cupti).string();
  }
  const ReplayPlan plan = planRuns(opt, cupti);
  if (!opt.second_run.empty() && !plan.own_run) {
    return inputError("run: --second-run says how application replay's second run counts; add --replay application");
  }
  if (opt.second_run == "patching" && !plan.second_metrics.empty() && plan.second_replay != "sass_patching") {
    std::fprintf(stderr, "[fprof] --second-run patching: this metric set holds SASS counters that per-PC counts do not "
                         "give; the second run uses kernel replay\n");
  }
  const std::string collector = findCollector();
  if (collector.empty()) {
    return inputError(
        "run: libfprof_collector.so not found next to fprof (this build has no CUPTI collector; "
        "build with the CUDA toolkit, or set FPROF_COLLECTOR)");
  }
  if (opt.force) {
    // The file and its per-rank / per-process siblings from an earlier run: the collector never
    // overwrites a file (each process claims a fresh name), so --force clears them here.
    for (const fs::path& f : runDatabases(output)) removeDatabaseFiles(f.string());
    removeDatabaseFiles(output);
  }
  const fs::path out_dir = fs::path(output).parent_path();
  if (!out_dir.empty() && !fs::is_directory(out_dir, ec)) {
    return inputError("run: output directory " + out_dir.string() + " does not exist");
  }

  // Metrics mode: the collector saves each module's cubin here; the SASS step reads and removes them.
  std::string cubin_dir;
  if (!opt.metrics.empty()) {
    cubin_dir = fs::absolute(output).string() + ".cubins";
    fs::create_directories(cubin_dir, ec);
    if (ec) cubin_dir.clear();
  }
  const auto started = fs::file_time_type::clock::now();
  const bool duplicates = plan.duplicates && !cubin_dir.empty();
  const ChildRun run{output, cubin_dir, plan.first_metrics, plan.first_replay, "", false, "", duplicates};
  const auto first_started = std::chrono::steady_clock::now();
  std::optional<SassPrefetch> prefetch;  // the duplicates' functions decoded while the program runs
  if (duplicates) prefetch.emplace(output, cubin_dir);
  const int status = waitForChild(startChild(opt, collector, cupti, run));
  const double first_run_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - first_started).count();
  StepTimer timer;
  if (prefetch) prefetch->finish();
  timer.done("the decoding under way as the program ended");
  if (status == kNotStarted) return inputError(std::string("run: fork failed: ") + std::strerror(errno));
  const int code = std::max(exitCodeOf(status), 0);
  if (WIFEXITED(status) && code == 127) return code;  // exec failed, already said
  if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "[fprof] %s was killed by signal %d (%s)\n", opt.program[0].c_str(), WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
  }
  const std::vector<std::string> files = producedFiles(output, started);
  const std::map<std::string, std::string> ending = exitFacts(status);
  if (files.empty()) {
    std::fprintf(stderr,
                 "[fprof] no database was written: the program made no CUDA calls, or the collector was off (see "
                 "messages above)\n");
  }
  std::vector<std::string> complete;
  for (const std::string& f : files) {
    const core::Status checked = core::checkDatabase(f);
    timer.done("check the database");
    if (!checked) {
      std::fprintf(stderr, "[fprof] %s is incomplete: %s\n", f.c_str(), checked.error().c_str());
      continue;
    }
    if (core::Status recorded = core::appendMetadata(f, ending); !recorded) {
      std::fprintf(stderr, "[fprof] how the program ended was not recorded: %s\n", recorded.error().c_str());
    }
    timer.done("record how the program ended");
    complete.push_back(f);
  }
  if (!plan.second_metrics.empty() && !complete.empty()) {
    std::vector<std::string> again = complete;
    if (duplicates) {
      again = joinDuplicateCounts(opt, plan, output, complete, cubin_dir);
      timer.done("the duplicates' SASS counts");
    }
    if (!again.empty()) runSecondTime(opt, collector, cupti, plan, output, again, code, first_run_seconds);
    timer.done("application replay's second run");
  }
  if (duplicates) {
    for (const std::string& f : files) fs::remove(duplicatesPcFile(f), ec);
  }
  for (const std::string& f : complete) {
    if (!cubin_dir.empty()) {
      if (const std::string said = applySassStep(f, cubin_dir); !said.empty()) {
        std::fprintf(stderr, "[fprof] %s: %s\n", f.c_str(), said.c_str());
      }
      timer.done("SASS step");
    }
    attachCeilings(f, opt.ceilings);
    timer.done("attach ceilings");
    std::fprintf(stderr, "[fprof] profile ready: %s (next: fprof info %s, fprof report %s)\n", f.c_str(), f.c_str(), f.c_str());
  }
  if (!cubin_dir.empty()) fs::remove_all(cubin_dir, ec);
  timer.done("remove the saved cubins");
  return code;
}

}  // namespace

Command addRunCommand(CLI::App& root) {
  auto opt = std::make_shared<RunOptions>();
  CLI::App* app = root.add_subcommand(
      "run",
      "Run PROGRAM with the CUPTI collector injected and record every kernel, NVTX range, copy and allocation "
      "into a .fprof database. The program is not modified; its exit code is passed through. Under "
      "torchrun/mpirun/srun each rank writes NAME.rank<N>.fprof.");
  app->add_option("-o,--output", opt->output,
                  "Database to write (default: PROGRAM.fprof, or PROGRAM-2.fprof, ... if that exists)");
  app->add_flag("--force", opt->force, "Overwrite the output database if it exists");
  app->add_flag("--gpu-fault-safe", opt->gpu_fault_safe,
                "Keep kernel timestamps in pinned host memory, so that a GPU fault that kills the context (an illegal "
                "address) leaves the kernels before it with their times; without it CUPTI's device-side timestamp "
                "buffers die with the context. Costs launch-bound programs more (docs/overhead.md)");
  app->add_option("--ceilings", opt->ceilings,
                  "Attach measured ceilings from this file (default: the per-user cache of 'fprof ceilings')")
      ->check(CLI::ExistingFile);
  app->add_option("--metrics", opt->metrics,
                  "Hardware counters per kernel (CUPTI range profiler; --replay says how): a set (memory, roofline, full; "
                  "see 'fprof metrics list') or metric names separated by commas")
      ->type_name("SET|LIST");
  app->add_option("--kernel-regex", opt->kernel_regex,
                  "With --metrics: profile only kernels whose demangled name matches (ECMAScript regex, searched)");
  app->add_option("--nvtx-include", opt->nvtx_include,
                  "With --metrics: profile only kernels launched inside an NVTX range whose path contains this text "
                  "(repeatable; any matches)")
      ->delimiter(',');
  app->add_option("--nvtx-scope", opt->nvtx_scope,
                  "With --nvtx-include: 'process' (default): a push/pop range that matches, open on any thread, selects "
                  "the kernels every thread launches meanwhile (PyTorch runs the backward on autograd's thread); "
                  "'thread': only the launching thread's own ranges count, as in Nsight Compute")
      ->check(CLI::IsMember({"process", "thread"}));
  app->add_option("--ops", opt->ops,
                  "With --metrics: profile only kernels inside NVTX op ranges of these names (op=<name>, "
                  "docs/nvtx-convention.md)")
      ->delimiter(',');
  app->add_option("--launch-skip", opt->launch_skip, "With --metrics: let this many selected launches run first")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--launch-count", opt->launch_count, "With --metrics: profile at most this many selected launches")
      ->check(CLI::PositiveNumber);
  app->add_option("--samples-per-launch-kind", opt->samples_per_launch_kind,
                  "With --metrics: launches profiled per launch signature (function, grid, block, shared memory and "
                  "non-pointer argument bytes; default 1); later identical launches get the measured values, marked "
                  "'same_signature'. Under application replay also the launches of each executable CUDA graph that "
                  "are counted whole")
      ->check(CLI::PositiveNumber);
  app->add_flag("--every-launch", opt->every_launch, "With --metrics: profile every selected launch (no copies)");
  app->add_option("--cache-control", opt->cache_control,
                  "With --metrics: all = invalidate caches before every replay pass, as ncu does by default (under "
                  "kernel replay this needs CUPTI 13.4: see --cupti; under application replay fprof empties the L2 "
                  "itself, so with the toolkit's CUPTI --cache-control all picks application replay); none = caches "
                  "as the program left them. Default: all where possible, else none, recorded in the database")
      ->check(CLI::IsMember({"all", "none"}));
  app->add_option("--replay", opt->replay,
                  "With --metrics: kernel = CUPTI replays each profiled kernel once per pass, saving and restoring "
                  "device memory; application = the program's own run of each profiled launch is counted (no "
                  "replay; the L2 emptied by fprof before each with --cache-control all), SASS-instrumented "
                  "counters (FLOPs, instructions) from a duplicate of each profiled launch in the same run (a "
                  "second run of the program where that stops, or with --second-run), and each "
                  "executable CUDA graph's first launch counted whole, as one range; auto (default) = application "
                  "where the set's hardware counters fit one pass (memory, roofline) and the caches can be emptied "
                  "that way (not with --cache-control none or --cupti), else kernel")
      ->check(CLI::IsMember({"auto", "kernel", "application"}));
  app->add_option("--second-run", opt->second_run,
                  "With --replay application and a set with FLOP or instruction counters: by default the program "
                  "runs once, and CUPTI's SASS Metrics API counts each profiled launch's instructions per PC in a "
                  "duplicate of the launch run between a checkpoint of the device memory and its restore (fp16/bf16 "
                  "FLOPs exact per instruction); a second run of the program counts them only where that stops (a "
                  "checkpoint too slow, a launch it cannot repeat). This option always makes the second run: "
                  "patching = by the SASS Metrics API, no replay (a run that takes more than 3 x the first run + 60 "
                  "s is stopped and made again under kernel replay); kernel = kernel replay (one pass)")
      ->check(CLI::IsMember({"patching", "kernel"}));
  app->add_option("--cupti", opt->cupti,
                  "Use this libcupti.so.13 (e.g. from the nvidia-cuda-cupti wheel) instead of the toolkit's; also "
                  "FPROF_CUPTI");
  // Everything from PROGRAM on belongs to the program, its options included.
  app->prefix_command();
  app->footer(
      "Usage: fprof run [-o FILE] [--force] [--metrics SET ...] PROGRAM [ARGS...]\n"
      "Examples:\n  fprof run ./model --ops all\n  fprof run -o train.fprof python train.py\n"
      "  fprof run --metrics roofline --kernel-regex gemm --launch-count 20 ./model\n"
      "  torchrun --nproc-per-node 2 $(which fprof) run -o job.fprof python train.py");
  return {app, [opt, app] {
            opt->program = app->remaining();
            if (!opt->program.empty() && opt->program.front() == "--") opt->program.erase(opt->program.begin());
            return runProgram(*opt);
          }};
}

}  // namespace fprof::cli
