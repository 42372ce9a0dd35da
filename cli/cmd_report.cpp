// fprof report: the self-contained HTML report of a run (roofline, kernels, fusion opportunities,
// diff against a baseline), or its Markdown summary for CI job summaries and PR comments.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "command.h"
#include "fprof/analysis/run_analysis.h"
#include "fprof/core/merge.h"
#include "fprof/core/store.h"
#include "fprof/reports/html_report.h"
#include "fprof/reports/markdown_report.h"
#include "fprof/reports/report_data.h"
#include "progress.h"

namespace fprof::cli {
namespace {

struct ReportOptions {
  std::string file;
  std::string baseline;
  std::string output;
  std::string format = "html";
  std::optional<int> rank;
  bool force = false;
  bool quiet = false;
};

// --rank N on a database of several processes (fprof merge): the report of that rank alone. A
// baseline of several processes is cut to the same rank; a single-process baseline is used whole.
core::Status selectRank(core::Profile& p, int rank, bool always) {
  if (!always && p.processes.size() <= 1) return {};
  auto one = core::selectRank(p, rank);
  if (!one) return core::makeError(one.error());
  const std::string path = p.path;
  p = std::move(*one);
  p.path = fmt::format("{} (rank {})", path, rank);
  return {};
}

// Where the report goes: -o, or for html RUN.html in the current directory (RUN.rank<N>.html with
// --rank); "" and "-" are standard output.
std::string outputPathOf(const ReportOptions& opt) {
  if (!opt.output.empty() || opt.format != "html") return opt.output;
  return std::filesystem::path(opt.file).stem().string() + (opt.rank ? fmt::format(".rank{}", *opt.rank) : "") +
         ".html";
}

// The default RUN.html replaces an earlier fprof report of that name (what running the command
// again means), and nothing else: any other file there needs --force or another -o.
bool isFprofReport(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(2048, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head.rfind("<!DOCTYPE html>", 0) == 0 &&
         head.find("<meta name=\"generator\" content=\"fprof ") != std::string::npos;
}

core::OutputRules reportRules(const ReportOptions& opt, const std::string& out) {
  const bool replace_default = opt.output.empty() && !opt.force && isFprofReport(out);
  std::vector<std::string> inputs = {opt.file};
  if (!opt.baseline.empty()) inputs.push_back(opt.baseline);
  return outputRules(opt.force || replace_default, inputs, opt.format == "md" ? "the summary" : "the report");
}

struct LoadedRuns {
  core::Profile run;
  std::optional<core::Profile> base;
};

// A run reported alone is loaded without its launch tables: the analysis reads them once the
// NVTX ranges are indexed and let go (RunAnalysis::owningThenLoadingLaunchTables). A comparison
// reads both runs' ranges, and --rank cuts the tables to one process, so those load them whole.
bool launchTablesLater(const ReportOptions& opt) { return opt.baseline.empty() && !opt.rank; }

core::Expected<LoadedRuns> loadRuns(const ReportOptions& opt, Progress& progress) {
  progress.step("reading " + opt.file);
  const bool later = launchTablesLater(opt);
  auto run = loadProfile(opt.file, &progress, {.launch_tables = !later, .nvtx_messages = !later});
  if (!run) return core::Error{run.error()};
  LoadedRuns runs{std::move(*run), std::nullopt};
  if (!opt.baseline.empty()) {
    progress.step("reading the baseline " + opt.baseline);
    auto loaded = loadProfile(opt.baseline, &progress);
    if (!loaded) return core::Error{loaded.error()};
    runs.base = std::move(*loaded);
  }
  if (opt.rank) {
    if (core::Status st = selectRank(runs.run, *opt.rank, true); !st) return core::Error{st.error()};
    if (runs.base) {
      core::Status st = selectRank(*runs.base, *opt.rank, false);
      if (!st) return core::makeError("baseline: " + st.error());
    }
  }
  return runs;
}

// The analysis owns the runs, read through it alone: the tables data flow has read are freed as
// it goes, and the runs before the report is rendered.
core::Expected<analysis::RunAnalysis> analyse(const ReportOptions& opt, LoadedRuns runs) {
  if (launchTablesLater(opt)) return analysis::RunAnalysis::owningThenLoadingLaunchTables(std::move(runs.run));
  analysis::AnalysisOptions options;
  options.release_launch_tables = true;
  return analysis::RunAnalysis::owning(std::move(runs.run), std::move(runs.base), options);
}

int runReport(const ReportOptions& opt) {
  const std::string path = outputPathOf(opt);
  // The output is opened first: a name that cannot be written costs no analysis.
  auto out = core::TextOutput::open(path, reportRules(opt, path));
  if (!out) return inputError(out.error());
  Progress progress(Progress::wantedForFiles(opt.quiet, {opt.file, opt.baseline}));
  // Errors end the progress line first, so they start a line of their own.
  auto fail = [&](const std::string& message) {
    progress.done();
    return inputError(message);
  };
  auto runs = loadRuns(opt, progress);
  if (!runs) return fail(runs.error());
  progress.step(fmt::format("analysing {} kernels", runs->run.kernels.size()));
  const size_t printed = runs->run.warnings.size();
  auto analysed = analyse(opt, std::move(*runs));
  if (!analysed) return fail(analysed.error());
  printWarningsAfter(analysed->profile().warnings, printed, &progress);
  const reports::ReportData data = reports::buildReport(analysis::RunAnalysis(std::move(*analysed)));
  progress.step(opt.format == "md" ? "writing the Markdown summary" : "writing the HTML report");
  const std::string text = opt.format == "md" ? reports::renderMarkdown(data) : reports::renderHtml(data);
  core::Status written = out->write(text);
  if (written) written = out->finish();
  progress.done();
  if (!written) return inputError(written.error());
  if (!opt.quiet && !out->toStandardOutput()) {
    printText(stderr, fmt::format("fprof: wrote {} ({:.1f} KiB)\n", path, static_cast<double>(text.size()) / 1024.0));
  }
  return 0;
}

}  // namespace

Command addReportCommand(CLI::App& root) {
  auto opt = std::make_shared<ReportOptions>();
  CLI::App* app = root.add_subcommand(
      "report",
      "Write a self-contained HTML report of a run (roofline, time by op and kernel, kernel table, fusion "
      "opportunities; with --baseline, the diff), or its Markdown summary with --format md.");
  app->add_option("file", opt->file, "The .fprof database of the run")->required()->check(CLI::ExistingFile);
  app->add_option("--baseline", opt->baseline, "A .fprof database to compare against (diff, arrows on the roofline)")
      ->check(CLI::ExistingFile);
  app->add_option("-o,--output", opt->output,
                  "Output file ('-' for stdout). Default: RUN.html for html (RUN = the database's name without "
                  ".fprof; an earlier fprof report of that name is replaced, any other file needs --force), stdout "
                  "for md");
  app->add_flag("--force", opt->force, kForceHelp);
  app->add_option("--format", opt->format, "html (default) or md (Markdown, for CI job summaries and PR comments)")
      ->check(CLI::IsMember({"html", "md"}));
  app->add_option("--rank", opt->rank,
                  "Only this global rank of a database holding several processes (fprof merge); the default output "
                  "is then RUN.rank<N>.html. Without it, all ranks together with a table per rank")
      ->check(CLI::NonNegativeNumber);
  app->add_flag("-q,--quiet", opt->quiet,
                "Print nothing but errors: no progress line (shown on a terminal for large databases), no 'wrote' "
                "line");
  app->footer(kOutputRulesFooter);
  return {app, [opt] { return runReport(*opt); }};
}

}  // namespace fprof::cli
