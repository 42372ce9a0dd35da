// The gate matrix: identical noisy runs raise no alarm; a 10% slower kernel is caught; 20% more
// DRAM bytes at equal time is a counter regression; a renamed kernel is reported, not a crash;
// launch groups too rare to test alone are pooled, never passed unseen; the whole-run checks catch
// time moved into new kernels, lost overlap and more launches; two recorded emit_nvtx runs match
// their ops whatever the op ids each call was given.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "fixture.h"
#include "fprof/analysis/diff.h"
#include "fprof/analysis/framework_ops.h"
#include "fprof/analysis/nvtx_ops.h"
#include "fprof/analysis/run_analysis.h"

namespace fprof::analysis {
namespace {

using testing::DbBuilder;

struct RunSpec {
  std::string name = "run";
  uint32_t seed = 1;
  double gemm_scale = 1.0;
  double gemm_dram_bytes = 1e8;
  std::string gemm_name = "gemm_kernel";
  bool extra_kernel = false;
  int launches = 30;
  double noise = 0.03;  // +-3% uniform launch-to-launch noise
};

core::Profile makeRun(const RunSpec& s) {
  DbBuilder db(s.name);
  std::mt19937 rng(s.seed);
  std::uniform_real_distribution<double> u(-s.noise, s.noise);
  int64_t t = 1000;
  for (int i = 0; i < s.launches; ++i) {
    auto g = db.kernel(s.gemm_name, t, static_cast<int64_t>(std::llround(100000 * s.gemm_scale * (1 + u(rng)))));
    t = g.end_ns + 1000;
    const int64_t id = db.add(g);
    core::KernelCounters c;
    c.kernel_id = id;
    c.dram_read_bytes = s.gemm_dram_bytes * 0.75;
    c.dram_write_bytes = s.gemm_dram_bytes * 0.25;
    c.flops_fp32 = 1e9;
    db.writer().add(c);
    auto r = db.kernel("relu_kernel", t, static_cast<int64_t>(std::llround(20000 * (1 + u(rng)))));
    r.grid_x = 400;
    t = r.end_ns + 1000;
    const int64_t rid = db.add(r);
    core::KernelCounters rc;
    rc.kernel_id = rid;
    rc.dram_read_bytes = 1e7;
    rc.dram_write_bytes = 1e7;
    db.writer().add(rc);
  }
  if (s.extra_kernel) db.add(db.kernel("new_kernel", t, 5000));
  return db.load();
}

TEST(Gate, IdenticalNoisyRunsRaiseNoAlarm) {
  // Twenty pairs of runs drawn from the same distribution: none may fail.
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const core::Profile base = makeRun({.name = "same_base", .seed = seed});
    const core::Profile cur = makeRun({.name = "same_cur", .seed = seed + 1000});
    const GateResult g = evaluateGate(diffProfiles(base, cur), GateOptions{});
    EXPECT_TRUE(g.passed()) << "seed " << seed << ": " << (g.findings.empty() ? "" : g.findings[0].message);
    EXPECT_EQ(g.kernels_checked, 2);
  }
}

TEST(Gate, TenPercentSlowerKernelIsCaught) {
  const core::Profile base = makeRun({.name = "slow_base", .seed = 7});
  const core::Profile cur = makeRun({.name = "slow_cur", .seed = 8, .gemm_scale = 1.10});
  const RunDiff d = diffProfiles(base, cur);
  const GateResult g = evaluateGate(d, GateOptions{});
  EXPECT_FALSE(g.passed());
  // The kernel, and the whole run it makes 8% slower (kernel time and busy time).
  ASSERT_EQ(g.regressions, 3);
  const GateFinding& f = g.findings[0];
  EXPECT_EQ(f.kind, GateFinding::Kind::kTime);
  EXPECT_EQ(f.kernel, "gemm_kernel");
  EXPECT_NEAR(*f.change, 0.10, 0.03);
  EXPECT_LT(*f.p_value, 1e-6);
  EXPECT_EQ(g.findings[1].kind, GateFinding::Kind::kRun);
  EXPECT_EQ(g.findings[1].metric, "kernel_time_ns");
  EXPECT_NEAR(*g.findings[1].change, 30 * 10000.0 / (30 * 120000.0), 0.01);
  EXPECT_EQ(g.findings[2].metric, "busy_time_ns");
}

TEST(Gate, SlowdownUnderTheThresholdPasses) {
  const core::Profile base = makeRun({.name = "thr_base", .seed = 7, .noise = 0.001});
  const core::Profile cur = makeRun({.name = "thr_cur", .seed = 8, .gemm_scale = 1.03, .noise = 0.001});
  const GateResult g = evaluateGate(diffProfiles(base, cur), GateOptions{});
  EXPECT_TRUE(g.passed());  // significant, but 3% < 5%
  GateOptions strict;
  strict.time_threshold = 0.02;
  EXPECT_FALSE(evaluateGate(diffProfiles(base, cur), strict).passed());
}

TEST(Gate, TooFewRepeatsAreFoldedNotPassed) {
  const core::Profile base = makeRun({.name = "few_base", .seed = 7, .launches = 3});
  const core::Profile cur = makeRun({.name = "few_cur", .seed = 8, .gemm_scale = 1.5, .launches = 3});
  const RunDiff d = diffProfiles(base, cur);
  const GateResult g = evaluateGate(d, GateOptions{});
  // 3 vs 3 launches cannot reach p < 0.01 alone (the smallest one-sided p is 0.05), nor by kernel:
  // both keys go to the pool, and the whole run's kernel time (+42%) fails.
  EXPECT_FALSE(g.passed());
  EXPECT_EQ(g.coverage.keys[static_cast<size_t>(TimeCheck::kAlone)], 0);
  EXPECT_EQ(g.coverage.keys[static_cast<size_t>(TimeCheck::kPool)], 2);
  const GateFinding* folded = nullptr;
  for (const GateFinding& f : g.findings) {
    if (f.kind == GateFinding::Kind::kFolded) folded = &f;
  }
  ASSERT_NE(folded, nullptr);
  EXPECT_EQ(folded->kernel, "gemm_kernel");
  EXPECT_FALSE(folded->regression);
  ASSERT_EQ(g.run_checks.size(), 4u);
  EXPECT_EQ(g.run_checks[0].metric, "kernel_time_ns");
  EXPECT_TRUE(g.run_checks[0].regression);
  EXPECT_NEAR(*g.run_checks[0].change, (3 * 150000.0 + 3 * 20000.0) / (3 * 100000.0 + 3 * 20000.0) - 1, 0.02);
}

// Launch groups of one launch each (one op apiece, as emit_nvtx's ranges make them): each is too
// rare alone; pooled by kernel, a uniform 1.5x slowdown is caught, noise is not.
core::Profile makeSingleLaunchRun(const std::string& name, uint32_t seed, double scale, double noise) {
  DbBuilder db(name);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-noise, noise);
  int64_t t = 1000;
  for (int i = 0; i < 24; ++i) {
    auto k = db.kernel("elementwise_kernel", t, static_cast<int64_t>(std::llround((10000 + 500 * i) * scale * (1 + u(rng)))));
    k.nvtx_path = "layer" + std::to_string(i) + "/op" + std::to_string(i);
    t = k.end_ns + 1000;
    db.add(k);
  }
  return db.load();
}

