// The collector's callback work end to end without CUPTI: launch and NVTX callbacks on one or
// more threads into the TraceRecorder, the writer's collect, then hand-built kernel records
// through the translator. What a kernel row says (launch API, thread, NVTX range and path,
// arguments) and what the range records say must be what the callbacks said.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "trace/trace_recorder.h"

namespace fprof::collector {
namespace {

const int kModelDomain = 0;
const int kIoDomain = 0;
const void* const kModel = &kModelDomain;
const void* const kIo = &kIoDomain;

uint32_t fixedThread() { return 4242; }

struct Harness {
  explicit Harness(TraceRecorder::Options options = {}) : recorder(options) {}
  TraceRecorder recorder;
  Translator translator;
  std::vector<core::NvtxRangeRecord> ranges;
  TranslatedBatch batch;

  void collect() { recorder.collect(translator, ranges); }

  // The kernel record CUPTI would deliver for `correlation` (graph nodes: node ids 1..n).
  void kernel(uint32_t correlation, uint32_t graph_node = 0) {
    CUpti_ActivityKernel10 k{};
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.correlationId = correlation;
    k.name = "_Z6kernelPfS_";
    k.start = 1000 + uint64_t{correlation} * 10 + graph_node;
    k.end = k.start + 5;
    k.graphNodeId = graph_node;
    k.localMemoryPerThread = 24;
    translator.translate(reinterpret_cast<const CUpti_Activity&>(k), batch);
  }
  const core::KernelRecord& kernelOf(uint32_t correlation) const {
    for (const core::KernelRecord& k : batch.kernels) {
      if (k.correlation_id == correlation) return k;
    }
    throw std::runtime_error("no kernel " + std::to_string(correlation));
  }
  std::vector<core::KernelArgRecord> argsOf(uint32_t correlation) const {
    std::vector<core::KernelArgRecord> out;
    for (const core::KernelArgRecord& a : batch.kernel_args) {
      if (a.correlation_id == correlation) out.push_back(a);
    }
    return out;
  }
  // Each range's last record: what the store keeps (INSERT OR REPLACE, in order).
  std::map<uint64_t, core::NvtxRangeRecord> rangesByKey() const {
    std::map<uint64_t, core::NvtxRangeRecord> out;
    for (const auto& r : ranges) out[r.key] = r;
    return out;
  }
};

// `<<<>>>` on CUDA 13: the runtime callback, the driver callback inside it. The kernel record
// carries the driver call's correlation id, correlation + 1.
void runtimeLaunch(TraceRecorder& r, uint32_t correlation, const FunctionInfo* f, void** params,
                   void** extra = nullptr) {
  EXPECT_EQ(r.enterLaunch(LaunchCall{correlation, "__cudaLaunchKernel", false, false}), nullptr);
  const OpenLaunch* open = r.enterLaunch(LaunchCall{correlation + 1, "cuLaunchKernel", true, false});
  ASSERT_NE(open, nullptr);
  EXPECT_EQ(open->correlation_id, correlation);
  EXPECT_EQ(open->nested_correlation_id, correlation + 1);
  r.submitLaunch(f, params, extra);
  r.exitLaunch();
  r.exitLaunch();
}

void driverLaunch(TraceRecorder& r, uint32_t correlation, const FunctionInfo* f, void** params,
                  bool programmatic = false) {
  const OpenLaunch* open = r.enterLaunch(LaunchCall{correlation, "cuLaunchKernelEx", true, false});
  ASSERT_NE(open, nullptr);
  EXPECT_EQ(open->nested_correlation_id, 0u);
  r.submitLaunch(f, params, nullptr, programmatic);
  r.exitLaunch();
}

struct Args {
  FunctionInfo info;
  uint64_t values[4] = {0x7f0000001000ULL, 7, 0x7f0000002000ULL, 0x7f0000003000ULL};
  void* params[4] = {&values[0], &values[1], &values[2], &values[3]};
  Args() {
    info.local_bytes_per_thread = 256;
    info.eight_byte_params = {{0, 0}, {2, 16}, {3, 24}};
  }
};

// Launches of every kind, inside and outside NVTX ranges: the runtime's (with the driver call inside),
// the driver's, a runtime launch without its driver callback, a graph launch, and arguments from a
// parameter buffer too short for the last one.
void recordLaunchesOfEveryKind(TraceRecorder& r, Args& a) {
  runtimeLaunch(r, 10, &a.info, a.params);  // no range open
  r.pushRange(nullptr, NvtxText{"step"}, std::nullopt, 100);
  r.pushRange(kModel, NvtxText{"layer0"}, 42, 110);
  runtimeLaunch(r, 20, &a.info, a.params);
  // A function the driver could not describe, launched with programmatic stream serialization.
  driverLaunch(r, 30, nullptr, nullptr, true);
  // A runtime launch whose driver callback never came: queued at the runtime EXIT.
  EXPECT_EQ(r.enterLaunch(LaunchCall{40, "cudaLaunchKernel", false, false}), nullptr);
  r.exitLaunch();
  // A graph launch: one launch, a record per kernel node, no arguments.
  EXPECT_EQ(r.enterLaunch(LaunchCall{50, "cudaGraphLaunch", false, true}), nullptr);
  const OpenLaunch* graph = r.enterLaunch(LaunchCall{51, "cuGraphLaunch", true, true});
  ASSERT_NE(graph, nullptr);
  EXPECT_TRUE(graph->graph_launch);
  r.submitLaunch(nullptr, nullptr, nullptr);
  r.exitLaunch();
  r.exitLaunch();
  r.popRange(kModel, 120);
  // Arguments from a CU_LAUNCH_PARAM_BUFFER_POINTER buffer too short for the last one.
  uint8_t buffer[24] = {};
  std::memcpy(buffer, &a.values[0], 8);
  std::memcpy(buffer + 16, &a.values[2], 8);
  size_t buffer_bytes = sizeof buffer;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &buffer_bytes,
                   CU_LAUNCH_PARAM_END};
  runtimeLaunch(r, 60, &a.info, nullptr, extra);
  r.popRange(nullptr, 130);
}

TEST(TraceRecorder, LaunchesCarryTheirApiArgumentsAndNvtxContext) {
  TraceRecorder::Options options;
  options.thread_id = &fixedThread;
  Harness h(options);
  TraceRecorder& r = h.recorder;
  r.registerDomain(kModel, "model");
  Args a;
  ASSERT_NO_FATAL_FAILURE(recordLaunchesOfEveryKind(r, a));

  h.collect();
  for (uint32_t c : {11u, 21u, 30u, 40u, 61u}) h.kernel(c);
  h.kernel(51, 1);
  h.kernel(51, 2);
  EXPECT_EQ(h.translator.stats().unmatched_kernels, 0u);

  const core::KernelRecord& first = h.kernelOf(11);
  EXPECT_EQ(first.launch_api, "__cudaLaunchKernel");
  EXPECT_EQ(first.thread_id, 4242u);
  EXPECT_EQ(first.nvtx_path, "");
  EXPECT_FALSE(first.nvtx_range_key.has_value());
  EXPECT_EQ(first.local_bytes_per_thread, 256);  // the function's, not the record's 24
  const auto args = h.argsOf(11);
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(args[0].index, 0);
  EXPECT_EQ(args[0].value, 0x7f0000001000ULL);
  EXPECT_EQ(args[1].index, 2);
  EXPECT_EQ(args[1].offset_bytes, 16);
  EXPECT_EQ(args[2].value, 0x7f0000003000ULL);

  const auto byKey = h.rangesByKey();
  ASSERT_EQ(byKey.size(), 2u);
  const uint64_t step_key = byKey.begin()->first, layer_key = std::next(byKey.begin())->first;
  const core::KernelRecord& inner = h.kernelOf(21);
  EXPECT_EQ(inner.nvtx_path, "step/model::layer0");
  EXPECT_EQ(inner.nvtx_range_key, std::optional<uint64_t>(layer_key));
  EXPECT_EQ(h.argsOf(21).size(), 3u);
  const core::KernelRecord& driver = h.kernelOf(30);
  EXPECT_EQ(driver.launch_api, "cuLaunchKernelEx");
  EXPECT_EQ(driver.nvtx_path, "step/model::layer0");
  EXPECT_EQ(driver.local_bytes_per_thread, 256);  // no function facts: the same kernel's, learnt earlier
  EXPECT_TRUE(h.argsOf(30).empty());
  EXPECT_TRUE(driver.programmatic_launch);
  EXPECT_FALSE(first.programmatic_launch);
  EXPECT_FALSE(inner.programmatic_launch);
  const core::KernelRecord& no_driver = h.kernelOf(40);
  EXPECT_EQ(no_driver.launch_api, "cudaLaunchKernel");
  EXPECT_EQ(no_driver.local_bytes_per_thread, 256);  // learnt from an earlier launch of the same kernel
  int graph_nodes = 0;
  for (const core::KernelRecord& k : h.batch.kernels) {
    if (k.correlation_id != 51) continue;
    ++graph_nodes;
    EXPECT_EQ(k.launch_api, "cudaGraphLaunch");
    EXPECT_EQ(k.nvtx_path, "step/model::layer0");
  }
  EXPECT_EQ(graph_nodes, 2);
  const core::KernelRecord& buffered = h.kernelOf(61);
  EXPECT_EQ(buffered.nvtx_path, "step");
  EXPECT_EQ(buffered.nvtx_range_key, std::optional<uint64_t>(step_key));
  const auto buffered_args = h.argsOf(61);
  ASSERT_EQ(buffered_args.size(), 2u);  // offset 24 + 8 is past the 24-byte buffer
  EXPECT_EQ(buffered_args[1].value, 0x7f0000002000ULL);

  const core::NvtxRangeRecord& layer = byKey.at(layer_key);
  EXPECT_EQ(layer.domain, "model");
  EXPECT_EQ(layer.message, "layer0");
  EXPECT_EQ(layer.payload, std::optional<uint64_t>(42));
  EXPECT_EQ(layer.parent_key, std::optional<uint64_t>(step_key));
  EXPECT_EQ(layer.depth, 1);
  EXPECT_EQ(layer.start_ns, 110);
  EXPECT_EQ(layer.end_ns, std::optional<int64_t>(120));
  EXPECT_EQ(layer.thread_id, 4242u);
  EXPECT_EQ(byKey.at(step_key).end_ns, std::optional<int64_t>(130));
}

// cuBLAS's nvjet GEMMs pass one 1720-byte struct whose pointers sit at offsets 176-496: the first
// 16 words a launch records of a larger parameter miss them. Once the argument-role probe found
// them, every later launch records them too (and only words inside their parameter, once each).
TEST(TraceRecorder, WordsTheProbeFoundPointersInAreRecordedFromTheNextLaunchOn) {
  TraceRecorder::Options options;
  options.thread_id = &fixedThread;
  Harness h(options);
  TraceRecorder& r = h.recorder;
  FunctionInfo info;
  info.params = {{0, 1720}};
  for (int32_t at = 0; at < 128; at += 8) info.eight_byte_params.push_back({0, at, at, 1720});
  std::vector<uint8_t> param(1720, 0);
  auto put = [&](int32_t at, uint64_t v) { std::memcpy(param.data() + at, &v, 8); };
  put(0, 0x4200000042ULL);  // packed sizes: above 4 GiB, so recorded, but no address
  put(176, 0x7f0000100000ULL);
  put(240, 0x7f0000200000ULL);
  put(328, 0x7f0000300000ULL);
  void* params[1] = {param.data()};

  const std::vector<std::pair<int32_t, int32_t>> found = {{0, 176}, {0, 240}, {0, 328}, {0, 176}, {0, 8}, {0, 1720},
                                                          {1, 0}};
  const std::vector<FunctionInfo::Param> words = probedPointerWords(info, found);
  ASSERT_EQ(words.size(), 3u) << "176, 240, 328: not 8 (already read), 1720 (past the parameter), index 1 (none)";
  EXPECT_EQ(words[2].offset_bytes, 328);
  EXPECT_EQ(words[2].within_bytes, 328);
  EXPECT_EQ(words[2].param_bytes, 1720);

  driverLaunch(r, 10, &info, params);  // the probed launch itself: before the probe's result
  info.probed.words.store(&words);
  driverLaunch(r, 20, &info, params);
  h.collect();
  h.kernel(10);
  h.kernel(20);
  EXPECT_EQ(h.argsOf(10).size(), 1u);
  const auto args = h.argsOf(20);
  ASSERT_EQ(args.size(), 4u);
  EXPECT_EQ(args[1].offset_bytes, 176);
  EXPECT_EQ(args[1].size_bytes, 1720);
  EXPECT_EQ(args[3].offset_bytes, 328);
  EXPECT_EQ(args[3].value, 0x7f0000300000ULL);
}

TEST(TraceRecorder, RangesSpanningCollectionsAreWrittenOpenThenClosed) {
  Harness h;
  h.recorder.pushRange(nullptr, NvtxText{"epoch"}, std::nullopt, 5);
  h.collect();
  ASSERT_EQ(h.ranges.size(), 1u);
  EXPECT_FALSE(h.ranges[0].end_ns.has_value());  // a crash now keeps it, open
  h.ranges.clear();
  h.recorder.popRange(nullptr, 9);
  h.recorder.popRange(nullptr, 10);  // one too many
  h.collect();
  ASSERT_EQ(h.ranges.size(), 1u);
  EXPECT_EQ(h.ranges[0].message, "epoch");
  EXPECT_EQ(h.ranges[0].end_ns, std::optional<int64_t>(9));
  EXPECT_EQ(h.recorder.unmatchedPops(), 1u);
}

TEST(TraceRecorder, EachThreadHasItsOwnStackAndStartEndRangesAreShared) {
  Harness h;
  TraceRecorder& r = h.recorder;
  r.registerDomain(kIo, "io");
  r.registerString(kModel, "op=registered");
  r.pushRange(nullptr, NvtxText{"main"}, std::nullopt, 1);
  r.startRange(9001, kIo, NvtxText{"epoch"}, 3, 2);
  std::thread worker([&] {
    r.pushRange(kModel, NvtxText{{}, kModel}, std::nullopt, 3);  // a registered string
    driverLaunch(r, 100, nullptr, nullptr);
    r.popRange(kModel, 4);
  });
  worker.join();
  driverLaunch(r, 200, nullptr, nullptr);
  r.endRange(9001, 5);
  driverLaunch(r, 300, nullptr, nullptr);
  std::thread second([&] { driverLaunch(r, 400, nullptr, nullptr); });
  second.join();
  r.popRange(nullptr, 6);

  h.collect();
  for (uint32_t c : {100u, 200u, 300u, 400u}) h.kernel(c);
  EXPECT_EQ(h.kernelOf(100).nvtx_path, "io::epoch/<unknown domain>::op=registered");
  EXPECT_EQ(h.kernelOf(200).nvtx_path, "io::epoch/main");
  EXPECT_EQ(h.kernelOf(300).nvtx_path, "main");
  EXPECT_EQ(h.kernelOf(400).nvtx_path, "");
  EXPECT_FALSE(h.kernelOf(400).nvtx_range_key.has_value());
  std::set<uint32_t> threads;
  for (uint32_t c : {100u, 200u, 400u}) threads.insert(h.kernelOf(c).thread_id);
  EXPECT_EQ(threads.size(), 3u);
  EXPECT_EQ(h.kernelOf(200).thread_id, h.kernelOf(300).thread_id);

  const auto byKey = h.rangesByKey();
  ASSERT_EQ(byKey.size(), 3u);
  int start_end = 0;
  for (const auto& [key, range] : byKey) {
    if (range.push_pop) {
      EXPECT_TRUE(range.end_ns.has_value()) << range.message;
      continue;
    }
    ++start_end;
    EXPECT_EQ(range.domain, "io");
    EXPECT_EQ(range.message, "epoch");
    EXPECT_EQ(range.payload, std::optional<uint64_t>(3));
    EXPECT_EQ(range.end_ns, std::optional<int64_t>(5));
    EXPECT_EQ(h.kernelOf(400).nvtx_range_key, std::nullopt);
    EXPECT_NE(h.kernelOf(200).nvtx_range_key, std::optional<uint64_t>(key));  // push/pop is innermost
  }
  EXPECT_EQ(start_end, 1);
  EXPECT_EQ(byKey.rbegin()->second.message, "op=registered");
}

TEST(TraceRecorder, AnExitedThreadsEventsAreStillRead) {
  Harness h;
  TraceRecorder& r = h.recorder;
  for (uint32_t i = 0; i < 3; ++i) {
    std::thread t([&, i] {
      r.pushRange(nullptr, NvtxText{"left open"}, std::nullopt, 1);
      driverLaunch(r, 10 + i, nullptr, nullptr);
    });
    t.join();
    h.collect();  // the thread's state is freed once read
  }
  for (uint32_t i = 0; i < 3; ++i) h.kernel(10 + i);
  EXPECT_EQ(h.translator.stats().unmatched_kernels, 0u);
  EXPECT_EQ(h.kernelOf(12).nvtx_path, "left open");
  ASSERT_EQ(h.ranges.size(), 3u);
  for (const auto& range : h.ranges) EXPECT_FALSE(range.end_ns.has_value());
  SelfTimingTotals totals;
  r.addTotals(totals);
  EXPECT_EQ(totals.threads, 3u);
  EXPECT_EQ(totals.launches, 3u);
  EXPECT_EQ(totals.nvtx_events, 3u);
}

TEST(TraceRecorder, ThreadsLaunchWhileTheWriterCollects) {
  Harness h;
  TraceRecorder& r = h.recorder;
  r.registerDomain(kModel, "model");
  constexpr uint32_t kThreads = 2, kLaunches = 20000;
  std::atomic<int> running{kThreads};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string message = "op=layer layer=" + std::to_string(t);
      for (uint32_t i = 0; i < kLaunches; ++i) {
        r.pushRange(kModel, NvtxText{message}, i, i);
        driverLaunch(r, 1 + t * kLaunches + i, nullptr, nullptr);
        r.popRange(kModel, i);
      }
      running.fetch_sub(1);
    });
  }
  while (running.load() > 0) h.collect();
  for (std::thread& t : threads) t.join();
  h.collect();
  for (uint32_t c = 1; c <= kThreads * kLaunches; ++c) h.kernel(c);
  EXPECT_EQ(h.translator.stats().unmatched_kernels, 0u);
  EXPECT_EQ(h.kernelOf(1).nvtx_path, "model::op=layer layer=0");
  EXPECT_EQ(h.kernelOf(kLaunches + 7).nvtx_path, "model::op=layer layer=1");
  // A range a collect saw open also has an open record before its closed one (a crash keeps
  // it): every range ends closed, with its pop's time, and is closed exactly once.
  const auto byKey = h.rangesByKey();
  EXPECT_EQ(byKey.size(), size_t{kThreads} * kLaunches);
  for (const auto& [key, range] : byKey) {
    ASSERT_EQ(range.end_ns, std::optional<int64_t>(range.start_ns)) << "range " << key;
    EXPECT_EQ(range.payload, std::optional<uint64_t>(range.start_ns)) << "range " << key;
  }
  size_t closed_records = 0;
  for (const auto& range : h.ranges) closed_records += range.end_ns.has_value() ? 1 : 0;
  EXPECT_EQ(closed_records, size_t{kThreads} * kLaunches);
  EXPECT_EQ(r.unmatchedPops(), 0u);
}

