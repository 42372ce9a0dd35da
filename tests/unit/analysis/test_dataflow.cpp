// Device memory and data flow: timeline and peak, pointer resolution, the read/write heuristic,
// and the pairing rules (same stream, latest writer, reused buffers, graph launches).
#include <gtest/gtest.h>

#include "fixture.h"
#include "fprof/analysis/dataflow.h"

namespace fprof::analysis {
namespace {

using testing::DbBuilder;

constexpr uint64_t kX = 0x10000, kY = 0x20000, kZ = 0x30000, kW = 0x40000;

std::vector<std::pair<size_t, size_t>> edges(const DataFlow& df) {
  std::vector<std::pair<size_t, size_t>> out;
  for (const DataEdge& e : df.edges) out.emplace_back(e.producer, e.consumer);
  return out;
}

TEST(Memory, TimelineAndPeak) {
  DbBuilder db("mem_timeline");
  db.alloc(kX, 1000, 10);
  db.alloc(kY, 2000, 20);
  db.alloc(kX, 1000, 30, false);
  db.alloc(kZ, 500, 40);
  db.alloc(0x999, 10, 50, false);  // never allocated
  const DataFlow df = analyzeDataFlow(db.load());
  ASSERT_EQ(df.timelines.size(), 1u);
  const auto& t = df.timelines[0];
  const std::vector<std::pair<int64_t, int64_t>> expect = {{10, 1000}, {20, 3000}, {30, 2000}, {40, 2500}};
  EXPECT_EQ(t.points, expect);
  EXPECT_EQ(t.peak_allocated_bytes, 3000);
  EXPECT_EQ(t.peak_ns, 20);
  EXPECT_EQ(df.unmatched_frees, 1);
  ASSERT_EQ(df.allocations.size(), 3u);
  EXPECT_EQ(*df.allocations[0].free_ns, 30);
  EXPECT_FALSE(df.allocations[1].free_ns);
}

TEST(DataFlow, ChainOnOneStreamAndWrittenOnceReadOnce) {
  DbBuilder db("flow_chain");
  for (uint64_t a : {kX, kY, kZ}) db.alloc(a, 4096, 0);
  auto a = db.kernel("A", 1000, 5000);
  auto b = db.kernel("B", 7000, 5000);
  db.add(a);
  db.add(b);
  db.args(a, {kX, kY});
  db.args(b, {kY + 128, kZ});  // an interior pointer resolves to its allocation
  const DataFlow df = analyzeDataFlow(db.load());
  EXPECT_TRUE(df.have_args);
  EXPECT_EQ(edges(df), (std::vector<std::pair<size_t, size_t>>{{0, 1}}));
  EXPECT_EQ(df.edges[0].allocation, 1u);
  EXPECT_EQ(df.edges[0].readers_of_value, 1);
  EXPECT_EQ(df.written_once_read_once, std::vector<uint32_t>{1});  // Y; X is only read, Z only written
  EXPECT_EQ(df.allocations[0].reader_launches, 1);
  EXPECT_EQ(df.allocations[0].writer_launches, 0);
  EXPECT_EQ(df.allocations[2].writer_launches, 1);
  // The last pointer argument is the one written; the others are read.
  ASSERT_EQ(df.access_begin[1] - df.access_begin[0], 2u);
  EXPECT_TRUE(df.accesses[df.access_begin[0]].read);
  EXPECT_TRUE(df.accesses[df.access_begin[0] + 1].write);
}

TEST(DataFlow, SignatureConstnessDecidesReadsAndWrites) {
  // Output first, as in the recorded trace_test program: the signature says which is which.
  DbBuilder db("flow_signature");
  for (uint64_t a : {kX, kY, kZ}) db.alloc(a, 4096, 0);
  auto a = db.kernel("void scale<1>(float*, float const*, int)", 1000, 5000);
  auto b = db.kernel("void scale<2>(float* __restrict__, float const* __restrict__, int)", 7000, 5000);
  db.add(a);
  db.add(b);
  db.args(a, {kY, kX, 1024});  // y = f(x); the int is an 8-byte slot in this test: ignored
  db.args(b, {kZ, kY});        // z = f(y)
  const DataFlow df = analyzeDataFlow(db.load());
  EXPECT_EQ(edges(df), (std::vector<std::pair<size_t, size_t>>{{0, 1}}));
  EXPECT_EQ(df.allocations[1].writer_launches, 1);  // Y written by a, read by b
  EXPECT_EQ(df.allocations[1].reader_launches, 1);
  EXPECT_EQ(df.allocations[0].writer_launches, 0);
}

TEST(DataFlow, InPlaceArgumentIsReadAndWritten) {
  DbBuilder db("flow_inplace");
  db.alloc(kX, 4096, 0);
  db.alloc(kY, 4096, 0);
  auto a = db.kernel("A", 1000, 5000);
  auto b = db.kernel("B_inplace", 7000, 5000);
  db.add(a);
  db.add(b);
  db.args(a, {kX, kY});
  db.args(b, {kY, kX, kY});  // y = f(y, x)
  const DataFlow df = analyzeDataFlow(db.load());
  EXPECT_EQ(edges(df), (std::vector<std::pair<size_t, size_t>>{{0, 1}}));
  EXPECT_EQ(df.allocations[1].writer_launches, 2);
}

TEST(DataFlow, TwoStreamsAreNotPaired) {
  DbBuilder db("flow_streams");
  for (uint64_t a : {kX, kY, kZ}) db.alloc(a, 4096, 0);
  auto a = db.kernel("A", 1000, 5000, 1);
  auto b = db.kernel("B", 7000, 5000, 2);
  db.add(a);
  db.add(b);
  db.args(a, {kX, kY});
  db.args(b, {kY, kZ});
  const DataFlow df = analyzeDataFlow(db.load());
  EXPECT_TRUE(df.edges.empty());
  EXPECT_EQ(df.allocations[1].reader_launches, 1);  // the read is still seen
}

TEST(DataFlow, ReusedBufferPairsWithItsLatestWriter) {
  DbBuilder db("flow_reuse");
  for (uint64_t a : {kX, kY, kZ, kW}) db.alloc(a, 4096, 0);
  auto k1 = db.kernel("A", 1000, 1000);
  auto k2 = db.kernel("B", 3000, 1000);
  auto k3 = db.kernel("C", 5000, 1000);
  auto k4 = db.kernel("D", 7000, 1000);
  for (auto* k : {&k1, &k2, &k3, &k4}) db.add(*k);
  db.args(k1, {kX, kY});  // A writes Y
  db.args(k2, {kY, kZ});  // B reads Y
  db.args(k3, {kZ, kY});  // C rewrites Y
  db.args(k4, {kY, kW});  // D reads the new Y: pairs with C, not A
  const DataFlow df = analyzeDataFlow(db.load());
  EXPECT_EQ(edges(df), (std::vector<std::pair<size_t, size_t>>{{0, 1}, {1, 2}, {2, 3}}));
  EXPECT_EQ(df.edges[2].allocation, 1u);
  // Y holds two values, each read by one kernel; so does Z: both are fusion candidates.
  EXPECT_EQ(df.allocations[1].values_written, 2);
  EXPECT_EQ(df.written_once_read_once, (std::vector<uint32_t>{1, 2}));
}

TEST(DataFlow, AddressReusedAfterFreeResolvesToTheNewAllocation) {
  DbBuilder db("flow_addr_reuse");
  db.alloc(kX, 4096, 0);
  db.alloc(kY, 4096, 0);
  db.alloc(kY, 4096, 500, false);
  db.alloc(kY, 65536, 600);  // same address, new allocation
  auto a = db.kernel("A", 1000, 1000);
  db.add(a);
  db.args(a, {kX, kY + 8192});  // inside the new, larger allocation only
  const DataFlow df = analyzeDataFlow(db.load());
  ASSERT_EQ(df.allocations.size(), 3u);
  EXPECT_EQ(df.allocations[1].writer_launches, 0);
  EXPECT_EQ(df.allocations[2].writer_launches, 1);
}

TEST(DataFlow, GraphLaunchBetweenBreaksThePair) {
  DbBuilder db("flow_graph");
  for (uint64_t a : {kX, kY, kZ}) db.alloc(a, 4096, 0);
  auto a = db.kernel("A", 1000, 1000);
  auto g1 = db.kernel("G1", 3000, 1000);
  auto g2 = db.kernel("G2", 5000, 1000);
  g1.graph_id = g2.graph_id = 9;
  g2.correlation_id = g1.correlation_id;  // one cudaGraphLaunch, two kernel nodes
  g1.graph_node_id = 1;
  g2.graph_node_id = 2;
  auto b = db.kernel("B", 7000, 1000);
  for (auto* k : {&a, &g1, &g2, &b}) db.add(*k);
  db.args(a, {kX, kY});
  db.args(g1, {kY, kZ});  // the graph launch's arguments: not attributable to a node
  db.args(b, {kY, kZ});
  const DataFlow df = analyzeDataFlow(db.load());
  EXPECT_EQ(df.args_known, (std::vector<uint8_t>{1, 0, 0, 1}));
  EXPECT_TRUE(df.edges.empty());  // the graph may have rewritten Y
}

TEST(DataFlow, ValueReadTwiceCountsBothReaders) {
  DbBuilder db("flow_two_readers");
  for (uint64_t a : {kX, kY, kZ, kW}) db.alloc(a, 4096, 0);
  auto a = db.kernel("A", 1000, 1000);
  auto b = db.kernel("B", 3000, 1000);
  auto c = db.kernel("C", 5000, 1000, 3);  // other stream: counted as a reader, no edge
  for (auto* k : {&a, &b, &c}) db.add(*k);
  db.args(a, {kX, kY});
  db.args(b, {kY, kZ});
  db.args(c, {kY, kW});
  const DataFlow df = analyzeDataFlow(db.load());
  ASSERT_EQ(df.edges.size(), 1u);
  EXPECT_EQ(df.edges[0].readers_of_value, 2);
  EXPECT_TRUE(df.written_once_read_once.empty());  // Y is read twice; Z and W never read
}

TEST(DataFlow, NoArgumentsNoEdges) {
  DbBuilder db("flow_none");
  db.add(db.kernel("A", 1000, 1000));
  const DataFlow df = analyzeDataFlow(db.load());
  EXPECT_FALSE(df.have_args);
  EXPECT_FALSE(df.have_allocations);
  EXPECT_TRUE(df.edges.empty());
}

}  // namespace
}  // namespace fprof::analysis