TEST(Gate, SingleLaunchGroupsArePooledByKernel) {
  const core::Profile base = makeSingleLaunchRun("single_base", 1, 1.0, 0.0);
  const core::Profile slow = makeSingleLaunchRun("single_slow", 2, 1.5, 0.0);
  const GateResult g = evaluateGate(diffProfiles(base, slow), GateOptions{});
  EXPECT_EQ(g.kernels_checked, 24);
  EXPECT_EQ(g.coverage.keys[static_cast<size_t>(TimeCheck::kKernel)], 24);
  ASSERT_EQ(g.groups.size(), 1u);
  EXPECT_EQ(g.groups[0].kernel, "elementwise_kernel");
  EXPECT_TRUE(g.groups[0].regression);
  EXPECT_NEAR(*g.groups[0].change, 0.5, 1e-3);
  EXPECT_LT(*g.groups[0].p_value, 1e-6);
  EXPECT_FALSE(g.passed());
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    const core::Profile noisy = makeSingleLaunchRun("single_noisy", seed + 100, 1.0, 0.02);
    const GateResult n = evaluateGate(diffProfiles(base, noisy), GateOptions{});
    EXPECT_TRUE(n.passed()) << "seed " << seed << ": " << (n.findings.empty() ? "" : n.findings[0].message);
  }
}

