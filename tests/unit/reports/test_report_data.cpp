// ReportData from the synthetic fixtures: grouping, shares, roofline placement, ops, baseline diff.
// Expected values are worked out by hand from the specs in synthetic_profile.cpp.
#include <gtest/gtest.h>

#include <algorithm>

#include "fprof/analysis/nvtx_ops.h"
#include "fprof/core/dependency_wait.h"
#include "fprof/reports/report_data.h"
#include "test_util.h"

namespace fprof::reports {
namespace {

using testing::loadSynthetic;
using testing::SyntheticOptions;

const GroupRow* find(const ReportData& r, const std::string& prefix, const std::string& grid = "") {
  for (const GroupRow& g : r.groups) {
    if (g.name.rfind(prefix, 0) == 0 && (grid.empty() || g.grid == grid)) return &g;
  }
  return nullptr;
}

constexpr int64_t kTotalNs = 22968000;  // sum of calls x duration over the specs

TEST(ReportData, TraceRunGroupsAndShares) {
  const core::Profile p = loadSynthetic("trace.fprof", {});
  const ReportData r = buildReport(p, nullptr);
  EXPECT_FALSE(r.header.has_counters);
  EXPECT_EQ(r.header.mode, "trace");
  EXPECT_EQ(r.header.program, "./model --ops all --variant unfused");
  EXPECT_EQ(r.header.date_utc, "2026-11-21 00:00:00 UTC");
  ASSERT_EQ(r.header.devices.size(), 1u);
  EXPECT_EQ(r.header.kernel_count, 10 + 10 + 10 + 4 + 20 + 20 + 50 + 50 + 5 + 4);
  EXPECT_EQ(r.header.total_kernel_ns, kTotalNs);
  EXPECT_EQ(r.group_count, testing::kSyntheticGroups);
  ASSERT_EQ(r.groups.size(), static_cast<size_t>(testing::kSyntheticGroups));
  // By time, descending; equal times keep first-launch order.
  EXPECT_EQ(r.groups[0].name.rfind("void attention_pv_kernel", 0), 0u);
  EXPECT_EQ(r.groups[1].name.rfind("void gemm_bias_relu_fused", 0), 0u);
  EXPECT_EQ(r.groups[2].name.rfind("void gemm_kernel", 0), 0u);
  EXPECT_EQ(r.groups[2].grid, "64x8x1");
  EXPECT_EQ(r.groups[3].name.rfind("void softmax_kernel", 0), 0u);
  EXPECT_EQ(r.groups[4].grid, "32x8x1");
  EXPECT_EQ(r.groups[5].name.rfind("bias_relu_kernel", 0), 0u);
  EXPECT_EQ(r.groups[6].name.rfind("void layernorm_kernel", 0), 0u);
  EXPECT_DOUBLE_EQ(r.groups[0].share, 10000000.0 / kTotalNs);
  EXPECT_EQ(r.groups[0].calls, 50);
  EXPECT_DOUBLE_EQ(r.groups[0].mean_ns, 200000.0);
  EXPECT_EQ(r.groups[0].op, "attention (unfused)");
  EXPECT_EQ(r.groups[0].registers_per_thread, 255);
  EXPECT_EQ(r.groups[0].local_bytes_per_thread, 96);
  EXPECT_EQ(r.groups[0].origin, "user");
  EXPECT_EQ(r.groups[9].origin, "ATen");  // at::native::vectorized_elementwise_kernel
  // Trace mode: nothing counter-derived, no invented zeros; only trace-decidable bounds.
  for (const GroupRow& g : r.groups) {
    EXPECT_FALSE(g.intensity_dram) << g.name;
    EXPECT_FALSE(g.flops_per_s) << g.name;
    EXPECT_FALSE(g.roof_fraction) << g.name;
    EXPECT_TRUE(g.bound.empty() || g.bound == "latency" || g.bound == "launch") << g.name << ": " << g.bound;
  }
  // Ops: the NVTX op convention's op ranges (a stage's kernels count for its op).
  ASSERT_EQ(r.ops.size(), 6u);
  EXPECT_EQ(r.ops[0].op, "attention (unfused)");
  EXPECT_EQ(r.ops[0].total_ns, 12000000);
  EXPECT_EQ(r.ops[0].launches, 100);
  EXPECT_EQ(r.ops[1].op, "matmul_bias_relu (unfused)");
  EXPECT_EQ(r.ops[1].total_ns, 4600000);
  EXPECT_EQ(r.ops[2].op, "matmul_bias_relu (fused)");
  EXPECT_EQ(r.ops[3].op, "residual_layernorm (unfused)");
  EXPECT_EQ(r.ops[4].op, "matmul (vendor)");
  EXPECT_EQ(r.ops[5].op, "(no NVTX range)");
  EXPECT_EQ(r.ops[5].total_ns, 88000);
  for (const Roof& roof : r.roofs) EXPECT_EQ(roof.source, "datasheet") << roof.name;
  ASSERT_GE(r.findings.size(), 3u);
  EXPECT_NE(r.findings[2].find("Trace-mode run"), std::string::npos) << r.findings[2];
}

TEST(ReportData, ProgrammaticLaunchesCountFromTheirPredecessorsEnd) {
  core::Profile p = loadSynthetic("trace_programmatic.fprof", {});
  // The second kernel, launched with programmatic stream serialization, starts 1 us before the
  // first one ends and keeps its duration after that.
  ASSERT_GE(p.kernels.size(), 2u);
  core::KernelRow &a = p.kernels[0], &b = p.kernels[1];
  ASSERT_EQ(a.stream_id, b.stream_id);
  ASSERT_EQ(b.graph_id, 0u);
  const int64_t b_ns = b.durationNs();
  b.programmatic_launch = true;
  b.start_ns = a.end_ns - 1000;
  b.end_ns = a.end_ns + b_ns;
  core::settleDependencyWaits(p.kernels);
  const ReportData r = buildReport(p, nullptr);
  EXPECT_EQ(r.header.total_kernel_ns, kTotalNs) << "the wait is not kernel time";
  EXPECT_EQ(r.header.programmatic_launches, 1);
  EXPECT_EQ(r.header.dependency_wait_ns, 1000);
  const bool said = std::any_of(r.findings.begin(), r.findings.end(), [](const std::string& f) {
    return f.find("1 launches used programmatic dependent launch") != std::string::npos &&
           f.find("1.00 us of such waiting") != std::string::npos;
  });
  EXPECT_TRUE(said);
}

TEST(ReportData, CountersPlaceGroupsOnTheRoofline) {
  const core::Profile p = loadSynthetic("counters.fprof", {.counters = true});
  const ReportData r = buildReport(p, nullptr);
  EXPECT_TRUE(r.header.has_counters);
  // Measured ceilings win over datasheet ones; memory levels first.
  ASSERT_GE(r.roofs.size(), 3u);
  EXPECT_EQ(r.roofs[0].name, "dram");
  EXPECT_EQ(r.roofs[0].value, 3.0e12);
  EXPECT_EQ(r.roofs[0].source, "measured");
  EXPECT_EQ(r.roofs[1].name, "l2");
  EXPECT_EQ(r.roofs[2].name, "l1");
  for (const Roof& roof : r.roofs) {
    if (roof.name == "tensor_fp16") {
      EXPECT_EQ(roof.source, "measured");
    } else if (roof.name == "fp64") {
      EXPECT_EQ(roof.source, "datasheet");
    }
  }

  const GroupRow* bias = find(r, "bias_relu_kernel");
  ASSERT_NE(bias, nullptr);
  EXPECT_DOUBLE_EQ(*bias->flops, 1.6e8);
  EXPECT_NEAR(*bias->dram_bytes, 6.7e8, 1e-3);
  EXPECT_NEAR(*bias->intensity_dram, 1.6e8 / 6.7e8, 1e-12);
  EXPECT_NEAR(*bias->flops_per_s, 1.6e8 / 600e-6, 1e-3);
  EXPECT_NEAR(*bias->dram_bytes_per_s, 6.7e8 / 600e-6, 1e-3);
  EXPECT_EQ(bias->binding_roof, "dram");
  EXPECT_EQ(bias->bound, "memory");
  // Attainable time: the DRAM time, 6.7e8 B / 3 TB/s = 223.3 us, of 600 us measured.
  EXPECT_NEAR(*bias->roof_fraction, (6.7e8 / 3.0e12) / 600e-6, 1e-9);
  EXPECT_EQ(bias->precision, "fp32");
  EXPECT_NEAR(*bias->achieved_occupancy, 0.9, 1e-12);

  const GroupRow* pv = find(r, "void attention_pv_kernel");
  ASSERT_NE(pv, nullptr);
  EXPECT_EQ(pv->precision, "tensor_fp16");
  EXPECT_DOUBLE_EQ(*pv->flops, 50 * 6.02e10);
  // Memory times per call: DRAM 100 us, L2 120 us, L1 133.3 us; compute 3.3 + 85.7 us: L1 binds.
  EXPECT_EQ(pv->binding_roof, "l1");
  EXPECT_NEAR(*pv->roof_fraction, (4.0e9 / 30.0e12) / 200e-6, 1e-9);
  EXPECT_DOUBLE_EQ(*pv->spill_bytes, 50 * 4.0e6);

  const GroupRow* gemm = find(r, "void gemm_kernel", "64x8x1");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->bound, "compute");
  EXPECT_EQ(gemm->binding_roof, "fp32");
  EXPECT_NEAR(*gemm->roof_fraction, (8.0e9 / 60.0e12) / 400e-6, 1e-9);

