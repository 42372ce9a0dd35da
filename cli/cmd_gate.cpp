// fprof gate: the CI performance gate. Exit 0 when clean, 1 on a regression, 2 on bad input. Two
// job folders of fprof job are handed to the Python package, which compares them by the same checks.
// Time regressions must be significant (one-sided Mann-Whitney U over repeated launches; launch
// groups too rare alone are pooled, and the whole run's totals are checked too); counters (bytes,
// FLOPs, registers, spills, occupancy) and the launch count are near-exact signals (docs/gate.md).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "command.h"
#include "fprof/analysis/diff.h"
#include "fprof/analysis/kernel_names.h"
#include "fprof/analysis/run_analysis.h"
#include "fprof/core/merge.h"
#include "fprof/core/store.h"
#include "gate_config.h"
#include "gate_render.h"
#include "python_package.h"

namespace fprof::cli {
namespace {

struct GateCliOptions {
  std::string base, cur;
  std::string time_threshold, counter_threshold, config;
  double alpha = 0;
  std::string markdown, json, junit;
  bool quiet = false;
  bool force = false;
};

// Databases holding several processes (fprof merge) are compared rank by rank when both hold the
// same ranks: a regression on one rank is not averaged away by the others. Otherwise the whole
// files are compared, and the note says why.
struct GatePlan {
  bool per_rank = false;
  std::string note;  // "" for two single-process files
  std::vector<std::string> labels;
  std::vector<std::optional<int>> ranks;
};

std::optional<std::vector<int>> ranksOf(const std::vector<core::RankGroup>& groups) {
  std::vector<int> ranks;
  for (const core::RankGroup& g : groups) {
    if (!g.rank) return std::nullopt;
    ranks.push_back(*g.rank);
  }
  return ranks;
}

analysis::AnalysisOptions gateAnalysisOptions() {
  analysis::AnalysisOptions options;
  options.fusion_in_background = false;  // the gate reads the ops of each kernel only
  return options;
}

// What the gate keeps of one file once it is read: its side of the comparison for the whole file
// and, where asked, rank by rank; its processes' ranks; its kernel names. The run itself is let go
// before the other file is read, so the gate holds one run at a time.
struct GateFile {
  bool several_processes = false;
  std::vector<core::RankGroup> groups;
  std::optional<std::vector<int>> ranks;  // every group's rank, where every process has one
  analysis::DiffSide whole;
  std::vector<analysis::DiffSide> by_rank;  // in the order of groups
  std::vector<std::string> kernel_names;    // each demangled name once
};

analysis::DiffSide diffSideOf(const core::Profile& p) {
  const analysis::RunAnalysis a = analysis::RunAnalysis::of(p, nullptr, gateAnalysisOptions());
  return analysis::diffSideOf(p, a.kernelOps());
}

// A file compared whole only: its run is the analysis's own, which reads the NVTX messages it
// needs from the file and lets the ranges go once the ops are indexed (a side reads the kernels'
// op names and NVTX paths, not the ranges).
core::Status readWholeOnly(core::Profile p, GateFile& f) {
  core::Expected<analysis::RunAnalysis> a = analysis::RunAnalysis::owningIndexed(std::move(p), gateAnalysisOptions());
  if (!a) return core::makeError(a.error());
  f.whole = analysis::diffSideOf(a->profile(), a->kernelOps());
  f.kernel_names = analysis::distinctKernelNames(a->profile());
  return {};
}

// Reads a file and keeps its sides; rank by rank where want_by_rank says so of its ranks. A file of
// one rank group is its own rank: its whole side is the rank's.
core::Expected<GateFile> readGateFile(const std::string& path,
                                      const std::function<bool(const GateFile&)>& want_by_rank) {
  // The gate compares launch groups and ops: the launch arguments and memory events, which only
  // data flow reads, are not read (tens of bytes per kernel, and most of the reading time), and the
  // NVTX messages are read once the file's ranks are known, only those the op index needs where
  // the file is compared whole.
  auto p = loadProfile(path, nullptr, {.launch_tables = false, .nvtx_messages = false});
  if (!p) return core::makeError(p.error());
  GateFile f;
  f.several_processes = p->processes.size() > 1;
  f.groups = core::rankGroups(*p);
  f.ranks = ranksOf(f.groups);
  if (!f.ranks || !want_by_rank(f)) {
    if (core::Status s = readWholeOnly(std::move(*p), f); !s) return core::makeError(s.error());
    return f;
  }
  if (core::Status s = core::loadNvtxMessages(*p); !s) return core::makeError(s.error());
  f.whole = diffSideOf(*p);
  f.kernel_names = analysis::distinctKernelNames(*p);
  if (f.groups.size() == 1 && f.groups.front().process_ids.size() == p->processes.size()) {
    f.by_rank.push_back(f.whole);
    return f;
  }
  for (const core::RankGroup& group : f.groups) {
    auto rank = core::selectRank(*p, *group.rank);
    if (!rank) return core::makeError(rank.error());
    f.by_rank.push_back(diffSideOf(*rank));
  }
  return f;
}

bool sameRanks(const GateFile& base, const GateFile& cur) {
  return (base.several_processes || cur.several_processes) && base.ranks && cur.ranks && *base.ranks == *cur.ranks;
}

GatePlan planComparisons(const GateCliOptions& o, const GateFile& base, const GateFile& cur) {
  GatePlan plan;
  if (sameRanks(base, cur)) {
    plan.per_rank = true;
    plan.note = fmt::format("Compared rank by rank: both files hold {}.", core::describeRanks(base.groups));
    for (const core::RankGroup& group : base.groups) {
      plan.labels.push_back(group.label);
      plan.ranks.push_back(group.rank);
    }
    return plan;
  }
  if (base.several_processes || cur.several_processes) {
    plan.note = fmt::format("Compared all processes together, not rank by rank: `{}` holds {}, `{}` holds {}.",
                            o.base, core::describeRanks(base.groups), o.cur, core::describeRanks(cur.groups));
  }
  plan.labels.emplace_back();
  plan.ranks.emplace_back();
  return plan;
}

// The comparisons of the plan: the files' sides rank by rank, or whole.
std::vector<analysis::RunDiff> diffsOf(const GatePlan& plan, GateFile& base, GateFile& cur) {
  std::vector<analysis::RunDiff> diffs;
  if (!plan.per_rank) {
    diffs.push_back(analysis::diffSides(std::move(base.whole), std::move(cur.whole)));
    return diffs;
  }
  for (size_t i = 0; i < base.by_rank.size() && i < cur.by_rank.size(); ++i) {
    diffs.push_back(analysis::diffSides(std::move(base.by_rank[i]), std::move(cur.by_rank[i])));
  }
  return diffs;
}

// The options: defaults, then the configuration file, then the command line.
core::Expected<analysis::GateOptions> gateOptions(const GateCliOptions& o) {
  return gateOptionsOf({o.config, o.time_threshold, o.counter_threshold, o.alpha});
}

// The files asked for, opened before the comparison: a name that cannot be written costs nothing.
core::Expected<GateOutputs> openOutputs(const GateCliOptions& o) {
  std::vector<std::string> inputs = {o.base, o.cur};
  if (!o.config.empty()) inputs.push_back(o.config);
  if (!o.quiet) {
    if (core::Status s = core::checkStandardOutputIsNoInput(inputs, "the summary"); !s) return core::Error{s.error()};
  }
  return openGateOutputs({o.markdown, o.json, o.junit}, o.force, inputs);
}

bool isJobFolder(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) && std::filesystem::is_regular_file(
                                                        std::filesystem::path(path) / "job.json", ec);
}

// The command line again, for the Python package's gate: the options given, then the folders.
std::vector<std::string> packageArguments(const GateCliOptions& o) {
  std::vector<std::string> args = {"gate"};
  for (auto [flag, value] : {std::pair{"--time-threshold", &o.time_threshold},
                             std::pair{"--counter-threshold", &o.counter_threshold}, std::pair{"--config", &o.config},
                             std::pair{"--markdown", &o.markdown}, std::pair{"--json", &o.json},
                             std::pair{"--junit", &o.junit}}) {
    if (!value->empty()) args.insert(args.end(), {flag, *value});
  }
  if (o.alpha > 0) args.insert(args.end(), {"--alpha", fmt::format("{}", o.alpha)});
  if (o.force) args.emplace_back("--force");
  if (o.quiet) args.emplace_back("--quiet");
  args.insert(args.end(), {"--", o.base, o.cur});
  return args;
}

// Two job folders of fprof job are compared by the Python package (docs/jobs.md); a job folder
// against a file, or a folder that is no job folder, is said in one line. None: two files.
std::optional<int> gateOverJobs(const GateCliOptions& o) {
  const bool base_job = isJobFolder(o.base), cur_job = isJobFolder(o.cur);
  if (base_job && cur_job) return runPackageCommand(packageArguments(o));
  for (const std::string* path : {&o.base, &o.cur}) {
    std::error_code ec;
    if (std::filesystem::is_directory(*path, ec) && !isJobFolder(*path)) {
      return inputError(*path + ": a folder that is not a job folder (it holds no job.json): fprof gate compares two "
                                ".fprof files, or two job folders written by fprof job");
    }
  }
  if (base_job != cur_job) {
    const std::string& job = base_job ? o.base : o.cur;
    const std::string& file = base_job ? o.cur : o.base;
    return inputError(job + " is a job folder and " + file +
                      " is not: fprof gate compares two .fprof files, or two job folders written by fprof job");
  }
  return std::nullopt;
}

int runGate(const GateCliOptions& o) {
  if (const std::optional<int> jobs = gateOverJobs(o)) return *jobs;
  auto g = gateOptions(o);
  if (!g) return inputError(g.error());
  auto out = openOutputs(o);
  if (!out) return inputError(out.error());
  // The base file's ranks are kept rank by rank whenever it has ranks (the current file decides
  // whether they are compared so); the current file's only when they match the base's.
  auto base = readGateFile(o.base, [](const GateFile&) { return true; });
  if (!base) return inputError(base.error());
  auto cur = readGateFile(o.cur, [&](const GateFile& f) { return sameRanks(*base, f); });
  if (!cur) return inputError(cur.error());
  const GatePlan plan = planComparisons(o, *base, *cur);
  // Short names over both whole files, so that every rank names a kernel the same way.
  std::vector<std::string> names = std::move(base->kernel_names);
  names.insert(names.end(), cur->kernel_names.begin(), cur->kernel_names.end());
  const analysis::KernelNames kernel_names(std::move(names));
  const std::vector<analysis::RunDiff> diffs = diffsOf(plan, *base, *cur);
  GateRun run{o.base, o.cur, *g, plan.per_rank, false, plan.note, {}, &kernel_names};
  for (size_t i = 0; i < diffs.size(); ++i) {
    run.comparisons.push_back({plan.labels[i], plan.ranks[i], &diffs[i], analysis::evaluateGate(diffs[i], *g)});
  }
  const std::string md = gateMarkdown(run);
  if (core::Status s = writeGateOutputs(*out, run, md); !s) return inputError(s.error());
  if (!o.quiet && !out->toStandardOutput()) printText(stdout, md);
  return run.passed() ? 0 : 1;
}

}  // namespace