TEST(Gate, TimeMovedIntoNewKernelsFailsTheWholeRun) {
  // The current run launches what the base did plus a kernel of its own worth 25% of the base's time.
  const core::Profile base = makeRun({.name = "moved_base", .seed = 7});
  DbBuilder db("moved_cur");
  std::mt19937 rng(8);
  std::uniform_real_distribution<double> u(-0.03, 0.03);
  int64_t t = 1000;
  for (int i = 0; i < 30; ++i) {
    auto g = db.kernel("gemm_kernel", t, static_cast<int64_t>(std::llround(100000 * (1 + u(rng)))));
    t = g.end_ns + 1000;
    db.add(g);
    auto r = db.kernel("relu_kernel", t, static_cast<int64_t>(std::llround(20000 * (1 + u(rng)))));
    r.grid_x = 400;
    t = r.end_ns + 1000;
    db.add(r);
    auto m = db.kernel("masked_fill_kernel", t, 30000);
    t = m.end_ns + 1000;
    db.add(m);
  }
  const core::Profile cur = db.load();
  // Counters of the base run's keys are absent in this current run: compare time only.
  const GateResult g = evaluateGate(diffProfiles(base, cur), GateOptions{});
  EXPECT_FALSE(g.passed());
  auto check = [&](const std::string& metric) -> const RunCheck& {
    for (const RunCheck& c : g.run_checks) {
      if (c.metric == metric) return c;
    }
    ADD_FAILURE() << metric;
    return g.run_checks.front();
  };
  EXPECT_TRUE(check("new_kernel_time_ns").regression);
  EXPECT_NEAR(*check("new_kernel_time_ns").change, 0.25, 0.01);
  EXPECT_TRUE(check("kernel_time_ns").regression);
  EXPECT_FALSE(check("launches").regression);  // the launches of the kernels both runs have: 60 and 60
  for (const GateFinding& f : g.findings) {
    if (f.kind == GateFinding::Kind::kTime) ADD_FAILURE() << "no kernel of both runs got slower: " << f.message;
  }
}

// Two streams that overlapped in the base run and follow each other in the current one: the same
// kernel time, 1.8x the busy time.
core::Profile makeTwoStreamRun(const std::string& name, bool overlap) {
  DbBuilder db(name);
  int64_t t = 1000;
  for (int i = 0; i < 30; ++i) {
    auto a = db.kernel("gemm_kernel", t, 100000, 7);
    db.add(a);
    auto b = db.kernel("copy_kernel", overlap ? t + 20000 : a.end_ns, 80000, 8);
    db.add(b);
    t = std::max(a.end_ns, b.end_ns) + 1000;
  }
  return db.load();
}

TEST(Gate, LostOverlapFailsTheBusyTime) {
  const GateResult g =
      evaluateGate(diffProfiles(makeTwoStreamRun("overlap_base", true), makeTwoStreamRun("overlap_cur", false)), {});
  ASSERT_EQ(g.run_checks.size(), 4u);
  EXPECT_EQ(g.run_checks[0].metric, "kernel_time_ns");
  EXPECT_FALSE(g.run_checks[0].regression);
  EXPECT_EQ(g.run_checks[1].metric, "busy_time_ns");
  EXPECT_DOUBLE_EQ(g.run_checks[1].base, 30 * 100000.0);
  EXPECT_DOUBLE_EQ(g.run_checks[1].cur, 30 * 180000.0);
  EXPECT_TRUE(g.run_checks[1].regression);
  EXPECT_FALSE(g.passed());
}