  // A pure copy has DRAM bytes and zero FLOPs: it cannot sit on a log-log chart.
  const GroupRow* copy = find(r, "void copy_kernel");
  ASSERT_NE(copy, nullptr);
  EXPECT_TRUE(copy->dram_bytes_per_s.has_value());
  EXPECT_FALSE(copy->onRoofline());

  int on = 0;
  for (const GroupRow& g : r.groups) on += g.onRoofline() ? 1 : 0;
  EXPECT_EQ(on, testing::kSyntheticRooflineGroups);
}

// What each group could gain at its roof, time x (1 - fraction of roof), ranks the findings; the
// groups far below their roof are named.
TEST(ReportData, HeadroomRanksWhatTheKernelsCouldGain) {
  const core::Profile p = loadSynthetic("headroom.fprof", {.counters = true});
  const ReportData r = buildReport(p, nullptr);
  const GroupRow* pv = find(r, "void attention_pv_kernel");
  ASSERT_NE(pv, nullptr);
  // 10 ms at (4e9 B / 30 TB/s) / 200 us = 66.7% of its L1 roof: 3.33 ms to gain.
  EXPECT_NEAR(*pv->headroom_ns, 10e6 * (1 - *pv->roof_fraction), 1e-6);
  EXPECT_NEAR(*pv->headroom_ns, 10e6 / 3, 1.0);
  ASSERT_FALSE(r.top_headroom.empty());
  EXPECT_LE(r.top_headroom.size(), 5u);
  EXPECT_EQ(&r.groups[r.top_headroom.front()], pv);
  for (size_t i = 1; i < r.top_headroom.size(); ++i) {
    EXPECT_GE(*r.groups[r.top_headroom[i - 1]].headroom_ns, *r.groups[r.top_headroom[i]].headroom_ns);
  }
  const GroupRow* copy = find(r, "void copy_kernel");
  ASSERT_NE(copy, nullptr);
  EXPECT_NEAR(*copy->headroom_ns, static_cast<double>(copy->total_ns) * (1 - *copy->roof_fraction), 1e-6);
  // The findings say it, and name the groups below half their roof (two gemm_kernel shapes: by grid).
  auto finding = [&](const std::string& start) -> std::string {
    for (const std::string& f : r.findings) {
      if (f.rfind(start, 0) == 0) return f;
    }
    return "";
  };
  EXPECT_EQ(finding("Most to gain").rfind("Most to gain (time x (1 - fraction of roof)): `attention_pv_kernel<64, true>` "
                                          "3.33 ms (66.7% of roof, l1); ", 0),
            0u)
      << finding("Most to gain");
  EXPECT_EQ(r.below_half_roof.size(), 6u);
  EXPECT_EQ(finding("6 kernel groups"),
            "6 kernel groups run below 50% of their roof, 45.4% of kernel time: `gemm_bias_relu_fused<float, 128, 128>` "
            "(31.1%), `gemm_kernel<float, 128, 128>` (grid 64x8x1) (33.3%), `gemm_kernel<float, 128, 128>` (grid "
            "32x8x1) (30.3%) and 3 more.");
  EXPECT_EQ(r.findings.front().rfind("Most to gain", 0), 0u);  // no baseline: the answer comes first
}

TEST(ReportData, FusionPairsFromTheNvtxConvention) {
  const core::Profile p = loadSynthetic("fusion.fprof", {.counters = true});
  const ReportData r = buildReport(p, nullptr);
  ASSERT_EQ(r.fusion.size(), 3u);
  std::vector<std::string> ids;
  for (const FusionRow& f : r.fusion) ids.push_back(f.id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::string>{"attention", "matmul_bias_relu", "residual_layernorm"}));
  // Fusable pairs first, by payoff; then the ones not to fuse.
  bool seen_nofuse = false;
  for (size_t i = 0; i < r.fusion.size(); ++i) {
    if (!r.fusion[i].fuse) seen_nofuse = true;
    EXPECT_FALSE(seen_nofuse && r.fusion[i].fuse) << "a fusable pair after one not to fuse";
    if (i > 0 && r.fusion[i].fuse && r.fusion[i - 1].fuse) {
      EXPECT_GE(*r.fusion[i - 1].payoff_ns, *r.fusion[i].payoff_ns);
    }
  }
  for (const FusionRow& f : r.fusion) {
    EXPECT_EQ(f.evidence, "NVTX op metadata (declared pair)");
    EXPECT_EQ(f.launches_removed, 1);
    if (f.id == "matmul_bias_relu") {
      EXPECT_EQ(f.instances, 10);
      EXPECT_DOUBLE_EQ(f.unfused_ns, 460000.0);
      ASSERT_TRUE(f.measured_fused_ns.has_value());  // the run holds the fused variant
      EXPECT_DOUBLE_EQ(*f.measured_fused_ns, 430000.0);
      EXPECT_TRUE(f.model_error.has_value());
      EXPECT_EQ(f.stages, (std::vector<std::string>{"matmul", "bias_relu"}));
    }
    if (f.id == "residual_layernorm") {
      EXPECT_EQ(f.instances, 20);
    }
  }
  EXPECT_EQ(r.fusion_measured_pairs, 1);
}

