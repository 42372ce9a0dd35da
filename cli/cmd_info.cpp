// fprof info: what a .fprof database holds, and its top kernels, in the terminal.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "command.h"
#include "fprof/analysis/coverage.h"
#include "fprof/analysis/kernel_names.h"
#include "fprof/analysis/ranks.h"
#include "fprof/analysis/run_analysis.h"
#include "fprof/analysis/summary.h"
#include "fprof/core/merge.h"
#include "fprof/core/store.h"
#include "fprof/reports/escape.h"
#include "fprof/reports/format.h"
#include "fprof/reports/report_data.h"
#include "progress.h"
#include "text_table.h"

namespace fprof::cli {
namespace {

using reports::formatBytes;
using reports::formatDurationNs;
using reports::formatPercent;
using reports::shownText;  // a command line or host name of any length is cut for the terminal

struct InfoOptions {
  std::string file;
  int top = 10;
  bool full_names = false;
  bool quiet = false;
  std::optional<int> rank;
};

// A finding's text for the terminal: its `code spans` without the backticks.
std::string unquoted(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), '`'), text.end());
  return text;
}

std::string deviceText(const core::DeviceInfo& d) {
  return fmt::format("{}, sm_{}{}, {} SMs, {} memory, {} L2", shownText(d.name), d.compute_major, d.compute_minor,
                     d.sm_count,
                     formatBytes(static_cast<double>(d.global_memory_bytes)), formatBytes(static_cast<double>(d.l2_bytes)));
}

// Several processes (a merged job): commands once each, where the ranks ran, devices by model.
std::string processesText(const core::Profile& p) {
  std::string out;
  std::vector<std::string> commands, hosts;
  auto addUnique = [](std::vector<std::string>& v, const std::string& s) {
    if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
  };
  for (const core::ProcessInfo& pr : p.processes) {
    addUnique(commands, pr.command_line.empty() ? "?" : shownText(pr.command_line));
    addUnique(hosts, pr.host.empty() ? "?" : shownText(pr.host));
  }
  for (const std::string& c : commands) out += fmt::format("command : {}\n", c);
  std::string host_list;
  for (const std::string& h : hosts) host_list += (host_list.empty() ? "" : ", ") + h;
  out += fmt::format("ranks   : {} processes, {} on {} host{} ({})\n", p.processes.size(),
                     core::describeRanks(core::rankGroups(p)), hosts.size(), hosts.size() == 1 ? "" : "s", host_list);
  std::vector<std::pair<std::string, int>> models;  // device text, processes using it
  for (const core::DeviceInfo& d : p.devices) {
    const std::string text = deviceText(d);
    auto it = std::find_if(models.begin(), models.end(), [&](const auto& m) { return m.first == text; });
    if (it == models.end()) {
      models.emplace_back(text, 1);
    } else {
      ++it->second;
    }
  }
  for (const auto& [text, n] : models) out += fmt::format("device  : {} ({} process{})\n", text, n, n == 1 ? "" : "es");
  return out;
}

// One line per rank: where it ran, its kernel time and share of the job's, its NCCL share, and
// the kernel that took most of its time.
std::string rankTable(const std::vector<analysis::RankRow>& rows, const analysis::KernelNames& names, bool full_names) {
  std::string out = "\nRanks (NCCL = share of the rank's kernel time in NCCL kernels; top = its largest kernel):\n";
  using A = TextTable::Align;
  TextTable t({"rank", "host", "pid", "device", "mode", "kernels", "kernel time", "share", "NCCL", "top", "top kernel"},
              {A::kRight, A::kLeft, A::kRight, A::kLeft, A::kLeft, A::kRight, A::kRight, A::kRight, A::kRight,
               A::kRight, A::kLeft});
  for (const analysis::RankRow& r : rows) {
    t.addRow({r.group.rank ? std::to_string(*r.group.rank) : "-", shownText(r.hosts), r.pids,
              r.devices.empty() ? "?" : shownText(r.devices), shownText(r.mode), std::to_string(r.kernel_count),
              formatDurationNs(static_cast<double>(r.total_kernel_ns)),
              formatPercent(r.share), formatPercent(r.nccl_share), formatPercent(r.topKernelShare()),
              shownText(full_names ? r.top_kernel : names.shortName(r.top_kernel))});
  }
  out += t.render();
  if (const auto im = analysis::rankImbalance(rows)) {
    out += fmt::format("balance : {} has the most kernel time outside NCCL, {:.2f}x {} (the least)\n",
                       rows[im->most].group.label, im->ratio, rows[im->least].group.label);
  }
  return out;
}

