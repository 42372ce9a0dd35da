// Writer -> reader round trip: every field written comes back, strings interned, batches append.
#include <gtest/gtest.h>
#include <malloc.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <numeric>
#include <utility>

#include "fprof/core/merge.h"
#include "fprof/core/schema.h"
#include "fprof/core/store.h"
#include "test_util.h"

namespace fprof::core {
namespace {

using fprof::testing::execSql;
using fprof::testing::makeKernel;
using fprof::testing::tempPath;

// A kernel of a CUDA graph launch (correlation 40): node `node` of graph `graph`.
core::KernelRecord graphNodeKernel(const std::string& name, int64_t start_ns, uint32_t graph, uint64_t node) {
  core::KernelRecord k = makeKernel(name, start_ns, 5, 40);
  k.graph_id = graph;
  k.graph_node_id = node;
  return k;
}

// The collector's last flush runs from an exit handler registered when it started: by then every
// static object made after that (at the first flush, say) has been destroyed.
Writer* g_exit_writer = nullptr;

void flushFromExitHandler() {
  g_exit_writer->add(makeKernel("at_exit", 200, 5, 0));
  const bool written = g_exit_writer->flush().ok() && g_exit_writer->close().ok();
  std::_Exit(written ? 0 : 3);
}

void flushOnceThenExit(const std::string& path) {
  mallopt(M_PERTURB, 0xa5);  // freed memory overwritten at once, as a busy program reuses it
  auto w = Writer::create(path);
  if (!w.ok()) std::_Exit(2);
  g_exit_writer = w->release();
  std::atexit(flushFromExitHandler);
  g_exit_writer->add(makeKernel("before_exit", 100, 5, 0));
  if (!g_exit_writer->flush().ok()) std::_Exit(2);
  std::exit(0);
}

TEST(StoreDeathTest, WritesFromAnExitHandlerAfterStaticsAreGone) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: no statics made by other tests
  const std::string path = tempPath("exit_handler.fprof");
  EXPECT_EXIT(flushOnceThenExit(path), ::testing::ExitedWithCode(0), "");
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->kernels.size(), 2u);
  EXPECT_EQ(p->strings[p->kernels[1].name_id], "at_exit");
}

TEST(Store, RoundTripsEveryRecordKind) {
  const std::string path = tempPath("roundtrip.fprof");
  {
    auto w = Writer::create(path);
    ASSERT_TRUE(w.ok()) << w.error();
    ASSERT_TRUE((*w)->setMetadata("mode", "trace"));
    ProcessInfo pr;
    pr.pid = 4242;
    pr.host = "node1";
    pr.rank = 3;
    pr.command_line = "./model --ops all";
    pr.start_unix_ns = 1700000000000000000;
    auto pid = (*w)->addProcess(pr);
    ASSERT_TRUE(pid.ok()) << pid.error();
    EXPECT_EQ(*pid, 1u);
    DeviceInfo d;
    d.process_id = 1;
    d.name = "NVIDIA H100 80GB HBM3";
    d.compute_major = 9;
    d.sm_count = 132;
    d.l2_bytes = 52428800;
    d.shared_per_sm_bytes = 233472;
    ASSERT_TRUE((*w)->addDevice(d));

    KernelRecord k = makeKernel("_Z5saxpyifPKfPf", 1000, 250, 11);
    k.demangled_name = "saxpy(int, float, const float*, float*)";
    k.grid_y = 2;
    k.cluster_x = 2;
    k.local_bytes_per_thread = 256;
    k.theoretical_occupancy = 0.75;
    k.theoretical_blocks_per_sm = 6;
    k.occupancy_limiter = "registers";
    k.launch_api = "cudaLaunchKernel";
    k.nvtx_range_key = 5;
    k.nvtx_path = "fprof::op=x/op=y";
    k.graph_id = 3;
    k.graph_node_id = 99;
    EXPECT_EQ((*w)->nextKernelId(), 1);
    (*w)->add(k);
    EXPECT_EQ((*w)->nextKernelId(), 2);
    (*w)->add(makeKernel("_Z5saxpyifPKfPf", 2000, 300, 12));  // same name: one string row
    KernelArgRecord a{11, 1, 2, 16, 8, 0x7f0000001000ull};
    (*w)->add(a);
    NvtxRangeRecord r;
    r.key = 5;
    r.process_id = 1;
    r.domain = "fprof";
    r.message = "op=y";
    r.payload = 7;
    r.depth = 1;
    r.parent_key = 4;
    r.start_ns = 900;
    (*w)->add(r);  // open range, flushed once ...
    ASSERT_TRUE((*w)->flush());
    r.end_ns = 2500;
    (*w)->add(r);  // ... and replaced when it closes
    MemcpyRecord m;
    m.process_id = 1;
    m.bytes = 1 << 20;
    m.copy_kind = "HtoD";
    m.start_ns = 10;
    m.end_ns = 20;
    (*w)->add(m);
    (*w)->add(MemcpyAddressRecord{1, 77, 0x7f0000001000ull, 0xfff0000000002000ull, 4096});
    MemoryEventRecord me;
    me.process_id = 1;
    me.address = 0x7f0000001000ull;
    me.bytes = 4096;
    me.timestamp_ns = 5;
    me.memory_kind = "device";
    (*w)->add(me);
    KernelCounters c;
    c.kernel_id = 1;
    c.dram_read_bytes = 8e6;
    c.flops_fp32 = 2e6;
    (*w)->add(c);
    (*w)->add(KernelMetricRecord{1, "dram__bytes_read.sum", 8e6});
    (*w)->add(CeilingRecord{"NVIDIA H100 80GB HBM3", "dram", "bytes_per_s", 3.0e12, "measured", "copy kernel"});
    ASSERT_TRUE((*w)->close());
  }
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->schema_version, kSchemaVersion);
  EXPECT_EQ(p->meta("mode"), "trace");
  EXPECT_EQ(p->meta("schema_version"), std::to_string(kSchemaVersion));
  ASSERT_EQ(p->processes.size(), 1u);
  EXPECT_EQ(p->processes[0].pid, 4242);
  EXPECT_EQ(p->processes[0].rank, 3);
  EXPECT_FALSE(p->processes[0].local_rank.has_value());
  ASSERT_EQ(p->devices.size(), 1u);
  EXPECT_EQ(p->devices[0].sm_count, 132);
  EXPECT_EQ(p->devices[0].shared_per_sm_bytes, 233472);
  ASSERT_NE(p->device(1, 0), nullptr);

  ASSERT_EQ(p->kernels.size(), 2u);
  const KernelRow& k = p->kernels[0];
  EXPECT_EQ(k.id, 1);
  EXPECT_EQ(p->str(k.name_id), "_Z5saxpyifPKfPf");
  EXPECT_EQ(p->str(k.demangled_id), "saxpy(int, float, const float*, float*)");
  EXPECT_EQ(k.durationNs(), 250);
  EXPECT_EQ(k.grid_y, 2);
  EXPECT_EQ(k.cluster_x, 2);
  EXPECT_EQ(k.local_bytes_per_thread, 256);
  EXPECT_DOUBLE_EQ(*k.theoretical_occupancy, 0.75);
  EXPECT_EQ(k.theoretical_blocks_per_sm, 6);
  EXPECT_EQ(p->str(k.occupancy_limiter_id), "registers");
  EXPECT_EQ(p->str(k.launch_api_id), "cudaLaunchKernel");
  EXPECT_EQ(k.nvtx_range_key, 5u);
  ASSERT_TRUE(k.nvtx_path_id.has_value());
  EXPECT_EQ(p->str(*k.nvtx_path_id), "fprof::op=x/op=y");
  EXPECT_EQ(k.graph_id, 3u);
  EXPECT_EQ(k.graph_node_id, 99u);
  EXPECT_EQ(p->kernels[1].name_id, k.name_id);
  EXPECT_FALSE(p->kernels[1].theoretical_occupancy.has_value());
  EXPECT_FALSE(p->kernels[1].nvtx_path_id.has_value());

  ASSERT_EQ(p->kernel_args.size(), 1u);
  EXPECT_EQ(p->kernel_args[0].value, 0x7f0000001000ull);
  ASSERT_EQ(p->nvtx_ranges.size(), 1u);
  EXPECT_EQ(p->nvtx_ranges[0].end_ns, 2500);
  EXPECT_EQ(p->nvtx_ranges[0].payload, 7u);
  EXPECT_EQ(p->nvtx_ranges[0].parent_key, 4u);
  ASSERT_EQ(p->memcpys.size(), 1u);
  EXPECT_EQ(p->memcpys[0].copy_kind, "HtoD");
  ASSERT_EQ(p->memcpy_addresses.size(), 1u);
  EXPECT_EQ(p->memcpy_addresses[0].correlation_id, 77u);
  EXPECT_EQ(p->memcpy_addresses[0].src_address, 0x7f0000001000ull);
  EXPECT_EQ(p->memcpy_addresses[0].dst_address, 0xfff0000000002000ull) << "above 2^63: stored as signed, read back";
  EXPECT_EQ(p->memcpy_addresses[0].bytes, 4096);
  ASSERT_EQ(p->memory_events.size(), 1u);
  EXPECT_TRUE(p->memory_events[0].is_alloc);
  ASSERT_EQ(p->counters.size(), 1u);
  EXPECT_DOUBLE_EQ(*p->counters[0].dram_read_bytes, 8e6);
  EXPECT_FALSE(p->counters[0].dram_write_bytes.has_value());
  EXPECT_DOUBLE_EQ(*p->counters[0].dramBytes(), 8e6);
  ASSERT_EQ(p->metrics.size(), 1u);
  EXPECT_EQ(p->metrics[0].metric, "dram__bytes_read.sum");
  ASSERT_EQ(p->ceilings.size(), 1u);
  EXPECT_EQ(p->ceilings[0].source, "measured");
}