// Under torch.autograd.profiler.emit_nvtx() every call is its own range ("aten::mm, seq = 3,
// op_id = 724, ..."): time by op groups them by op name, the outermost op (aten::linear, not the
// aten::addmm inside it) owning its kernels; a kernel in a plain range is under that range's name.
TEST(ReportData, TimeByOpGroupsEmitNvtxCallsByOpName) {
  const std::string path = testing::tempPath("emit_nvtx.fprof");
  {
    auto w = core::Writer::create(path, true);
    ASSERT_TRUE(w.ok());
    core::ProcessInfo pi;
    pi.pid = 7;
    pi.command_line = "python3 train.py";
    const uint32_t pid = *(*w)->addProcess(pi);
    core::DeviceInfo d;
    d.process_id = pid;
    d.name = "TestGPU";
    ASSERT_TRUE((*w)->addDevice(d).ok());
    auto range = [&](uint64_t key, std::optional<uint64_t> parent, const std::string& message, int64_t start) {
      core::NvtxRangeRecord r;
      r.key = key;
      r.process_id = pid;
      r.parent_key = parent;
      r.message = message;
      r.start_ns = start;
      r.end_ns = start + 900;
      (*w)->add(r);
    };
    auto kernel = [&](uint32_t corr, uint64_t range_key, int64_t start) {
      core::KernelRecord k;
      k.process_id = pid;
      k.correlation_id = corr;
      k.start_ns = start;
      k.end_ns = start + 100;
      k.grid_x = k.grid_y = k.grid_z = k.block_x = k.block_y = k.block_z = 1;
      k.name = k.demangled_name = "gemm_kernel";
      k.nvtx_range_key = range_key;
      (*w)->add(k);
    };
    for (uint32_t call = 0; call < 3; ++call) {
      const uint64_t key = 10 * (call + 1);
      const int64_t t = 1000 * call;
      range(key, std::nullopt, "aten::linear, seq = " + std::to_string(call) + ", op_id = " + std::to_string(key), t);
      range(key + 1, key, "aten::addmm, seq = " + std::to_string(call) + ", op_id = " + std::to_string(key + 1), t);
      kernel(call + 1, key + 1, t + 10);
    }
    range(100, std::nullopt, "model.head", 5000);
    kernel(9, 100, 5010);
    ASSERT_TRUE((*w)->close().ok());
  }
  auto p = core::loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  const ReportData r = buildReport(*p, nullptr);
  ASSERT_EQ(r.ops.size(), 2u);
  EXPECT_EQ(r.ops[0].op, "aten::linear");
  EXPECT_EQ(r.ops[0].launches, 3);
  EXPECT_EQ(r.ops[1].op, "model.head");
}