// The kernels info names (the top groups, the ranks' top kernels), shortened together.
analysis::KernelNames namesShown(const core::Profile& p, const analysis::RunSummary& s,
                                 const std::vector<analysis::RankRow>& ranks, int top) {
  std::vector<std::string> names;
  for (size_t i = 0; i < s.groups.size() && i < static_cast<size_t>(top); ++i) {
    names.push_back(p.str(s.groups[i].demangled_id));
  }
  for (const analysis::RankRow& r : ranks) names.push_back(r.top_kernel);
  return analysis::KernelNames(std::move(names));
}

// The top kernel groups: launch shape, resources, occupancy; on a run with counters also their
// place on the roofline, as fprof report computes it (`report` holds the same groups in order).
std::string topKernelTable(const core::Profile& p, const analysis::RunSummary& s, const reports::ReportData* report,
                           const analysis::KernelNames& names, const InfoOptions& opt, bool several) {
  const int shown = std::min<int>(opt.top, static_cast<int>(s.groups.size()));
  std::string out = fmt::format("\nTop {} kernels by GPU time (grouped by name and launch shape{}):\n", shown,
                                several ? ", all processes" : "");
  using A = TextTable::Align;
  std::vector<std::string> head = {"#",    "time", "share", "calls",     "mean",     "grid",
                                   "block", "regs", "smem",  "local/thr", "occupancy"};
  std::vector<A> align(head.size(), A::kRight);
  if (report) {
    for (const char* c : {"achieved", "intensity", "FLOP/s", "% of roof", "bound"}) {
      head.push_back(c);
      align.push_back(A::kRight);
    }
  }
  head.push_back("kernel");
  align.push_back(A::kLeft);
  TextTable t(head, align);
  for (int i = 0; i < shown; ++i) {
    const analysis::KernelGroup& g = s.groups[static_cast<size_t>(i)];
    const double share =
        s.total_kernel_ns ? static_cast<double>(g.total_ns) / static_cast<double>(s.total_kernel_ns) : 0;
    const std::string& name = p.str(g.demangled_id);
    std::vector<std::string> cells = {std::to_string(i + 1), formatDurationNs(static_cast<double>(g.total_ns)),
                                      formatPercent(share), std::to_string(g.calls), formatDurationNs(g.meanNs()),
                                      reports::formatShape(g.grid_x, g.grid_y, g.grid_z),
                                      reports::formatShape(g.block_x, g.block_y, g.block_z),
                                      std::to_string(g.registers_per_thread), formatBytes(g.shared_bytes),
                                      formatBytes(static_cast<double>(g.local_bytes_per_thread)),
                                      formatPercent(g.theoretical_occupancy)};
    if (report) {
      // The report keeps its first 2,000 groups; beyond them (a large --top) there is no row.
      const size_t at = static_cast<size_t>(i);
      const reports::GroupRow* r = at < report->groups.size() ? &report->groups[at] : nullptr;
      const std::string roof = r && r->roof_fraction ? formatPercent(r->roof_fraction) + " (" + r->binding_roof + ")" : "n/a";
      cells.push_back(r ? formatPercent(r->achieved_occupancy) : "n/a");
      cells.push_back(r ? reports::orNa(r->intensity_dram, reports::formatIntensity) : "n/a");
      cells.push_back(r ? reports::orNa(r->flops_per_s, reports::formatFlopRate) : "n/a");
      cells.push_back(roof);
      cells.push_back(r && !r->bound.empty() ? r->bound : "n/a");
    }
    cells.push_back(shownText(opt.full_names ? name : names.shortName(name)));
    t.addRow(std::move(cells));
  }
  out += t.render();
  if (report) {
    out += "occupancy = theoretical (launch configuration and device limits), achieved = measured counters; "
           "local/thr = stack frame and spills\n";
    out += "intensity = FLOP per DRAM byte; FLOP/s, % of roof (the binding roof) and bound: the roofline placement of "
           "fprof report, against the ceilings it lists\n";
  } else {
    out += "occupancy = theoretical (launch configuration and device limits); local/thr = stack frame and spills\n";
  }
  return out;
}

// The profile the command looks at: the file, or one rank of it; the label names which.
struct Selected {
  core::Profile profile;
  std::string label;
};