// Texts held in a block read as their own do; a copy owns its text and outlives the block; a
// text the block has no room for gets an allocation of its own.
TEST(TextBlock, HoldsTextsItWasSizedForAndCopiesOwnTheirs) {
  const std::vector<std::string> texts{"aten::mm, seq = 12, op_id = 724", "odd", std::string(), "nul\0in", "x"};
  size_t bytes = 0;
  for (const std::string& t : texts) bytes += TextBlock::bytesFor(t);
  std::vector<PackedText> held, copies;
  {
    TextBlock block(bytes);
    for (const std::string& t : texts) held.push_back(block.hold(t));
    for (size_t i = 0; i < texts.size(); ++i) {
      EXPECT_EQ(held[i].view(), texts[i]);
      EXPECT_EQ(held[i].empty(), texts[i].empty());
    }
    // One after the other in the block, each at an even offset.
    EXPECT_EQ(held[1].view().data(), held[0].view().data() + TextBlock::bytesFor(texts[0]));
    const PackedText extra = block.hold("no room left");
    EXPECT_EQ(extra.view(), "no room left");
    EXPECT_TRUE(extra.view().data() < held[0].view().data() ||
                extra.view().data() >= held[0].view().data() + static_cast<std::ptrdiff_t>(bytes));
    for (const PackedText& t : held) copies.push_back(t);
    PackedText moved = std::move(held[0]);
    EXPECT_EQ(moved.view(), texts[0]);
    EXPECT_TRUE(held[0].empty());
    held[0] = std::move(moved);
  }
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(copies[i].view(), texts[i]);
}

// More texts than one of its blocks takes, and one longer than a block: each reads back whole.
TEST(TextArena, HoldsTextsAcrossBlocks) {
  TextArena arena;
  std::vector<std::string> texts;
  std::vector<PackedText> held;
  for (int i = 0; i < 100000; ++i) texts.push_back("aten::mm, seq = " + std::to_string(i) + std::string(i % 97, 'x'));
  texts.push_back(std::string(size_t{5} << 20, 'y'));
  texts.emplace_back();
  for (const std::string& t : texts) held.push_back(arena.hold(t));
  for (size_t i = 0; i < texts.size(); ++i) ASSERT_EQ(held[i].view(), texts[i]) << i;
  EXPECT_TRUE(held.back().empty());
}

// Keeping some of its texts moves them down over the others: each kept one reads back whole, one
// of its own is left as it is, and texts held afterwards read back too. A text of a block of its
// own, after blocks whose texts all go, never lands in a block too small for it.
TEST(TextArena, KeepsSomeTextsMovedDownOverTheOthers) {
  for (const bool keep_small : {true, false}) {
    SCOPED_TRACE(keep_small);
    TextArena arena;
    std::vector<std::string> texts;
    for (int i = 0; i < 150000; ++i) texts.push_back("aten::addmm, op_id = " + std::to_string(i) + std::string(i % 61, 'z'));
    texts.insert(texts.begin() + 70000, std::string(size_t{6} << 20, 'b'));
    std::vector<PackedText> held;
    for (const std::string& t : texts) held.push_back(arena.hold(t));
    PackedText own("a text of its own");
    std::vector<PackedText*> kept{&own};
    std::vector<size_t> kept_index;
    for (size_t i = 0; i < held.size(); ++i) {
      const bool big = texts[i].size() > (size_t{4} << 20);
      if (big || (keep_small && i % 3 == 1)) {
        kept.push_back(&held[i]);
        kept_index.push_back(i);
      }
    }
    std::reverse(kept.begin(), kept.end());  // in any order
    arena.keepOnly(kept);
    for (size_t i : kept_index) ASSERT_EQ(held[i].view(), texts[i]) << i;
    EXPECT_EQ(own.view(), "a text of its own");
    const PackedText later = arena.hold("held after");
    EXPECT_EQ(later.view(), "held after");
    for (size_t i : kept_index) ASSERT_EQ(held[i].view(), texts[i]) << i;
  }
}

