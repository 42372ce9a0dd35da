// The metrics collector's decisions on the fake counting backend: which strategy a context gets,
// which launches are profiled, what identical launches copy, and the reason every kernel without
// counters gets.
#include <cupti_driver_cbid.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fprof/core/metric_sets.h"
#include "metrics_fixture.h"

namespace fprof::collector::testing {
namespace {

using Decisions = MetricsFixture;
using Calls = std::vector<std::string>;

TEST_F(Decisions, OnePassWithoutSassMetricsCountsTheProgramsOwnRun) {
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  finish();
  EXPECT_EQ(metadata["replay_mode"], "application");
  EXPECT_EQ(metadata["counting_session"], "one profiler session, counting switched on around each launch");
  EXPECT_EQ(metadata["cache_control"], "all");
  EXPECT_EQ(metadata["cache_sweep"], "instruction caches, L2");
  EXPECT_EQ(metadata["mode"], "metrics");
  EXPECT_EQ(metadata["metrics_passes"], "1");
  ASSERT_NE(resultOf(1), nullptr);
  EXPECT_EQ(resultOf(1)->counters.dram_read_bytes, 1000);
}

TEST_F(Decisions, SeveralPassesCountUnderKernelReplay) {
  backend.script.passes = 7;
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  finish();
  EXPECT_EQ(metadata["replay_mode"], "kernel");
  EXPECT_EQ(metadata.count("counting_session"), 0u);
  EXPECT_EQ(metadata["cache_control"], "none");
  EXPECT_EQ(metadata["metrics_passes"], "7");
  // Without CUPTI's cache control (older than 13.4), said once.
  EXPECT_TRUE(noted("info", "caches are not invalidated between replay passes"));
  EXPECT_EQ(resultOf(1)->counters.dram_read_bytes, 1000);
}

TEST_F(Decisions, ReplayApplicationWithTooManyPassesStaysInTraceMode) {
  config.replay = ReplayMode::kApplication;
  backend.script.passes = 3;
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  launch("_Z4axpyv", 2, 12);
  finish();
  EXPECT_TRUE(noted("error", "hardware counters unavailable, this context stays in trace mode: --replay application "
                             "counts one pass, the program's own run, and these metrics take 3"));
  EXPECT_EQ(metadata["mode"], "trace");
  EXPECT_EQ(reasonOf(1), kCountersUnavailableReason);
  EXPECT_EQ(reasonOf(2), kCountersUnavailableReason);
  // The context is set up once, at its first profiled launch.
  EXPECT_EQ(std::count(backend.calls.begin(), backend.calls.end(), "setup"), 1);
}

TEST_F(Decisions, CuptiNewerThanTheDriverLeavesSassMetricsOut) {
  backend.script.cupti_version = 130401;
  config.metrics = {"dram__bytes_read.sum", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"};
  ASSERT_TRUE(start());
  drain();
  EXPECT_EQ(metadata["metrics"], "dram__bytes_read.sum");
  EXPECT_TRUE(noted("warning", "CUPTI 13.4 is newer than the driver's CUDA 13.0"));
}

TEST_F(Decisions, CuptiNewerThanTheDriverWithOnlySassMetricsKeepsMetricsOff) {
  backend.script.cupti_version = 130401;
  config.metrics = {"sm__sass_thread_inst_executed_op_ffma_pred_on.sum"};
  EXPECT_FALSE(start());
  EXPECT_FALSE(collector.enabled());
}

TEST_F(Decisions, IdenticalLaunchesCopyTheFirstSample) {
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11, {1000, 64});
  launch("_Z4axpyv", 2, 11, {2000, 64});
  launch("_Z4axpyv", 3, 12, {3000, 64});
  finish();
  const LaunchCounterResult* copy = resultOf(2);
  ASSERT_NE(copy, nullptr);
  ASSERT_TRUE(copy->source);
  EXPECT_EQ(copy->source->correlation_id, 1u);
  EXPECT_EQ(copy->counters.source, core::kCounterSourceSameSignature);
  EXPECT_EQ(copy->counters.dram_read_bytes, 1000);  // the source's values, not its own run's
  EXPECT_EQ(resultOf(3)->counters.dram_read_bytes, 3000);
  EXPECT_EQ(metadata["metrics_kernels_profiled"], "2");
  EXPECT_EQ(metadata["metrics_kernels_copied"], "1");
  EXPECT_EQ(metadata["samples_per_launch_kind"], "1");
}

TEST_F(Decisions, CopiesWaitForTheirSourceToBeDecoded) {
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  launch("_Z4axpyv", 2, 11);
  drain();
  EXPECT_TRUE(results.empty());  // neither decoded yet: the batch holds 256 ranges
  finish();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].launch.correlation_id, 1u);
  EXPECT_EQ(results[1].launch.correlation_id, 2u);
}