TEST(Gate, MoreLaunchesOfTheSameKernelsFail) {
  const core::Profile base = makeRun({.name = "count_base", .seed = 7});
  const core::Profile cur = makeRun({.name = "count_cur", .seed = 8, .launches = 33});
  GateOptions loose;
  loose.time_threshold = 0.5;  // only the launch count can fail
  const GateResult g = evaluateGate(diffProfiles(base, cur), loose);
  ASSERT_EQ(g.run_checks.size(), 4u);
  EXPECT_EQ(g.run_checks[2].metric, "launches");
  EXPECT_DOUBLE_EQ(g.run_checks[2].base, 60);
  EXPECT_DOUBLE_EQ(g.run_checks[2].cur, 66);
  EXPECT_TRUE(g.run_checks[2].regression);
  EXPECT_EQ(g.regressions, 1);
}

TEST(Gate, LaunchGroupsAndOpsAreKeyedByOpWithoutEmitNvtxIds) {
  // emit_nvtx ranges carry an op_id and the sizes: the keys keep the op's name only.
  auto run = [](const std::string& name, int first_op_id) {
    DbBuilder db(name);
    int64_t t = 1000;
    for (int i = 0; i < 12; ++i) {
      const std::string range = "aten::softmax, op_id = " + std::to_string(first_op_id + 7 * i) +
                                ", sizes = [[4, 12, 512, 512], [], []], input_op_ids = [(85,0), (0,-1), (0,-1)]";
      const auto key = static_cast<uint64_t>(i + 1);
      db.range(key, std::nullopt, range, t, t + 12000, 0, "");
      auto k = db.kernel("softmax_warp_forward", t + 1000, 10000);
      k.nvtx_path = range;
      k.nvtx_range_key = key;
      t = k.end_ns + 2000;
      db.add(k);
    }
    return db.load();
  };
  const RunDiff d = diffProfiles(run("opkey_base", 97), run("opkey_cur", 4000));
  ASSERT_EQ(d.kernels.size(), 1u);
  EXPECT_EQ(d.kernels[0].kind, MatchKind::kMatched);
  EXPECT_EQ(d.kernels[0].op, "aten::softmax");
  EXPECT_EQ(d.kernels[0].base->calls, 12);
  EXPECT_EQ(d.kernels[0].nvtx_path, "");  // the launches' paths differ
  // The NVTX ops: one op of twelve range instances on each side, not twelve ops of one instance
  // that the other run, its op ids shifted, does not have.
  ASSERT_EQ(d.ops.size(), 1u);
  EXPECT_EQ(d.ops[0].kind, MatchKind::kMatched);
  EXPECT_EQ(d.ops[0].nvtx_path, "aten::softmax");
  ASSERT_TRUE(d.ops[0].base && d.ops[0].cur);
  EXPECT_EQ(d.ops[0].base->samples_ns.size(), 12u);
  EXPECT_EQ(d.ops[0].cur->samples_ns.size(), 12u);
}

