// fprof info: what a .fprof database holds, and its top kernels, in the terminal.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>

#include "command.h"
#include "fprof/analysis/summary.h"
#include "fprof/core/store.h"
#include "fprof/reports/format.h"
#include "text_table.h"

namespace fprof::cli {
namespace {

using reports::formatBytes;
using reports::formatDurationNs;
using reports::formatPercent;

struct InfoOptions {
  std::string file;
  int top = 10;
  bool full_names = false;
};


int runInfo(const InfoOptions& opt) {
  auto loaded = core::loadProfile(opt.file);
  if (!loaded) return inputError(loaded.error());
  const core::Profile& p = *loaded;
  const analysis::RunSummary s = analysis::summarize(p);

  std::string out = fmt::format("{}  (schema {}, recorded by fprof {}, mode {})\n", opt.file, p.schema_version,
                                p.meta("fprof_version", "?"), p.meta("mode", "?"));
  for (const core::ProcessInfo& pr : p.processes) {
    out += fmt::format("command : {}\n", pr.command_line.empty() ? "?" : pr.command_line);
    std::string where = fmt::format("host {}, pid {}", pr.host.empty() ? "?" : pr.host, pr.pid);
    if (pr.rank) where += fmt::format(", rank {}", *pr.rank);
    if (pr.local_rank) where += fmt::format(", local rank {}", *pr.local_rank);
    out += fmt::format("process : {}\n", where);
  }
  for (const core::DeviceInfo& d : p.devices) {
    out += fmt::format("device  : [{}] {}, sm_{}{}, {} SMs, {} memory, {} L2\n", d.id, d.name, d.compute_major,
                       d.compute_minor, d.sm_count, formatBytes(static_cast<double>(d.global_memory_bytes)),
                       formatBytes(static_cast<double>(d.l2_bytes)));
  }
  const std::string timeline =
      s.timeline_known ? fmt::format("GPU busy {} of a {} span", formatDurationNs(static_cast<double>(s.gpu_busy_ns)),
                                     formatDurationNs(static_cast<double>(s.span_ns)))
                       : std::string("no timeline: every kernel was replayed for its counters");
  out += fmt::format("kernels : {} launches of {} distinct kernel shapes; kernel time {} ({})\n", s.kernel_count,
                     s.groups.size(), formatDurationNs(static_cast<double>(s.total_kernel_ns)), timeline);
  out += fmt::format("copies  : {} memcpy ({}, {}), {} memset\n", s.memcpy_count,
                     formatBytes(static_cast<double>(s.memcpy_bytes)),
                     formatDurationNs(static_cast<double>(s.memcpy_ns)), s.memset_count);
  out += fmt::format("NVTX    : {} ranges\n", s.nvtx_range_count);
  if (const std::string dropped = p.meta("dropped_records", "0"); dropped != "0") {
    out += fmt::format("warning : the collector dropped {} records (buffers full); totals are lower bounds\n",
                       dropped);
  }
  for (const core::CollectorEventRecord& e : p.collector_events) {
    if (e.severity != "info") out += fmt::format("{:<8}: {}\n", e.severity, e.message);
  }

  if (!s.groups.empty()) {
    const int shown = std::min<int>(opt.top, static_cast<int>(s.groups.size()));
    out += fmt::format("\nTop {} kernels by GPU time (grouped by name and launch shape):\n", shown);
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
  std::fputs(out.c_str(), stdout);
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
  return {app, [opt] { return runInfo(*opt); }};
}

}  // namespace fprof::cli
