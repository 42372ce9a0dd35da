// Application replay's second run joined to the first (core/replay_merge.h): twins by function,
// shape and order; FLOPs derived from both runs' counters; what has no twin is said.
#include <gtest/gtest.h>

#include "fprof/core/metric_sets.h"
#include "fprof/core/replay_merge.h"
#include "fprof/core/sass_half.h"
#include "fprof/core/sass_pc.h"
#include "fprof/core/store.h"
#include "test_util.h"

namespace fprof::core {
namespace {

constexpr const char* kFfma = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum";
constexpr const char* kFadd = "sm__sass_thread_inst_executed_op_fadd_pred_on.sum";
constexpr const char* kFmul = "sm__sass_thread_inst_executed_op_fmul_pred_on.sum";
constexpr const char* kDramRead = "dram__bytes_read.sum";

struct Launch {
  const char* name;
  int grid;
  std::vector<std::pair<std::string, double>> raw;  // empty: no counters
  const char* source = "profiled";
  int copy_of = -1;  // same_signature: the index of the launch copied
};

// A database of `launches` in launch order (correlation ids 10, 20, ...), each with its raw counters
// and the columns derived from them.
std::string writeRun(const std::string& name, const std::vector<Launch>& launches, const std::string& metrics,
                     const std::string& steps = "start=1.000") {
  const std::string path = testing::tempPath(name);
  auto w = Writer::create(path, true);
  EXPECT_TRUE(w.ok());
  ProcessInfo process;
  process.pid = 1;
  EXPECT_TRUE((*w)->addProcess(process).ok());
  (void)(*w)->setMetadata("mode", "metrics");
  (void)(*w)->setMetadata("metrics", metrics);
  (void)(*w)->setMetadata("metrics_passes", "1");
  (void)(*w)->setMetadata("metrics_replay_seconds", "1.5");
  (void)(*w)->setMetadata("metrics_launch_steps_seconds", steps);
  std::vector<int64_t> ids;
  for (size_t i = 0; i < launches.size(); ++i) {
    const int64_t id = (*w)->nextKernelId();
    ids.push_back(id);
    KernelRecord k = testing::makeKernel(launches[i].name, 100 * static_cast<int64_t>(i), 50,
                                         static_cast<uint32_t>(10 * (i + 1)));
    k.grid_x = launches[i].grid;
    (*w)->add(k);
    if (launches[i].raw.empty()) continue;
    std::vector<std::string> names;
    std::vector<double> values;
    for (const auto& [n, v] : launches[i].raw) {
      names.push_back(n);
      values.push_back(v);
      (*w)->add(KernelMetricRecord{id, n, v});
    }
    KernelCounters c = deriveCounters(names, values);
    c.kernel_id = id;
    c.source = launches[i].source;
    if (launches[i].copy_of >= 0) c.source_kernel_id = ids[static_cast<size_t>(launches[i].copy_of)];
    (*w)->add(c);
  }
  EXPECT_TRUE((*w)->close());
  return path;
}

std::vector<std::pair<std::string, double>> flopCounts(double ffma) { return {{kFfma, ffma}, {kFadd, 0}, {kFmul, 0}}; }

TEST(ReplayMerge, TwinsByFunctionShapeAndOrderGetTheSecondRunsCounts) {
  // The second run launched "b" before "a" on another thread: order counts per function and shape only.
  const std::string first = writeRun("merge_first.fprof",
                                     {{"a", 1, {{kDramRead, 100}}}, {"b", 2, {{kDramRead, 200}}},
                                      {"a", 1, {{kDramRead, 300}}}, {"a", 4, {{kDramRead, 400}}}},
                                     kDramRead);
  const std::string second = writeRun("merge_second.fprof",
                                      {{"b", 2, flopCounts(20)}, {"a", 1, flopCounts(10)},
                                       {"a", 1, flopCounts(30)}, {"a", 4, flopCounts(40)}},
                                      std::string(kFfma) + "," + kFadd + "," + kFmul, "start=2.000");
  auto merged = mergeSecondRun(first, second);
  ASSERT_TRUE(merged.ok()) << merged.error();
  EXPECT_EQ(merged->kernels_joined, 4u);
  EXPECT_EQ(merged->kernels_without, 0u);
  auto p = loadProfile(first);
  ASSERT_TRUE(p.ok()) << p.error();
  std::map<int64_t, const KernelCounters*> by_id;
  for (const KernelCounters& c : p->counters) by_id[c.kernel_id] = &c;
  // Kernel ids follow launch order: a(1), b(2), a(1) again, a(4).
  const double expected_fp32[] = {20, 40, 60, 80};  // 2 FLOPs an FFMA
  const double expected_dram[] = {100, 200, 300, 400};
  size_t i = 0;
  for (const KernelRow& k : p->kernels) {
    ASSERT_TRUE(by_id.count(k.id));
    EXPECT_EQ(by_id[k.id]->flops_fp32, expected_fp32[i]) << "kernel " << i;
    EXPECT_EQ(by_id[k.id]->dram_read_bytes, expected_dram[i]) << "the first run's bytes stay";
    ++i;
  }
  size_t raw_rows = 0;
  for (const KernelMetricRecord& m : p->metrics) raw_rows += m.metric == kFfma;
  EXPECT_EQ(raw_rows, 4u) << "the second run's raw counters are kept beside the first's";
  EXPECT_EQ(p->meta("application_runs"), "2");
  EXPECT_EQ(p->meta("metrics_passes"), "2");
  EXPECT_EQ(p->meta("metrics_replay_seconds"), "3.000");
  EXPECT_EQ(p->meta("metrics_launch_steps_seconds"), "start=1.000") << "the first run's steps stay";
  EXPECT_EQ(p->meta("second_run_launch_steps_seconds"), "start=2.000");
  EXPECT_NE(p->meta("metrics").find(kFfma), std::string::npos);
}

TEST(ReplayMerge, KernelsWithoutATwinKeepUnknownFlopsAndAreCounted) {
  const std::string first = writeRun("merge_first_extra.fprof",
                                     {{"a", 1, {{kDramRead, 100}}}, {"c", 1, {{kDramRead, 5}}}, {"d", 1, {}}}, kDramRead);
  const std::string second = writeRun("merge_second_fewer.fprof", {{"a", 1, flopCounts(10)}}, kFfma);
  auto merged = mergeSecondRun(first, second);
  ASSERT_TRUE(merged.ok()) << merged.error();
  EXPECT_EQ(merged->kernels_joined, 1u);
  EXPECT_EQ(merged->kernels_without, 1u) << "c has counters and no twin; d has no counters at all";
  auto p = loadProfile(first);
  ASSERT_TRUE(p.ok());
  bool said = false;
  for (const auto& e : p->collector_events) said = said || e.message.find("not deterministic") != std::string::npos;
  EXPECT_TRUE(said);
  for (const KernelCounters& c : p->counters) {
    if (p->str(p->kernels[static_cast<size_t>(c.kernel_id - p->kernels.front().id)].name_id) == "c") {
      EXPECT_FALSE(c.flops_fp32.has_value());
      EXPECT_EQ(c.dram_read_bytes, 5);
    }
  }
}

TEST(ReplayMerge, CountsComputedAfterTheSecondRunGoToItsLaunchesAndTheirCopies) {
  // A second run counted by SASS patching holds only warp instructions; the FLOP counters come from
  // its per-PC counts afterwards, by correlation id (10, 20, 30 in launch order here).
  const std::string first = writeRun("merge_first_patched.fprof",
                                     {{"a", 1, {{kDramRead, 100}}}, {"a", 1, {{kDramRead, 110}}},
                                      {"h", 2, {{kDramRead, 200}}}},
                                     kDramRead);
  const std::string second =
      writeRun("merge_second_patched.fprof",
               {{"a", 1, {{kInstructionsSassMetric, 5}}},
                {"a", 1, {{kInstructionsSassMetric, 5}}, kCounterSourceSameSignature, 0},
                {"h", 2, {{kInstructionsSassMetric, 7}}}},
               kInstructionsSassMetric);
  RawCounters a = flopCounts(10);
  a.emplace_back(kInstructionsSassMetric, 50);
  const RawCounters h = {{kHaddMetric, 4}, {kHmulMetric, 0}, {kHfmaMetric, 6},
                         {kHalfFlopsFp16PerPcMetric, 28}, {kHalfFlopsBf16PerPcMetric, 0}};
  auto merged = mergeSecondRun(first, second, {{10, a}, {30, h}});
  ASSERT_TRUE(merged.ok()) << merged.error();
  EXPECT_EQ(merged->kernels_joined, 3u);
  auto p = loadProfile(first);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->counters.size(), 3u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(p->counters[i].flops_fp32, 20) << "launch " << i << ": its own or its copy source's counts";
    EXPECT_EQ(p->counters[i].instructions, 50) << "the computed value replaces the stored one";
  }
  EXPECT_EQ(p->counters[2].flops_fp16, 28) << "half FLOPs per lane summed per instruction";
  EXPECT_EQ(p->counters[2].flops_bf16, 0);
  EXPECT_EQ(p->counters[2].half_flops_method, kHalfFlopsPerPcMethod);
  EXPECT_EQ(p->counters[2].instructions, 7) << "no computed value: the stored one stays";
}

TEST(ReplayMerge, OneRunTakesEachLaunchsDuplicateCountsAndSaysWhatHadNone) {
  // Correlation ids 10, 20, 30, 40: launch 20 copied 10's counters; 40 had no duplicate counted.
  const std::string db = writeRun("join_one_run.fprof",
                                  {{"a", 1, {{kDramRead, 100}}},
                                   {"a", 1, {{kDramRead, 100}}, kCounterSourceSameSignature, 0},
                                   {"h", 2, {{kDramRead, 200}}},
                                   {"b", 3, {{kDramRead, 300}}}},
                                  kDramRead);
  RawCounters a = flopCounts(10);
  a.emplace_back(kInstructionsSassMetric, 50);
  const RawCounters h = {{kHaddMetric, 4}, {kHmulMetric, 0}, {kHfmaMetric, 6},
                         {kHalfFlopsFp16PerPcMetric, 28}, {kHalfFlopsBf16PerPcMetric, 0}};
  auto joined = joinLaunchCounters(db, {{10, a}, {30, h}});
  ASSERT_TRUE(joined.ok()) << joined.error();
  EXPECT_EQ(joined->kernels_joined, 3u);
  EXPECT_EQ(joined->kernels_without, 1u);
  auto p = loadProfile(db);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->counters.size(), 4u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(p->counters[i].flops_fp32, 20) << "launch " << i << ": its own or its copy source's counts";
    EXPECT_EQ(p->counters[i].dram_read_bytes, 100) << "the hardware counters stay";
  }
  EXPECT_EQ(p->counters[2].flops_fp16, 28);
  EXPECT_FALSE(p->counters[3].flops_fp32.has_value()) << "no duplicate counted: FLOPs unknown, not 0";
  EXPECT_EQ(p->meta("application_runs"), "1");
  EXPECT_EQ(p->meta("sass_counted_by"), "duplicate");
  bool said = false;
  for (const auto& e : p->collector_events) {
    said = said || e.message.find("1 kernels with hardware counters have no SASS") != std::string::npos;
  }
  EXPECT_TRUE(said);
}

TEST(ReplayMerge, AnUnreadableSecondRunChangesNothing) {
  const std::string first = writeRun("merge_first_kept.fprof", {{"a", 1, {{kDramRead, 100}}}}, kDramRead);
  auto merged = mergeSecondRun(first, testing::tempPath("no_such_second_run.fprof"));
  EXPECT_FALSE(merged.ok());
  auto p = loadProfile(first);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->meta("application_runs"), "");
  EXPECT_FALSE(p->counters.front().flops_fp32.has_value());
}

}  // namespace
}  // namespace fprof::core