TEST(Diff, AnOpsSamplesAreItsInstancesSummedInRangeOrder) {
  // Two instances of one op, their kernels interleaved and the later range (key 1) launched last:
  // one sample per instance, the sum of its kernels, the instances in range order.
  DbBuilder db("op_instances");
  db.range(2, std::nullopt, "step", 1000, 90000, 0, "");
  db.range(1, std::nullopt, "step", 1000, 90000, 0, "");
  int64_t t = 2000;
  for (const auto& [key, ns] : std::vector<std::pair<uint64_t, int64_t>>{{2, 1000}, {1, 300}, {2, 2000}, {1, 400}, {2, 4000}}) {
    auto k = db.kernel("work", t, ns);
    k.nvtx_path = "step";
    k.nvtx_range_key = key;
    t = k.end_ns + 1000;
    db.add(k);
  }
  const core::Profile p = db.load();
  const RunDiff d = diffProfiles(p, p);
  ASSERT_EQ(d.ops.size(), 1u);
  ASSERT_TRUE(d.ops[0].base);
  EXPECT_EQ(d.ops[0].base->calls, 5);
  EXPECT_EQ(d.ops[0].base->samples_ns, (std::vector<double>{700, 7000}));
}

TEST(Diff, EmitNvtxRunsMatchTheirOpsWhateverTheirOpIds) {
  // Two H200 runs of one GPT under emit_nvtx, naive attention and then SDPA (tests/data/README.md):
  // from the first attention on, the second run's op ids differ. Its attention ops vanished and
  // SDPA is new; every other op is matched, as many range instances on each side.
  const std::string data = std::string(FPROF_SOURCE_DIR) + "/tests/data/";
  auto load = [&](const std::string& name) {
    auto p = core::loadProfile(data + name);
    EXPECT_TRUE(p.ok()) << name;
    return std::move(*p);
  };
  const core::Profile base = load("torch_proof_gpt_bf16_emitnvtx_eager_h200.fprof");
  const core::Profile cur = load("torch_proof_gpt_bf16_emitnvtx_sdpa_h200.fprof");
  const RunDiff d = diffProfiles(base, cur);
  std::map<MatchKind, int> kinds;
  std::map<std::string, const DiffEntry*> by_path;
  for (const DiffEntry& e : d.ops) {
    ++kinds[e.kind];
    by_path[e.nvtx_path] = &e;
  }
  EXPECT_EQ(kinds[MatchKind::kMatched], 14);
  EXPECT_EQ(kinds[MatchKind::kVanished], 12);
  EXPECT_EQ(kinds[MatchKind::kNew], 2);
  const DiffEntry* linear = by_path["step/aten::linear/aten::addmm"];
  ASSERT_NE(linear, nullptr);
  EXPECT_EQ(linear->kind, MatchKind::kMatched);
  EXPECT_EQ(linear->base->samples_ns.size(), 60u);
  EXPECT_EQ(linear->cur->samples_ns.size(), 60u);
  const DiffEntry* softmax = by_path["step/aten::softmax/aten::_softmax"];
  ASSERT_NE(softmax, nullptr);
  EXPECT_EQ(softmax->kind, MatchKind::kVanished);
  EXPECT_EQ(softmax->base->samples_ns.size(), 20u);
  int sdpa = 0;
  for (const DiffEntry& e : d.ops) {
    if (e.nvtx_path.rfind("step/aten::scaled_dot_product_attention/", 0) != 0) continue;
    ++sdpa;
    EXPECT_EQ(e.kind, MatchKind::kNew);
    EXPECT_EQ(e.cur->samples_ns.size(), 20u);
  }
  EXPECT_EQ(sdpa, 1);
}

TEST(Gate, DifferentDevicesAndModesAreSaid) {
  DbBuilder a("setup_base");
  a.add(a.kernel("k", 1000, 100));
  core::Profile base = a.load();
  core::Profile cur = base;
  cur.devices[0].name = "OtherGPU";
  cur.metadata["mode"] = "metrics";
  const std::vector<SetupDifference> diffs = setupDifferences(base, cur);
  ASSERT_EQ(diffs.size(), 2u);
  EXPECT_EQ(diffs[0].what, "devices");
  EXPECT_NE(diffs[0].base.find("TestGPU"), std::string::npos);
  EXPECT_NE(diffs[0].cur.find("OtherGPU"), std::string::npos);
  EXPECT_EQ(diffs[1].what, "mode");
  const GateResult g = evaluateGate(diffProfiles(base, cur), {});
  EXPECT_EQ(g.setup_differences.size(), 2u);
  EXPECT_TRUE(g.passed());  // said, not failed
  EXPECT_TRUE(setupDifferences(base, base).empty());
}