core::Expected<Selected> loadSelected(const InfoOptions& opt, Progress& progress) {
  progress.step("reading " + opt.file);
  auto loaded = loadProfile(opt.file, &progress);
  if (!loaded) return core::makeError(loaded.error());
  if (!opt.rank) return Selected{std::move(*loaded), opt.file};
  const std::string ranks = core::describeRanks(core::rankGroups(*loaded));
  auto one = core::selectRank(*loaded, *opt.rank);
  if (!one) return core::makeError(one.error());
  return Selected{std::move(*one), fmt::format("{} (rank {}; the file holds {})", opt.file, *opt.rank, ranks)};
}

// The header: schema and mode, then the command, process and devices (or the job's processes).
std::string headerText(const core::Profile& p, const std::string& label) {
  std::string out = fmt::format("{}  (schema {}, recorded by fprof {}, mode {})\n", label, p.schema_version,
                                shownText(p.meta("fprof_version", "?")), shownText(p.meta("mode", "?")));
  if (p.processes.size() > 1) return out + processesText(p);
  for (const core::ProcessInfo& pr : p.processes) {
    out += fmt::format("command : {}\n", pr.command_line.empty() ? "?" : shownText(pr.command_line));
    std::string where = fmt::format("host {}, pid {}", pr.host.empty() ? "?" : shownText(pr.host), pr.pid);
    if (pr.rank) where += fmt::format(", rank {}", *pr.rank);
    if (pr.local_rank) where += fmt::format(", local rank {}", *pr.local_rank);
    out += fmt::format("process : {}\n", where);
  }
  for (const core::DeviceInfo& d : p.devices) out += fmt::format("device  : [{}] {}\n", d.id, deviceText(d));
  return out;
}

// GPU busy time against the span; over a job, summed over its GPUs (so it can exceed the span).
std::string timelineText(const core::Profile& p, const analysis::RunSummary& s) {
  if (!s.timeline_known) return "no timeline: kernels replayed for their counters carry no timestamps";
  if (p.processes.size() <= 1) {
    return fmt::format("GPU busy {} of a {} span", formatDurationNs(static_cast<double>(s.gpu_busy_ns)),
                       formatDurationNs(static_cast<double>(s.span_ns)));
  }
  std::set<std::string> gpus;
  for (const core::DeviceInfo& d : p.devices) {
    gpus.insert(d.uuid.empty() ? fmt::format("{}/{}", d.process_id, d.id) : d.uuid);
  }
  return fmt::format("GPU busy {} summed over {} GPU{}, first kernel to last {}",
                     formatDurationNs(static_cast<double>(s.gpu_busy_ns)), gpus.size(), gpus.size() == 1 ? "" : "s",
                     formatDurationNs(static_cast<double>(s.span_ns)));
}

std::string totalsText(const core::Profile& p, const analysis::RunSummary& s) {
  std::string out = fmt::format("kernels : {} launches of {} distinct kernel shapes; kernel time {} ({})\n",
                                s.kernel_count, s.groups.size(),
                                formatDurationNs(static_cast<double>(s.total_kernel_ns)), timelineText(p, s));
  out += fmt::format("copies  : {} memcpy ({}, {}), {} memset\n", s.memcpy_count,
                     formatBytes(static_cast<double>(s.memcpy_bytes)),
                     formatDurationNs(static_cast<double>(s.memcpy_ns)), s.memset_count);
  out += fmt::format("NVTX    : {} ranges\n", s.nvtx_range_count);
  return out;
}

// Counter coverage, how they were counted, what is missing and graph launches. A metrics run that
// recorded no counters (it crashed before the first decode, say) still says so, with the reasons
// its kernels carry. Counter sources and missing reasons come from the database: cut like any text.
std::string countersText(const core::Profile& p, const analysis::RunAnalysis& analysed, bool has_report) {
  const bool metrics_run = p.meta("mode") == "metrics" || !p.counters_missing.empty();
  if (!has_report && !metrics_run) return "";
  const analysis::CounterCoverage& coverage = analysed.coverage();
  std::string out = "coverage: " + shownText(analysis::describeCoverage(coverage)) + "\n";
  if (const std::string how = analysis::describeCollection(p); !how.empty()) out += "counted : " + shownText(how) + "\n";
  if (const std::string missing = analysis::describeMissing(coverage); !missing.empty()) {
    out += "missing : " + shownText(missing) + "\n";
  }
  if (const std::string graphs = reports::describeGraphLaunches(p); !graphs.empty()) out += "graphs  : " + graphs + "\n";
  return out;
}