// What the test above meets at random, made certain: a collect between a push and its pop on
// another thread, which then exits.
TEST(TraceRecorder, ARangeOpenAtACollectIsWrittenOpenThenClosedByItsExitedThread) {
  Harness h;
  TraceRecorder& r = h.recorder;
  std::atomic<int> step{0};
  std::thread worker([&] {
    r.pushRange(kModel, NvtxText{"op=attention"}, std::nullopt, 10);
    step.store(1);
    while (step.load() != 2) std::this_thread::yield();
    r.popRange(kModel, 20);
  });
  while (step.load() != 1) std::this_thread::yield();
  h.collect();
  ASSERT_EQ(h.ranges.size(), 1u);
  EXPECT_FALSE(h.ranges[0].end_ns.has_value());
  step.store(2);
  worker.join();
  h.collect();
  ASSERT_EQ(h.ranges.size(), 2u);
  EXPECT_EQ(h.ranges[1].key, h.ranges[0].key);
  EXPECT_EQ(h.ranges[1].start_ns, 10);
  EXPECT_EQ(h.ranges[1].end_ns, std::optional<int64_t>(20));
  EXPECT_EQ(h.rangesByKey().at(h.ranges[0].key).end_ns, std::optional<int64_t>(20));
  EXPECT_EQ(r.unmatchedPops(), 0u);
}