TEST_F(Decisions, EveryLaunchIsProfiledWithNoSampleLimit) {
  config.samples_per_signature = 0;
  ASSERT_TRUE(start());
  for (uint32_t c = 1; c <= 3; ++c) launch("_Z4axpyv", c, 11, {1000.0 * c, 64});
  finish();
  for (uint32_t c = 1; c <= 3; ++c) {
    ASSERT_NE(resultOf(c), nullptr);
    EXPECT_FALSE(resultOf(c)->source);
    EXPECT_EQ(resultOf(c)->counters.dram_read_bytes, 1000.0 * c);
  }
  EXPECT_EQ(metadata["samples_per_launch_kind"], "every launch");
}

TEST_F(Decisions, SamplesThatExecutedDifferentInstructionsMarkTheSignature) {
  config.samples_per_signature = 2;
  config.batch_ranges = 2;
  ASSERT_TRUE(start());
  launch("_Z6gatherv", 1, 11, {1000, 64});
  launch("_Z6gatherv", 2, 11, {1000, 80});  // same signature, other work: data-dependent
  launch("_Z4axpyv", 3, 12);                // decodes the two samples before it counts
  launch("_Z6gatherv", 4, 11, {1000, 64});  // a copy of the first sample
  finish();
  EXPECT_TRUE(noted("warning", "launches of gather() with the same grid, block and arguments executed different "
                               "instruction counts"));
  EXPECT_EQ(resultOf(1)->counters.signature_varies, std::nullopt);  // handed out before the second sample
  EXPECT_EQ(resultOf(2)->counters.signature_varies, true);
  EXPECT_EQ(resultOf(4)->source->correlation_id, 1u);
  EXPECT_EQ(resultOf(4)->counters.signature_varies, true);  // the copy says so too
}

TEST_F(Decisions, FilteredLaunchesGetTheFiltersReason) {
  config.kernel_regex = "gemm";
  config.launch_skip = 1;
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  launch("_Z4gemmv", 2, 12);
  launch("_Z4gemmv", 3, 13);
  finish();
  EXPECT_EQ(reasonOf(1), "not selected (--kernel-regex)");
  EXPECT_EQ(reasonOf(2), "not selected (--launch-skip)");
  EXPECT_EQ(reasonOf(3), "");
}

TEST_F(Decisions, NcclKernelsAreNotProfiledAndSaidOnce) {
  ASSERT_TRUE(start());
  launch("ncclDevKernel_AllReduce", 1, 11);
  launch("ncclDevKernel_AllGather", 2, 12);
  finish();
  EXPECT_EQ(reasonOf(1), "NCCL kernel: not replayed (it waits on other ranks)");
  EXPECT_EQ(reasonOf(2), "NCCL kernel: not replayed (it waits on other ranks)");
  EXPECT_EQ(std::count_if(notes.begin(), notes.end(), [](const auto& n) { return n.second.find("NCCL") != std::string::npos; }),
            1);
}

TEST_F(Decisions, ALaunchWithoutARangeAndItsCopiesGetTheReason) {
  backend.script.range_names_dropped = {"_Z4lostv"};
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  launch("_Z4lostv", 2, 12);
  launch("_Z4lostv", 3, 12);  // copies the launch that will get no range
  finish();
  EXPECT_EQ(reasonOf(1), "");
  EXPECT_EQ(reasonOf(2), "the range profiler returned no counter range for this launch");
  EXPECT_EQ(reasonOf(3), "the identical launch it would copy from got no counter range");
  EXPECT_TRUE(noted("warning", "1 counter ranges for 2 profiled launches; 1 matched by kernel name and order"));
}

