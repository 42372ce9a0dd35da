// Each counting strategy on the fake counting backend: the CUPTI and driver calls it makes around a
// profiled launch, in order, and what it hands the writer (counters, per-PC counts, graph sums,
// reasons, metadata).
#include <gtest/gtest.h>

#include <cupti_driver_cbid.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fprof/core/metric_sets.h"
#include "metrics_fixture.h"

namespace fprof::collector::testing {
namespace {

using Calls = std::vector<std::string>;

// Where a test's per-PC counts go, removed with the test.
class TempDir {
 public:
  TempDir() : path_(std::filesystem::temp_directory_path() / ("fprof_strategies_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// What the throwaway range at application replay's set-up calls: drain, the code sweep counted
// alone, decoded and dropped.
const Calls kApplicationSetUp = {"setup", "setup sweep", "sync", "start", "code sweep", "stop", "sync", "stop", "decode"};

using ApplicationReplay = MetricsFixture;

TEST_F(ApplicationReplay, DrainsSweepsAndCountsTheLaunchAlone) {
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  Calls expected = kApplicationSetUp;
  for (const char* c : {"ready", "sync", "sweep", "start", "stop", "sync"}) expected.push_back(c);
  EXPECT_EQ(takeCalls(), expected);
  finish();
  EXPECT_EQ(takeCalls(), (Calls{"push context", "stop", "decode", "teardown profiler", "pop context"}));
  ASSERT_EQ(results.size(), 1u);  // the throwaway range is no launch's
  EXPECT_EQ(results[0].counters.dram_read_bytes, 1000);
  EXPECT_EQ(metadata["cache_sweep_kernels"], "cubins built for sm_90");
  EXPECT_EQ(metadata.count("metrics_setup_seconds"), 1u);
}

TEST_F(ApplicationReplay, CacheControlNoneNeitherSweepsNorThrowsARangeAway) {
  config.cache_control = CacheControl::kNone;
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  EXPECT_EQ(takeCalls(), (Calls{"setup", "ready", "sync", "start", "stop", "sync"}));
  finish();
  EXPECT_EQ(metadata["cache_control"], "none");
  EXPECT_EQ(metadata.count("cache_sweep"), 0u);
}

TEST_F(ApplicationReplay, ASweepThatCannotBeSetUpLeavesCachesAsTheyAre) {
  backend.script.sweep_setup_ok = false;
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  finish();
  EXPECT_TRUE(noted("warning", "caches are not invalidated before profiled launches (cache control: none): no room "
                               "for the sweep's buffer"));
  EXPECT_EQ(metadata["cache_control"], "none");
  EXPECT_EQ(resultOf(1)->counters.dram_read_bytes, 1000);
}

TEST_F(ApplicationReplay, CacheControlAllWithoutTheSweepStaysInTraceMode) {
  config.cache_control = CacheControl::kAll;
  backend.script.sweep_setup_ok = false;
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  finish();
  EXPECT_TRUE(noted("error", "this context stays in trace mode: --cache-control all: no room for the sweep's buffer"));
  EXPECT_EQ(metadata["mode"], "trace");
  EXPECT_EQ(reasonOf(1), kCountersUnavailableReason);
}

TEST_F(ApplicationReplay, ASessionThatCannotOpenIsSaidAndTheLaunchStillCounted) {
  backend.script.ready_ok = false;
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  finish();
  EXPECT_TRUE(noted("warning", "before a profiled launch: the session could not be opened"));
  EXPECT_EQ(resultOf(1)->counters.dram_read_bytes, 1000);
}

LaunchRequest graphLaunch(uint32_t correlation_id, uint64_t graph_exec) {
  LaunchRequest g = launchOf(nullptr, correlation_id, std::nullopt);
  g.graph_launch = true;
  g.graph_exec = graph_exec;
  return g;
}

TEST_F(ApplicationReplay, CountsAGraphLaunchWholeAsOneUserRange) {
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  takeCalls();
  collector.beforeLaunch(graphLaunch(9, 5));
  backend.kernelRan("k1", {10, 1});
  backend.kernelRan("k2", {20, 2});
  collector.afterLaunch(CUDA_SUCCESS);
  // The kernel's range decoded before user ranges take over; the graph drained and swept like a launch.
  EXPECT_EQ(takeCalls(), (Calls{"stop", "decode", "user ranges", "ready", "sync", "sweep", "start",
                                "push graph launch 9", "pop", "stop", "sync"}));
  launch("_Z4axpyv", 2, 12);
  EXPECT_EQ(takeCalls()[2], "auto range");  // after the graph's range was decoded
  finish();
  ASSERT_EQ(graph_results.size(), 1u);
  EXPECT_EQ(graph_results[0].correlation_id, 9u);
  ASSERT_EQ(graph_results[0].raw.size(), 2u);
  EXPECT_EQ(graph_results[0].raw[0].second, 30);
  EXPECT_EQ(graph_results[0].raw[1].second, 3);
  EXPECT_EQ(reasonOf(9), kGraphCountedWholeReason);
  EXPECT_EQ(metadata["metrics_graph_launches_counted"], "1");
  EXPECT_TRUE(noted("info", "CUDA graph launches are counted whole, each as one range"));
  EXPECT_TRUE(noted("info", "kernels of CUDA graphs are not replayed"));
  EXPECT_FALSE(noted("info", "--replay application also counts"));
}

TEST_F(ApplicationReplay, AGraphBeyondItsSamplesKeepsTheGraphReason) {
  ASSERT_TRUE(start());
  collector.beforeLaunch(graphLaunch(9, 5));
  collector.afterLaunch(CUDA_SUCCESS);
  takeCalls();
  collector.beforeLaunch(graphLaunch(10, 5));
  collector.afterLaunch(CUDA_SUCCESS);
  EXPECT_EQ(takeCalls(), Calls{});
  finish();
  EXPECT_EQ(reasonOf(10), kGraphKernelReason);
  EXPECT_EQ(metadata["metrics_graph_launches_counted"], "1");
}

using KernelReplay = MetricsFixture;

TEST_F(KernelReplay, StartsAndStopsAroundTheLaunchAndWarnsOnceOfAFullDevice) {
  backend.script.passes = 7;
  backend.script.free_bytes = size_t{20} << 30;  // 60 of 80 GiB held
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  launch("_Z4gemmv", 2, 12);
  EXPECT_EQ(takeCalls(), (Calls{"setup", "start", "stop", "start", "stop"}));
  finish();
  EXPECT_EQ(std::count_if(notes.begin(), notes.end(),
                          [](const auto& n) { return n.second.find("the program holds 60.0 of the device's 80.0 GiB: kernel "
                                                                   "replay saves and restores") != std::string::npos; }),
            1);
  EXPECT_EQ(resultOf(2)->counters.dram_read_bytes, 1000);
}

TEST_F(KernelReplay, GraphsAreNotCountedWholeAndTheNoteSaysWhereTheyAre) {
  backend.script.passes = 7;
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  collector.beforeLaunch(graphLaunch(9, 5));
  collector.afterLaunch(CUDA_SUCCESS);
  finish();
  EXPECT_TRUE(graph_results.empty());
  EXPECT_EQ(reasonOf(9), kGraphKernelReason);
  EXPECT_TRUE(noted("info", "--replay application also counts each executable graph's first launch whole"));
}

TEST_F(KernelReplay, GraphKernelsCopyAProfiledLaunchWithTheirNodesKey) {
  backend.script.passes = 7;
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  collector.noteGraphNode(77, 11);
  collector.noteGraphNode(78, 99);  // no profiled launch has this key
  collector.noteGraphNode(79, 11);
  collector.noteGraphNodeChanged(79);
  collector.beforeLaunch(graphLaunch(9, 5));
  collector.afterLaunch(CUDA_SUCCESS);
  std::vector<core::KernelRecord> kernels(3);
  for (size_t i = 0; i < kernels.size(); ++i) {
    kernels[i].correlation_id = 9;
    kernels[i].graph_node_id = 77 + i;
  }
  collector.addGraphKernels(kernels);
  finish();
  const LaunchCounterResult* copy = resultOf(9, 77);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->source->correlation_id, 1u);
  EXPECT_EQ(copy->counters.source, core::kCounterSourceSameSignature);
  EXPECT_EQ(copy->counters.dram_read_bytes, 1000);
  EXPECT_EQ(resultOf(9, 78), nullptr);  // keeps its launch's reason
  EXPECT_EQ(resultOf(9, 79), nullptr);  // its parameters changed after the node was made
  EXPECT_EQ(metadata["metrics_graph_kernels_copied"], "1");
}

class SassPatching : public MetricsFixture {
 protected:
  SassPatching() {
    config.replay = ReplayMode::kSassPatching;
    config.sass_pc_file = dir.file("run.pcs");
  }
  TempDir dir;
};

TEST_F(SassPatching, PatchesEachLaunchWithFlushesHeldAndWritesItsPerPcCounts) {
  ASSERT_TRUE(start());
  launch("_Z4axpyv", 1, 11);
  EXPECT_EQ(takeCalls(), (Calls{"setup patching", "hold flushes", "patch on", "patch off", "release flushes"}));
  finish();
  EXPECT_EQ(takeCalls(), (Calls{"push context", "teardown patching", "pop context"}));
  ASSERT_NE(resultOf(1), nullptr);
  ASSERT_EQ(resultOf(1)->raw.size(), 1u);
  EXPECT_EQ(resultOf(1)->raw[0].first, core::kInstructionsSassMetric);
  EXPECT_EQ(resultOf(1)->counters.instructions, 100);
  EXPECT_EQ(readFile(config.sass_pc_file), core::sassPcLaunchText({1, 0, countedFunctions("patched", 100)}));
  EXPECT_EQ(metadata["replay_mode"], "sass_patching");
  EXPECT_EQ(metadata.count("sass_patching_seconds"), 1u);
  EXPECT_EQ(metadata.count("metrics_launch_steps_seconds"), 0u);
}

TEST_F(SassPatching, ALaunchThatCountedNothingGetsTheReasonAndOneWarning) {
  backend.script.patched_counts = {countedFunctions("a", 0), countedFunctions("b", 0)};
  ASSERT_TRUE(start());
  launch("_Z1av", 1, 11);
  launch("_Z1bv", 2, 12);
  finish();
  EXPECT_EQ(reasonOf(1), "the SASS Metrics API counted no instruction of this launch");
  EXPECT_EQ(reasonOf(2), "the SASS Metrics API counted no instruction of this launch");
  EXPECT_EQ(std::count_if(notes.begin(), notes.end(), [](const auto& n) { return n.first == "warning"; }), 1);
  EXPECT_EQ(readFile(config.sass_pc_file), "");
}

TEST_F(SassPatching, AnApiThatCannotBeEnabledStopsTheContextAndGivesTheFlushesBack) {
  backend.script.patching_begin_ok = false;
  ASSERT_TRUE(start());
  launch("_Z1av", 1, 11);
  launch("_Z1bv", 2, 12);
  EXPECT_EQ(takeCalls(), (Calls{"setup patching", "hold flushes", "patch on", "release flushes"}));
  finish();
  EXPECT_EQ(reasonOf(1), "the SASS Metrics API could not be enabled");
  EXPECT_EQ(reasonOf(2), kCountersUnavailableReason);
}

TEST_F(SassPatching, WithoutTheApiTheContextStaysInTraceMode) {
  backend.script.patching_setup_ok = false;
  ASSERT_TRUE(start());
  launch("_Z1av", 1, 11);
  finish();
  EXPECT_TRUE(noted("error", "SASS instruction counts unavailable, this context stays in trace mode: the SASS Metrics "
                             "API is missing"));
  EXPECT_EQ(metadata["mode"], "trace");
  EXPECT_EQ(reasonOf(1), kCountersUnavailableReason);
}

class DuplicateLaunch : public MetricsFixture {
 protected:
  DuplicateLaunch() { config.sass_duplicate = true; }
  bool startWithDatabase() {
    if (!start()) return false;
    collector.recordOwnWindowsIn(&windows);
    collector.setDatabasePath(dir.file("run.fprof"));
    return true;
  }
  std::string sassInFirstRun() const {
    auto it = metadata.find("sass_in_first_run");
    return it == metadata.end() ? "(none)" : it->second;
  }
  TempDir dir;
  OwnKernelWindows windows;
};

TEST_F(DuplicateLaunch, CountsADuplicateBetweenDrainAndSweepAndWritesItsCounts) {
  backend.script.duplicate_seconds.own_checkpoint = true;
  backend.script.duplicate_seconds.own_bytes = 4096;
  ASSERT_TRUE(startWithDatabase());
  launch("_Z4axpyv", 1, 11);
  Calls expected = kApplicationSetUp;
  for (const char* c : {"setup duplicate", "ready", "sync", "hold flushes", "pause kernel records", "duplicate _Z4axpyv",
                        "resume kernel records", "release flushes", "sweep", "start", "stop", "sync"}) {
    expected.push_back(c);
  }
  EXPECT_EQ(takeCalls(), expected);
  finish();
  EXPECT_EQ(takeCalls(), (Calls{"push context", "stop", "decode", "teardown duplicate", "teardown profiler",
                                "pop context"}));
  EXPECT_EQ(readFile(dir.file("run.fprof.pcs")), core::sassPcLaunchText({1, 0, countedFunctions("_Z4axpyv", 50)}));
  EXPECT_EQ(sassInFirstRun(), "every profiled launch");
  EXPECT_EQ(metadata["sass_duplicate_checkpoints"], "own=1 (at most 4096 bytes) cupti=0");
  EXPECT_EQ(resultOf(1)->counters.dram_read_bytes, 1000);  // the program's own run, counted as before
  // The duplicate ran inside a window of the context's own kernels (CUPTI's context id 7): the
  // fake clock gave its window 1100-1200.
  EXPECT_TRUE(windows.covers(7, 1101, 1199));
  EXPECT_FALSE(windows.covers(7, 1201, 1250));
}

// Under `fprof run` the counts go into the run's own folder (FPROF_CUBIN_DIR): a file of the
// user's named like them beside the database is not touched.
TEST_F(DuplicateLaunch, WritesItsCountsInTheRunsFolderNotBesideTheDatabase) {
  std::filesystem::create_directories(dir.file("work"));
  config.cubin_dir = dir.file("work");
  std::ofstream(dir.file("run.fprof.pcs")) << "a file of the user's";
  ASSERT_TRUE(startWithDatabase());
  launch("_Z4axpyv", 1, 11);
  finish();
  EXPECT_EQ(readFile(dir.file("work/run.fprof.pcs")), core::sassPcLaunchText({1, 0, countedFunctions("_Z4axpyv", 50)}));
  EXPECT_EQ(readFile(dir.file("run.fprof.pcs")), "a file of the user's");
}

TEST_F(DuplicateLaunch, ALaunchFprofCannotRepeatStopsThemForTheRun) {
  ASSERT_TRUE(startWithDatabase());
  LaunchRequest r = launchOf("_Z4axpyv", 1, 11);
  r.cbid = CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch;
  launch(r);
  launch("_Z4gemmv", 2, 12);
  finish();
  EXPECT_EQ(sassInFirstRun(), "stopped: a launch by a driver call fprof cannot repeat (axpy()) (after 0 profiled "
                              "launches)");
  EXPECT_TRUE(noted("info", "SASS counts (FLOPs, instructions) stop being counted in this run"));
  EXPECT_EQ(std::count_if(backend.calls.begin(), backend.calls.end(),
                          [](const std::string& c) { return c.rfind("duplicate ", 0) == 0; }),
            0);
  EXPECT_EQ(resultOf(2)->counters.dram_read_bytes, 1000);
}

TEST_F(DuplicateLaunch, ACheckpointThroughHostMemoryStopsThem) {
  backend.script.free_bytes = size_t{30} << 30;  // 50 of 80 GiB held: no room for a copy
  ASSERT_TRUE(startWithDatabase());
  launch("_Z4axpyv", 1, 11);
  finish();
  EXPECT_EQ(sassInFirstRun(), "stopped: the program holds 50.0 of the device's 80.0 GiB: a checkpoint of it would go "
                              "through host memory, about a second a GB (after 0 profiled launches)");
}

TEST_F(DuplicateLaunch, ASlowDuplicateIsKeptAndStopsTheRest) {
  backend.script.duplicate_seconds.save = 0.4;
  backend.script.duplicate_seconds.restore = 0.2;
  ASSERT_TRUE(startWithDatabase());
  launch("_Z4axpyv", 1, 11);
  launch("_Z4gemmv", 2, 12);
  finish();
  EXPECT_EQ(sassInFirstRun(), "stopped: a duplicate took 600 ms (checkpoint save 400, restore 200) (after 1 profiled "
                              "launches)");
  EXPECT_EQ(readFile(dir.file("run.fprof.pcs")), core::sassPcLaunchText({1, 0, countedFunctions("_Z4axpyv", 50)}));
}

TEST_F(DuplicateLaunch, AFailedOrEmptyCountStopsThem) {
  backend.script.duplicate_count_ok = false;
  ASSERT_TRUE(startWithDatabase());
  launch("_Z4axpyv", 1, 11);
  finish();
  EXPECT_EQ(sassInFirstRun(), "stopped: cuptiCheckpointSave failed (axpy()) (after 0 profiled launches)");
}

TEST_F(DuplicateLaunch, ADuplicateThatCountedNoInstructionStopsThem) {
  backend.script.duplicate_warp_inst = 0;
  ASSERT_TRUE(startWithDatabase());
  launch("_Z4axpyv", 1, 11);
  finish();
  EXPECT_EQ(sassInFirstRun(), "stopped: the SASS Metrics API counted no instruction of a duplicate (axpy()) (after 0 "
                              "profiled launches)");
  EXPECT_EQ(readFile(dir.file("run.fprof.pcs")), "");
}

TEST_F(DuplicateLaunch, WithoutTheCheckpointApiTheContextCountsWithoutThem) {
  backend.script.duplicate_setup_ok = false;
  ASSERT_TRUE(startWithDatabase());
  launch("_Z4axpyv", 1, 11);
  finish();
  EXPECT_EQ(sassInFirstRun(), "stopped: libcheckpoint.so could not be loaded (after 0 profiled launches)");
  EXPECT_EQ(metadata["replay_mode"], "application");
  EXPECT_EQ(resultOf(1)->counters.dram_read_bytes, 1000);
}

TEST_F(DuplicateLaunch, KernelReplayHasNone) {
  backend.script.passes = 7;
  ASSERT_TRUE(startWithDatabase());
  launch("_Z4axpyv", 1, 11);
  finish();
  EXPECT_EQ(sassInFirstRun(), "stopped: the range profiler counts under kernel replay here (after 0 profiled launches)");
  EXPECT_EQ(metadata["replay_mode"], "kernel");
}

}  // namespace
}  // namespace fprof::collector::testing