TEST(PackedText, HoldsItsTextWhateverItsLengthAndIsCopiedWhole) {
  const std::string long_text(100000, 'x');
  for (const std::string& text : {std::string(), std::string("op=gemm"), long_text,
                                  std::string("nul\0inside", 10)}) {
    const PackedText packed(text);
    EXPECT_EQ(packed.view(), text);
    EXPECT_EQ(packed.size(), text.size());
    EXPECT_EQ(packed.empty(), text.empty());
    PackedText copy = packed;
    EXPECT_EQ(copy.view(), text);
    if (!text.empty()) {
      EXPECT_NE(copy.view().data(), packed.view().data());  // its own allocation
    }
    PackedText moved = std::move(copy);
    EXPECT_EQ(moved.view(), text);
    copy = moved;  // assigned again after the move
    EXPECT_EQ(copy.str(), text);
  }
  // A loaded NVTX range: its row smaller than the record it was read as, its texts the record's.
  EXPECT_LT(sizeof(NvtxRangeRow), sizeof(NvtxRangeRecord));
  NvtxRangeRecord r;
  r.domain = "fprof";
  r.message = "op=matmul_bias_relu variant=unfused reads=x,w,b writes=y";
  r.parent_key = 3;
  r.end_ns = 9;
  const NvtxRangeRow row = r;
  EXPECT_EQ(row.domain, "fprof");
  EXPECT_EQ(row.message, r.message);
  EXPECT_EQ(row.parent_key, 3u);
  EXPECT_EQ(row.end_ns, 9);
}

TEST(Store, RefusesToOverwriteUnlessAsked) {
  const std::string path = tempPath("exists.fprof");
  ASSERT_TRUE(Writer::create(path).ok());
  auto again = Writer::create(path);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().find("file exists"), std::string::npos) << again.error();
  EXPECT_TRUE(Writer::create(path, /*overwrite=*/true).ok());
}

TEST(Store, BatchesAppendAndKernelIdsContinue) {
  const std::string path = tempPath("batches.fprof");
  auto w = Writer::create(path);
  ASSERT_TRUE(w.ok());
  for (int batch = 0; batch < 3; ++batch) {
    for (int i = 0; i < 1000; ++i) (*w)->add(makeKernel("k" + std::to_string(i % 7), batch * 10000 + i, 5, 0));
    EXPECT_EQ((*w)->pendingRecords(), 1000u);
    ASSERT_TRUE((*w)->flush());
    EXPECT_EQ((*w)->pendingRecords(), 0u);
    EXPECT_EQ((*w)->nextKernelId(), (batch + 1) * 1000 + 1);
  }
  ASSERT_TRUE((*w)->close());
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->kernels.size(), 3000u);
  EXPECT_EQ(p->strings.size(), 8u);  // "" + k0..k6
  EXPECT_EQ(p->kernels.back().id, 3000);
}

// The reader scans tables in rowid order and sorts in memory: rows written out of time order come
// back by start (ties in write order), and kernel arguments by process, launch and index.
TEST(Store, LoadsOutOfOrderRowsSorted) {
  const std::string path = tempPath("out_of_order.fprof");
  auto w = Writer::create(path);
  ASSERT_TRUE(w.ok());
  const int64_t starts[] = {50, 10, 30, 10, 40, 30, 0};
  for (uint32_t i = 0; i < 7; ++i) (*w)->add(makeKernel("k" + std::to_string(i), starts[i], 1, 100 + i));
  (*w)->add(KernelArgRecord{102, 1, 1, 8, 8, 0xb});
  (*w)->add(KernelArgRecord{101, 1, 0, 0, 8, 0xc});
  (*w)->add(KernelArgRecord{102, 1, 0, 0, 8, 0xa});
  ASSERT_TRUE((*w)->close());
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  std::string order;
  for (const KernelRow& k : p->kernels) order += p->str(k.name_id) + " ";
  EXPECT_EQ(order, "k6 k1 k3 k2 k5 k4 k0 ");
  ASSERT_EQ(p->kernel_args.size(), 3u);
  EXPECT_EQ(p->kernel_args[0].value, 0xcu);
  EXPECT_EQ(p->kernel_args[1].value, 0xau);
  EXPECT_EQ(p->kernel_args[2].value, 0xbu);
}

// The reader sorts in place (each row moved once along the permutation's cycles): every order a
// long table comes in, kernels and NVTX ranges alike, gives what a stable sort by start gives.
TEST(Store, LoadsShuffledTablesInStableStartOrder) {
  const std::string path = tempPath("shuffled.fprof");
  auto w = Writer::create(path);
  ASSERT_TRUE(w.ok());
  constexpr uint32_t kRows = 5000;
  std::vector<std::pair<int64_t, uint32_t>> expected;  // (start, write order)
  uint64_t seed = 12345;
  for (uint32_t i = 0; i < kRows; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    const auto start = static_cast<int64_t>((seed >> 33) % 700);  // many ties
    expected.emplace_back(start, i);
    (*w)->add(makeKernel("k" + std::to_string(i), start, 1, 100 + i));
    NvtxRangeRecord r;
    r.key = i + 1;
    r.process_id = 1;
    r.message = "r" + std::to_string(i);
    r.start_ns = start;
    r.end_ns = start + 1;
    (*w)->add(r);
  }
  ASSERT_TRUE((*w)->close());
  std::stable_sort(expected.begin(), expected.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->kernels.size(), kRows);
  ASSERT_EQ(p->nvtx_ranges.size(), kRows);
  for (size_t j = 0; j < kRows; ++j) {
    EXPECT_EQ(p->str(p->kernels[j].name_id), "k" + std::to_string(expected[j].second)) << "position " << j;
    EXPECT_EQ(p->nvtx_ranges[j].message.view(), "r" + std::to_string(expected[j].second)) << "position " << j;
  }
}

