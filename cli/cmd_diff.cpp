// fprof diff: two runs side by side, kernels and NVTX ops matched by name, launch shape and NVTX
// path, with repeat statistics for time and the counters as exact signals.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "command.h"
#include "fprof/analysis/run_analysis.h"
#include "fprof/core/store.h"
#include "fprof/reports/escape.h"
#include "fprof/reports/format.h"
#include "fprof/reports/report_data.h"
#include "text_table.h"

namespace fprof::cli {
namespace {

using reports::formatDurationNs;

struct DiffOptions {
  std::string base, cur;
  int top = 20;
  bool full_names = false;
  bool all = false;
};

std::string pValue(const std::optional<analysis::MannWhitney>& t) {
  return t ? fmt::format("{:.2g}", t->p_greater) : "n/a";
}

std::string change(std::optional<double> c) { return c ? fmt::format("{:+.1f}%", *c * 100) : "n/a"; }

std::string ns(const std::optional<analysis::SideStats>& s) {
  return s && s->median_ns ? formatDurationNs(*s->median_ns) : "-";
}

// What differs in how the two runs were recorded (devices, mode, counters), one line each, as
// fprof gate warns: times and counters of such runs do not compare one for one.
std::string setupWarnings(const analysis::RunDiff& d) {
  std::string out;
  for (const analysis::SetupDifference& s : d.setup_differences) out += "warning: " + s.message + "\n";
  return out;
}

// The baseline's fusion candidates the current run runs fused: predicted and measured saving.
std::string appliedFusions(const analysis::RunAnalysis& analysed, bool full_names) {
  const analysis::FusionOutcomes& outcomes = analysed.comparison()->fusions;
  const std::vector<reports::AppliedFusionRow> rows = reports::appliedFusionRows(outcomes, analysed.baseline()->fusion());
  if (outcomes.candidates == 0) return "\nFusions applied: none (the baseline has no fusion candidate)\n";
  size_t fused = 0;
  for (const analysis::FusionOutcome& o : outcomes.applied) fused += o.candidates.size();
  std::string out = fmt::format("\nFusions applied ({} of the baseline's {} candidates run fused; compared over {}):\n",
                                fused, outcomes.candidates, outcomes.scope);
  for (const std::string& note : outcomes.notes) out += "note: " + note + "\n";
  if (rows.empty()) return out + "none of the baseline's fusion candidates runs fused in the current run\n";
  using A = TextTable::Align;
  TextTable t({"found by", "instances", "launches", "predicted", "measured", "error", "candidate (baseline)"},
              {A::kLeft, A::kRight, A::kRight, A::kRight, A::kRight, A::kRight, A::kLeft});
  for (const reports::AppliedFusionRow& r : rows) {
    t.addRow({r.matched_by == "the same NVTX op ranges" ? "op ranges" : "neighbours", std::to_string(r.instances),
              fmt::format("{} -> {}", r.launches_before, r.launches_after),
              r.predicted_saving_ns ? formatDurationNs(*r.predicted_saving_ns) : "n/a",
              formatDurationNs(r.measured_saving_ns), r.error ? fmt::format("{:+.1f}%", *r.error * 100) : "n/a",
              full_names ? r.name : truncateMiddle(r.name, 160)});
  }
  out += t.render();
  out += "predicted: the model's saving for the instances found (fprof report BASE); measured: the kernel time both "
         "runs spent between the same neighbouring kernels (or in the same op ranges); error = (predicted - "
         "measured) / measured\n";
  out += fmt::format("{} candidate{} ran as before, {} changed without fewer launches\n", outcomes.unchanged,
                     outcomes.unchanged == 1 ? "" : "s", outcomes.changed_not_fused);
  return out;
}

int runDiff(const DiffOptions& opt) {
  if (core::Status s = core::checkStandardOutputIsNoInput({opt.base, opt.cur}, "the comparison"); !s) {
    return inputError(s.error());
  }
  auto base = loadProfile(opt.base);
  if (!base) return inputError(base.error());
  auto cur = loadProfile(opt.cur);
  if (!cur) return inputError(cur.error());
  // The current run's own fusion candidates are not shown: only the baseline's are looked for.
  analysis::AnalysisOptions options;
  options.fusion_in_background = false;
  options.release_launch_tables = true;  // the runs are read through the analysis alone
  const analysis::RunAnalysis analysed = analysis::RunAnalysis::owning(std::move(*cur), std::move(*base), options);
  const analysis::RunDiff& d = analysed.comparison()->diff;
  const analysis::KernelNames& names = analysed.comparison()->names;
  // Cut for display like any text shown: a 1 MB full name is no 1 MB line.
  auto shown_name = [&](const std::string& full) {
    return reports::shownText(opt.full_names ? full : names.shortName(full));
  };

  std::string out = fmt::format("base {}: {} kernels, {}\ncur  {}: {} kernels, {}\ntotal kernel time {}\n\n",
                                opt.base, analysed.baseline()->profile().kernels.size(), formatDurationNs(d.base_total_ns),
                                opt.cur, analysed.profile().kernels.size(), formatDurationNs(d.cur_total_ns),
                                change(d.base_total_ns > 0 ? std::optional<double>(d.cur_total_ns / d.base_total_ns - 1)
                                                           : std::nullopt));
  out += setupWarnings(d);
  using A = TextTable::Align;
  TextTable t({"status", "calls", "median base", "median cur", "change", "p(slower)", "counters", "kernel", "shape"},
              {A::kLeft, A::kRight, A::kRight, A::kRight, A::kRight, A::kRight, A::kLeft, A::kLeft, A::kLeft});
  int shown = 0;
  for (const analysis::DiffEntry& e : d.kernels) {
    if (!opt.all && shown >= opt.top) break;
    ++shown;
    std::string counters;
    if (e.base && e.cur) {
      for (size_t i = 0; i < analysis::kCounterMetricCount; ++i) {
        const auto& b = e.base->metrics[i];
        const auto& c = e.cur->metrics[i];
        if (b && c && *b != *c) {
          counters += fmt::format("{}{} {:.6g}->{:.6g}", counters.empty() ? "" : ", ",
                                  analysis::counterMetricName(static_cast<analysis::CounterMetric>(i)), *b, *c);
        }
      }
    }
    if (counters.empty()) counters = e.base && e.cur ? "same" : "-";
    const std::string name = e.kind == analysis::MatchKind::kRenamed
                                 ? shown_name(e.base_name) + " => " + shown_name(e.name)
                                 : shown_name(e.name);
    const std::string calls = fmt::format("{}/{}", e.base ? std::to_string(e.base->calls) : "-",
                                          e.cur ? std::to_string(e.cur->calls) : "-");
    t.addRow({std::string(analysis::matchKindName(e.kind)), calls, ns(e.base), ns(e.cur), change(e.time_change),
              pValue(e.test), counters, name, e.shape});
  }
  out += fmt::format("Kernels ({} of {}, by change in total time):\n", shown, d.kernels.size());
  out += t.render();
  if (!d.ops.empty()) {
    TextTable o({"status", "instances", "median base", "median cur", "change", "p(slower)", "NVTX path"},
                {A::kLeft, A::kRight, A::kRight, A::kRight, A::kRight, A::kRight, A::kLeft});
    for (const analysis::DiffEntry& e : d.ops) {
      const std::string n = fmt::format("{}/{}", e.base ? std::to_string(e.base->samples_ns.size()) : "-",
                                        e.cur ? std::to_string(e.cur->samples_ns.size()) : "-");
      o.addRow({std::string(analysis::matchKindName(e.kind)), n, ns(e.base), ns(e.cur), change(e.time_change),
                pValue(e.test), opt.full_names ? e.name : truncateMiddle(e.name, 80)});
    }
    out += "\nNVTX ops (one sample per range instance):\n" + o.render();
  }
  out += "\np(slower): one-sided Mann-Whitney U over the launches (ops: range instances); counters per launch\n";
  out += appliedFusions(analysed, opt.full_names);
  printText(stdout, out);
  return 0;
}

}  // namespace

Command addDiffCommand(CLI::App& root) {
  auto opt = std::make_shared<DiffOptions>();
  CLI::App* app = root.add_subcommand(
      "diff", "Compare two runs: kernels and NVTX ops matched by name, launch shape and NVTX path; time with repeat "
              "statistics, counters, new/vanished/renamed kernels.");
  app->add_option("base", opt->base, "The baseline .fprof database")->required();
  app->add_option("current", opt->cur, "The current .fprof database")->required();
  app->add_option("--top", opt->top, "How many kernels to list (default 20)")->check(CLI::PositiveNumber);
  app->add_flag("--all", opt->all, "List every kernel");
  app->add_flag("--full-names", opt->full_names, "Full demangled kernel names instead of the short ones");
  return {app, [opt] { return runDiff(*opt); }};
}

}  // namespace fprof::cli
