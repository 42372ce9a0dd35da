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
#include "fprof/analysis/ranks.h"
#include "fprof/analysis/summary.h"
#include "fprof/core/merge.h"
#include "fprof/core/store.h"
#include "fprof/reports/escape.h"
#include "fprof/reports/format.h"
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
  std::optional<int> rank;
};

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
std::string rankTable(const core::Profile& p, bool full_names) {
  const std::vector<analysis::RankRow> rows = analysis::rankBreakdown(p);
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
              full_names ? r.top_kernel : truncateMiddle(r.top_kernel, 60)});
  }
  out += t.render();
  if (const auto im = analysis::rankImbalance(rows)) {
    out += fmt::format("balance : {} has the most kernel time outside NCCL, {:.2f}x {} (the least)\n",
                       rows[im->most].group.label, im->ratio, rows[im->least].group.label);
  }
  return out;
}

int runInfo(const InfoOptions& opt) {
  auto loaded = loadProfile(opt.file);
  if (!loaded) return inputError(loaded.error());
  std::string label = opt.file;
  if (opt.rank) {
    const std::string ranks = core::describeRanks(core::rankGroups(*loaded));
    auto one = core::selectRank(*loaded, *opt.rank);
    if (!one) return inputError(one.error());
    label = fmt::format("{} (rank {}; the file holds {})", opt.file, *opt.rank, ranks);
    *loaded = std::move(*one);
  }
  const core::Profile& p = *loaded;
  const analysis::RunSummary s = analysis::summarize(p);
  const bool several = p.processes.size() > 1;

  std::string out = fmt::format("{}  (schema {}, recorded by fprof {}, mode {})\n", label, p.schema_version,
                                shownText(p.meta("fprof_version", "?")), shownText(p.meta("mode", "?")));
  if (several) {
    out += processesText(p);
  } else {
    for (const core::ProcessInfo& pr : p.processes) {
      out += fmt::format("command : {}\n", pr.command_line.empty() ? "?" : shownText(pr.command_line));
      std::string where = fmt::format("host {}, pid {}", pr.host.empty() ? "?" : shownText(pr.host), pr.pid);
      if (pr.rank) where += fmt::format(", rank {}", *pr.rank);
      if (pr.local_rank) where += fmt::format(", local rank {}", *pr.local_rank);
      out += fmt::format("process : {}\n", where);
    }
    for (const core::DeviceInfo& d : p.devices) out += fmt::format("device  : [{}] {}\n", d.id, deviceText(d));
  }
  std::string timeline =
      s.timeline_known ? fmt::format("GPU busy {} of a {} span", formatDurationNs(static_cast<double>(s.gpu_busy_ns)),
                                     formatDurationNs(static_cast<double>(s.span_ns)))
                       : std::string("no timeline: every kernel was replayed for its counters");
  if (several && s.timeline_known) {
    // Busy time adds up over the job's GPUs, so it can exceed the span; say over how many.
    std::set<std::string> gpus;
    for (const core::DeviceInfo& d : p.devices) {
      gpus.insert(d.uuid.empty() ? fmt::format("{}/{}", d.process_id, d.id) : d.uuid);
    }
    timeline = fmt::format("GPU busy {} summed over {} GPU{}, first kernel to last {}",
                           formatDurationNs(static_cast<double>(s.gpu_busy_ns)), gpus.size(), gpus.size() == 1 ? "" : "s",
                           formatDurationNs(static_cast<double>(s.span_ns)));
  }
  out += fmt::format("kernels : {} launches of {} distinct kernel shapes; kernel time {} ({})\n", s.kernel_count,
                     s.groups.size(), formatDurationNs(static_cast<double>(s.total_kernel_ns)), timeline);
  out += fmt::format("copies  : {} memcpy ({}, {}), {} memset\n", s.memcpy_count,
                     formatBytes(static_cast<double>(s.memcpy_bytes)),
                     formatDurationNs(static_cast<double>(s.memcpy_ns)), s.memset_count);
  out += fmt::format("NVTX    : {} ranges\n", s.nvtx_range_count);
  if (const std::string dropped = p.meta("dropped_records", "0"); dropped != "0") {
    out += fmt::format("warning : the collector dropped {} records (buffers full); totals are lower bounds\n",
                       shownText(dropped));
  }
  std::map<uint32_t, std::string> rank_of_process;
  if (several) {
    for (const core::RankGroup& g : core::rankGroups(p)) {
      for (uint32_t id : g.process_ids) rank_of_process[id] = g.label + ": ";
    }
  }
  for (const core::CollectorEventRecord& e : p.collector_events) {
    if (e.severity != "info") {
      out += fmt::format("{:<8}: {}{}\n", shownText(e.severity), rank_of_process[e.process_id], shownText(e.message));
    }
  }
  if (several && core::rankGroups(p).size() > 1) out += rankTable(p, opt.full_names);

  if (!s.groups.empty()) {
    const int shown = std::min<int>(opt.top, static_cast<int>(s.groups.size()));
    out += fmt::format("\nTop {} kernels by GPU time (grouped by name and launch shape{}):\n", shown,
                       several ? ", all processes" : "");
    using A = TextTable::Align;
    TextTable t({"#", "time", "share", "calls", "mean", "grid", "block", "regs", "smem", "local/thr", "occupancy",
                 "kernel"},
                {A::kRight, A::kRight, A::kRight, A::kRight, A::kRight, A::kRight, A::kRight, A::kRight, A::kRight,
                 A::kRight, A::kRight, A::kLeft});
    for (int i = 0; i < shown; ++i) {
      const analysis::KernelGroup& g = s.groups[static_cast<size_t>(i)];
      const double share = s.total_kernel_ns ? static_cast<double>(g.total_ns) / static_cast<double>(s.total_kernel_ns) : 0;
      const std::string& name = p.str(g.demangled_id);
      t.addRow({std::to_string(i + 1), formatDurationNs(static_cast<double>(g.total_ns)), formatPercent(share),
                std::to_string(g.calls), formatDurationNs(g.meanNs()), reports::formatShape(g.grid_x, g.grid_y, g.grid_z),
                reports::formatShape(g.block_x, g.block_y, g.block_z), std::to_string(g.registers_per_thread),
                formatBytes(g.shared_bytes), formatBytes(static_cast<double>(g.local_bytes_per_thread)),
                formatPercent(g.theoretical_occupancy), opt.full_names ? name : truncateMiddle(name, 60)});
    }
    out += t.render();
    out += "occupancy = theoretical (launch configuration and device limits); local/thr = stack frame and spills\n";
  }
  printText(stdout, out);
  return 0;
}

}  // namespace

Command addInfoCommand(CLI::App& root) {
  auto opt = std::make_shared<InfoOptions>();
  CLI::App* app = root.add_subcommand(
      "info", "Summarize a .fprof database: program, device, kernel time, and the top kernels by GPU time.");
  app->add_option("file", opt->file, "The .fprof database")->required();
  app->add_option("--top", opt->top, "How many kernels to list (default 10)")->check(CLI::PositiveNumber);
  app->add_flag("--full-names", opt->full_names, "Do not shorten long kernel names");
  app->add_option("--rank", opt->rank,
                  "Only this global rank of a database holding several processes (fprof merge); without it, every "
                  "rank together and a line per rank")
      ->check(CLI::NonNegativeNumber);
  return {app, [opt] { return runInfo(*opt); }};
}

}  // namespace fprof::cli