namespace {
// Three kernels written against time order, and their arguments against launch order.
void addOutOfOrderLaunches(Writer& w) {
  for (uint32_t i = 0; i < 3; ++i) w.add(makeKernel("k" + std::to_string(i), 30 - 10 * i, 1, 100 + i));
  w.add(KernelArgRecord{102, 1, 1, 8, 8, 0xb});
  w.add(KernelArgRecord{101, 1, 0, 0, 8, 0xc});
  w.add(KernelArgRecord{102, 1, 0, 0, 8, 0xa});
}

auto argFields(const KernelArgRecord& a) {
  return std::tie(a.correlation_id, a.process_id, a.index, a.offset_bytes, a.size_bytes, a.value);
}
auto eventFields(const MemoryEventRecord& e) {
  return std::tie(e.process_id, e.device_id, e.context_id, e.stream_id, e.correlation_id, e.timestamp_ns, e.is_alloc,
                  e.address, e.bytes, e.memory_kind);
}
}  // namespace

// A profile loaded without its launch tables, and the tables read afterwards, are what one load
// gives: the same rows in the same order (recordings, a merged two-rank job whose arguments are
// not in launch order in the file, and a file written out of time order).
TEST(Store, LaunchTablesReadLaterAreTheLoadersOwn) {
  const std::string data = std::string(FPROF_SOURCE_DIR) + "/tests/data/";
  const std::string merged = tempPath("later_tables_job.fprof");
  std::filesystem::remove(merged);
  ASSERT_TRUE(mergeDatabases({data + "torchrun_allreduce_h200x2.rank0.fprof",
                              data + "torchrun_allreduce_h200x2.rank1.fprof"},
                             merged)
                  .ok());
  const std::string shuffled = tempPath("later_tables_shuffled.fprof");
  {
    auto w = Writer::create(shuffled);
    ASSERT_TRUE(w.ok());
    addOutOfOrderLaunches(**w);
    ASSERT_TRUE((*w)->close());
  }
  for (const std::string& path : {data + "model_trace_h100.fprof", data + "torch_proof_gpt_bf16_emitnvtx_h100.fprof",
                                  data + "torch_transformer_compile_h100.fprof", merged, shuffled}) {
    SCOPED_TRACE(path);
    auto whole = loadProfile(path);
    ASSERT_TRUE(whole.ok()) << whole.error();
    ASSERT_FALSE(whole->kernel_args.empty());
    auto without = loadProfile(path, {.launch_tables = false});
    ASSERT_TRUE(without.ok()) << without.error();
    EXPECT_TRUE(without->kernel_args.empty());
    EXPECT_TRUE(without->memory_events.empty());
    EXPECT_EQ(without->kernels.size(), whole->kernels.size());
    EXPECT_EQ(without->nvtx_ranges.size(), whole->nvtx_ranges.size());
    EXPECT_EQ(without->warnings, whole->warnings);
    auto later = loadLaunchTables(*without);
    ASSERT_TRUE(later.ok()) << later.error();
    ASSERT_EQ(later->kernel_args.size(), whole->kernel_args.size());
    for (size_t i = 0; i < whole->kernel_args.size(); ++i) {
      EXPECT_EQ(argFields(later->kernel_args[i]), argFields(whole->kernel_args[i])) << "argument " << i;
    }
    ASSERT_EQ(later->memory_events.size(), whole->memory_events.size());
    for (size_t i = 0; i < whole->memory_events.size(); ++i) {
      EXPECT_EQ(eventFields(later->memory_events[i]), eventFields(whole->memory_events[i])) << "event " << i;
    }
  }
}

// A run copied to NAME_replaced.fprof, and another run beside it (NAME_other.fprof) to rename over
// it once the first has been loaded.
std::pair<std::string, std::string> runAndItsReplacement(const std::string& name) {
  const std::string data = std::string(FPROF_SOURCE_DIR) + "/tests/data/";
  const std::string path = tempPath(name + "_replaced.fprof");
  const std::string other = tempPath(name + "_other.fprof");
  std::filesystem::copy_file(data + "torch_mlp_eager_h100.fprof", path, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(data + "torch_mlp_compile_h100.fprof", other,
                             std::filesystem::copy_options::overwrite_existing);
  return {path, other};
}

// The tables are read only from the file the profile came from: replaced in between, it is an
// error naming the cause, not another run's arguments.
TEST(Store, LaunchTablesOfAReplacedFileAreRefused) {
  const auto [path, other] = runAndItsReplacement("later_tables");
  auto without = loadProfile(path, {.launch_tables = false});
  ASSERT_TRUE(without.ok()) << without.error();
  ASSERT_TRUE(loadLaunchTables(*without).ok()) << "the same file, read again";
  std::filesystem::rename(other, path);
  auto later = loadLaunchTables(*without);
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.error(), path + ": changed while fprof was reading it (replaced, rewritten or still being "
                                  "written); run the command again once it is complete");
  std::filesystem::remove(path);
  auto gone = loadLaunchTables(*without);
  EXPECT_FALSE(gone.ok());
}

// Loaded without their messages, the ranges are the same rows with empty messages, and
// forEachNvtxMessage hands each range the message a whole load gives it.
TEST(Store, NvtxMessagesReadLaterAreTheLoadedOnes) {
  const std::string data = std::string(FPROF_SOURCE_DIR) + "/tests/data/";
  for (const char* name : {"torch_proof_gpt_bf16_emitnvtx_h100.fprof", "model_trace_h100.fprof",
                           "torch_transformer_compile_h100.fprof", "torch_hfgpt2_train_step_nvtx_h100.fprof"}) {
    SCOPED_TRACE(name);
    auto whole = loadProfile(data + name);
    ASSERT_TRUE(whole.ok()) << whole.error();
    ASSERT_FALSE(whole->nvtx_ranges.empty());
    EXPECT_TRUE(whole->nvtx_messages_loaded);
    auto without = loadProfile(data + name, {.launch_tables = false, .nvtx_messages = false});
    ASSERT_TRUE(without.ok()) << without.error();
    EXPECT_FALSE(without->nvtx_messages_loaded);
    ASSERT_EQ(without->nvtx_ranges.size(), whole->nvtx_ranges.size());
    for (size_t i = 0; i < whole->nvtx_ranges.size(); ++i) {
      const NvtxRangeRow& w = whole->nvtx_ranges[i];
      const NvtxRangeRow& o = without->nvtx_ranges[i];
      EXPECT_TRUE(o.message.empty()) << i;
      EXPECT_EQ(o.key, w.key) << i;
      EXPECT_EQ(o.parent_key, w.parent_key) << i;
      EXPECT_EQ(o.start_ns, w.start_ns) << i;
      EXPECT_EQ(o.end_ns, w.end_ns) << i;
      EXPECT_EQ(o.thread_id, w.thread_id) << i;
    }
    EXPECT_EQ(without->warnings, whole->warnings);
    std::vector<std::string> read(whole->nvtx_ranges.size());
    std::vector<int> times(whole->nvtx_ranges.size(), 0);
    ASSERT_TRUE(forEachNvtxMessage(*without, [&](size_t at, std::string_view message) {
      ASSERT_LT(at, read.size());
      read[at] = std::string(message);
      ++times[at];
    }));
    for (size_t i = 0; i < whole->nvtx_ranges.size(); ++i) {
      EXPECT_EQ(times[i], 1) << i;
      EXPECT_EQ(read[i], whole->nvtx_ranges[i].message.view()) << i;
    }
    // Given back to the profile, they are a whole load's.
    ASSERT_TRUE(loadNvtxMessages(*without));
    EXPECT_TRUE(without->nvtx_messages_loaded);
    for (size_t i = 0; i < whole->nvtx_ranges.size(); ++i) {
      EXPECT_EQ(without->nvtx_ranges[i].message.view(), whole->nvtx_ranges[i].message.view()) << i;
    }
  }
}