TEST(Gate, SignificanceNeedsEnoughLaunches) {
  EXPECT_FALSE(canReachSignificance(3, 3, 0.01));  // 1 / C(6, 3) = 0.05
  EXPECT_TRUE(canReachSignificance(3, 3, 0.1));
  EXPECT_TRUE(canReachSignificance(5, 5, 0.01));  // 1 / C(10, 5) = 0.004
  EXPECT_FALSE(canReachSignificance(1, 50, 0.01));  // 1 / 51
  EXPECT_FALSE(canReachSignificance(0, 10, 0.5));
}

TEST(Gate, MoreDramBytesAtEqualTimeIsACounterRegression) {
  const core::Profile base = makeRun({.name = "bytes_base", .seed = 7});
  const core::Profile cur = makeRun({.name = "bytes_cur", .seed = 7, .gemm_dram_bytes = 1.2e8});
  const GateResult g = evaluateGate(diffProfiles(base, cur), GateOptions{});
  ASSERT_EQ(g.regressions, 1);
  const GateFinding& f = g.findings[0];
  EXPECT_EQ(f.kind, GateFinding::Kind::kCounter);
  EXPECT_EQ(f.metric, "dram_bytes");
  EXPECT_DOUBLE_EQ(*f.base_value, 1e8);
  EXPECT_DOUBLE_EQ(*f.cur_value, 1.2e8);
  EXPECT_NEAR(*f.change, 0.2, 1e-12);
}

TEST(Gate, RenamedKernelIsReportedAndCompared) {
  const core::Profile base = makeRun({.name = "ren_base", .seed = 7});
  const core::Profile cur = makeRun({.name = "ren_cur", .seed = 9, .gemm_name = "gemm_kernel_v2"});
  const RunDiff d = diffProfiles(base, cur);
  ASSERT_EQ(d.kernels.size(), 2u);
  const DiffEntry* renamed = nullptr;
  for (const auto& e : d.kernels) {
    if (e.kind == MatchKind::kRenamed) renamed = &e;
  }
  ASSERT_NE(renamed, nullptr);
  EXPECT_EQ(renamed->base_name, "gemm_kernel");
  EXPECT_EQ(renamed->name, "gemm_kernel_v2");
  EXPECT_TRUE(renamed->time_change);
  const GateResult g = evaluateGate(d, GateOptions{});
  EXPECT_TRUE(g.passed());
  ASSERT_FALSE(g.findings.empty());
  EXPECT_EQ(g.findings[0].kind, GateFinding::Kind::kRenamed);
}

TEST(Gate, NewKernelsAreInformationUnlessConfigured) {
  const core::Profile base = makeRun({.name = "new_base", .seed = 7});
  const core::Profile cur = makeRun({.name = "new_cur", .seed = 7, .extra_kernel = true});
  const RunDiff d = diffProfiles(base, cur);
  GateOptions opt;
  EXPECT_TRUE(evaluateGate(d, opt).passed());
  opt.fail_on_new = true;
  const GateResult g = evaluateGate(d, opt);
  ASSERT_EQ(g.regressions, 1);
  EXPECT_EQ(g.findings[0].kind, GateFinding::Kind::kNew);
  EXPECT_EQ(g.findings[0].kernel, "new_kernel");
  opt.ignore = {"new_"};
  EXPECT_TRUE(evaluateGate(d, opt).passed());
}

