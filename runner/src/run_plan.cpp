// Planning a run of `fprof run` (see run_plan.h).
#include "fprof/runner/run_plan.h"

#include <algorithm>
#include <regex>

#include "fprof/core/metric_sets.h"
#include "fprof/core/sass_pc.h"

namespace fprof::runner {
namespace {

std::string commaJoined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

}  // namespace

core::Status checkOptions(const RunOptions& opt) {
  if (!opt.metrics.empty()) {
    if (auto m = core::expandMetricSelection(opt.metrics); !m) return core::makeError(m.error());
  }
  if (!opt.kernel_regex.empty()) {
    try {
      std::regex check(opt.kernel_regex);
    } catch (const std::regex_error& e) {
      return core::makeError("--kernel-regex '" + opt.kernel_regex + "' is not a valid regular expression: " +
                             e.what());
    }
  }
  if (!opt.nvtx_scope.empty() && opt.nvtx_include.empty()) {
    return core::makeError("--nvtx-scope says how --nvtx-include selects; add --nvtx-include");
  }
  const bool selects = !opt.kernel_regex.empty() || !opt.nvtx_include.empty() || !opt.ops.empty() ||
                       opt.launch_skip != 0 || opt.launch_count != 0 || opt.samples_per_launch_kind != 0 ||
                       opt.every_launch || !opt.cache_control.empty() || !opt.replay.empty() ||
                       !opt.second_run.empty();
  if (selects && opt.metrics.empty()) {
    return core::makeError(
        "--kernel-regex, --nvtx-include, --ops, --launch-skip, --launch-count, --samples-per-launch-kind, "
        "--every-launch, --cache-control, --replay and --second-run choose what --metrics profiles; add --metrics "
        "roofline (or memory, full)");
  }
  return {};
}

namespace {

struct OwnRunChoice {
  bool own_run = false;
  std::string reason;
};

// Whether the run counts the program's own execution (application replay): asked for; or, by
// default, wherever the caches can be emptied that way and the hardware counters fit the one pass
// the program's own run gives (kernel replay empties caches only with a CUPTI 13.4 given by
// --cupti, costs more a launch, and saves device memory the program holds); or asked for
// implicitly by --cache-control all without --cupti.
OwnRunChoice countsOwnRun(const RunOptions& opt, const PlanFacts& facts, const std::vector<std::string>& hardware) {
  if (opt.replay == "application") return {true, "--replay application"};
  if (opt.replay == "kernel") return {false, "--replay kernel"};
  const std::string collector_chooses = "; the collector chooses when it starts";
  if (!facts.cupti.empty()) {
    return {false, "--cupti names the CUPTI whose kernel replay empties caches" + collector_chooses};
  }
  if (opt.cache_control == "none") return {false, "--cache-control none" + collector_chooses};
  if (opt.cache_control == "all") {
    return {true, "--cache-control all with the toolkit's CUPTI: under application replay fprof empties the L2 itself"};
  }
  if (hardware.empty()) return {false, "the set holds no hardware counters" + collector_chooses};
  const std::optional<int> passes = facts.hardware_passes ? facts.hardware_passes(hardware) : std::nullopt;
  if (!passes) {
    return {false, "the passes of the set's hardware counters could not be told here (fprof-metrics-host missing or "
                   "silent)" + collector_chooses};
  }
  if (*passes != 1) {
    return {false, "the set's hardware counters take " + std::to_string(*passes) +
                       " passes, and the program's own run gives one" + collector_chooses};
  }
  return {true, "the set's hardware counters fit one pass (CUPTI's host API) and the caches can be emptied that way"};
}

PlannedRun onlyRun(const RunOptions& opt, bool metrics, const std::string& replay) {
  PlannedRun r;
  r.role = PlannedRun::Role::kOnly;
  r.metrics = opt.metrics;
  r.replay = replay;
  r.cache_control = opt.cache_control;
  r.saves_cubins = metrics;
  r.when = "always";
  r.counts = metrics ? "every counter of the set" : "the trace: kernels, NVTX ranges, copies, allocations";
  return r;
}

// Application replay of a set with SASS counters: the program's own run counts the hardware
// counters, and the SASS counters come from duplicates of its launches or from a second run.
void planTwoParts(const RunOptions& opt, RunPlan& plan) {
  const bool patching =
      std::all_of(plan.sass_metrics.begin(), plan.sass_metrics.end(), core::countedFromPcCounts) &&
      opt.second_run != "kernel";
  plan.duplicates = patching && opt.second_run.empty();
  PlannedRun first;
  first.role = PlannedRun::Role::kFirst;
  first.metrics = commaJoined(plan.hardware_metrics);
  first.replay = "application";
  first.cache_control = opt.cache_control;
  first.sass_duplicate = plan.duplicates;
  first.saves_cubins = true;
  first.when = "always";
  first.counts = "the hardware counters in the program's own run of each profiled launch" +
                 std::string(plan.duplicates ? "; the SASS counters from a duplicate of each profiled launch run "
                                               "between a checkpoint of the memory it can write and its restore"
                                             : "");
  PlannedRun second;
  second.role = PlannedRun::Role::kSecond;
  second.metrics = commaJoined(plan.sass_metrics);
  second.replay = patching ? "sass_patching" : "kernel";
  second.cache_control = "none";
  second.second = true;
  second.saves_cubins = second.writes_pc_counts = second.time_limited = patching;
  second.when = plan.duplicates ? "for each process whose duplicates did not count every profiled launch"
                                : "always, after the first";
  second.counts = patching ? "the SASS counters by SASS patching (no replay), as per-PC counts"
                           : "the SASS counters under kernel replay";
  plan.runs = {first, second};
  if (patching) {
    PlannedRun again = second;
    again.role = PlannedRun::Role::kSecondOnKernel;
    again.replay = "kernel";
    again.saves_cubins = again.writes_pc_counts = again.time_limited = false;
    again.when = "where the second run by SASS patching was stopped past its time limit";
    again.counts = "the SASS counters under kernel replay";
    plan.runs.push_back(again);
  }
  if (opt.second_run == "patching" && !patching) {
    plan.warnings.push_back("--second-run patching: this metric set holds SASS counters that per-PC counts do not "
                            "give; the second run uses kernel replay");
  }
}

void addJoinsAndFallbacks(RunPlan& plan) {
  const PlannedRun* second = plan.run(PlannedRun::Role::kSecond);
  if (plan.duplicates) {
    plan.joins.push_back("each database's duplicates: their per-PC counts (in the run's folder) and the counted functions' "
                         "SASS give each profiled launch its SASS counters, joined by correlation id");
    plan.fallbacks.push_back({"a process's duplicates did not count every profiled launch (a checkpoint too slow, a "
                              "launch they cannot repeat, the program ended first)",
                              "that process's SASS counters come from the second run"});
  }
  if (second != nullptr) {
    plan.joins.push_back(std::string("the second run's database of each rank joined to the first run's of the same "
                                     "rank, kernel by kernel") +
                         (second->writes_pc_counts ? ", its SASS counters computed from its per-PC counts" : ""));
    plan.fallbacks.push_back({"the first run was stopped from outside (SIGINT, SIGTERM, SIGKILL)",
                              "no second run; FLOPs and instructions stay unknown"});
    plan.fallbacks.push_back({"the second run ends otherwise than the first (another exit code or signal)",
                              "its counters are not used; FLOPs and instructions stay unknown"});
    plan.fallbacks.push_back({"a process without a rank (a database named .pid<N>)",
                              "not paired with a second run; its FLOPs and instructions stay unknown"});
  }
  if (plan.run(PlannedRun::Role::kSecondOnKernel) != nullptr) {
    plan.fallbacks.push_back({"the second run by SASS patching takes more than 3 x the first run + 60 s",
                              "it is stopped (where it stood kept as second_run_patching_stopped) and made again "
                              "under kernel replay"});
  }
}

void addStepsAfter(const RunOptions& opt, RunPlan& plan) {
  plan.after.push_back("each database checked, and how the program ended recorded in it (exit_code or exit_signal, "
                       "exit_status)");
  if (plan.metrics_mode) {
    plan.after.push_back("the SASS step: fp16/bf16 FLOPs per lane from the saved cubins (nvdisasm)");
  }
  plan.after.push_back("measured ceilings of the run's GPU attached, from " +
                       (opt.ceilings.empty() ? std::string("the cache of fprof ceilings") : opt.ceilings));
  if (opt.force) {
    plan.after.push_back("--force: the databases written replace those of the same names; other files stay");
  }
}

}  // namespace

const PlannedRun* RunPlan::run(PlannedRun::Role role) const {
  for (const PlannedRun& r : runs) {
    if (r.role == role) return &r;
  }
  return nullptr;
}

double patchedRunLimitSeconds(double first_run_seconds) { return 3 * first_run_seconds + 60; }

core::Expected<RunPlan> planRun(const RunOptions& opt, const PlanFacts& facts) {
  if (core::Status checked = checkOptions(opt); !checked) return core::makeError(checked.error());
  RunPlan plan;
  plan.metrics_mode = !opt.metrics.empty();
  plan.metric_set = opt.metrics;
  if (plan.metrics_mode) {
    plan.metrics = *core::expandMetricSelection(opt.metrics);
    for (const std::string& m : plan.metrics) {
      (core::isSassInstrumented(m) ? plan.sass_metrics : plan.hardware_metrics).push_back(m);
    }
  }
  const OwnRunChoice own = plan.metrics_mode ? countsOwnRun(opt, facts, plan.hardware_metrics) : OwnRunChoice{};
  if (!opt.second_run.empty() && !own.own_run) {
    return core::makeError("--second-run says how application replay's second run counts; add --replay application");
  }
  if (plan.metrics_mode) {
    plan.replay = own.own_run ? "application" : opt.replay == "kernel" ? "kernel" : "the collector's choice";
  }
  plan.replay_reason = own.reason;
  if (own.own_run && !plan.sass_metrics.empty() && !plan.hardware_metrics.empty()) {
    planTwoParts(opt, plan);
  } else {
    plan.runs = {onlyRun(opt, plan.metrics_mode, own.own_run ? "application" : opt.replay)};
  }
  addJoinsAndFallbacks(plan);
  addStepsAfter(opt, plan);
  return plan;
}

namespace {

const char* roleTitle(PlannedRun::Role role) {
  switch (role) {
    case PlannedRun::Role::kOnly: return "run";
    case PlannedRun::Role::kFirst: return "first run";
    case PlannedRun::Role::kSecond: return "second run";
    case PlannedRun::Role::kSecondOnKernel: return "second run again";
  }
  return "run";
}

// What the collector is told for `r`, as FPROF_* settings.
std::string collectorSettings(const PlannedRun& r) {
  std::string s;
  auto add = [&s](const std::string& item) { s += (s.empty() ? "" : " ") + item; };
  if (!r.metrics.empty()) add("FPROF_METRICS=" + r.metrics);
  if (!r.replay.empty()) add("FPROF_REPLAY=" + r.replay);
  if (!r.cache_control.empty()) add("FPROF_CACHE_CONTROL=" + r.cache_control);
  if (r.sass_duplicate) add("FPROF_SASS_DUPLICATE=1");
  if (r.second) add("FPROF_SECOND_RUN=1");
  if (r.writes_pc_counts) add("FPROF_SASS_PC_FILE");
  if (r.saves_cubins) add("FPROF_CUBIN_DIR");
  return s.empty() ? "FPROF_MODE=trace" : "FPROF_MODE=metrics " + s;
}

// The plan's lines are at most this wide, as fprof's --help is.
constexpr std::size_t kPlanWidth = 100;

// TEXT after PREFIX as lines of at most kPlanWidth characters, broken after a space or a comma
// (the collector's metric lists are comma-joined); later lines indented four past the prefix's
// own indentation, deeper than any line of the plan starts. A word longer than a line stays whole.
std::string wrappedLine(const std::string& prefix, const std::string& text) {
  const std::size_t indent = prefix.find_first_not_of(' ') + 4;
  std::string out = prefix, line_so_far = prefix;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find_first_of(" ,", start);
    end = end == std::string::npos ? text.size() : end + 1;
    std::string word = text.substr(start, end - start);
    start = end;
    const std::string trimmed = word.back() == ' ' ? word.substr(0, word.size() - 1) : word;
    if (line_so_far.size() + trimmed.size() > kPlanWidth && line_so_far.size() > indent) {
      while (!out.empty() && out.back() == ' ') out.pop_back();
      out += "\n" + std::string(indent, ' ');
      line_so_far = std::string(indent, ' ');
    }
    out += word;
    line_so_far += word;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out + "\n";
}

void appendRuns(const RunPlan& plan, std::string& out) {
  for (const PlannedRun& r : plan.runs) {
    std::string what = r.counts;
    if (r.time_limited) what += "; stopped past 3 x the first run + 60 s";
    out += wrappedLine(std::string("  ") + roleTitle(r.role) + " (" + r.when + "): ", what);
    out += wrappedLine("    collector: ", collectorSettings(r));
  }
}

void appendList(const char* title, const std::vector<std::string>& items, std::string& out) {
  if (items.empty()) return;
  out += std::string("  ") + title + ":\n";
  for (const std::string& i : items) out += wrappedLine("    - ", i);
}

}  // namespace

std::string RunPlan::text() const {
  std::string out = "fprof run plan\n";
  if (!metrics_mode) {
    out += "  mode: trace (no counters)\n";
  } else {
    out += "  mode: metrics, set " + metric_set + ": " + std::to_string(hardware_metrics.size()) +
           " hardware counters, " + std::to_string(sass_metrics.size()) + " SASS counters\n";
    out += wrappedLine("  replay: ", replay + " (" + replay_reason + ")");
  }
  appendRuns(*this, out);
  appendList("joins", joins, out);
  std::vector<std::string> fallback_lines;
  for (const Fallback& f : fallbacks) fallback_lines.push_back("where " + f.trigger + ": " + f.action);
  appendList("fallbacks", fallback_lines, out);
  appendList("after the runs", after, out);
  appendList("warnings", warnings, out);
  return out;
}

}  // namespace fprof::runner