// The messages too are read only from the file the profile came from.
TEST(Store, NvtxMessagesOfAReplacedFileAreRefused) {
  const auto [path, other] = runAndItsReplacement("later_messages");
  auto without = loadProfile(path, {.nvtx_messages = false});
  ASSERT_TRUE(without.ok()) << without.error();
  size_t seen = 0;
  ASSERT_TRUE(forEachNvtxMessage(*without, [&](size_t, std::string_view) { ++seen; })) << "the same file, read again";
  EXPECT_EQ(seen, without->nvtx_ranges.size());
  std::filesystem::rename(other, path);
  const Status later = forEachNvtxMessage(*without, [](size_t, std::string_view) {});
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.error(), path + ": changed while fprof was reading it (replaced, rewritten or still being "
                                  "written); run the command again once it is complete");
  // Nor given to the profile: it keeps its empty messages.
  EXPECT_EQ(loadNvtxMessages(*without).error(), later.error());
  EXPECT_FALSE(without->nvtx_messages_loaded);
  for (const NvtxRangeRow& r : without->nvtx_ranges) EXPECT_TRUE(r.message.empty());
  std::filesystem::remove(path);
  EXPECT_FALSE(forEachNvtxMessage(*without, [](size_t, std::string_view) {}).ok());
}

// Merge reads its inputs table by table without loading them; rows whose file order is not the
// reader's (arguments by launch, ranges by start) must still reach the merged file in the reader's
// order, with the reader's repairs (a parent circle cut where it cuts it).
TEST(Store, MergeWritesOutOfOrderTablesInTheReadersOrder) {
  const std::string path = tempPath("merge_out_of_order.fprof");
  auto w = Writer::create(path);
  ASSERT_TRUE(w.ok());
  addOutOfOrderLaunches(**w);
  for (uint64_t key = 1; key <= 4; ++key) {
    NvtxRangeRecord r;
    r.key = key;
    r.process_id = 1;
    r.parent_key = key == 1 ? 3 : key - 1;  // 1 -> 3 -> 2 -> 1: a circle; 4 hangs below it
    r.message = "range " + std::to_string(key);
    r.start_ns = 100 - static_cast<int64_t>(key) * 10;
    r.end_ns = 200;
    (*w)->add(r);
  }
  ProcessInfo process;
  process.pid = 42;
  ASSERT_TRUE((*w)->addProcess(process).ok());
  ASSERT_TRUE((*w)->close());
  const std::string merged = tempPath("merge_out_of_order_merged.fprof");
  auto result = mergeDatabases({path}, merged);
  ASSERT_TRUE(result.ok()) << result.error();
  auto in = loadProfile(path);
  auto out = loadProfile(merged);
  ASSERT_TRUE(in.ok() && out.ok());
  ASSERT_EQ(in->warnings.size(), 1u);
  ASSERT_EQ(result->notes.size(), 1u);
  EXPECT_EQ(result->notes[0], in->warnings[0]);
  EXPECT_TRUE(out->warnings.empty()) << "the merged file holds the repaired links";
  auto args = [](const Profile& p) {
    std::string s;
    for (const KernelArgRecord& a : p.kernel_args) s += std::to_string(a.value) + " ";
    return s;
  };
  EXPECT_EQ(args(*out), args(*in));
  auto ranges = [](const Profile& p) {
    std::string s;
    for (const NvtxRangeRow& r : p.nvtx_ranges) s += r.message.str() + (r.parent_key ? " under a parent, " : ", ");
    return s;
  };
  EXPECT_EQ(ranges(*out), ranges(*in));
  std::string raw_order;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(merged.c_str(), &db), SQLITE_OK);
  sqlite3_exec(
      db, "SELECT value FROM kernel_arg ORDER BY rowid",
      [](void* order, int, char** values, char**) {
        *static_cast<std::string*>(order) += std::string(values[0]) + ", ";
        return 0;
      },
      &raw_order, nullptr);
  sqlite3_close(db);
  EXPECT_EQ(raw_order, "12, 10, 11, ") << "written in the reader's order (by launch and index)";
}

// More rows than one read chunk (16,384): the reader splits kernels, arguments and counters
// across threads, and what it returns must not depend on that. Kernels are written out of time
// order, with launch-API and limiter texts first seen in later chunks.
std::string writeChunkedProfile(const std::string& name, uint32_t kernels) {
  const std::string path = tempPath(name);
  auto w = Writer::create(path);
  EXPECT_TRUE(w.ok()) << w.error();
  for (uint32_t i = 0; i < kernels; ++i) {
    KernelRecord k = makeKernel("k" + std::to_string(i % 5), int64_t{i / 1000} * 100000 + (999 - i % 1000) * 10 % 7000,
                                5, i + 1);
    k.launch_api = i < 30000 ? "cudaLaunchKernel" : "cuLaunchKernelEx";
    k.occupancy_limiter = i >= 20000 && i % 2 == 1 ? "registers" : "warps";
    (*w)->add(k);
    (*w)->add(KernelArgRecord{i + 1, 1, 0, 0, 8, uint64_t{i} * 16});
    KernelCounters c;
    c.kernel_id = i + 1;
    c.flops_fp32 = double(i);
    (*w)->add(c);
  }
  EXPECT_TRUE((*w)->close());
  return path;
}