Command addGateCommand(CLI::App& root) {
  auto opt = std::make_shared<GateCliOptions>();
  CLI::App* app = root.add_subcommand(
      "gate", "CI performance gate: exit 0 when CURRENT is no worse than BASE, 1 on a regression, 2 on bad input. "
              "Launches are grouped by kernel, launch shape and op. Time regressions must be significant (one-sided "
              "Mann-Whitney U over repeated launches; groups too rare to test alone are pooled by kernel, then "
              "together); the whole run's kernel time, GPU busy time, launch count and time in new kernels are "
              "checked too; counters are exact signals. Differing GPUs, modes or counter sets are warned about. "
              "Databases of several processes (fprof merge) holding the same ranks are compared rank by rank. Two job "
              "folders of fprof job are compared rank by rank and as a whole (by fprof's Python package, "
              "docs/jobs.md).");
  app->add_option("base", opt->base, "The baseline .fprof database, or job folder")->required();
  app->add_option("current", opt->cur, "The current .fprof database, or job folder")->required();
  app->add_option("--time-threshold", opt->time_threshold,
                  "Median slowdown that fails the gate when significant, in percent (default 5%)");
  app->add_option("--counter-threshold", opt->counter_threshold,
                  "Change of a counter (bytes, FLOPs, registers, spills, occupancy) that fails the gate, in percent "
                  "(default 1%)");
  app->add_option("--alpha", opt->alpha, "Significance level of the time test (default 0.01)")
      ->check(CLI::Range(1e-12, 0.5));
  app->add_option("--config", opt->config,
                  "JSON or TOML file (by extension) with the options above and ignore lists (docs/gate.md)");
  app->add_option("--markdown", opt->markdown,
                  "Write the Markdown summary here (e.g. $GITHUB_STEP_SUMMARY, which the runner creates: add --force)");
  app->add_option("--json", opt->json, "Write the findings as JSON here");
  app->add_option("--junit", opt->junit,
                  "Write a JUnit XML report here. One of the three may be '-', standard output, which then carries "
                  "it instead of the printed summary");
  app->add_flag("--force", opt->force, kForceHelp);
  app->footer(kOutputRulesFooter);
  app->add_flag("-q,--quiet", opt->quiet, "Print nothing; only the exit code and the files asked for");
  return {app, [opt] { return runGate(*opt); }};
}

}  // namespace fprof::cli
