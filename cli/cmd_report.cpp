// fprof report: the self-contained HTML report of a run (roofline, kernels, fusion opportunities,
// diff against a baseline), or its Markdown summary for CI job summaries and PR comments.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "command.h"
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

bool samePath(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

int runReport(const ReportOptions& opt) {
  Progress progress(Progress::wantedForFiles(opt.quiet, {opt.file, opt.baseline}));
  // Errors end the progress line first, so they start a line of their own.
  auto fail = [&](const std::string& message) {
    progress.done();
    return inputError(message);
  };
  progress.step("reading " + opt.file);
  auto run = core::loadProfile(opt.file);
  if (!run) return fail(run.error());
  std::optional<core::Profile> base;
  if (!opt.baseline.empty()) {
    progress.step("reading the baseline " + opt.baseline);
    auto loaded = core::loadProfile(opt.baseline);
    if (!loaded) return fail(loaded.error());
    base = std::move(*loaded);
  }
  if (opt.rank) {
    if (core::Status st = selectRank(*run, *opt.rank, true); !st) return fail(st.error());
    if (base) {
      if (core::Status st = selectRank(*base, *opt.rank, false); !st) return fail("baseline: " + st.error());
    }
  }
  progress.step(fmt::format("analysing {} kernels", run->kernels.size()));
  const reports::ReportData data = reports::buildReport(*run, base ? &*base : nullptr);
  progress.step(opt.format == "md" ? "writing the Markdown summary" : "writing the HTML report");
  const std::string text = opt.format == "md" ? reports::renderMarkdown(data) : reports::renderHtml(data);
  progress.done();

  std::string out = opt.output;
  if (out.empty() && opt.format == "html") {
    out = std::filesystem::path(opt.file).stem().string() + (opt.rank ? fmt::format(".rank{}", *opt.rank) : "") + ".html";
  }
  if (out.empty() || out == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  if (samePath(out, opt.file) || (!opt.baseline.empty() && samePath(out, opt.baseline))) {
    return inputError(fmt::format("{}: refusing to overwrite an input database with the report; choose another -o", out));
  }
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  if (!f) return inputError(fmt::format("{}: cannot write the report (check the directory exists and is writable)", out));
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  f.close();
  if (!f) return inputError(fmt::format("{}: writing the report failed (disk full?)", out));
  if (!opt.quiet) {
    std::fprintf(stderr, "fprof: wrote %s (%.1f KiB)\n", out.c_str(), static_cast<double>(text.size()) / 1024.0);
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
                  ".fprof), stdout for md");
  app->add_option("--format", opt->format, "html (default) or md (Markdown, for CI job summaries and PR comments)")
      ->check(CLI::IsMember({"html", "md"}));
  app->add_option("--rank", opt->rank,
                  "Only this global rank of a database holding several processes (fprof merge); the default output "
                  "is then RUN.rank<N>.html. Without it, all ranks together with a table per rank")
      ->check(CLI::NonNegativeNumber);
  app->add_flag("-q,--quiet", opt->quiet,
                "Print nothing but errors: no progress line (shown on a terminal for large databases), no 'wrote' "
                "line");
  return {app, [opt] { return runReport(*opt); }};
}

}  // namespace fprof::cli
