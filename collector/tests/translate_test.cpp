// The translator fed hand-built CUPTI 13.0 records (Kernel10, Memcpy6, Memset4, Memory4), in
// shuffled order and with duplicates: the output must not depend on either.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "fprof/core/occupancy.h"
#include "trace/translate.h"

namespace fprof::collector {
namespace {

const char kKernelName[] = "_Z7stencilPKfPfi";
const char kGraphKernelName[] = "_ZN5graph4stepILi4EEEvPf";
const char kCKernelName[] = "plain_c_kernel";
const char kOrphanName[] = "_Z6orphanv";

core::DeviceInfo h100() {
  core::DeviceInfo d;
  d.id = 0;
  d.name = "NVIDIA H100 80GB HBM3";
  d.compute_major = 9;
  d.compute_minor = 0;
  d.sm_count = 132;
  d.max_threads_per_sm = 2048;
  d.max_threads_per_block = 1024;
  d.regs_per_sm = 65536;
  d.regs_per_block = 65536;
  d.warp_size = 32;
  d.shared_per_sm_bytes = 233472;
  d.shared_per_block_bytes = 49152;
  d.shared_per_block_optin_bytes = 232448;
  d.reserved_shared_per_block_bytes = 1024;
  return d;
}

// Records live in one owning vector of raw storage so tests can shuffle pointers to them.
struct Records {
  std::vector<std::unique_ptr<uint8_t[]>> storage;
  std::vector<const CUpti_Activity*> order;

  template <class T>
  T& add() {
    storage.emplace_back(new uint8_t[sizeof(T)]());
    T* r = reinterpret_cast<T*>(storage.back().get());
    order.push_back(reinterpret_cast<const CUpti_Activity*>(r));
    return *r;
  }
  template <class T>
  void duplicate(const T& r) {
    storage.emplace_back(new uint8_t[sizeof(T)]);
    std::memcpy(storage.back().get(), &r, sizeof(T));
    order.push_back(reinterpret_cast<const CUpti_Activity*>(storage.back().get()));
  }
};

CUpti_ActivityKernel10& addKernel(Records& recs, uint32_t correlation, const char* name, uint64_t start,
                                  uint64_t end) {
  auto& k = recs.add<CUpti_ActivityKernel10>();
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.correlationId = correlation;
  k.name = name;
  k.start = start;
  k.end = end;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = 7;
  k.gridX = 120;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 128;
  k.blockY = 2;
  k.blockZ = 1;
  k.registersPerThread = 64;
  k.staticSharedMemory = 0;
  k.dynamicSharedMemory = 0;
  k.localMemoryPerThread = 0;
  k.localMemoryTotal_v2 = 1u << 20;
  k.sharedMemoryExecuted = 233472;
  return k;
}

struct Fixture {
  Records recs;
  std::vector<LaunchInfo> launches;
  std::string path_ab = "model::step/layer0";
  std::string path_graph = "graphs";

  Fixture() {
    addLaunches();
    addKernels();
    addCopiesAndAllocations();
  }

  // A runtime launch (its driver call's id on the record), a graph launch and a driver launch.
  void addLaunches() {
    LaunchInfo runtime;
    runtime.correlation_id = 10;
    runtime.nested_correlation_id = 11;  // the driver call inside <<<>>>; the record carries this one
    runtime.launch_api = "__cudaLaunchKernel";
    runtime.nvtx_key = 5;
    runtime.nvtx_path = &path_ab;
    runtime.thread_id = 4242;
    runtime.local_bytes_per_thread = 256;
    runtime.args = {{0, 0, 8, 0x7f0000001000ULL}, {1, 8, 8, 0x7f0000002000ULL}};
    launches.push_back(runtime);

    LaunchInfo graph;
    graph.correlation_id = 20;
    graph.launch_api = "cudaGraphLaunch";
    graph.graph_launch = true;
    graph.nvtx_key = 9;
    graph.nvtx_path = &path_graph;
    graph.thread_id = 4242;
    launches.push_back(graph);

    LaunchInfo driver;
    driver.correlation_id = 30;
    driver.launch_api = "cuLaunchKernel";
    driver.thread_id = 4343;
    driver.local_bytes_per_thread = 0;
    driver.args = {{2, 16, 8, 0xabcdef}};
    launches.push_back(driver);
  }