std::string fusionLine(const core::Profile& p, const analysis::RunAnalysis& analysed,
                       const std::optional<reports::ReportData>& report, const analysis::KernelNames& names) {
  if (p.kernels.empty()) return "";
  const std::string best = report ? reports::bestFusion(*report) : reports::bestFusion(analysed.fusion(), names);
  return "fusion  : " +
         (best.empty() ? std::string("no pair worth fusing found (fprof report lists the pairs and why)")
                       : shownText(unquoted(best))) +
         "\n";
}

// Dropped records and the collector's warnings and errors, each prefixed with its rank in a job.
std::string warningsText(const core::Profile& p) {
  std::string out;
  if (const std::string dropped = p.meta("dropped_records", "0"); dropped != "0") {
    out += fmt::format("warning : the collector dropped {} records (buffers full); totals are lower bounds\n",
                       shownText(dropped));
  }
  std::map<uint32_t, std::string> rank_of_process;
  if (p.processes.size() > 1) {
    for (const core::RankGroup& g : core::rankGroups(p)) {
      for (uint32_t id : g.process_ids) rank_of_process[id] = g.label + ": ";
    }
  }
  for (const core::CollectorEventRecord& e : p.collector_events) {
    if (e.severity != "info") {
      out += fmt::format("{:<8}: {}{}\n", shownText(e.severity), rank_of_process[e.process_id], shownText(e.message));
    }
  }
  return out;
}

int runInfo(const InfoOptions& opt) {
  if (core::Status s = core::checkStandardOutputIsNoInput({opt.file}, "the summary"); !s) return inputError(s.error());
  Progress progress(Progress::wantedForFiles(opt.quiet, {opt.file}));
  auto selected = loadSelected(opt, progress);
  if (!selected) {
    progress.done();
    return inputError(selected.error());
  }
  const core::Profile& p = selected->profile;
  progress.step(fmt::format("analysing {} kernels", p.kernels.size()));
  // With counters: the report of the same analysis (roofline placement, achieved occupancy,
  // fusion), so info and report never disagree.
  const analysis::RunAnalysis analysed = analysis::RunAnalysis::of(p);
  const analysis::RunSummary& s = analysed.summary();
  const bool several = p.processes.size() > 1;
  std::optional<reports::ReportData> report;
  if (!p.counters.empty()) report = reports::buildReport(analysed);
  const bool rank_table = several && core::rankGroups(p).size() > 1;
  const std::vector<analysis::RankRow> no_ranks;
  const std::vector<analysis::RankRow>& rank_rows = report || rank_table ? analysed.ranks() : no_ranks;
  const analysis::KernelNames names = report ? report->names : namesShown(p, s, rank_rows, opt.top);
  progress.done();

  std::string out = headerText(p, selected->label) + totalsText(p, s) + countersText(p, analysed, report.has_value()) +
                    fusionLine(p, analysed, report, names) + warningsText(p);
  if (rank_table) out += rankTable(rank_rows, names, opt.full_names);
  if (!s.groups.empty()) out += topKernelTable(p, s, report ? &*report : nullptr, names, opt, several);
  printText(stdout, out);
  return 0;
}

}  // namespace

Command addInfoCommand(CLI::App& root) {
  auto opt = std::make_shared<InfoOptions>();
  CLI::App* app = root.add_subcommand(
      "info", "Summarize a .fprof database: program, device, kernel time, and the top kernels by GPU time; with "
              "hardware counters also their roofline placement and achieved occupancy, the counter coverage and the "
              "best fusion, as fprof report computes them.");
  app->add_option("file", opt->file, "The .fprof database")->required();
  app->add_option("--top", opt->top, "How many kernels to list (default 10)")->check(CLI::PositiveNumber);
  app->add_flag("--full-names", opt->full_names, "Full demangled kernel names instead of the short ones");
  app->add_flag("-q,--quiet", opt->quiet, "No progress line on a terminal for large databases");
  app->add_option("--rank", opt->rank,
                  "Only this global rank of a database holding several processes (fprof merge); without it, every "
                  "rank together and a line per rank")
      ->check(CLI::NonNegativeNumber);
  return {app, [opt] { return runInfo(*opt); }};
}

}  // namespace fprof::cli