// A library's per-thread cleanup (a pthread key destructor) that ends a range or launches while
// the thread exits. Ours may run before it, in the same round or an earlier one.
struct ExitCleanup {
  TraceRecorder* recorder = nullptr;
  pthread_key_t key{};
  int calls = 0;
};
ExitCleanup g_exit_cleanup;

void cleanUpAtThreadExit(void*) {
  ExitCleanup& c = g_exit_cleanup;
  if (++c.calls == 1) {
    c.recorder->popRange(kIo, 30);
    // Again in the next round, after the recorder's first round whatever the keys' order.
    pthread_setspecific(c.key, &c);
    return;
  }
  driverLaunch(*c.recorder, 77, nullptr, nullptr);
  c.recorder->popRange(nullptr, 40);
}

TEST(TraceRecorder, RangesEndedWhileTheThreadExitsAreMatched) {
  Harness h;
  TraceRecorder& r = h.recorder;
  r.registerDomain(kIo, "io");
  g_exit_cleanup = ExitCleanup{&r};
  ASSERT_EQ(pthread_key_create(&g_exit_cleanup.key, &cleanUpAtThreadExit), 0);
  std::thread worker([&] {
    r.pushRange(nullptr, NvtxText{"worker"}, std::nullopt, 10);
    r.pushRange(kIo, NvtxText{"flush"}, std::nullopt, 20);
    pthread_setspecific(g_exit_cleanup.key, &g_exit_cleanup);
  });
  worker.join();
  pthread_key_delete(g_exit_cleanup.key);
  ASSERT_EQ(g_exit_cleanup.calls, 2);
  h.collect();
  h.collect();  // the state, retired in its last exit round, is freed
  h.kernel(77);
  EXPECT_EQ(h.kernelOf(77).nvtx_path, "worker");
  EXPECT_EQ(r.unmatchedPops(), 0u);
  std::map<std::string, core::NvtxRangeRecord> byMessage;
  for (const auto& [key, range] : h.rangesByKey()) byMessage[range.message] = range;
  ASSERT_EQ(byMessage.size(), 2u);
  EXPECT_EQ(byMessage.at("flush").end_ns, std::optional<int64_t>(30));
  EXPECT_EQ(byMessage.at("worker").end_ns, std::optional<int64_t>(40));
  SelfTimingTotals totals;
  r.addTotals(totals);
  EXPECT_EQ(totals.threads, 1u);  // one state for the whole thread, exit included
  EXPECT_EQ(totals.launches, 1u);
}

