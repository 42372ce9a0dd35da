// Merge checks usable on any databases (see merge_checks.h).
#include "merge_checks.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "fprof/analysis/dataflow.h"
#include "fprof/analysis/diff.h"
#include "fprof/analysis/fusion.h"
#include "fprof/analysis/nvtx_ops.h"
#include "fprof/analysis/roofline.h"
#include "fprof/analysis/summary.h"
#include "fprof/core/merge.h"
#include "fprof/core/store.h"
#include "fprof/reports/markdown_report.h"
#include "fprof/reports/report_data.h"

namespace fprof::testing {
namespace {

using ProcessKey = std::tuple<std::string, int64_t, std::optional<int>, std::optional<int>, int64_t>;
ProcessKey keyOf(const core::ProcessInfo& p) { return {p.host, p.pid, p.rank, p.local_rank, p.start_unix_ns}; }

// The ids in `merged` of the processes of `input`, matched by what identifies a process.
std::vector<uint32_t> processesOf(const core::Profile& input, const core::Profile& merged) {
  std::vector<uint32_t> ids;
  for (const core::ProcessInfo& pi : input.processes) {
    int found = 0;
    for (const core::ProcessInfo& pm : merged.processes) {
      if (keyOf(pm) == keyOf(pi)) {
        ids.push_back(pm.id);
        ++found;
      }
    }
    EXPECT_EQ(found, 1) << input.path << ": process " << pi.pid << " on " << pi.host << " found " << found
                        << " times in " << merged.path;
  }
  return ids;
}

}  // namespace

void expectMergeKeepsEveryRow(const std::vector<std::string>& inputs, const std::string& merged_path) {
  auto merged = core::loadProfile(merged_path);
  ASSERT_TRUE(merged.ok()) << merged.error();
  const core::Profile& m = *merged;
  size_t processes = 0, devices = 0, kernels = 0, args = 0, ranges = 0, memcpys = 0, memsets = 0, memory = 0,
         events = 0, counters = 0, metrics = 0;
  std::set<std::tuple<std::string, std::string, std::string>> ceilings;
  for (const std::string& path : inputs) {
    auto in = core::loadProfile(path);
    ASSERT_TRUE(in.ok()) << in.error();
    processes += in->processes.size();
    devices += in->devices.size();
    kernels += in->kernels.size();
    args += in->kernel_args.size();
    ranges += in->nvtx_ranges.size();
    memcpys += in->memcpys.size();
    memsets += in->memsets.size();
    memory += in->memory_events.size();
    events += in->collector_events.size();
    counters += in->counters.size();
    metrics += in->metrics.size();
    for (const core::CeilingRecord& c : in->ceilings) ceilings.emplace(c.device_name, c.ceiling, c.source);
  }
  EXPECT_EQ(m.processes.size(), processes);
  EXPECT_EQ(m.devices.size(), devices);
  EXPECT_EQ(m.kernels.size(), kernels);
  EXPECT_EQ(m.kernel_args.size(), args);
  EXPECT_EQ(m.nvtx_ranges.size(), ranges);
  EXPECT_EQ(m.memcpys.size(), memcpys);
  EXPECT_EQ(m.memsets.size(), memsets);
  EXPECT_EQ(m.memory_events.size(), memory);
  EXPECT_EQ(m.collector_events.size(), events);
  EXPECT_EQ(m.counters.size(), counters);
  EXPECT_EQ(m.metrics.size(), metrics);
  EXPECT_EQ(m.ceilings.size(), ceilings.size()) << "one ceiling row per (device model, ceiling, source)";

  // Keys the reader and the analysis join on are unique, and references stay within a process.
  std::set<uint32_t> process_ids;
  for (const core::ProcessInfo& p : m.processes) EXPECT_TRUE(process_ids.insert(p.id).second) << "process " << p.id;
  std::set<int64_t> kernel_ids;
  std::set<std::pair<uint32_t, uint32_t>> launches;
  std::map<uint64_t, uint32_t> range_process;
  for (const core::NvtxRangeRow& r : m.nvtx_ranges) {
    EXPECT_TRUE(range_process.emplace(r.key, r.process_id).second) << "NVTX range id " << r.key << " twice";
    EXPECT_TRUE(process_ids.count(r.process_id)) << "range of unknown process " << r.process_id;
  }
  for (const core::NvtxRangeRow& r : m.nvtx_ranges) {
    if (!r.parent_key) continue;
    auto parent = range_process.find(*r.parent_key);
    ASSERT_NE(parent, range_process.end()) << "range " << r.key << " names a missing parent";
    EXPECT_EQ(parent->second, r.process_id) << "range " << r.key << " has a parent in another process";
  }
  for (const core::KernelRow& k : m.kernels) {
    EXPECT_TRUE(kernel_ids.insert(k.id).second) << "kernel id " << k.id << " twice";
    EXPECT_TRUE(process_ids.count(k.process_id)) << "kernel of unknown process " << k.process_id;
    // Graph launches share a correlation id within a process; elsewhere (process, correlation) is one launch.
    if (k.graph_id == 0) {
      EXPECT_TRUE(launches.emplace(k.process_id, k.correlation_id).second)
          << "(process " << k.process_id << ", correlation " << k.correlation_id << ") twice";
    }
    if (k.nvtx_range_key) {
      auto r = range_process.find(*k.nvtx_range_key);
      ASSERT_NE(r, range_process.end()) << "kernel " << k.id << " names a missing NVTX range";
      EXPECT_EQ(r->second, k.process_id) << "kernel " << k.id << " in another process's NVTX range";
    }
    EXPECT_NE(m.device(k.process_id, k.device_id), nullptr) << "kernel " << k.id << " on an unknown device";
  }
  std::map<int64_t, uint32_t> kernel_process;
  for (const core::KernelRow& k : m.kernels) kernel_process[k.id] = k.process_id;
  for (const core::KernelCounters& c : m.counters) EXPECT_TRUE(kernel_ids.count(c.kernel_id)) << "counters of kernel " << c.kernel_id;
  for (const core::KernelMetricRecord& x : m.metrics) EXPECT_TRUE(kernel_ids.count(x.kernel_id)) << x.metric;
  for (const core::KernelArgRecord& a : m.kernel_args) {
    EXPECT_TRUE(process_ids.count(a.process_id)) << "argument of unknown process " << a.process_id;
  }
  for (const core::ProcessInfo& p : m.processes) {
    EXPECT_NE(core::processMeta(m, p.id, "mode", ""), "") << "process " << p.id << " has no mode";
  }
}

void expectRanksMatchInputs(const std::vector<std::string>& inputs, const std::string& merged_path) {
  auto merged = core::loadProfile(merged_path);
  ASSERT_TRUE(merged.ok()) << merged.error();
  for (const std::string& path : inputs) {
    SCOPED_TRACE(path);
    auto in = core::loadProfile(path);
    ASSERT_TRUE(in.ok()) << in.error();
    const core::Profile& a = *in;
    core::Profile b = core::selectProcesses(*merged, processesOf(a, *merged));
    b.path = a.path;  // the reports print the file name

    ASSERT_EQ(a.processes.size(), b.processes.size());
    for (size_t i = 0; i < a.processes.size(); ++i) {
      EXPECT_EQ(core::processMeta(b, b.processes[i].id, "mode"), core::processMeta(a, a.processes[i].id, "mode"));
      EXPECT_EQ(core::processMeta(b, b.processes[i].id, "fprof_version"),
                core::processMeta(a, a.processes[i].id, "fprof_version"));
    }
    EXPECT_EQ(b.meta("mode"), a.meta("mode"));
    EXPECT_EQ(b.meta("dropped_records", "0"), a.meta("dropped_records", "0"));
    ASSERT_EQ(a.kernels.size(), b.kernels.size());
    for (size_t i = 0; i < a.kernels.size(); ++i) {
      EXPECT_EQ(a.str(a.kernels[i].demangled_id), b.str(b.kernels[i].demangled_id)) << i;
      EXPECT_EQ(a.kernels[i].start_ns, b.kernels[i].start_ns) << i;
      EXPECT_EQ(a.kernels[i].durationNs(), b.kernels[i].durationNs()) << i;
      EXPECT_EQ(a.kernels[i].correlation_id, b.kernels[i].correlation_id) << i;
      EXPECT_EQ(analysis::countersFor(a, a.kernels[i].id) != nullptr, analysis::countersFor(b, b.kernels[i].id) != nullptr);
    }

    const analysis::RunSummary sa = analysis::summarize(a), sb = analysis::summarize(b);
    EXPECT_EQ(sa.kernel_count, sb.kernel_count);
    EXPECT_EQ(sa.total_kernel_ns, sb.total_kernel_ns);
    EXPECT_EQ(sa.gpu_busy_ns, sb.gpu_busy_ns);
    EXPECT_EQ(sa.span_ns, sb.span_ns);
    EXPECT_EQ(sa.memcpy_bytes, sb.memcpy_bytes);
    EXPECT_EQ(sa.memset_count, sb.memset_count);
    EXPECT_EQ(sa.nvtx_range_count, sb.nvtx_range_count);
    ASSERT_EQ(sa.groups.size(), sb.groups.size());
    for (size_t g = 0; g < sa.groups.size(); ++g) {
      EXPECT_EQ(a.str(sa.groups[g].demangled_id), b.str(sb.groups[g].demangled_id));
      EXPECT_EQ(sa.groups[g].calls, sb.groups[g].calls);
      EXPECT_EQ(sa.groups[g].total_ns, sb.groups[g].total_ns);
    }

    const analysis::RooflineResult ra = analysis::analyzeRoofline(a), rb = analysis::analyzeRoofline(b);
    ASSERT_EQ(ra.kernel_groups.size(), rb.kernel_groups.size());
    for (size_t g = 0; g < ra.kernel_groups.size(); ++g) {
      const analysis::Placement& pa = ra.kernel_groups[g].placement;
      const analysis::Placement& pb = rb.kernel_groups[g].placement;
      EXPECT_EQ(pa.bound, pb.bound) << g;
      EXPECT_EQ(pa.roof_fraction, pb.roof_fraction) << g;
      EXPECT_EQ(pa.achieved_flops_per_s, pb.achieved_flops_per_s) << g;
      EXPECT_EQ(pa.binding, pb.binding) << g;
    }
    EXPECT_EQ(ra.kernels_with_counters, rb.kernels_with_counters);
    EXPECT_EQ(ra.ops.size(), rb.ops.size());

    const analysis::DataFlow da = analysis::analyzeDataFlow(a), db = analysis::analyzeDataFlow(b);
    EXPECT_EQ(da.allocations.size(), db.allocations.size());
    EXPECT_EQ(da.accesses.size(), db.accesses.size());
    const analysis::FusionResult fa = analysis::analyzeFusion(a, analysis::indexOps(a), da);
    const analysis::FusionResult fb = analysis::analyzeFusion(b, analysis::indexOps(b), db);
    ASSERT_EQ(fa.candidates.size(), fb.candidates.size());
    for (size_t c = 0; c < fa.candidates.size(); ++c) {
      EXPECT_EQ(fa.candidates[c].id, fb.candidates[c].id);
      EXPECT_EQ(fa.candidates[c].instances, fb.candidates[c].instances);
      EXPECT_EQ(fa.candidates[c].total_saving_ns, fb.candidates[c].total_saving_ns);
    }

    const analysis::RunDiff d = analysis::diffProfiles(a, b);
    for (const analysis::DiffEntry& e : d.kernels) {
      EXPECT_EQ(e.kind, analysis::MatchKind::kMatched) << e.name;
      EXPECT_EQ(e.time_change.value_or(0), 0.0) << e.name;
    }
    EXPECT_TRUE(analysis::evaluateGate(d, {}).passed());

    // Everything the report shows, as text.
    EXPECT_EQ(reports::renderMarkdown(reports::buildReport(a, nullptr)),
              reports::renderMarkdown(reports::buildReport(b, nullptr)));
  }
}

}  // namespace fprof::testing