void expectChunkedProfile(const Profile& p, uint32_t kernels, uint32_t missing_kernel, uint32_t missing_arg) {
  auto start = [](uint32_t i) { return int64_t{i / 1000} * 100000 + (999 - i % 1000) * 10 % 7000; };
  std::vector<uint32_t> order(kernels);
  std::iota(order.begin(), order.end(), 0u);
  order.erase(std::remove(order.begin(), order.end(), missing_kernel), order.end());
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return start(a) < start(b); });
  ASSERT_EQ(p.kernels.size(), order.size());
  for (size_t j = 0; j < order.size(); ++j) {
    const uint32_t i = order[j];
    const KernelRow& k = p.kernels[j];
    ASSERT_EQ(k.correlation_id, i + 1) << "position " << j;
    ASSERT_EQ(k.id, int64_t{i} + 1);
    ASSERT_EQ(k.start_ns, start(i));
    ASSERT_EQ(p.str(k.name_id), "k" + std::to_string(i % 5));
    ASSERT_EQ(p.str(k.launch_api_id), i < 30000 ? "cudaLaunchKernel" : "cuLaunchKernelEx");
    ASSERT_EQ(p.str(k.occupancy_limiter_id), i >= 20000 && i % 2 == 1 ? "registers" : "warps");
  }
  // Texts get string ids in order of first sight, as one sequential scan gives them.
  auto id = [&](const std::string& t) { return std::find(p.strings.begin(), p.strings.end(), t) - p.strings.begin(); };
  EXPECT_LT(id("warps"), id("cudaLaunchKernel"));
  EXPECT_LT(id("cudaLaunchKernel"), id("registers"));
  EXPECT_LT(id("registers"), id("cuLaunchKernelEx"));
  EXPECT_LT(id("cuLaunchKernelEx"), static_cast<std::ptrdiff_t>(p.strings.size()));
  ASSERT_EQ(p.kernel_args.size(), size_t{kernels} - (missing_arg < kernels ? 1 : 0));
  for (size_t j = 0, i = 0; j < p.kernel_args.size(); ++j, ++i) {
    if (i == missing_arg) ++i;
    ASSERT_EQ(p.kernel_args[j].correlation_id, i + 1);
    ASSERT_EQ(p.kernel_args[j].value, uint64_t{i} * 16);
  }
  ASSERT_EQ(p.counters.size(), size_t{kernels});
  for (uint32_t i = 0; i < kernels; ++i) {
    ASSERT_EQ(p.counters[i].kernel_id, int64_t{i} + 1);
    ASSERT_EQ(p.counters[i].flops_fp32, double(i));
  }
}

TEST(Store, LargeTablesLoadTheSameInChunks) {
  const std::string path = writeChunkedProfile("chunks.fprof", 40000);
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  expectChunkedProfile(*p, 40000, ~0u, ~0u);
}

// Tables with a gap in their rowids (fprof never deletes rows; another tool might) are read whole.
TEST(Store, TablesWithRowidGapsLoadWhole) {
  const std::string path = writeChunkedProfile("gaps.fprof", 40000);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, "DELETE FROM kernel WHERE id = 18000; DELETE FROM kernel_arg WHERE rowid = 25001",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  expectChunkedProfile(*p, 40000, 17999, 25000);
}

TEST(Store, CloseLeavesOneSelfContainedFile) {
  const std::string path = tempPath("single.fprof");
  auto w = Writer::create(path);
  ASSERT_TRUE(w.ok());
  (*w)->add(makeKernel("k", 0, 1, 1));
  ASSERT_TRUE((*w)->close());
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  EXPECT_TRUE(checkDatabase(path).ok());
}

}  // namespace
}  // namespace fprof::core

namespace fprof::core {
namespace {

TEST(Store, AppendCeilingsAddsAndReplaces) {
  const std::string path = fprof::testing::tempPath("attach.fprof");
  {
    auto w = Writer::create(path);
    ASSERT_TRUE(w.ok());
    (*w)->add(CeilingRecord{"GPU", "dram", "bytes_per_s", 1.0, "datasheet", "sheet"});
    ASSERT_TRUE((*w)->close());
  }
  ASSERT_TRUE(appendCeilings(path, {{"GPU", "dram", "bytes_per_s", 2.0, "measured", "copy"},
                                    {"GPU", "dram", "bytes_per_s", 3.0, "datasheet", "newer sheet"}}));
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->ceilings.size(), 2u);
  EXPECT_EQ(p->ceilings[0].source, "datasheet");
  EXPECT_DOUBLE_EQ(p->ceilings[0].value, 3.0);
  EXPECT_EQ(p->ceilings[1].source, "measured");
  EXPECT_FALSE(appendCeilings(fprof::testing::tempPath("nothere.fprof"), {}).ok());
}

}  // namespace
}  // namespace fprof::core

