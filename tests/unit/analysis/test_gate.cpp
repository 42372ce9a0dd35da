// The gate matrix: identical noisy runs raise no alarm; a 10% slower kernel is caught; 20% more
// DRAM bytes at equal time is a counter regression; a renamed kernel is reported, not a crash.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "fixture.h"
#include "fprof/analysis/diff.h"

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
  ASSERT_EQ(g.regressions, 1);
  const GateFinding& f = g.findings[0];
  EXPECT_EQ(f.kind, GateFinding::Kind::kTime);
  EXPECT_EQ(f.kernel, "gemm_kernel");
  EXPECT_NEAR(*f.change, 0.10, 0.03);
  EXPECT_LT(*f.p_value, 1e-6);
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

TEST(Gate, TooFewRepeatsIsUntestableNotARegression) {
  const core::Profile base = makeRun({.name = "few_base", .seed = 7, .launches = 3});
  const core::Profile cur = makeRun({.name = "few_cur", .seed = 8, .gemm_scale = 1.5, .launches = 3});
  const GateResult g = evaluateGate(diffProfiles(base, cur), GateOptions{});
  EXPECT_TRUE(g.passed());  // 3 vs 3 launches: the smallest one-sided p is 0.05 > 0.01
  ASSERT_FALSE(g.findings.empty());
  EXPECT_EQ(g.findings[0].kind, GateFinding::Kind::kUntestable);
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

}  // namespace
}  // namespace fprof::analysis