TEST(ReportData, BaselineDiffAndGate) {
  const core::Profile cur = loadSynthetic("cur.fprof", {.counters = true});
  const core::Profile base = loadSynthetic("base.fprof", {.counters = true, .slowdown = 0.8});
  const ReportData r = buildReport(cur, &base);
  ASSERT_TRUE(r.baseline.has_value());
  const BaselineSection& b = *r.baseline;
  ASSERT_EQ(b.diff.size(), static_cast<size_t>(testing::kSyntheticGroups));
  // Only the epilogue changed: 480 us -> 600 us, +25%, the largest change, listed first.
  EXPECT_EQ(b.diff[0].name, "bias_relu_kernel(float*, float const*, int)");
  EXPECT_DOUBLE_EQ(*b.diff[0].base_ns, 480000.0);
  EXPECT_DOUBLE_EQ(*b.diff[0].cur_ns, 600000.0);
  EXPECT_NEAR(*b.diff[0].change, 0.25, 1e-12);
  EXPECT_TRUE(b.diff[0].regression);
  for (size_t i = 1; i < b.diff.size(); ++i) {
    EXPECT_DOUBLE_EQ(*b.diff[i].change, 0.0) << b.diff[i].name;
    EXPECT_FALSE(b.diff[i].regression) << b.diff[i].name;
  }
  EXPECT_FALSE(b.gate.pass);
  EXPECT_EQ(b.gate.reasons.size(), 1u);
  EXPECT_EQ(r.findings.front(), "Gate: FAIL (1 regression against the baseline).");
  const GroupRow* bias = find(r, "bias_relu_kernel");
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(*bias->base_total_ns, 480000);
  // Same FLOPs in less time: the baseline point sat higher, at the same intensity.
  EXPECT_NEAR(*bias->base_flops_per_s, 1.6e8 / 480e-6, 1e-3);
  EXPECT_NEAR(*bias->base_intensity_dram, *bias->intensity_dram, 1e-12);

  const ReportData same = buildReport(cur, &cur);
  EXPECT_TRUE(same.baseline->gate.pass);
}