TEST_F(Decisions, ARangeThatIsNotANumberGivesNoCounters) {
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11, {std::numeric_limits<double>::quiet_NaN(), 64});
  launch("_Z4axpyv", 2, 11);
  finish();
  EXPECT_EQ(reasonOf(1), "the range profiler returned a value that is not a number for its range");
  EXPECT_EQ(reasonOf(2), "the identical launch it would copy from got a value that is not a number");
}

TEST_F(Decisions, AFailedLaunchLeavesNoResultAndIsNotCounted) {
  ASSERT_TRUE(start());
  launch(launchOf("_Z4axpyv", 1, 11), {}, CUDA_ERROR_LAUNCH_FAILED);
  launch("_Z4axpyv", 2, 12);
  finish();
  EXPECT_EQ(resultOf(1), nullptr);
  EXPECT_EQ(reasonOf(2), "");
  EXPECT_EQ(metadata["metrics_kernels_profiled"], "1");
}

TEST_F(Decisions, AProfilerThatCannotStartStopsTheContext) {
  backend.script.start_ok = false;
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  launch("_Z4gemmv", 2, 12);
  finish();
  EXPECT_TRUE(noted("error", "starting the range profiler: start refused"));
  EXPECT_EQ(reasonOf(1), "the range profiler could not be started");
  EXPECT_EQ(reasonOf(2), kCountersUnavailableReason);
}

TEST_F(Decisions, LaunchesIntoACapturingStreamAreLeftToTheirGraph) {
  ASSERT_TRUE(start());
  LaunchRequest r = launchOf("_Z4axpyv", 1, 11);
  r.capturing = true;
  launch(r);
  finish();
  EXPECT_EQ(resultOf(1), nullptr);
  EXPECT_EQ(backend.calls, Calls{});  // not even set up
}

TEST_F(Decisions, AFullBatchIsDecodedBeforeTheNextLaunchCounts) {
  config.batch_ranges = 2;
  ASSERT_TRUE(start());
  launch("_Z1av", 1, 11);
  launch("_Z1bv", 2, 12);
  takeCalls();
  launch("_Z1cv", 3, 13);
  drain();
  EXPECT_EQ(results.size(), 2u);  // a and b, decoded before c started
  const std::vector<std::string> calls = takeCalls();
  const auto decode = std::find(calls.begin(), calls.end(), "decode");
  const auto started = std::find(calls.begin(), calls.end(), "start");
  EXPECT_LT(decode - calls.begin(), started - calls.begin());
}

TEST_F(Decisions, AFatalSignalDecodesWhatWasCountedWithTheContextCurrent) {
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  takeCalls();
  collector.decodeOnFatalSignal();
  drain();
  EXPECT_EQ(takeCalls(), (Calls{"push context", "stop", "decode", "pop context"}));
  ASSERT_NE(resultOf(1), nullptr);
  EXPECT_EQ(resultOf(1)->counters.dram_read_bytes, 1000);
}

TEST_F(Decisions, TheRunsEndIsRecordedOnceAndLaterLaunchesAreNotSeen) {
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  finish();
  EXPECT_EQ(metadata.count("metrics_teardown_seconds"), 1u);
  EXPECT_EQ(metadata.count("metrics_launch_steps_seconds"), 1u);
  metadata.clear();
  launch("_Z4axpyv", 2, 12);
  finish();  // again: nothing more
  EXPECT_EQ(resultOf(2), nullptr);
  EXPECT_TRUE(metadata.empty());
}

TEST(CanRelaunch, TheDriverLaunchesADuplicateRepeats) {
  EXPECT_TRUE(canRelaunch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  EXPECT_TRUE(canRelaunch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz));
  EXPECT_TRUE(canRelaunch(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel));
  EXPECT_FALSE(canRelaunch(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch));
  EXPECT_FALSE(canRelaunch(CUPTI_DRIVER_TRACE_CBID_cuMemcpy));
}

}  // namespace
}  // namespace fprof::collector::testing