TEST(Diff, RepeatStatisticsAndCounters) {
  const core::Profile base = makeRun({.name = "diff_base", .seed = 7, .noise = 0.0});
  const core::Profile cur = makeRun({.name = "diff_cur", .seed = 7, .gemm_scale = 1.2, .noise = 0.0});
  const RunDiff d = diffProfiles(base, cur);
  ASSERT_EQ(d.kernels.size(), 2u);
  const DiffEntry& g = d.kernels[0];  // the largest change first
  EXPECT_EQ(g.name, "gemm_kernel");
  EXPECT_EQ(g.kind, MatchKind::kMatched);
  EXPECT_EQ(g.base->calls, 30);
  EXPECT_DOUBLE_EQ(*g.base->median_ns, 100000.0);
  EXPECT_DOUBLE_EQ(*g.cur->median_ns, 120000.0);
  EXPECT_NEAR(*g.time_change, 0.2, 1e-12);
  EXPECT_DOUBLE_EQ(*g.base->metrics[static_cast<size_t>(CounterMetric::kDramBytes)], 1e8);
  EXPECT_DOUBLE_EQ(*g.base->metrics[static_cast<size_t>(CounterMetric::kFlops)], 1e9);
  EXPECT_DOUBLE_EQ(*g.base->metrics[static_cast<size_t>(CounterMetric::kRegistersPerThread)], 32.0);
  EXPECT_FALSE(g.base->metrics[static_cast<size_t>(CounterMetric::kL2Bytes)]);  // not collected: n/a
  EXPECT_DOUBLE_EQ(d.base_total_ns, 30 * 120000.0);
}

// ---- Launch groups as rank summaries keep them (fprof job, and the gate over two jobs) ----

std::vector<LaunchGroupStats> summaryOf(const core::Profile& p) {
  std::vector<LaunchGroupStats> out;
  for (LaunchGroupStats& g : launchGroupStats(p, nameKernelOps(p, indexOps(p), indexFrameworkOps(p)))) {
    out.push_back(summarized(std::move(g)));
  }
  return out;
}

// The file gate's busy times, given to a diff of summaries as a summary keeps them.
RecordedBusy busyOf(const GateResult& files) {
  return {files.run_checks[1].base, files.run_checks[1].cur};
}

TEST(LaunchGroups, SummariesOfSmallGroupsGiveTheFilesVerdict) {
  // 30 launches per group: a summary keeps every one, so the verdict is the file gate's exactly.
  const core::Profile base = makeRun({.name = "sum_base", .seed = 7});
  const core::Profile cur = makeRun({.name = "sum_cur", .seed = 8, .gemm_scale = 1.10, .gemm_dram_bytes = 1.2e8});
  const GateResult files = evaluateGate(diffProfiles(base, cur), {});
  RunDiff d = diffLaunchGroups(summaryOf(base), summaryOf(cur));
  d.busy = busyOf(files);
  const GateResult summaries = evaluateGate(d, {});
  ASSERT_EQ(summaries.findings.size(), files.findings.size());
  ASSERT_GE(files.regressions, 3);
  for (size_t i = 0; i < files.findings.size(); ++i) {
    EXPECT_EQ(summaries.findings[i].message, files.findings[i].message) << i;
    EXPECT_EQ(summaries.findings[i].p_value, files.findings[i].p_value) << i;
  }
  ASSERT_EQ(summaries.run_checks.size(), files.run_checks.size());
  for (size_t i = 0; i < files.run_checks.size(); ++i) {
    EXPECT_EQ(summaries.run_checks[i].message, files.run_checks[i].message) << i;
  }
}