TEST(ReportData, NewAndVanishedKernels) {
  const core::Profile cur = loadSynthetic("cur2.fprof", {.counters = true, .hostile_names = true});
  const core::Profile base = loadSynthetic("base2.fprof", {.counters = true});
  ReportData r = buildReport(cur, &base);
  int added = 0;
  for (const DiffRow& d : r.baseline->diff) added += d.kind == "new" ? 1 : 0;
  EXPECT_EQ(added, testing::kHostileGroups);
  r = buildReport(base, &cur);
  int vanished = 0;
  for (const DiffRow& d : r.baseline->diff) {
    if (d.kind == "vanished") {
      ++vanished;
      EXPECT_FALSE(d.cur_ns);
      EXPECT_FALSE(d.change);
    }
  }
  EXPECT_EQ(vanished, testing::kHostileGroups);
}

TEST(ReportData, CapKeepsTheLargestGroupsAndCountsTheRest) {
  const core::Profile p = loadSynthetic("cap.fprof", {});
  const ReportData r = buildReport(p, nullptr, BuildOptions{.max_groups = 3});
  ASSERT_EQ(r.groups.size(), 3u);
  EXPECT_EQ(r.group_count, testing::kSyntheticGroups);
  EXPECT_EQ(r.omitted_groups, testing::kSyntheticGroups - 3);
  EXPECT_EQ(r.omitted_ns, kTotalNs - 10000000 - 4300000 - 4000000);
}