TEST(TraceRecorder, PathsOnThreadsForMetricsMode) {
  TraceRecorder::Options options;
  options.paths_on_threads = true;
  Harness h(options);
  TraceRecorder& r = h.recorder;
  r.registerDomain(kModel, "model");
  EXPECT_NE(r.enterLaunch(LaunchCall{1, "cuLaunchKernel", true, false}), nullptr);
  EXPECT_EQ(r.openLaunchNvtxPath(), nullptr);
  r.submitLaunch(nullptr, nullptr, nullptr);
  r.exitLaunch();
  r.startRange(77, nullptr, NvtxText{"run"}, std::nullopt, 1);
  r.pushRange(kModel, NvtxText{"op=matmul"}, std::nullopt, 2);
  EXPECT_NE(r.enterLaunch(LaunchCall{2, "cuLaunchKernel", true, false}), nullptr);
  ASSERT_NE(r.openLaunchNvtxPath(), nullptr);
  EXPECT_EQ(*r.openLaunchNvtxPath(), "run/model::op=matmul");
  r.submitLaunch(nullptr, nullptr, nullptr);
  r.exitLaunch();
  r.popRange(kModel, 3);
  EXPECT_NE(r.enterLaunch(LaunchCall{3, "cuLaunchKernel", true, false}), nullptr);
  EXPECT_EQ(*r.openLaunchNvtxPath(), "run");
  r.submitLaunch(nullptr, nullptr, nullptr);
  r.exitLaunch();
  h.collect();
  for (uint32_t c : {1u, 2u, 3u}) h.kernel(c);
  EXPECT_EQ(h.kernelOf(2).nvtx_path, "run/model::op=matmul");  // the writer agrees
  EXPECT_EQ(h.kernelOf(3).nvtx_path, "run");
}

