// The run plan (runner/run_plan.h) for every combination of the options that shape it, and the
// environment each run of the program is given (runner/child_env.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fprof/core/metric_sets.h"
#include "fprof/core/sass_pc.h"
#include "fprof/runner/child_env.h"
#include "fprof/runner/run_plan.h"

namespace fprof::runner {
namespace {

using Env = std::map<std::string, std::string>;
using Role = PlannedRun::Role;

const char* const kCupti = "/opt/cupti/lib/libcupti.so.13";
const char* const kSassOnly = "smsp__sass_inst_executed.sum";

PlanFacts factsWith(const std::string& cupti, std::optional<int> passes) {
  return {cupti, [passes](const std::vector<std::string>&) { return passes; }};
}

Env asMap(const core::env::Assignments& a) { return Env(a.begin(), a.end()); }

// The contract, stated on its own terms: what the collector is told for each run, from the options,
// the CUPTI chosen and the passes the set's hardware counters take. The runner's planning and
// environment must give exactly this for every combination (ExactlyTheContractForEveryCombination).
struct ContractRun {
  std::string metrics, replay, cache_control, cubin_dir, pc_file;
  bool second = false, duplicate = false;
};

struct Contract {
  std::string error;               // "" = the options are planned
  std::vector<ContractRun> runs;   // first, second, second again under kernel replay
};

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

bool ownRunIsCounted(const RunOptions& o, const std::string& cupti, const std::vector<std::string>& hardware,
                     std::optional<int> passes) {
  if (o.replay == "application") return true;
  const bool automatic = o.replay.empty() || o.replay == "auto";
  if (!automatic || !cupti.empty() || o.cache_control == "none" || o.metrics.empty()) return false;
  return o.cache_control == "all" || (!hardware.empty() && passes == 1);
}

Contract contractOf(const RunOptions& o, const std::string& cupti, std::optional<int> passes) {
  const bool selects = !o.kernel_regex.empty() || !o.nvtx_include.empty() || !o.ops.empty() || o.launch_skip != 0 ||
                       o.launch_count != 0 || o.samples_per_launch_kind != 0 || o.every_launch ||
                       !o.cache_control.empty() || !o.replay.empty() || !o.second_run.empty();
  if (selects && o.metrics.empty()) return {"choose what --metrics profiles", {}};
  std::vector<std::string> hardware, sass;
  if (!o.metrics.empty()) {
    const std::vector<std::string> metrics = *core::expandMetricSelection(o.metrics);
    for (const std::string& m : metrics) {
      (core::isSassInstrumented(m) ? sass : hardware).push_back(m);
    }
  }
  const bool own = ownRunIsCounted(o, cupti, hardware, passes);
  if (!o.second_run.empty() && !own) return {"--second-run says how application replay's second run counts", {}};
  const std::string cubins = o.metrics.empty() ? "" : "/out/run.fprof.cubins";
  if (!own || sass.empty() || hardware.empty()) {
    return {"", {{o.metrics, own && !o.metrics.empty() ? "application" : o.replay, o.cache_control, cubins, ""}}};
  }
  const bool patching = std::all_of(sass.begin(), sass.end(), core::countedFromPcCounts) && o.second_run != "kernel";
  const bool duplicates = patching && o.second_run.empty();
  Contract c;
  c.runs.push_back({joined(hardware), "application", o.cache_control, cubins, "", false, duplicates});
  const std::string scratch = "/out/run.fprof.second-run.fprof";
  c.runs.push_back({joined(sass), patching ? "sass_patching" : "kernel", "none", patching ? scratch + ".cubins" : "",
                    patching ? scratch + ".pcs" : "", true});
  if (patching) c.runs.push_back({joined(sass), "kernel", "none", "", "", true});
  return c;
}

// What the collector is told for one run of the contract, with the injection of the test.
Env contractEnvironment(const RunOptions& o, const ContractRun& r, const std::string& output,
                        const std::string& cupti) {
  Env e{{"CUDA_INJECTION64_PATH", "/lib/libfprof_collector.so"},
        {"NVTX_INJECTION64_PATH", "/lib/libfprof_collector.so"},
        {"LD_PRELOAD", (cupti.empty() ? "" : cupti + ":") + "/lib/libfprof_preload.so:/usr/lib/libtcmalloc.so"},
        {"FPROF_OUTPUT", output},
        {"FPROF_FORCE", o.force ? "1" : "0"},
        {"FPROF_MODE", o.metrics.empty() ? "trace" : "metrics"}};
  if (!cupti.empty()) e["LD_LIBRARY_PATH"] = "/opt/cupti/lib:/usr/local/lib";
  if (!r.cubin_dir.empty()) e["FPROF_CUBIN_DIR"] = r.cubin_dir;
  if (!r.cache_control.empty()) e["FPROF_CACHE_CONTROL"] = r.cache_control;
  if (!r.replay.empty()) e["FPROF_REPLAY"] = r.replay;
  if (r.second) e["FPROF_SECOND_RUN"] = "1";
  if (!r.pc_file.empty()) e["FPROF_SASS_PC_FILE"] = r.pc_file;
  if (r.duplicate && !r.cubin_dir.empty()) e["FPROF_SASS_DUPLICATE"] = "1";
  if (o.gpu_fault_safe) e["FPROF_CUPTI_HOST_PINNED"] = "1";
  if (o.every_launch) e["FPROF_SAMPLES_PER_LAUNCH_KIND"] = "0";
  else if (o.samples_per_launch_kind > 0) e["FPROF_SAMPLES_PER_LAUNCH_KIND"] = std::to_string(o.samples_per_launch_kind);
  if (!o.metrics.empty()) {
    e["FPROF_METRICS"] = r.metrics;
    if (!o.kernel_regex.empty()) e["FPROF_KERNEL_REGEX"] = o.kernel_regex;
    if (!o.nvtx_include.empty()) e["FPROF_NVTX_INCLUDE"] = joined(o.nvtx_include);
    if (!o.nvtx_scope.empty()) e["FPROF_NVTX_SCOPE"] = o.nvtx_scope;
    if (!o.ops.empty()) e["FPROF_OPS"] = joined(o.ops);
    if (o.launch_skip > 0) e["FPROF_LAUNCH_SKIP"] = std::to_string(o.launch_skip);
    if (o.launch_count > 0) e["FPROF_LAUNCH_COUNT"] = std::to_string(o.launch_count);
  }
  return e;
}

const char* parentVariable(const char* name) {
  if (std::string(name) == "LD_PRELOAD") return "/usr/lib/libtcmalloc.so";
  if (std::string(name) == "LD_LIBRARY_PATH") return "/usr/local/lib";
  return nullptr;
}

// Filters and sampling, each combination of them tried with every planning choice.
std::vector<RunOptions> selections() {
  std::vector<RunOptions> out(7);
  out[1].kernel_regex = "gemm";
  out[1].launch_skip = 4;
  out[2].nvtx_include = {"step", "layer=3"};
  out[2].nvtx_scope = "thread";
  out[3].ops = {"attention"};
  out[3].launch_count = 20;
  out[4].every_launch = true;
  out[5].samples_per_launch_kind = 3;
  out[6].gpu_fault_safe = true;
  out[6].force = true;
  return out;
}

// The environment of each run the plan makes, as the runner builds it.
std::vector<Env> plannedEnvironments(const RunOptions& o, const RunPlan& plan, const std::string& cupti) {
  const Injection injection{"/lib/libfprof_collector.so", "/lib/libfprof_preload.so", cupti};
  const std::string scratch = "/out/run.fprof.second-run.fprof";
  std::vector<Env> out;
  for (const PlannedRun& r : plan.runs) {
    const bool first = r.role == Role::kOnly || r.role == Role::kFirst;
    RunFiles files{first ? "/out/run.fprof" : scratch, "", ""};
    if (r.saves_cubins) files.cubin_dir = first ? "/out/run.fprof.cubins" : scratch + ".cubins";
    if (r.writes_pc_counts) files.pc_file = scratch + ".pcs";
    out.push_back(asMap(childEnvironment(o, r, files, injection, parentVariable)));
  }
  return out;
}

TEST(RunPlan, ExactlyTheContractForEveryCombination) {
  size_t planned = 0, refused = 0;
  for (const char* metrics : {"", "memory", "roofline", "full", kSassOnly}) {
    for (const char* replay : {"", "auto", "kernel", "application"}) {
      for (const char* second_run : {"", "patching", "kernel"}) {
        for (const char* cache : {"", "all", "none"}) {
          for (const std::string cupti : {"", kCupti}) {
            for (const std::optional<int> passes : {std::optional<int>(), std::optional<int>(1), std::optional<int>(2)}) {
              for (RunOptions o : selections()) {
                o.metrics = metrics;
                o.replay = replay;
                o.second_run = second_run;
                o.cache_control = cache;
                const std::string where = std::string("metrics=") + metrics + " replay=" + replay + " second-run=" +
                                          second_run + " cache=" + cache + " cupti=" + cupti +
                                          " passes=" + (passes ? std::to_string(*passes) : "?");
                const Contract expected = contractOf(o, cupti, passes);
                const auto plan = planRun(o, factsWith(cupti, passes));
                ASSERT_EQ(plan.ok(), expected.error.empty()) << where << (plan ? "" : ": " + plan.error());
                if (!plan) {
                  EXPECT_NE(plan.error().find(expected.error), std::string::npos) << where << ": " << plan.error();
                  ++refused;
                  continue;
                }
                const std::vector<Env> got = plannedEnvironments(o, *plan, cupti);
                ASSERT_EQ(got.size(), expected.runs.size()) << where;
                for (size_t i = 0; i < got.size(); ++i) {
                  const std::string output =
                      i == 0 ? "/out/run.fprof" : "/out/run.fprof.second-run.fprof";
                  EXPECT_EQ(got[i], contractEnvironment(o, expected.runs[i], output, cupti)) << where << " run " << i;
                }
                ++planned;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(planned, 1000u);
  EXPECT_GT(refused, 1000u);
}

// One row per way the plan can come out.
struct PlanRow {
  const char* what;
  const char* metrics;
  const char* replay;
  const char* second_run;
  const char* cache;
  const char* cupti;
  std::optional<int> passes;
  std::vector<Role> runs;
  const char* first_replay;   // FPROF_REPLAY of the first run
  const char* second_replay;  // "" = none
  bool duplicates;
  const char* replay_reason;  // a phrase of it
};

class PlanRows : public ::testing::TestWithParam<PlanRow> {};

TEST_P(PlanRows, RunsReplayAndDuplicates) {
  const PlanRow& row = GetParam();
  RunOptions o;
  o.metrics = row.metrics;
  o.replay = row.replay;
  o.second_run = row.second_run;
  o.cache_control = row.cache;
  const auto plan = planRun(o, factsWith(row.cupti, row.passes));
  ASSERT_TRUE(plan.ok()) << plan.error();
  std::vector<Role> roles;
  for (const PlannedRun& r : plan->runs) roles.push_back(r.role);
  EXPECT_EQ(roles, row.runs);
  EXPECT_EQ(plan->runs.front().replay, row.first_replay);
  const PlannedRun* second = plan->run(Role::kSecond);
  EXPECT_EQ(second ? second->replay : "", row.second_replay);
  EXPECT_EQ(plan->duplicates, row.duplicates);
  EXPECT_EQ(plan->runs.front().sass_duplicate, row.duplicates);
  EXPECT_NE(plan->replay_reason.find(row.replay_reason), std::string::npos) << plan->replay_reason;
}

INSTANTIATE_TEST_SUITE_P(
    Every, PlanRows,
    ::testing::Values(
        PlanRow{"trace", "", "", "", "", "", 1, {Role::kOnly}, "", "", false, ""},
        PlanRow{"roofline by default: one run with duplicates", "roofline", "", "", "", "", 1,
                {Role::kFirst, Role::kSecond, Role::kSecondOnKernel}, "application", "sass_patching", true,
                "fit one pass"},
        PlanRow{"memory by default: one run, no SASS counters", "memory", "", "", "", "", 1, {Role::kOnly},
                "application", "", false, "fit one pass"},
        PlanRow{"two passes: the collector chooses", "roofline", "", "", "", "", 2, {Role::kOnly}, "", "", false,
                "take 2 passes"},
        PlanRow{"passes unknown: the collector chooses", "memory", "auto", "", "", "", std::nullopt, {Role::kOnly},
                "auto", "", false, "could not be told"},
        PlanRow{"kernel replay asked", "roofline", "kernel", "", "", "", 1, {Role::kOnly}, "kernel", "", false,
                "--replay kernel"},
        PlanRow{"--cupti: the collector chooses", "roofline", "", "", "", kCupti, 1, {Role::kOnly}, "", "", false,
                "--cupti"},
        PlanRow{"caches as left: the collector chooses", "memory", "", "", "none", "", 1, {Role::kOnly}, "", "",
                false, "--cache-control none"},
        PlanRow{"cache control all picks application replay", "roofline", "", "", "all", "", 2,
                {Role::kFirst, Role::kSecond, Role::kSecondOnKernel}, "application", "sass_patching", true,
                "--cache-control all"},
        PlanRow{"--second-run patching: always a second run", "roofline", "application", "patching", "", "", 2,
                {Role::kFirst, Role::kSecond, Role::kSecondOnKernel}, "application", "sass_patching", false,
                "--replay application"},
        PlanRow{"--second-run kernel", "roofline", "application", "kernel", "", "", 2, {Role::kFirst, Role::kSecond},
                "application", "kernel", false, "--replay application"},
        PlanRow{"only SASS counters under application replay: one run, the collector says", kSassOnly,
                "application", "", "", "", 1, {Role::kOnly}, "application", "", false, "--replay application"}));

TEST(RunPlan, RefusedOptionsSayWhy) {
  auto error = [](RunOptions o) {
    const auto plan = planRun(o, factsWith("", 1));
    return plan ? std::string() : plan.error();
  };
  RunOptions o;
  o.replay = "application";
  EXPECT_NE(error(o).find("--replay and --second-run choose what --metrics profiles"), std::string::npos);
  o = {};
  o.metrics = "roofline";
  o.replay = "kernel";
  o.second_run = "patching";
  EXPECT_EQ(error(o), "--second-run says how application replay's second run counts; add --replay application");
  o = {};
  o.metrics = "roofline";
  o.kernel_regex = "(unclosed";
  EXPECT_EQ(error(o).rfind("--kernel-regex '(unclosed' is not a valid regular expression", 0), 0u);
  o = {};
  o.metrics = "roofline";
  o.nvtx_scope = "thread";
  EXPECT_EQ(error(o), "--nvtx-scope says how --nvtx-include selects; add --nvtx-include");
  o = {};
  o.metrics = "no_such_metric.sum";
  EXPECT_FALSE(error(o).empty());
}

TEST(RunPlan, SecondRunPatchingOfCountersPerPcCountsCannotGiveWarns) {
  RunOptions o;
  o.metrics = "full";
  o.replay = "application";
  o.second_run = "patching";
  const auto plan = planRun(o, factsWith("", 1));
  ASSERT_TRUE(plan.ok()) << plan.error();
  const PlannedRun* second = plan->run(Role::kSecond);
  ASSERT_NE(second, nullptr);
  if (second->replay == "kernel") {
    ASSERT_EQ(plan->warnings.size(), 1u);
    EXPECT_NE(plan->warnings[0].find("the second run uses kernel replay"), std::string::npos);
  } else {
    EXPECT_TRUE(plan->warnings.empty());
  }
}

std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The plan's text with each wrapped line joined back to the one it continues (continuations are
// indented six or more; a line broken after a comma joins without a space).
std::string unwrapped(const std::string& text) {
  std::string out;
  for (const std::string_view line : lines(text)) {
    const std::size_t indent = line.find_first_not_of(' ');
    if (indent != std::string_view::npos && indent >= 6 && !out.empty()) {
      out.pop_back();  // the newline before the continuation
      if (out.back() != ',') out += ' ';
      out += line.substr(indent);
    } else {
      out += line;
    }
    out += '\n';
  }
  return out;
}

// The default metrics plan as `fprof run --explain` prints it: each run with what the collector is
// told, the joins, each fallback with its trigger, the steps after.
TEST(RunPlan, TheTextSaysRunsJoinsFallbacksAndSteps) {
  RunOptions o;
  o.metrics = "roofline";
  const auto plan = planRun(o, factsWith("", 1));
  ASSERT_TRUE(plan.ok());
  const std::string wrapped = plan->text();
  for (const std::string_view line : lines(wrapped)) EXPECT_LE(line.size(), 100u) << line;
  const std::string text = unwrapped(wrapped);
  for (const char* part :
       {"fprof run plan\n", "  mode: metrics, set roofline: 11 hardware counters, 12 SASS counters\n",
        "  replay: application (the set's hardware counters fit one pass",
        "  first run (always): the hardware counters in the program's own run of each profiled launch; the SASS "
        "counters from a duplicate",
        "    collector: FPROF_MODE=metrics FPROF_METRICS=dram__bytes_read.sum,", "FPROF_REPLAY=application "
        "FPROF_SASS_DUPLICATE=1 FPROF_CUBIN_DIR\n",
        "  second run (for each process whose duplicates did not count every profiled launch): the SASS counters "
        "by SASS patching",
        "; stopped past 3 x the first run + 60 s\n", "  second run again (where the second run by SASS patching was "
        "stopped past its time limit)",
        "  joins:\n    - each database's duplicates", "  fallbacks:\n    - where a process's duplicates did not",
        "    - where the second run by SASS patching takes more than 3 x the first run + 60 s: it is stopped",
        "  after the runs:\n    - each database checked", "the SASS step"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n---\n" << text;
  }
  RunOptions trace;
  const auto traced = planRun(trace, factsWith("", std::nullopt));
  ASSERT_TRUE(traced.ok());
  EXPECT_EQ(traced->text().rfind("fprof run plan\n  mode: trace (no counters)\n  run (always): the trace", 0), 0u)
      << traced->text();
  EXPECT_EQ(traced->text().find("fallbacks"), std::string::npos);
}

TEST(RunPlan, PatchedRunLimit) {
  EXPECT_DOUBLE_EQ(patchedRunLimitSeconds(10), 90);
  EXPECT_DOUBLE_EQ(patchedRunLimitSeconds(0), 60);
}

// The child inherits fprof's environment but for the contract: `fprof run` alone sets those.
TEST(ChildEnvironment, ContractVariablesComeOnlyFromFprofRun) {
  const std::vector<std::string> inherited = {"PATH=/usr/bin", "FPROF_SECOND_RUN=1", "FPROF_REPLAY=kernel",
                                              "FPROF_NVTX_INJECTION=cupti", "FPROF_QUIET=1", "HOME=/home/u",
                                              "FPROF_MODE=metrics"};
  const std::vector<std::string> env = mergedEnvironment(inherited, {{"FPROF_MODE", "trace"}, {"FPROF_OUTPUT", "/o"}});
  EXPECT_EQ(env, (std::vector<std::string>{"PATH=/usr/bin", "FPROF_NVTX_INJECTION=cupti", "FPROF_QUIET=1",
                                           "HOME=/home/u", "FPROF_MODE=trace", "FPROF_OUTPUT=/o"}));
}

}  // namespace
}  // namespace fprof::runner