TEST(LaunchGroups, LargeGroupsKeepOrderStatisticsAndExactFigures) {
  const core::Profile base = makeRun({.name = "big_base", .seed = 7, .launches = 1000});
  const core::Profile cur = makeRun({.name = "big_cur", .seed = 8, .gemm_scale = 1.10, .launches = 1000});
  const std::vector<LaunchGroupStats> all = launchGroupStats(base, nameKernelOps(base, indexOps(base), indexFrameworkOps(base)));
  const std::vector<LaunchGroupStats> kept = summaryOf(base);
  ASSERT_EQ(kept.size(), 2u);
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(all[i].stats.samples_ns.size(), 1000u);
    EXPECT_EQ(kept[i].stats.samples_ns.size(), kSummarySamples);
    EXPECT_TRUE(kept[i].stats.spans.empty());
    EXPECT_EQ(kept[i].stats.calls, 1000);
    EXPECT_EQ(kept[i].stats.median_ns, all[i].stats.median_ns);
    EXPECT_EQ(kept[i].stats.squared_deviation_ns2, all[i].stats.squared_deviation_ns2);
    EXPECT_EQ(kept[i].stats.total_ns, all[i].stats.total_ns);
  }
  // The gemm 10% slower is still found, on 64 samples a side.
  const GateResult files = evaluateGate(diffProfiles(base, cur), {});
  RunDiff d = diffLaunchGroups(summaryOf(base), summaryOf(cur));
  d.busy = busyOf(files);
  const GateResult g = evaluateGate(d, {});
  ASSERT_FALSE(g.findings.empty());
  EXPECT_EQ(g.findings[0].kind, GateFinding::Kind::kTime);
  EXPECT_EQ(g.findings[0].kernel, "gemm_kernel");
  EXPECT_LT(*g.findings[0].p_value, 1e-6);
  EXPECT_EQ(g.findings[0].change, files.findings[0].change);  // the median is exact
  EXPECT_EQ(g.regressions, files.regressions);
  EXPECT_EQ(g.run_checks[0].message, files.run_checks[0].message);  // totals and noise exact
}

TEST(LaunchGroups, CombinedRunsAreOneRunOfAllTheirLaunches) {
  const core::Profile a = makeRun({.name = "part_a", .seed = 1, .launches = 20});
  const core::Profile b = makeRun({.name = "part_b", .seed = 2, .gemm_scale = 1.3, .gemm_dram_bytes = 2e8,
                                   .launches = 10});
  const std::vector<LaunchGroupStats> sa = summaryOf(a), sb = summaryOf(b);
  LaunchGroupCombiner combined(2, 4096);
  combined.add(sa);
  combined.add(sb);
  const std::vector<LaunchGroupStats> groups = combined.groups();
  ASSERT_EQ(groups.size(), 2u);
  const LaunchGroupStats& gemm = groups[0].name == "gemm_kernel" ? groups[0] : groups[1];
  const SideStats &x = (sa[0].name == "gemm_kernel" ? sa[0] : sa[1]).stats,
                  &y = (sb[0].name == "gemm_kernel" ? sb[0] : sb[1]).stats;
  std::vector<double> launches = x.samples_ns;
  launches.insert(launches.end(), y.samples_ns.begin(), y.samples_ns.end());
  double total = 0, squares = 0;
  for (double v : launches) total += v;
  for (double v : launches) squares += (v - total / 30) * (v - total / 30);
  EXPECT_EQ(gemm.stats.calls, 30);
  EXPECT_DOUBLE_EQ(gemm.stats.total_ns, total);
  EXPECT_NEAR(gemm.stats.squared_deviation_ns2, squares, squares * 1e-12);
  EXPECT_EQ(gemm.stats.samples_ns.size(), 30u);
  EXPECT_EQ(gemm.stats.median_ns, median(launches));
  // DRAM bytes per launch: 20 of 1e8 and 10 of 2e8; registers the larger of the two runs'.
  EXPECT_DOUBLE_EQ(*gemm.stats.metrics[static_cast<size_t>(CounterMetric::kDramBytes)], (20 * 1e8 + 10 * 2e8) / 30);
  EXPECT_DOUBLE_EQ(*gemm.stats.metrics[static_cast<size_t>(CounterMetric::kRegistersPerThread)], 32.0);
  // Many runs: each gives an equal part of the samples.
  LaunchGroupCombiner many(1000, 4096);
  for (int i = 0; i < 1000; ++i) many.add(sa);
  EXPECT_EQ(many.groups()[0].stats.samples_ns.size(), 4000u);
  EXPECT_EQ(many.groups()[0].stats.calls, 20000);
}

}  // namespace
}  // namespace fprof::analysis