namespace fprof::core {
namespace {

TEST(Store, LaunchCountersFindTheirKernelAcrossFlushes) {
  const std::string path = fprof::testing::tempPath("launch_counters.fprof");
  auto w = Writer::create(path);
  ASSERT_TRUE(w.ok());
  KernelCounters c;
  c.flops_fp32 = 10;
  (*w)->add(fprof::testing::makeKernel("early", 0, 5, 100));  // kernel flushed before its counters
  ASSERT_TRUE((*w)->flush());
  c.flops_fp32 = 1;
  (*w)->addCountersForLaunch(1, 100, 0, c, {{"sm__x.sum", 1.0}});
  c.flops_fp32 = 2;
  (*w)->addCountersForLaunch(1, 200, 0, c, {});  // counters before their kernel
  c.flops_fp32 = 3;
  (*w)->addCountersForLaunch(2, 200, 0, c, {});  // another process's launch 200: never matched
  core::KernelRecord hidden = fprof::testing::makeKernel("same_batch", 10, 0, 301);  // profiler hid its time
  (*w)->add(hidden);
  c.flops_fp32 = 4;
  c.gpu_time_ns = 1234;
  (*w)->addCountersForLaunch(1, 300, 301, c, {});  // runtime id 300, the kernel carries the driver's 301
  ASSERT_TRUE((*w)->flush());
  EXPECT_EQ((*w)->unmatchedCounters(), 2u);
  (*w)->add(fprof::testing::makeKernel("late", 20, 5, 200));
  ASSERT_TRUE((*w)->flush());
  EXPECT_EQ((*w)->unmatchedCounters(), 1u);
  ASSERT_TRUE((*w)->close());

  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->counters.size(), 3u);
  std::map<std::string, double> by_name;
  for (const KernelCounters& k : p->counters) {
    for (const KernelRow& row : p->kernels) {
      if (row.id == k.kernel_id) by_name[p->str(row.name_id)] = *k.flops_fp32;
    }
  }
  EXPECT_EQ(by_name["early"], 1);
  EXPECT_EQ(by_name["same_batch"], 4);
  for (const KernelRow& row : p->kernels) {
    if (p->str(row.name_id) == "same_batch") {
      EXPECT_EQ(row.durationNs(), 1234);
    } else {
      EXPECT_EQ(row.durationNs(), 5) << "a kernel with a trace duration keeps it";
    }
  }
  EXPECT_EQ(by_name["late"], 2);
  ASSERT_EQ(p->metrics.size(), 1u);
  EXPECT_EQ(p->metrics[0].metric, "sm__x.sum");
}

TEST(Store, Schema2CopiedCountersAndReasonsFindTheirKernels) {
  const std::string path = fprof::testing::tempPath("schema2_counters.fprof");
  auto w = Writer::create(path);
  ASSERT_TRUE(w.ok());
  KernelCounters c;
  c.flops_fp32 = 8;
  c.half_flops_method = "SASS: packed HFMA2 only (2 lanes)";
  // The copy arrives before the profiled launch's kernel row: it waits for both rows.
  (*w)->addCopiedCountersForLaunch(1, {20, 0}, {10, 0}, c, {{"sm__x.sum", 4.0}});
  (*w)->addMissingCountersForLaunch(1, {30, 31}, "cooperative launch: not replayed");
  (*w)->add(fprof::testing::makeKernel("copy", 10, 5, 20));
  ASSERT_TRUE((*w)->flush());
  EXPECT_EQ((*w)->unmatchedCounters(), 1u) << "the copy waits for its source";
  (*w)->add(fprof::testing::makeKernel("profiled", 0, 5, 10));
  (*w)->add(fprof::testing::makeKernel("coop", 20, 5, 31));
  (*w)->add(fprof::testing::makeKernel("graph_node_a", 30, 5, 40));  // one graph launch, two kernels
  (*w)->add(fprof::testing::makeKernel("graph_node_b", 40, 5, 40));
  (*w)->add(fprof::testing::makeKernel("forgotten", 50, 5, 50));
  (*w)->addMissingCountersForLaunch(1, {40, 0}, "CUDA graph launch: not profiled");
  (*w)->expectCountersForEveryKernel("no counters recorded");
  (*w)->addCountersForLaunch(1, 10, 0, c, {{"sm__x.sum", 4.0}});
  ASSERT_TRUE((*w)->flush());
  EXPECT_EQ((*w)->unmatchedCounters(), 0u);
  ASSERT_TRUE((*w)->close());

  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->schema_version, kSchemaVersion);
  std::map<std::string, int64_t> id_of;
  for (const KernelRow& row : p->kernels) id_of[p->str(row.name_id)] = row.id;
  ASSERT_EQ(p->counters.size(), 2u);
  for (const KernelCounters& k : p->counters) {
    EXPECT_EQ(k.half_flops_method, "SASS: packed HFMA2 only (2 lanes)");
    if (k.kernel_id == id_of["copy"]) {
      EXPECT_EQ(k.source, kCounterSourceSameSignature);
      ASSERT_TRUE(k.source_kernel_id);
      EXPECT_EQ(*k.source_kernel_id, id_of["profiled"]);
    } else {
      EXPECT_EQ(k.kernel_id, id_of["profiled"]);
      EXPECT_EQ(k.source, kCounterSourceProfiled);
      EXPECT_FALSE(k.source_kernel_id);
    }
  }
  std::map<int64_t, std::string> reason_of;
  for (const KernelCounterMissing& m : p->counters_missing) reason_of[m.kernel_id] = m.reason;
  EXPECT_EQ(reason_of.size(), 4u) << "every kernel without counters has a reason, no kernel with counters has one";
  EXPECT_EQ(reason_of[id_of["coop"]], "cooperative launch: not replayed");
  EXPECT_EQ(reason_of[id_of["graph_node_a"]], "CUDA graph launch: not profiled");
  EXPECT_EQ(reason_of[id_of["graph_node_b"]], "CUDA graph launch: not profiled");
  EXPECT_EQ(reason_of[id_of["forgotten"]], "no counters recorded");
}

TEST(Store, CopiedCountersOfAGraphKernelFindTheKernelOfTheirNode) {
  const std::string path = fprof::testing::tempPath("graph_node_counters.fprof");
  auto w = Writer::create(path);
  ASSERT_TRUE(w.ok());
  (*w)->expectCountersForEveryKernel("no counters recorded");  // a metrics run
  KernelCounters c;
  c.flops_fp32 = 8;
  // One graph launch (correlation 40) ran nodes 7 and 8; node 8 has the signature of the eager
  // launch 10, node 7 none: only node 8's kernel takes the copy, node 7's keeps the reason.
  (*w)->add(fprof::testing::makeKernel("eager", 0, 5, 10));
  const core::KernelRecord a = graphNodeKernel("graph_node_7", 30, 2, 7);
  const core::KernelRecord b = graphNodeKernel("graph_node_8", 40, 2, 8);
  (*w)->add(a);
  (*w)->addCountersForLaunch(1, 10, 0, c, {});
  (*w)->addMissingCountersForLaunch(1, {40, 0}, "graph kernel: no source");
  (*w)->addCopiedCountersForLaunch(1, {40, 0, 8}, {10, 0}, c, {{"sm__x.sum", 4.0}});
  ASSERT_TRUE((*w)->flush());
  EXPECT_EQ((*w)->unmatchedCounters(), 1u) << "node 8's kernel row is not written yet";
  (*w)->add(b);
  ASSERT_TRUE((*w)->flush());
  EXPECT_EQ((*w)->unmatchedCounters(), 0u);
  ASSERT_TRUE((*w)->close());

  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  std::map<std::string, int64_t> id_of;
  for (const KernelRow& row : p->kernels) id_of[p->str(row.name_id)] = row.id;
  std::map<int64_t, const KernelCounters*> counters_of;
  for (const KernelCounters& k : p->counters) counters_of[k.kernel_id] = &k;
  ASSERT_EQ(counters_of.size(), 2u);
  ASSERT_TRUE(counters_of.count(id_of["graph_node_8"]));
  EXPECT_FALSE(counters_of.count(id_of["graph_node_7"]));
  const KernelCounters& copied = *counters_of[id_of["graph_node_8"]];
  EXPECT_EQ(copied.source, kCounterSourceSameSignature);
  ASSERT_TRUE(copied.source_kernel_id);
  EXPECT_EQ(*copied.source_kernel_id, id_of["eager"]);
  std::map<int64_t, std::string> reason_of;
  for (const KernelCounterMissing& m : p->counters_missing) reason_of[m.kernel_id] = m.reason;
  EXPECT_EQ(reason_of.size(), 1u);
  EXPECT_EQ(reason_of[id_of["graph_node_7"]], "graph kernel: no source");
}