// --nvtx-scope process: a range matching the selection, pushed on one thread, selects the launches
// of another thread while it is open (PyTorch's step range on the main thread, the backward on
// autograd's thread), and no longer once it is popped or its thread has exited.
TEST(TraceRecorder, ARangeOpenOnAnotherThreadSelects) {
  TraceRecorder::Options options;
  options.paths_on_threads = true;
  options.selects_path = [](const std::string& path) { return path.find("train_step") != std::string::npos; };
  Harness h(options);
  TraceRecorder& r = h.recorder;
  auto elsewhere = [&r] {
    bool seen = false;
    std::thread([&] { seen = r.anotherThreadSelects(); }).join();
    return seen;
  };
  EXPECT_FALSE(elsewhere());
  r.pushRange(nullptr, NvtxText{"warmup_step i=0"}, std::nullopt, 1);
  EXPECT_FALSE(elsewhere());
  r.popRange(nullptr, 2);
  r.pushRange(nullptr, NvtxText{"train_step i=1"}, std::nullopt, 3);
  EXPECT_TRUE(elsewhere());
  EXPECT_FALSE(r.anotherThreadSelects());  // this thread's own path selects; it is not "another"
  r.pushRange(nullptr, NvtxText{"forward"}, std::nullopt, 4);  // nested: still inside the step
  EXPECT_TRUE(elsewhere());
  r.popRange(nullptr, 5);
  r.popRange(nullptr, 6);
  EXPECT_FALSE(elsewhere());
  // A thread that exits inside a selecting range stops selecting.
  std::thread([&r] { r.pushRange(nullptr, NvtxText{"train_step i=2"}, std::nullopt, 7); }).join();
  EXPECT_FALSE(r.anotherThreadSelects());
}