  // Their kernels (two graph nodes), and one without a launch.
  void addKernels() {
    addKernel(recs, 11, kKernelName, 1000, 2000);
    auto& g1 = addKernel(recs, 20, kGraphKernelName, 3000, 3500);
    g1.graphId = 3;
    g1.graphNodeId = 101;
    auto& g2 = addKernel(recs, 20, kGraphKernelName, 3600, 4000);
    g2.graphId = 3;
    g2.graphNodeId = 102;
    g2.dynamicSharedMemory = 100 * 1024;
    g2.registersPerThread = 32;
    g2.blockY = 1;
    auto& c = addKernel(recs, 30, kCKernelName, 5000, 5100);
    c.clusterX = 2;
    c.clusterY = 1;
    c.clusterZ = 1;
    c.isSharedMemoryCarveoutRequested = 1;
    c.sharedMemoryCarveoutRequested = 50;
    auto& orphan = addKernel(recs, 99, kOrphanName, 6000, 6100);
    orphan.localMemoryPerThread = 48;
  }

  // A copy, a memset, an allocation and its release, and a kind the translator does not handle.
  void addCopiesAndAllocations() {
    auto& m = recs.add<CUpti_ActivityMemcpy6>();
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.bytes = 4096;
    m.start = 500;
    m.end = 900;
    m.deviceId = 0;
    m.contextId = 1;
    m.streamId = 7;
    m.correlationId = 8;

    auto& s = recs.add<CUpti_ActivityMemset4>();
    s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    s.value = 0xab;
    s.bytes = 1 << 16;
    s.start = 200;
    s.end = 300;
    s.deviceId = 0;
    s.contextId = 1;
    s.streamId = 13;
    s.correlationId = 6;
    s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;

    for (int i = 0; i < 2; ++i) {
      auto& a = recs.add<CUpti_ActivityMemory4>();
      a.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
      a.memoryOperationType =
          i == 0 ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
      a.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
      a.address = 0x7f0000001000ULL;
      a.bytes = 1 << 20;
      a.timestamp = i == 0 ? 100u : 7000u;
      a.deviceId = 0;
      a.contextId = 1;
      a.correlationId = i == 0 ? 3u : 40u;
    }
    // A kind the translator does not handle.
    auto& other = recs.add<CUpti_ActivityMemcpy6>();
    other.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  }
};

TranslatedBatch run(Fixture& f, const std::vector<const CUpti_Activity*>& order, Translator& t) {
  t.setProcessId(1);
  t.addDevice(h100());
  for (const LaunchInfo& l : f.launches) t.addLaunch(l);
  TranslatedBatch out;
  for (const CUpti_Activity* r : order) t.translate(*r, out);
  auto byKey = [](const core::KernelRecord& a, const core::KernelRecord& b) {
    return std::tie(a.correlation_id, a.graph_node_id) < std::tie(b.correlation_id, b.graph_node_id);
  };
  std::sort(out.kernels.begin(), out.kernels.end(), byKey);
  std::sort(out.kernel_args.begin(), out.kernel_args.end(),
            [](auto& a, auto& b) { return std::tie(a.correlation_id, a.index) < std::tie(b.correlation_id, b.index); });
  std::sort(out.memory_events.begin(), out.memory_events.end(),
            [](auto& a, auto& b) { return a.timestamp_ns < b.timestamp_ns; });
  return out;
}

TEST(Translate, KernelFieldsLaunchJoinAndOccupancy) {
  Fixture f;
  Translator t;
  TranslatedBatch out = run(f, f.recs.order, t);
  ASSERT_EQ(out.kernels.size(), 5u);

  const core::KernelRecord& k = out.kernels[0];  // correlation 11: the runtime launch
  EXPECT_EQ(k.correlation_id, 11u);
  EXPECT_EQ(k.process_id, 1u);
  EXPECT_EQ(k.name, kKernelName);
  EXPECT_EQ(k.demangled_name, "stencil(float const*, float*, int)");
  EXPECT_EQ(k.launch_api, "__cudaLaunchKernel");
  EXPECT_EQ(k.nvtx_path, "model::step/layer0");
  EXPECT_EQ(k.nvtx_range_key, std::optional<uint64_t>(5));
  EXPECT_EQ(k.thread_id, 4242u);
  EXPECT_EQ(k.start_ns, 1000);
  EXPECT_EQ(k.end_ns, 2000);
  EXPECT_EQ(k.device_id, 0u);
  EXPECT_EQ(k.context_id, 1u);
  EXPECT_EQ(k.stream_id, 7u);
  EXPECT_EQ(std::tie(k.grid_x, k.grid_y, k.grid_z), std::make_tuple(120, 2, 1));
  EXPECT_EQ(std::tie(k.block_x, k.block_y, k.block_z), std::make_tuple(128, 2, 1));
  EXPECT_EQ(k.registers_per_thread, 64);
  EXPECT_EQ(k.local_bytes_per_thread, 256);  // from the function attribute, not the record's 0
  EXPECT_EQ(k.local_bytes_total, 1 << 20);
  EXPECT_EQ(k.shared_carveout_bytes, 233472);
  EXPECT_EQ(k.graph_id, 0u);
  // 64 regs, 256 threads on H100: 4 blocks/SM, 32 of 64 warps, register-bound.
  EXPECT_EQ(k.theoretical_blocks_per_sm, std::optional<int>(4));
  EXPECT_EQ(k.theoretical_occupancy, std::optional<double>(0.5));
  EXPECT_EQ(k.occupancy_limiter, "registers");

  const core::KernelRecord& g1 = out.kernels[1];
  const core::KernelRecord& g2 = out.kernels[2];
  EXPECT_EQ(g1.graph_node_id, 101u);
  EXPECT_EQ(g2.graph_node_id, 102u);
  for (const auto* g : {&g1, &g2}) {
    EXPECT_EQ(g->graph_id, 3u);
    EXPECT_EQ(g->launch_api, "cudaGraphLaunch");
    EXPECT_EQ(g->nvtx_path, "graphs");
    EXPECT_EQ(g->demangled_name, "void graph::step<4>(float*)");
  }
  // 100 KiB dynamic + 1 KiB reserved per block: 2 blocks of 4 warps in 228 KiB.
  EXPECT_EQ(g2.theoretical_blocks_per_sm, std::optional<int>(2));
  EXPECT_EQ(g2.occupancy_limiter, "shared");
  EXPECT_EQ(g2.theoretical_occupancy, std::optional<double>(8.0 / 64.0));

  const core::KernelRecord& c = out.kernels[3];
  EXPECT_EQ(c.demangled_name, kCKernelName);  // C names stay as they are
  EXPECT_EQ(c.launch_api, "cuLaunchKernel");
  EXPECT_EQ(c.nvtx_path, "");
  EXPECT_FALSE(c.nvtx_range_key.has_value());
  EXPECT_EQ(std::tie(c.cluster_x, c.cluster_y, c.cluster_z), std::make_tuple(2, 1, 1));
  // 50% carveout = 114 KiB -> 132 KiB config; 1 KiB per block, registers still bind at 4.
  EXPECT_EQ(c.theoretical_blocks_per_sm, std::optional<int>(4));

  const core::KernelRecord& orphan = out.kernels[4];
  EXPECT_EQ(orphan.correlation_id, 99u);
  EXPECT_EQ(orphan.launch_api, "");
  EXPECT_EQ(orphan.local_bytes_per_thread, 48);  // no launch info, kernel never seen: the record's value
  // The runtime launch's record said 0 where the function attribute said 256.
  EXPECT_EQ(t.stats().local_memory_mismatches, 1u);
  EXPECT_EQ(t.stats().local_memory_example, std::string(kKernelName) + ": record 0 B, attribute 256 B");
  EXPECT_EQ(t.stats().unmatched_kernels, 1u);
  EXPECT_EQ(t.stats().ignored_records, 1u);

  ASSERT_EQ(out.kernel_args.size(), 3u);
  EXPECT_EQ(out.kernel_args[0].correlation_id, 11u);  // joins the kernel record, not the outer API
  EXPECT_EQ(out.kernel_args[0].value, 0x7f0000001000ULL);
  EXPECT_EQ(out.kernel_args[1].offset_bytes, 8);
  EXPECT_EQ(out.kernel_args[1].value, 0x7f0000002000ULL);
  EXPECT_EQ(out.kernel_args[2].correlation_id, 30u);
  EXPECT_EQ(out.kernel_args[2].index, 2);
  EXPECT_EQ(out.kernel_args[2].offset_bytes, 16);
  EXPECT_EQ(out.kernel_args[2].size_bytes, 8);
}

TEST(Translate, MemcpyMemsetMemory) {
  Fixture f;
  Translator t;
  TranslatedBatch out = run(f, f.recs.order, t);
  ASSERT_EQ(out.memcpys.size(), 1u);
  const auto& m = out.memcpys[0];
  EXPECT_EQ(m.copy_kind, "HtoD");
  EXPECT_EQ(m.src_kind, "pageable");
  EXPECT_EQ(m.dst_kind, "device");
  EXPECT_EQ(m.bytes, 4096);
  EXPECT_EQ(m.start_ns, 500);
  EXPECT_EQ(m.end_ns, 900);
  EXPECT_EQ(m.correlation_id, 8u);
  EXPECT_EQ(m.stream_id, 7u);
  ASSERT_EQ(out.memsets.size(), 1u);
  EXPECT_EQ(out.memsets[0].value, 0xabu);
  EXPECT_EQ(out.memsets[0].bytes, 65536);
  EXPECT_EQ(out.memsets[0].memory_kind, "device");
  EXPECT_EQ(out.memsets[0].stream_id, 13u);
  ASSERT_EQ(out.memory_events.size(), 2u);
  EXPECT_TRUE(out.memory_events[0].is_alloc);
  EXPECT_FALSE(out.memory_events[1].is_alloc);
  EXPECT_EQ(out.memory_events[0].address, 0x7f0000001000ULL);
  EXPECT_EQ(out.memory_events[1].address, 0x7f0000001000ULL);
  EXPECT_EQ(out.memory_events[0].bytes, 1 << 20);
  EXPECT_EQ(out.memory_events[1].timestamp_ns, 7000);
  EXPECT_EQ(out.memory_events[0].memory_kind, "device");
}

TEST(Translate, ShuffledAndDuplicatedInputGivesTheSameOutput) {
  Fixture base;
  Translator reference_translator;
  const TranslatedBatch reference = run(base, base.recs.order, reference_translator);

  for (unsigned seed = 1; seed <= 20; ++seed) {
    Fixture f;
    // Duplicate every record once, then shuffle.
    const size_t n = f.recs.order.size();
    for (size_t i = 0; i < n; ++i) {
      const CUpti_Activity* r = f.recs.order[i];
      switch (r->kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
          f.recs.duplicate(*reinterpret_cast<const CUpti_ActivityKernel10*>(r));
          break;
        case CUPTI_ACTIVITY_KIND_MEMSET:
          f.recs.duplicate(*reinterpret_cast<const CUpti_ActivityMemset4*>(r));
          break;
        case CUPTI_ACTIVITY_KIND_MEMORY2:
          f.recs.duplicate(*reinterpret_cast<const CUpti_ActivityMemory4*>(r));
          break;
        default:
          f.recs.duplicate(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(r));
          break;
      }
    }
    std::vector<const CUpti_Activity*> order = f.recs.order;
    std::mt19937 rng(seed);
    std::shuffle(order.begin(), order.end(), rng);
    Translator t;
    const TranslatedBatch out = run(f, order, t);
    ASSERT_EQ(out.kernels.size(), reference.kernels.size()) << "seed " << seed;
    for (size_t i = 0; i < out.kernels.size(); ++i) {
      const auto& a = out.kernels[i];
      const auto& b = reference.kernels[i];
      EXPECT_EQ(std::tie(a.correlation_id, a.graph_node_id, a.start_ns, a.end_ns, a.launch_api, a.nvtx_path,
                         a.local_bytes_per_thread, a.theoretical_blocks_per_sm),
                std::tie(b.correlation_id, b.graph_node_id, b.start_ns, b.end_ns, b.launch_api, b.nvtx_path,
                         b.local_bytes_per_thread, b.theoretical_blocks_per_sm))
          << "seed " << seed << " kernel " << i;
    }
    EXPECT_EQ(out.kernel_args.size(), reference.kernel_args.size()) << "seed " << seed;
    EXPECT_EQ(out.memcpys.size(), 1u);
    EXPECT_EQ(out.memsets.size(), 1u);
    EXPECT_EQ(out.memory_events.size(), 2u);
    // 9 handled records duplicated; the unhandled kind is ignored, not counted as a duplicate.
    EXPECT_EQ(t.stats().duplicates, 9u) << "seed " << seed;
    EXPECT_EQ(t.stats().ignored_records, 2u) << "seed " << seed;
  }
}

TEST(Translate, LaunchesAndDuplicateKeysExpireByGeneration) {
  Fixture f;
  Translator t;
  run(f, f.recs.order, t);
  // The runtime and driver launches were consumed by their kernels; the graph launch stays for
  // its remaining nodes until kGraphLaunchGenerations periods have passed.
  EXPECT_EQ(t.pendingLaunches(), 1u);
  t.endGeneration();
  EXPECT_EQ(t.pendingLaunches(), 1u);
  t.endGeneration();
  EXPECT_EQ(t.pendingLaunches(), 0u);

  // A duplicate one period later is still caught; two periods later it is new again.
  TranslatedBatch out;
  Translator u;
  Records recs;
  const auto& k = addKernel(recs, 50, kKernelName, 10, 20);
  u.translate(reinterpret_cast<const CUpti_Activity&>(k), out);
  u.endGeneration();
  u.translate(reinterpret_cast<const CUpti_Activity&>(k), out);
  EXPECT_EQ(out.kernels.size(), 1u);
  u.endGeneration();
  u.endGeneration();
  u.translate(reinterpret_cast<const CUpti_Activity&>(k), out);
  EXPECT_EQ(out.kernels.size(), 2u);

  // A launch whose kernel never came is forgotten after kUnmatchedLaunchGenerations periods.
  Translator v;
  LaunchInfo lonely;
  lonely.correlation_id = 77;
  lonely.nested_correlation_id = 78;
  v.addLaunch(lonely);
  for (int i = 0; i < Translator::kUnmatchedLaunchGenerations - 1; ++i) v.endGeneration();
  EXPECT_EQ(v.pendingLaunches(), 1u);
  v.endGeneration();
  EXPECT_EQ(v.pendingLaunches(), 0u);

  // Metrics mode keeps it much longer: kernel replay delays the kernel's record.
  Translator w;
  w.setUnmatchedLaunchGenerations(Translator::kUnmatchedLaunchGenerationsReplay);
  w.addLaunch(lonely);
  for (int i = 0; i < 10 * Translator::kUnmatchedLaunchGenerations; ++i) w.endGeneration();
  EXPECT_EQ(w.pendingLaunches(), 1u);
  TranslatedBatch late;
  Records late_recs;
  const auto& late_kernel = addKernel(late_recs, 77, kKernelName, 10, 20);
  w.translate(reinterpret_cast<const CUpti_Activity&>(late_kernel), late);
  ASSERT_EQ(late.kernels.size(), 1u);
  EXPECT_EQ(w.stats().unmatched_kernels, 0u) << "the late kernel found its launch";
}

TEST(Translate, PendingLaunchesStayBounded) {
  // One launch never matches (made during stream capture, say) while many others do: the
  // bookkeeping behind it must not keep every matched launch for the 120 periods it waits.
  Translator t;
  LaunchInfo captured;
  captured.correlation_id = 1;
  t.addLaunch(captured);
  TranslatedBatch out;
  Records recs;
  uint32_t id = 2;
  for (int period = 0; period < 50; ++period) {
    for (int i = 0; i < 1000; ++i, ++id) {
      LaunchInfo l;
      l.correlation_id = id;
      t.addLaunch(l);
      const auto& k = addKernel(recs, id, kKernelName, id * 10, id * 10 + 5);
      t.translate(reinterpret_cast<const CUpti_Activity&>(k), out);
    }
    t.endGeneration();
    EXPECT_EQ(t.pendingLaunches(), 1u);
    EXPECT_LE(t.expiryEntries(), 2048u + 1000u) << "period " << period;
  }
  EXPECT_EQ(out.kernels.size(), 50000u);
  EXPECT_EQ(t.stats().unmatched_kernels, 0u);

  // Past the cap the oldest waiting launch is dropped, and counted.
  Translator u;
  u.setMaxPendingLaunches(3);
  for (uint32_t c = 1; c <= 5; ++c) {
    LaunchInfo l;
    l.correlation_id = c;
    u.addLaunch(l);
  }
  EXPECT_EQ(u.pendingLaunches(), 3u);
  EXPECT_EQ(u.stats().dropped_launches, 2u);
  TranslatedBatch late;
  const auto& first = addKernel(recs, 1, kKernelName, 10, 20);
  const auto& last = addKernel(recs, 5, kKernelName, 30, 40);
  u.translate(reinterpret_cast<const CUpti_Activity&>(first), late);
  u.translate(reinterpret_cast<const CUpti_Activity&>(last), late);
  EXPECT_EQ(u.stats().unmatched_kernels, 1u);  // launch 1 was dropped, launch 5 was kept
}

TEST(Translate, GraphNodeLearnsLocalMemoryFromADirectLaunchOfTheSameKernel) {
  Records recs;
  auto& direct = addKernel(recs, 1, kKernelName, 10, 20);
  auto& node = addKernel(recs, 2, kKernelName, 30, 40);
  node.graphId = 5;
  node.graphNodeId = 7;
  auto& other = addKernel(recs, 2, kGraphKernelName, 50, 60);
  other.graphId = 5;
  other.graphNodeId = 8;
  other.localMemoryPerThread = 16;
  Translator t;
  LaunchInfo launch;
  launch.correlation_id = 1;
  launch.local_bytes_per_thread = 256;
  t.addLaunch(launch);
  LaunchInfo graph;
  graph.correlation_id = 2;
  graph.graph_launch = true;
  t.addLaunch(graph);
  TranslatedBatch out;
  t.translate(reinterpret_cast<const CUpti_Activity&>(direct), out);
  t.translate(reinterpret_cast<const CUpti_Activity&>(node), out);
  t.translate(reinterpret_cast<const CUpti_Activity&>(other), out);
  ASSERT_EQ(out.kernels.size(), 3u);
  EXPECT_EQ(out.kernels[0].local_bytes_per_thread, 256);
  EXPECT_EQ(out.kernels[1].local_bytes_per_thread, 256);  // learnt from the direct launch
  EXPECT_EQ(out.kernels[2].local_bytes_per_thread, 16);   // never launched directly: the record's
}

TEST(Translate, ManyArgumentsKeepTheirOrder) {
  // More 8-byte parameters than LaunchArgs holds inline.
  LaunchInfo launch;
  launch.correlation_id = 3;
  for (int i = 0; i < 11; ++i) {
    launch.args.push_back({i, 8 * i, 8, 0x1000u + static_cast<uint64_t>(i)});
  }
  ASSERT_EQ(launch.args.size(), 11u);
  Records recs;
  const auto& k = addKernel(recs, 3, kKernelName, 1, 2);
  Translator t;
  t.addLaunch(launch);
  TranslatedBatch out;
  t.translate(reinterpret_cast<const CUpti_Activity&>(k), out);
  ASSERT_EQ(out.kernel_args.size(), 11u);
  for (int i = 0; i < 11; ++i) {
    EXPECT_EQ(out.kernel_args[static_cast<size_t>(i)].index, i);
    EXPECT_EQ(out.kernel_args[static_cast<size_t>(i)].offset_bytes, 8 * i);
    EXPECT_EQ(out.kernel_args[static_cast<size_t>(i)].value, 0x1000u + static_cast<uint64_t>(i));
    EXPECT_EQ(out.kernel_args[static_cast<size_t>(i)].correlation_id, 3u);
  }
}

TEST(Translate, KernelWithoutDeviceInfoHasNoOccupancy) {
  Records recs;
  const auto& k = addKernel(recs, 1, kKernelName, 1, 2);
  Translator t;
  TranslatedBatch out;
  t.translate(reinterpret_cast<const CUpti_Activity&>(k), out);
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_FALSE(out.kernels[0].theoretical_occupancy.has_value());
  EXPECT_FALSE(out.kernels[0].theoretical_blocks_per_sm.has_value());
  EXPECT_EQ(out.kernels[0].occupancy_limiter, "");
}


// A profiled launch's duplicate runs inside the program's launch callback: its kernel record has
// the program's correlation id and name, and only the window it ran in tells it apart.
TEST(Translate, RecordsInsideAnOwnWindowAreDropped) {
  OwnKernelWindows windows;
  Translator u;
  u.ignoreOwnWindows(&windows);
  LaunchInfo l;
  l.correlation_id = 9;
  u.addLaunch(l);
  windows.open(1, 100);
  Records recs;
  const auto& duplicate = addKernel(recs, 9, kKernelName, 110, 150);
  TranslatedBatch out;
  u.translate(reinterpret_cast<const CUpti_Activity&>(duplicate), out);
  EXPECT_TRUE(out.kernels.empty()) << "dropped while its window is still open";
  windows.close(1, 200);
  const auto& program = addKernel(recs, 9, kKernelName, 210, 260);
  auto& other_context = addKernel(recs, 12, kKernelName, 120, 140);
  other_context.contextId = 2;
  auto& copy = recs.add<CUpti_ActivityMemcpy6>();
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.contextId = 1;
  copy.correlationId = 9;
  copy.start = 120;
  copy.end = 130;
  for (const CUpti_Activity* r : {reinterpret_cast<const CUpti_Activity*>(&program),
                                  reinterpret_cast<const CUpti_Activity*>(&other_context),
                                  reinterpret_cast<const CUpti_Activity*>(&copy)}) {
    u.translate(*r, out);
  }
  ASSERT_EQ(out.kernels.size(), 2u);
  EXPECT_EQ(out.kernels[0].start_ns, 210);
  EXPECT_EQ(out.kernels[1].context_id, 2u) << "another context's kernel in the same time is kept";
  EXPECT_TRUE(out.memcpys.empty());
  EXPECT_EQ(u.stats().ignored_kernels, 1u);
}

TEST(OwnKernelWindows, CoversOnlyRecordsWhollyInsideAWindowOfTheirContext) {
  OwnKernelWindows w;
  EXPECT_FALSE(w.covers(1, 10, 20));
  w.open(1, 100);
  w.close(1, 200);
  w.open(1, 300);
  w.close(1, 400);
  EXPECT_TRUE(w.covers(1, 100, 200));
  EXPECT_TRUE(w.covers(1, 310, 390));
  EXPECT_FALSE(w.covers(1, 90, 150)) << "started before the window";
  EXPECT_FALSE(w.covers(1, 150, 250)) << "ended after it";
  EXPECT_FALSE(w.covers(1, 250, 260)) << "between windows";
  EXPECT_FALSE(w.covers(2, 150, 160)) << "another context";
}

}  // namespace
}  // namespace fprof::collector