TEST(Store, Schema2FunctionTablesRoundTrip) {
  const std::string path = fprof::testing::tempPath("schema2_functions.fprof");
  {
    auto w = Writer::create(path);
    ASSERT_TRUE(w.ok());
    FunctionRecord f;
    f.process_id = 1;
    f.name = "_Z4axpyPfS_";
    f.registers_per_thread = 10;
    f.local_bytes_per_thread = 256;
    f.binary_version = 90;
    (*w)->add(f);
    f.registers_per_thread = 12;  // the same function again replaces the row
    (*w)->add(f);
    (*w)->add(FunctionArgRecord{1, "_Z4axpyPfS_", 1, kArgRoleWrite, "compared 4096 bytes", 4096, 77});
    (*w)->add(FunctionArgRecord{1, "_Z4axpyPfS_", 0, kArgRoleRead, "compared 4096 bytes", 4096, std::nullopt});
    (*w)->add(FunctionSassOpRecord{1, "_Z4axpyPfS_", "HFMA2.scalar", 8});
    ASSERT_TRUE((*w)->close());
  }
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->functions.size(), 1u);
  EXPECT_EQ(p->str(p->functions[0].name_id), "_Z4axpyPfS_");
  EXPECT_EQ(p->functions[0].registers_per_thread, 12);
  EXPECT_EQ(p->functions[0].local_bytes_per_thread, 256);
  EXPECT_EQ(p->functions[0].binary_version, 90);
  EXPECT_FALSE(p->functions[0].ptx_version);
  ASSERT_EQ(p->function_args.size(), 2u);
  EXPECT_EQ(p->function_args[0].arg_index, 0);
  EXPECT_EQ(p->function_args[0].role, kArgRoleRead);
  EXPECT_FALSE(p->function_args[0].correlation_id);
  EXPECT_EQ(p->function_args[1].role, kArgRoleWrite);
  EXPECT_EQ(p->function_args[1].correlation_id, 77u);
  ASSERT_EQ(p->function_sass_ops.size(), 1u);
  EXPECT_EQ(p->function_sass_ops[0].opcode, "HFMA2.scalar");
  EXPECT_EQ(p->function_sass_ops[0].static_count, 8);
}

// Files recorded before schema 2 (tests/data holds several) open with the new fields empty.
// A graph launch counted as one range (schema 5): its row waits for the launch's kernel rows and
// takes the correlation id they carry (here the driver call's, the launch's alt id), or is written
// as it is when the writer closes without them.
TEST(Store, GraphLaunchCountersTakeTheCorrelationIdOfTheirKernels) {
  const std::string path = fprof::testing::tempPath("graph_launch_counters.fprof");
  auto w = Writer::create(path);
  ASSERT_TRUE(w.ok());
  GraphLaunchCounters g;
  g.process_id = 1;
  g.correlation_id = 39;      // the runtime call
  g.alt_correlation_id = 40;  // the driver call inside it, which the kernel rows carry
  g.counters.dram_read_bytes = 16.0 * (1 << 20);
  g.counters.l1_bytes = 64.0 * (1 << 20);
  g.counters.gpu_time_ns = 12345;
  g.raw = {{"dram__bytes_read.sum", 16.0 * (1 << 20)}, {"l1tex__t_bytes.sum", 64.0 * (1 << 20)}};
  (*w)->add(g);
  GraphLaunchCounters orphan;  // its kernels never arrive
  orphan.process_id = 1;
  orphan.correlation_id = 77;
  orphan.counters.l2_bytes = 5;
  (*w)->add(orphan);
  ASSERT_TRUE((*w)->flush());
  EXPECT_EQ((*w)->pendingRecords(), 2u) << "both wait for kernel rows";
  const core::KernelRecord a = graphNodeKernel("graph_node_1", 30, 3, 1);
  const core::KernelRecord b = graphNodeKernel("graph_node_2", 40, 3, 2);
  (*w)->add(a);
  (*w)->add(b);
  ASSERT_TRUE((*w)->flush());
  EXPECT_EQ((*w)->pendingRecords(), 1u) << "the launch found its kernels; the orphan still waits";
  ASSERT_TRUE((*w)->close());

  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->schema_version, kSchemaVersion);
  ASSERT_EQ(p->graph_launch_counters.size(), 2u);
  const GraphLaunchCounters& got = p->graph_launch_counters[0];
  EXPECT_EQ(got.correlation_id, 40u);
  EXPECT_EQ(got.counters.dram_read_bytes, 16.0 * (1 << 20));
  EXPECT_EQ(got.counters.l1_bytes, 64.0 * (1 << 20));
  EXPECT_EQ(got.counters.gpu_time_ns, 12345.0);
  EXPECT_FALSE(got.counters.dram_write_bytes) << "not collected stays NULL";
  ASSERT_EQ(got.raw.size(), 2u);
  EXPECT_EQ(got.raw[0].first, "dram__bytes_read.sum");
  EXPECT_EQ(p->graph_launch_counters[1].correlation_id, 77u) << "written as it was at close";
  EXPECT_EQ(p->graph_launch_counters[1].counters.l2_bytes, 5.0);
}

TEST(Store, Schema1FilesStillOpen) {
  const std::string path = fprof::testing::tempPath("schema1.fprof");
  {
    auto w = Writer::create(path);
    ASSERT_TRUE(w.ok());
    (*w)->add(fprof::testing::makeKernel("k", 0, 5, 1));
    KernelCounters c;
    c.flops_fp32 = 2;
    (*w)->addCountersForLaunch(1, 1, 0, c, {});
    ASSERT_TRUE((*w)->close());
  }
  ASSERT_NO_FATAL_FAILURE(execSql(path,
                                  "ALTER TABLE kernel DROP COLUMN programmatic_launch; DROP TABLE function; "
                                  "DROP TABLE function_arg; DROP TABLE function_sass_op; "
                                  "DROP TABLE kernel_counter_missing; ALTER TABLE kernel_counter DROP COLUMN source; "
                                  "ALTER TABLE kernel_counter DROP COLUMN source_kernel_id; "
                                  "ALTER TABLE kernel_counter DROP COLUMN signature_varies; "
                                  "ALTER TABLE kernel_counter DROP COLUMN half_flops_method; "
                                  "UPDATE metadata SET value = '1' WHERE key = 'schema_version'"));
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->schema_version, 1);
  ASSERT_EQ(p->counters.size(), 1u);
  EXPECT_EQ(p->counters[0].source, kCounterSourceProfiled);
  EXPECT_TRUE(p->functions.empty());
  EXPECT_TRUE(p->counters_missing.empty());
}

}  // namespace
}  // namespace fprof::core
