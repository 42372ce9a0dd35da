// Counter coverage (analysis/coverage.h) on hand-built profiles: kernels and time with counters,
// how the counters were obtained and why others have none (schema 2), nothing of either for a
// version-1 file.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "fprof/analysis/coverage.h"
#include "fprof/core/metric_sets.h"
#include "fprof/core/store.h"

namespace fprof::analysis {
namespace {

core::Profile profile(int schema_version) {
  core::Profile p;
  p.schema_version = schema_version;
  p.strings = {"", "k"};
  for (int64_t id = 1; id <= 6; ++id) {
    core::KernelRow k;
    k.id = id;
    k.demangled_id = 1;
    k.start_ns = id * 1000;
    k.end_ns = k.start_ns + 100 * id;  // 100, 200, ..., 600 ns: 2100 ns in all
    p.kernels.push_back(k);
  }
  auto counted = [&](int64_t id, const char* source) {
    core::KernelCounters c;
    c.kernel_id = id;
    c.source = source;
    p.counters.push_back(c);
  };
  counted(1, core::kCounterSourceProfiled);
  counted(2, core::kCounterSourceSameSignature);
  counted(3, core::kCounterSourceSameSignature);
  counted(5, core::kCounterSourceProfiled);
  return p;
}

TEST(Coverage, CountsKernelsTimeSourcesAndReasons) {
  core::Profile p = profile(2);
  p.counters_missing = {{4, "cooperative launch: not replayed"}};  // kernel 6 has no reason
  const CounterCoverage c = counterCoverage(p);
  EXPECT_EQ(c.kernels, 6);
  EXPECT_EQ(c.kernels_with_counters, 4);
  EXPECT_EQ(c.kernel_ns, 2100);
  EXPECT_EQ(c.counted_ns, 100 + 200 + 300 + 500);
  EXPECT_DOUBLE_EQ(*c.timeShare(), 1100.0 / 2100.0);
  EXPECT_EQ(describeCoverage(c), "counters for 4 of 6 kernels (52.4% of kernel time): 2 profiled, 2 same signature");
  EXPECT_EQ(describeMissing(c),
            "2 kernels without counters: cooperative launch: not replayed (1), no reason recorded (1)");
}

TEST(Coverage, KernelsOfATraceModeProcessNeverHadToHaveCounters) {
  core::Profile p = profile(2);
  for (core::KernelRow& k : p.kernels) k.process_id = k.id == 6 ? 2 : 1;
  p.metadata = {{"process.1.mode", "metrics"}, {"process.2.mode", "trace"}};  // a merged job
  EXPECT_EQ(describeMissing(counterCoverage(p)),
            "2 kernels without counters: no reason recorded (1), recorded in trace mode (1)");
}

TEST(Coverage, SchemaOneSaysNeitherSourceNorReason) {
  const CounterCoverage c = counterCoverage(profile(1));
  EXPECT_EQ(describeCoverage(c), "counters for 4 of 6 kernels (52.4% of kernel time)");
  EXPECT_EQ(describeMissing(c), "");
}

TEST(Coverage, NoKernelTimeIsNotZeroPercent) {
  core::Profile p;
  p.schema_version = 2;
  const CounterCoverage c = counterCoverage(p);
  EXPECT_FALSE(c.timeShare());
  EXPECT_EQ(describeCoverage(c), "counters for 0 of 0 kernels (n/a of kernel time)");
}

TEST(Coverage, OneGroupSaysHowItsCountersWereObtainedOrWhyNot) {
  core::Profile p = profile(2);
  p.counters_missing = {{4, "CUDA graph launch: parallel branches"}, {6, "not selected"}};
  EXPECT_EQ(describeGroupCounters(counterCoverage(p, {0, 1, 2})), "2 same signature, 1 profiled");  // most first
  EXPECT_EQ(describeGroupCounters(counterCoverage(p, {3})), "1 without: CUDA graph launch: parallel branches");
  EXPECT_EQ(describeGroupCounters(counterCoverage(p, {4, 5})), "1 profiled; 1 without: not selected");
  EXPECT_EQ(describeGroupCounters(counterCoverage(p, {3, 5, 0})),
            "1 profiled; 2 without: CUDA graph launch: parallel branches (and 1 other reasons)");
  EXPECT_EQ(describeGroupCounters(counterCoverage(p, {})), "");
  // An index out of range (a damaged summary) is skipped, not read.
  EXPECT_EQ(counterCoverage(p, {0, 99}).kernels, 1);
  EXPECT_EQ(describeGroupCounters(counterCoverage(profile(1), {0, 3})), "1 with counters; 1 without: no reason recorded");
}

// Which counter the L2 bytes are comes from the raw counters a profile holds.
TEST(Coverage, CollectionSaysWhichCounterTheL2BytesAre) {
  core::Profile p = profile(1);
  p.metadata = {{"mode", "metrics"}, {"replay_mode", "application"}};
  EXPECT_EQ(describeCollection(p), "application replay");
  p.metrics.push_back({p.kernels[0].id, "lts__t_bytes.sum", 4096});
  EXPECT_EQ(describeCollection(p), "application replay; L2 bytes are every request the L2 counted (lts__t_bytes.sum, "
                                   "with the forwarding between its partitions on GH100)");
  p.metrics.push_back({p.kernels[0].id, "lts__t_sectors_srcunit_tex.sum", 96});
  EXPECT_EQ(describeCollection(p),
            "application replay; L2 bytes are the SMs' sectors (lts__t_sectors_srcunit_tex.sum x 32)");
}

TEST(Coverage, CollectionMethodComesFromTheMetricsRunsMetadata) {
  core::Profile p = profile(2);
  EXPECT_EQ(describeCollection(p), "");  // no mode recorded: says nothing
  p.metadata = {{"mode", "metrics"},         {"metric_set", "roofline"},         {"replay_mode", "kernel"},
                {"metrics_passes", "7"},      {"cache_control", "all"},           {"samples_per_launch_kind", "1"}};
  EXPECT_EQ(describeCollection(p),
            "metric set roofline; kernel replay (7 passes); caches flushed before each pass (cache control all); 1 "
            "profiled launch per launch signature, the others given the values of an identical launch");
  p.metadata = {{"mode", "metrics"}, {"samples_per_launch_kind", "3"}};
  EXPECT_EQ(describeCollection(p),
            "3 profiled launches per launch signature, the others given the values of an identical launch");
  p.metadata = {{"mode", "metrics"}, {"cache_control", "none"}, {"samples_per_launch_kind", "every launch"}};
  EXPECT_EQ(describeCollection(p), "caches not flushed (cache control none); every launch profiled");
  p.metadata = {{"mode", "metrics"}, {"nvtx_include", "train_step"}, {"nvtx_scope", "process"}};
  EXPECT_EQ(describeCollection(p), "kernels inside NVTX ranges containing 'train_step' on any thread (--nvtx-scope process)");
  p.metadata = {{"mode", "metrics"}, {"nvtx_include", "decode,layer=3"}, {"nvtx_scope", "thread"}};
  EXPECT_EQ(describeCollection(p), "kernels inside NVTX ranges containing 'decode,layer=3' on the launching thread");
  p.metadata = {{"mode", "metrics"},
                {"metrics_kernels_profiled", "113"},
                {"metrics_replay_seconds", "20.204"},
                {"metrics_decode_seconds", "0.113"}};
  EXPECT_EQ(describeCollection(p), "113 launches profiled in 20.2 s of replay, 0.1 s of decoding");
  p.metadata["metrics_launch_steps_seconds"] = "drain=0.120 sweep=0.004 start=1.234 launch=0.456 stop=1.111 end=0.222";
  EXPECT_EQ(describeCollection(p),
            "113 launches profiled in 20.2 s of replay (drain 0.12 s, sweep 0.00 s, start 1.23 s, launch 0.46 s, "
            "stop 1.11 s, end 0.22 s), 0.1 s of decoding")
      << "where the replay time went, step by step";
  p.metadata["application_runs"] = "2";
  EXPECT_NE(describeCollection(p).find("of replay (the first run's: drain 0.12 s,"), std::string::npos)
      << "two runs: the steps are the first run's";
  p.metadata = {{"mode", "metrics"}, {"replay_mode", "application"}, {"metrics_passes", "1"}, {"cache_control", "all"}};
  EXPECT_EQ(describeCollection(p),
            "application replay (1 pass); L2 emptied before each profiled launch (cache control all)")
      << "a recording from before the code sweep says what its sweep emptied";
  p.metadata["cache_sweep"] = "instruction caches, L2";
  EXPECT_EQ(describeCollection(p), "application replay (1 pass); instruction caches and L2 emptied before each profiled "
                                   "launch (cache control all)");
  p.metadata = {{"mode", "metrics"}, {"replay_mode", "application"}, {"application_runs", "2"}, {"metrics_passes", "2"}};
  EXPECT_EQ(describeCollection(p),
            "application replay in two runs of the program (SASS counters in the second, under kernel replay)");
  p.metadata["second_run_patching_stopped"] = "after 66 s: 40 launches counted, the last correlation 812 (_Z1fv)";
  EXPECT_EQ(describeCollection(p),
            "application replay in two runs of the program (SASS counters in the second, under kernel replay: the run "
            "by SASS patching was stopped after 66 s: 40 launches counted, the last correlation 812 (_Z1fv))")
      << "a patched run stopped by its time limit says where it stood";
  p.metadata = {{"mode", "metrics"},      {"replay_mode", "application"},         {"application_runs", "2"},
                {"metrics_passes", "2"}, {"second_run_replay", "sass_patching"}};
  EXPECT_EQ(describeCollection(p),
            "application replay in two runs of the program (SASS counters in the second, by SASS patching, no replay)");
  p.metadata = {{"mode", "metrics"},
                {"replay_mode", "application"},
                {"application_runs", "1"},
                {"sass_counted_by", "duplicate"},
                {"sass_duplicate_seconds", "save=0.120 duplicate=0.250 restore=0.030 launches=113"}};
  EXPECT_EQ(describeCollection(p),
            "application replay in one run (SASS counters from a duplicate of each profiled launch, by SASS patching "
            "between a checkpoint of the device memory and its restore; 0.40 s for 113 duplicates: save 0.12 s, "
            "duplicate 0.25 s, restore 0.03 s)");
  p.metadata["sass_duplicate_device_memory_held_bytes"] = "1957494784";
  EXPECT_NE(describeCollection(p).find("restore 0.03 s, the device holding up to 1.82 GiB at a checkpoint)"),
            std::string::npos)
      << describeCollection(p);
  p.metadata["sass_duplicate_checkpoints"] =
      "own=12 (at most 2101504 bytes) cupti=2 (1: its module calls vprintf (outside the memory fprof saves); 1: the "
      "program allocates managed memory)";
  EXPECT_NE(describeCollection(p).find(
                "at a checkpoint; fprof's own checkpoint (the program's allocations and module variables, up to 2.0 "
                "MiB) around 12 duplicates, CUPTI's around 2 (1: its module calls vprintf (outside the memory fprof "
                "saves); 1: the program allocates managed memory))"),
            std::string::npos)
      << describeCollection(p);
  p.metadata["sass_duplicate_checkpoints"] = "own=95 (at most 107891972 bytes) cupti=0";
  EXPECT_NE(describeCollection(p).find("up to 102.9 MiB) around 95 duplicates, CUPTI's around none)"), std::string::npos)
      << describeCollection(p);
  p.metadata = {{"mode", "trace"}, {"cache_control", "all"}};
  EXPECT_EQ(describeCollection(p), "");
}

// A recorded two-run application replay (tests/data/README.md): every kernel has counters from both
// runs, keeps its timestamps, and the file says how it was collected.
TEST(Coverage, RecordedApplicationReplayHoldsBothRunsCounters) {
  auto p = core::loadProfile(std::string(FPROF_SOURCE_DIR) + "/tests/data/transformer_app_replay_h100.fprof");
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_TRUE(p->warnings.empty());
  EXPECT_EQ(describeCollection(*p).rfind("metric set roofline; application replay in two runs of the program", 0), 0u)
      << describeCollection(*p);
  EXPECT_NE(describeCollection(*p).find("instruction caches and L2 emptied before each profiled launch"),
            std::string::npos)
      << "recorded with the code sweep (metadata.cache_sweep)";
  EXPECT_NE(describeCollection(*p).find("by SASS patching, no replay"), std::string::npos) << describeCollection(*p);
  ASSERT_EQ(p->counters.size(), p->kernels.size());
  for (const core::KernelRow& k : p->kernels) EXPECT_GT(k.start_ns, 0) << "counted in its own run: timestamps kept";
  size_t tensor = 0, half_per_instruction = 0;
  for (const core::KernelCounters& c : p->counters) {
    EXPECT_TRUE(c.dram_read_bytes.has_value()) << "first run";
    EXPECT_TRUE(c.flops_fp32.has_value()) << "second run";
    EXPECT_TRUE(c.instructions.has_value()) << "second run";
    EXPECT_TRUE(c.flops_fp16.has_value() && c.flops_bf16.has_value()) << "per instruction, never bounds";
    tensor += c.flops_tensor_fp16.value_or(0) > 0;
    half_per_instruction += c.half_flops_method == core::kHalfFlopsPerPcMethod;
  }
  EXPECT_GT(tensor, 0u) << "tensor FLOPs: the first run's tensor-pipe cycles with the SASS";
  EXPECT_EQ(half_per_instruction, 229u) << "every kernel that ran half instructions (tests/data/README.md)";
}

// The same program recorded in one run (tests/data/README.md): the SASS counters came
// from a duplicate of each profiled launch in the program's own run. Every kernel has both kinds of
// counters, and the FLOPs that depend on neither the data nor code changed since equal the two-run
// recording's kernel by kernel.
TEST(Coverage, RecordedOneRunApplicationReplayHoldsHardwareAndSassCounters) {
  const std::string dir = std::string(FPROF_SOURCE_DIR) + "/tests/data/";
  auto one = core::loadProfile(dir + "transformer_one_run_h100.fprof");
  auto two = core::loadProfile(dir + "transformer_app_replay_h100.fprof");
  ASSERT_TRUE(one.ok()) << one.error();
  ASSERT_TRUE(two.ok()) << two.error();
  EXPECT_TRUE(one->warnings.empty());
  EXPECT_EQ(describeCollection(*one).rfind("metric set roofline; application replay in one run (SASS counters from a "
                                           "duplicate of each profiled launch",
                                           0),
            0u)
      << describeCollection(*one);
  EXPECT_NE(describeCollection(*one).find("the device holding up to 1.16 GiB at a checkpoint"), std::string::npos)
      << "recorded with the memory in use at its checkpoints";
  const std::string duplicates = one->meta("metrics_kernels_profiled");
  EXPECT_EQ(duplicates, "94") << "tests/data/README.md";
  EXPECT_NE(describeCollection(*one).find("fprof's own checkpoint (the program's allocations and module variables, up "
                                          "to 102.9 MiB) around " +
                                          duplicates + " duplicates, CUPTI's around none"),
            std::string::npos)
      << "recorded with which checkpoint held each duplicate's memory";
  EXPECT_NE(describeCollection(*one).find("L2 bytes are the SMs' sectors"), std::string::npos)
      << "recorded with the SMs' L2 sectors";
  EXPECT_EQ(one->meta("application_runs"), "1");
  EXPECT_EQ(one->meta("sass_in_first_run"), "every profiled launch");
  ASSERT_EQ(one->counters.size(), one->kernels.size());
  ASSERT_EQ(one->kernels.size(), two->kernels.size());
  auto inOrder = [](const core::Profile& p) {
    std::map<int64_t, const core::KernelCounters*> by_id;
    for (const core::KernelCounters& c : p.counters) by_id[c.kernel_id] = &c;
    std::vector<std::pair<int64_t, const core::KernelCounters*>> out;
    for (const core::KernelRow& k : p.kernels) out.emplace_back(k.start_ns, by_id[k.id]);
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return out;
  };
  const auto a = inOrder(*one), b = inOrder(*two);
  size_t tensor = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NE(a[i].second, nullptr);
    const core::KernelCounters& c = *a[i].second;
    EXPECT_TRUE(c.dram_read_bytes.has_value() && c.l2_bytes.has_value()) << "the program's own launch, kernel " << i;
    EXPECT_TRUE(c.flops_fp32.has_value() && c.instructions.has_value()) << "its duplicate, kernel " << i;
    EXPECT_EQ(c.flops_tensor_fp16, b[i].second->flops_tensor_fp16) << "kernel " << i;
    EXPECT_EQ(c.flops_fp16, b[i].second->flops_fp16) << "kernel " << i;
    tensor += c.flops_tensor_fp16.value_or(0) > 0;
  }
  EXPECT_GT(tensor, 0u);
}

}  // namespace
}  // namespace fprof::analysis