// Without selects_path nothing is tracked.
TEST(TraceRecorder, NoProcessSelectionWhenNotAsked) {
  TraceRecorder::Options options;
  options.paths_on_threads = true;
  Harness h(options);
  h.recorder.pushRange(nullptr, NvtxText{"train_step i=1"}, std::nullopt, 1);
  bool seen = true;
  std::thread([&] { seen = h.recorder.anotherThreadSelects(); }).join();
  EXPECT_FALSE(seen);
}

TEST(TraceRecorder, SelfTimingCountsTheCallbacksWhenOn) {
  setSelfTimingEnabled(true);
  Harness h;
  TraceRecorder& r = h.recorder;
  for (uint32_t i = 0; i < 5; ++i) {
    r.pushRange(nullptr, NvtxText{"x"}, std::nullopt, i);
    driverLaunch(r, 1 + i, nullptr, nullptr);
    r.popRange(nullptr, i);
  }
  setSelfTimingEnabled(false);
  driverLaunch(r, 6, nullptr, nullptr);  // not timed
  h.collect();
  SelfTimingTotals totals;
  r.addTotals(totals);
  EXPECT_EQ(totals.launches, 6u);
  EXPECT_EQ(totals.nvtx_events, 10u);
  EXPECT_EQ(totals.app_calls[static_cast<size_t>(AppTimer::kLaunchContext)], 5u);
  EXPECT_EQ(totals.app_calls[static_cast<size_t>(AppTimer::kArgumentCapture)], 5u);
  EXPECT_EQ(totals.app_calls[static_cast<size_t>(AppTimer::kNvtxQueueing)], 10u);
  EXPECT_GT(totals.event_bytes, 0u);
  const std::string text = selfTimingText(totals);
  EXPECT_NE(text.find("self-timing:   launch_context"), std::string::npos) << text;
  EXPECT_NE(text.find("6 launches, 10 NVTX events"), std::string::npos) << text;
  const std::string json = selfTimingJson(totals);
  EXPECT_EQ(json.front(), '{');
  EXPECT_NE(json.find("\"nvtx_queueing\":{\"ns\":"), std::string::npos) << json;
  EXPECT_NE(json.find("\"final_write\":{\"ns\":0,\"calls\":0"), std::string::npos) << json;
}

}  // namespace
}  // namespace fprof::collector