// Two overloads of one template look the same once shortened: the report tells them apart, and
// every section names a kernel the same way.
TEST(ReportData, ShortNamesTellKernelsApart) {
  const std::string path = testing::tempPath("r_overloads.fprof");
  {
    auto w = core::Writer::create(path, true);
    ASSERT_TRUE(w) << w.error();
    core::ProcessInfo proc;
    proc.pid = 1;
    proc.command_line = "./overloads";
    auto pid = (*w)->addProcess(proc);
    ASSERT_TRUE(pid);
    const char* names[] = {"void ns::scale<float>(float*, int)", "void ns::scale<float>(double*, int)",
                           "void ns::(anonymous namespace)::relu_kernel<c10::Half>(c10::Half*, int)"};
    uint32_t correlation = 1;
    for (int rep = 0; rep < 3; ++rep) {
      for (int n = 0; n < 3; ++n) {
        core::KernelRecord k;
        k.process_id = *pid;
        k.name = k.demangled_name = names[n];
        k.correlation_id = correlation++;
        k.start_ns = 1000 * correlation;
        k.end_ns = k.start_ns + 100 * (n + 1);
        k.grid_x = k.grid_y = k.grid_z = k.block_x = k.block_y = k.block_z = 1;
        (*w)->add(k);
      }
    }
    ASSERT_TRUE((*w)->close());
  }
  auto p = core::loadProfile(path);
  ASSERT_TRUE(p) << p.error();
  const ReportData r = buildReport(*p, nullptr);
  ASSERT_EQ(r.groups.size(), 3u);
  std::vector<std::string> shown;
  for (const GroupRow& g : r.groups) shown.push_back(g.short_name);
  EXPECT_EQ(shown, (std::vector<std::string>{"relu_kernel<Half>", "scale<float>(double*, int)",
                                             "scale<float>(float*, int)"}));
  EXPECT_EQ(r.findings.front().rfind("Top kernel: `relu_kernel<Half>` (1 / 1)", 0), 0u) << r.findings.front();
  EXPECT_EQ(r.names.shortName(r.groups[1].name), r.groups[1].short_name);
}

}  // namespace
}  // namespace fprof::reports

namespace fprof::reports {
namespace {

// A profile built by hand (no reader to cut circles): op ranges that are each other's parents, a
// range its own parent, and a range of a second process whose key the old (process << 40) ^ key
// packing confused with the first process's. The op index and the report must end, and every op
// must have a finite way up.
TEST(ReportData, OpParentCyclesInAHandBuiltProfileEnd) {
  core::Profile p;
  p.strings = {"", "kernel_a", "fprof::op=a"};
  auto range = [&](uint32_t process, uint64_t key, std::optional<uint64_t> parent, const std::string& message) {
    core::NvtxRangeRecord r;
    r.process_id = process;
    r.key = key;
    r.parent_key = parent;
    r.domain = "fprof";
    r.message = message;
    r.end_ns = 100;
    p.nvtx_ranges.push_back(r);
  };
  range(0, 1, 2, "op=a variant=unfused pair=p");
  range(0, 2, 1, "op=b variant=unfused pair=p");
  range(0, 3, 3, "op=c variant=fused pair=p");
  // Process 1 names a parent key 1 it does not have; the old key packing ((process << 40) ^ key) took
  // this range for process 0's range 1 and linked it there.
  range(1, (uint64_t{1} << 40) ^ 1, 1, "op=d");
  for (uint64_t key : {1, 2, 3}) {
    core::KernelRow k;
    k.id = static_cast<int64_t>(key);
    k.start_ns = static_cast<int64_t>(key) * 10;
    k.end_ns = k.start_ns + 5;
    k.grid_x = k.grid_y = k.grid_z = k.block_x = k.block_y = k.block_z = 1;
    k.name_id = k.demangled_id = 1;
    k.nvtx_range_key = key;
    k.nvtx_path_id = 2;
    p.kernels.push_back(k);
  }
  const analysis::OpIndex ops = analysis::indexOps(p);
  ASSERT_EQ(ops.ops.size(), 4u);
  for (size_t start = 0; start < ops.ops.size(); ++start) {
    size_t steps = 0;
    for (std::optional<size_t> at = start; at; at = ops.ops[*at].parent) ASSERT_LE(++steps, ops.ops.size());
  }
  EXPECT_FALSE(ops.ops[2].parent.has_value());  // its own parent: cut
  EXPECT_FALSE(ops.ops[3].parent.has_value());  // process 1's parent key 1 is no range of process 1
  const ReportData r = buildReport(p, nullptr);
  EXPECT_EQ(r.header.kernel_count, 3);
}

}  // namespace
}  // namespace fprof::reports
