// Data flow step 3: producer -> consumer edges. Same stream, last writer of the same bytes, and
// nothing in between that may have written them (a free, another write, an opaque kernel, a copy);
// measured roles against inferred ones.
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

TEST(DataFlow, ChainOnOneStreamAndWrittenOnceReadOnce) {
  DbBuilder db("flow_chain");
  for (uint64_t a : {kX, kY, kZ}) db.alloc(a, 4096, 0);
  auto a = db.kernel("A", 1000, 5000);
  auto b = db.kernel("B", 7000, 5000);
  db.add(a);
  db.add(b);
  db.args(a, {kX, kY});
  db.args(b, {kY, kZ});
  const DataFlow df = analyzeDataFlow(db.load());
  EXPECT_TRUE(df.have_args);
  ASSERT_EQ(edges(df), (std::vector<std::pair<size_t, size_t>>{{0, 1}}));
  EXPECT_EQ(df.edges[0].allocation, 1u);
  EXPECT_EQ(df.edges[0].bytes, 4096);
  EXPECT_EQ(df.edges[0].readers_of_value, 1);
  EXPECT_EQ(df.edges[0].roles, RoleSource::kPosition);
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


TEST(DataFlow, AnInteriorPointerStartsABufferOfItsOwn) {
  // B reads at Y + 128: a tensor of its own as far as anything says (a caching allocator's block,
  // or a slice): A's write is taken to end there, so B is not linked; C reads A's bytes.
  DbBuilder db("flow_interior");
  for (uint64_t a : {kX, kY, kZ, kW}) db.alloc(a, 4096, 0);
  auto a = db.kernel("A", 1000, 1000);
  auto b = db.kernel("B", 3000, 1000);
  auto c = db.kernel("C", 5000, 1000);
  for (auto* k : {&a, &b, &c}) db.add(*k);
  db.args(a, {kX, kY});
  db.args(b, {kY + 128, kZ});
  db.args(c, {kY, kW});
  const DataFlow df = analyzeDataFlow(db.load());
  ASSERT_EQ(edges(df), (std::vector<std::pair<size_t, size_t>>{{0, 2}}));
  EXPECT_EQ(df.edges[0].bytes, 128);
  EXPECT_EQ(df.accesses[df.access_begin[1]].bytes, 4096 - 128);
}

// The layer norm of PyTorch, as recorded on an H100: its signature marks the inputs const.
const std::string kLayerNorm =
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, float, false>(int, float, "
    "c10::Half const*, c10::Half const*, c10::Half const*, float*, float*, c10::Half*)";
// A TensorIterator kernel: its pointers travel in a std::array by value, so none is recorded.
const std::string kAdd =
    "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, "
    "3ul> >(int, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, 3ul>)";

// Two layers' LayerNorm in one 2 MiB caching-allocator segment S: the weights, the statistics
// (mean, rstd: the same addresses in every layer) and the activations share it. Between the two,
// the residual add (opaque) writes the second LayerNorm's input into the block the first one's
// output had: the recycled block, and the shared segment, must not make LN0 -> LN1.
TEST(DataFlow, SameKernelInTwoLayersOverARecycledBlockIsNoPair) {
  DbBuilder db("flow_two_layers");
  constexpr uint64_t kS = 0x7f0000000000;
  db.alloc(kS, 2 << 20, 0);
  const uint64_t x0 = kS, gamma = kS + 0x10000, beta = kS + 0x10200, mean = kS + 0x20000, rstd = kS + 0x20800,
                 y0 = kS + 0x40000;
  auto ln0 = db.kernel(kLayerNorm, 1000, 2000);
  auto add = db.kernel(kAdd, 4000, 2000);
  auto ln1 = db.kernel(kLayerNorm, 7000, 2000);
  for (auto* k : {&ln0, &add, &ln1}) db.add(*k);
  db.args(ln0, {0, 0, x0, gamma, beta, mean, rstd, y0});
  db.args(ln1, {0, 0, y0, gamma, beta, mean, rstd, x0});  // y0's block now holds the add's output
  const DataFlow df = analyzeDataFlow(db.load());
  EXPECT_EQ(df.opaque, (std::vector<uint8_t>{0, 1, 0}));
  EXPECT_TRUE(df.edges.empty()) << "LN1 reads what the add wrote (unseen), not what LN0 wrote";
  // Without the add in between, the bytes LN0 wrote are what LN1 reads: a real self-pair.
}

TEST(DataFlow, AKernelConsumingItsOwnFunctionsOutputIsAPair) {
  DbBuilder db("flow_self_pair");
  constexpr uint64_t kS = 0x7f0000000000;
  db.alloc(kS, 2 << 20, 0);
  const uint64_t x0 = kS, gamma = kS + 0x10000, beta = kS + 0x10200, mean = kS + 0x20000, rstd = kS + 0x20800,
                 y0 = kS + 0x40000, y1 = kS + 0x60000;
  auto ln0 = db.kernel(kLayerNorm, 1000, 2000);
  auto ln1 = db.kernel(kLayerNorm, 4000, 2000);
  db.add(ln0);
  db.add(ln1);
  db.args(ln0, {0, 0, x0, gamma, beta, mean, rstd, y0});
  db.args(ln1, {0, 0, y0, gamma, beta, mean, rstd, y1});
  const DataFlow df = analyzeDataFlow(db.load());
  ASSERT_EQ(edges(df), (std::vector<std::pair<size_t, size_t>>{{0, 1}}));
  EXPECT_EQ(df.edges[0].bytes, 0x20000) << "y0 up to the next pointer passed into the segment (y1)";
  EXPECT_EQ(df.edges[0].roles, RoleSource::kSignature);
}

TEST(DataFlow, InterleavedStreamsPairOnTheirOwnStream) {
  DbBuilder db("flow_interleaved");
  for (uint64_t a : {kX, kY, kZ, kW}) db.alloc(a, 4096, 0);
  auto a = db.kernel("A", 1000, 1000, 1);  // s1 writes Y
  auto b = db.kernel("B", 1500, 1000, 2);  // s2 writes W (in between, visible)
  auto c = db.kernel("C", 3000, 1000, 1);  // s1 reads Y
  auto d = db.kernel("D", 3500, 1000, 2);  // s2 reads Y and W
  for (auto* k : {&a, &b, &c, &d}) db.add(*k);
  db.args(a, {kX, kY});
  db.args(b, {kX, kW});
  db.args(c, {kY, kZ});
  db.args(d, {kY, kW, kX + 64});
  const DataFlow df = analyzeDataFlow(db.load());
  EXPECT_EQ(edges(df), (std::vector<std::pair<size_t, size_t>>{{0, 2}, {1, 3}}));
  EXPECT_EQ(df.edges[0].readers_of_value, 2) << "D's read of Y counts, though it forms no edge";
}

TEST(DataFlow, AnOpaqueKernelOnAnyStreamOfTheDeviceBreaksThePair) {
  // A GEMM that passes its pointers in a struct (no argument recorded) on another stream may have
  // written Y's block; one on another device may not.
  for (const uint32_t device : {0u, 1u}) {
    DbBuilder db("flow_opaque_" + std::to_string(device));
    for (uint64_t a : {kX, kY, kZ}) db.alloc(a, 4096, 0);
    auto a = db.kernel("A", 1000, 1000, 1);
    auto gemm = db.kernel("nvjet_sm90_hsh_64x64", 2500, 200, 2);
    gemm.device_id = device;
    auto b = db.kernel("B", 3000, 1000, 1);
    for (auto* k : {&a, &gemm, &b}) db.add(*k);
    db.args(a, {kX, kY});
    db.args(b, {kY, kZ});
    const DataFlow df = analyzeDataFlow(db.load());
    EXPECT_EQ(df.opaque[1], 1);
    EXPECT_EQ(df.edges.size(), device == 0 ? 0u : 1u) << "GEMM on device " << device;
  }
}

TEST(DataFlow, ACopyOrMemsetIntoDeviceMemoryBreaksThePair) {
  for (const bool memset : {false, true}) {
    DbBuilder db(memset ? "flow_memset" : "flow_memcpy");
    for (uint64_t a : {kX, kY, kZ}) db.alloc(a, 4096, 0);
    auto a = db.kernel("A", 1000, 1000);
    auto b = db.kernel("B", 5000, 1000);
    db.add(a);
    db.add(b);
    db.args(a, {kX, kY});
    db.args(b, {kY, kZ});
    if (memset) {
      core::MemsetRecord m;
      m.process_id = db.processId();
      m.start_ns = 3000;
      m.end_ns = 3100;
      m.memory_kind = "device";
      db.writer().add(m);
    } else {
      core::MemcpyRecord m;
      m.process_id = db.processId();
      m.start_ns = 3000;
      m.end_ns = 3100;
      m.copy_kind = "HtoD";
      m.dst_kind = "device";
      db.writer().add(m);
      m.start_ns = 4000;  // device to host: writes no device memory
      m.copy_kind = "DtoH";
      m.dst_kind = "pinned";
      db.writer().add(m);
    }
    EXPECT_TRUE(analyzeDataFlow(db.load()).edges.empty()) << (memset ? "memset" : "memcpy");
  }
}

// PyTorch's out-of-place masked_fill: a clone (a device-to-device cudaMemcpyAsync of the scores)
// and an in-place fill. With the copy's addresses (memcpy_address, from its driver call) the value
// A wrote in Y reaches B through the copy into W: an edge A -> B carrying the copied bytes. Without
// them the copy may have written anything on the device: no edge.
TEST(DataFlow, ACopyWithAddressesPassesTheValueOn) {
  for (const bool addressed : {true, false}) {
    DbBuilder db(addressed ? "flow_copy_addressed" : "flow_copy_blind");
    for (uint64_t a : {kX, kY, kZ, kW}) db.alloc(a, 4096, 0);
    auto a = db.kernel("A", 1000, 1000);
    auto b = db.kernel("B", 5000, 1000);
    db.add(a);
    db.add(b);
    db.args(a, {kX, kY});
    db.args(b, {kW, kZ});
    core::MemcpyRecord m;
    m.process_id = db.processId();
    m.stream_id = 7;
    m.correlation_id = 900;
    m.start_ns = 3000;
    m.end_ns = 3100;
    m.bytes = 4096;
    m.copy_kind = "DtoD";
    m.src_kind = m.dst_kind = "device";
    db.writer().add(m);
    if (addressed) db.writer().add(core::MemcpyAddressRecord{db.processId(), 900, kY, kW, 4096});
    const DataFlow df = analyzeDataFlow(db.load());
    if (!addressed) {
      EXPECT_TRUE(df.edges.empty());
      continue;
    }
    ASSERT_EQ(df.edges.size(), 1u);
    EXPECT_EQ(df.edges[0].producer, 0u);
    EXPECT_EQ(df.edges[0].consumer, 1u);
    EXPECT_EQ(df.edges[0].tensor_bytes, 4096);
  }
}

TEST(DataFlow, AFreeEndsEveryVersion) {
  DbBuilder db("flow_free");
  db.alloc(kX, 4096, 0);
  db.alloc(kY, 4096, 0);
  db.alloc(kZ, 4096, 0);
  auto a = db.kernel("A", 1000, 1000);
  db.alloc(kY, 4096, 2500, false);
  db.alloc(kY, 4096, 2600);  // cudaMalloc hands the same address out again
  auto b = db.kernel("B", 3000, 1000);
  db.add(a);
  db.add(b);
  db.args(a, {kX, kY});
  db.args(b, {kY, kZ});
  EXPECT_TRUE(analyzeDataFlow(db.load()).edges.empty());
}

TEST(DataFlow, AnArgumentOfUnknownRoleEndsWhatWasThere) {
  // The gather kernel's pointers are all mutable (char*): it may have written Y.
  DbBuilder db("flow_unknown_role");
  for (uint64_t a : {kX, kY, kZ}) db.alloc(a, 4096, 0);
  auto a = db.kernel("A", 1000, 1000);
  auto g = db.kernel("void gather(char*, char*, long*, int)", 3000, 1000);
  auto b = db.kernel("B", 5000, 1000);
  for (auto* k : {&a, &g, &b}) db.add(*k);
  db.args(a, {kX, kY});
  db.args(g, {kZ, kY, kX});
  db.args(b, {kY, kZ});
  const DataFlow df = analyzeDataFlow(db.load());
  EXPECT_TRUE(df.accesses[df.access_begin[1]].unknown);
  EXPECT_TRUE(df.edges.empty());
  EXPECT_EQ(df.allocations[1].writer_launches, 1) << "only A's write is a write";
}

TEST(DataFlow, AnOpaqueKernelsOwnVisibleOutputStillLinks) {
  // torch.arange: (int, lambda, int*): the lambda may hide pointers, the output pointer is seen.
  DbBuilder db("flow_partly_opaque");
  for (uint64_t a : {kX, kY, kZ}) db.alloc(a, 4096, 0);
  auto r = db.kernel("void arange_kernel(int, foo()::{lambda(long)#1}, long*)", 1000, 1000);
  auto b = db.kernel("void embed(float const*, long const*, float*)", 3000, 1000);
  db.add(r);
  db.add(b);
  // Only the pointer is an 8-byte parameter: the lambda has no row.
  db.writer().add(core::KernelArgRecord{r.correlation_id, db.processId(), 2, 32, 8, kY});
  db.args(b, {kX, kY, kZ});
  const DataFlow df = analyzeDataFlow(db.load());
  EXPECT_EQ(df.opaque[0], 1);
  EXPECT_EQ(edges(df), (std::vector<std::pair<size_t, size_t>>{{0, 1}}));
}

TEST(DataFlow, MeasuredRolesDecideAndEdgesSaySo) {
  // Two extern "C" kernels whose output comes first: the position rule would read them backwards.
  DbBuilder db("flow_measured");
  for (uint64_t a : {kX, kY, kZ}) db.alloc(a, 4096, 0);
  auto a = db.kernel("out_first_a", 1000, 1000);
  auto b = db.kernel("out_first_b", 3000, 1000);
  db.add(a);
  db.add(b);
  db.args(a, {kY, kX});  // y = f(x)
  db.args(b, {kZ, kY});  // z = g(y)
  const core::Profile p = db.load();
  const DataFlow inferred = analyzeDataFlow(p);
  EXPECT_FALSE(inferred.have_measured_roles);
  EXPECT_TRUE(inferred.edges.empty()) << "by position, a writes X and b writes Y: nothing read";
  MeasuredRoles m;
  for (const core::KernelRow& k : p.kernels) {
    m.add(k.process_id, k.name_id, 0, "write");
    m.add(k.process_id, k.name_id, 1, "read");
  }
  const DataFlow measured = analyzeDataFlow(p, m);
  EXPECT_TRUE(measured.have_measured_roles);
  ASSERT_EQ(edges(measured), (std::vector<std::pair<size_t, size_t>>{{0, 1}}));
  EXPECT_EQ(measured.edges[0].roles, RoleSource::kMeasured);
  // Only b measured: a's write is inferred (position: a writes X, its last argument), so no edge;
  // measured for b alone, the edge's roles are as weak as its weaker side.
  MeasuredRoles half;
  half.add(1, p.kernels[1].name_id, 0, "write");
  half.add(1, p.kernels[1].name_id, 1, "read");
  EXPECT_TRUE(analyzeDataFlow(p, half).edges.empty());
}


TEST(DataFlow, MeasuredRolesAreReadFromTheProfile) {
  // Schema v2: function_arg rows, as the collector's probe writes them (by mangled name).
  DbBuilder db("flow_measured_rows");
  for (uint64_t a : {kX, kY, kZ}) db.alloc(a, 4096, 0);
  auto a = db.kernel("out_first_a", 1000, 1000);
  auto b = db.kernel("out_first_b", 3000, 1000);
  db.add(a);
  db.add(b);
  db.args(a, {kY, kX});
  db.args(b, {kZ, kY});
  for (const char* name : {"out_first_a", "out_first_b"}) {
    db.writer().add(core::FunctionArgRecord{db.processId(), name, 0, "write", "sampled 4096 of 4096 bytes", 4096, 1});
    db.writer().add(core::FunctionArgRecord{db.processId(), name, 1, "read", "sampled 4096 of 4096 bytes", 4096, 1});
  }
  const DataFlow df = analyzeDataFlow(db.load());
  EXPECT_TRUE(df.have_measured_roles);
  ASSERT_EQ(edges(df), (std::vector<std::pair<size_t, size_t>>{{0, 1}}));
  EXPECT_EQ(df.edges[0].roles, RoleSource::kMeasured);
}

// PyTorch's elementwise kernels pass their pointers in a std::array<char*, N> by value. Where the
// collector records that parameter word by word (rows whose size_bytes is the parameter's, 24),
// the kernel is not opaque; each word's role is unknown unless measured for that word.
TEST(DataFlow, WordsOfALargerParameterAreArguments) {
  DbBuilder db("flow_words");
  for (uint64_t a : {kX, kY, kZ, kW}) db.alloc(a, 4096, 0);
  auto add = db.kernel(kAdd, 1000, 1000);
  auto relu = db.kernel(
      "void at::native::vectorized_elementwise_kernel<8, at::native::ReluFunctor<c10::Half>, std::array<char*, 2ul> >"
      "(int, at::native::ReluFunctor<c10::Half>, std::array<char*, 2ul>)",
      3000, 1000);
  db.add(add);
  db.add(relu);
  auto word = [&](const core::KernelRecord& k, int32_t offset, int32_t size, uint64_t v) {
    db.writer().add(core::KernelArgRecord{k.correlation_id, db.processId(), 2, offset, size, v});
  };
  word(add, 8, 24, kY);  // out = x + w
  word(add, 16, 24, kX);
  word(add, 24, 24, kW);
  word(relu, 8, 16, kZ);  // z = relu(y)
  word(relu, 16, 16, kY);
  const core::Profile p = db.load();
  const DataFlow inferred = analyzeDataFlow(p);
  EXPECT_EQ(inferred.opaque, (std::vector<uint8_t>{0, 0})) << "every pointer is seen";
  EXPECT_TRUE(inferred.edges.empty()) << "but without measurement nothing says which word is the output";
  MeasuredRoles m;
  m.add(1, p.kernels[0].name_id, 2, "write", 8);
  m.add(1, p.kernels[0].name_id, 2, "read", 16);
  m.add(1, p.kernels[0].name_id, 2, "read", 24);
  m.add(1, p.kernels[1].name_id, 2, "write", 8);
  m.add(1, p.kernels[1].name_id, 2, "read", 16);
  m.add(1, p.kernels[1].name_id, 2, "write");  // the whole parameter's role says nothing of a word
  const DataFlow measured = analyzeDataFlow(p, m);
  ASSERT_EQ(edges(measured), (std::vector<std::pair<size_t, size_t>>{{0, 1}}));
  EXPECT_EQ(measured.edges[0].roles, RoleSource::kMeasured);
}

// As the collector writes them (schema v2 with offsets): a role per word, at the word's offset in
// the parameter buffer, the same offset its kernel_arg row has. Recorded on an H100 (the proof's
// GPT): the residual add's std::array<char*, 3> words at 8 (out), 16, 24, and LayerNorm's 8-byte
// parameters at their own offsets (index 2 at 8 ... index 7 at 48).
TEST(DataFlow, MeasuredRolesJoinWordsByOffset) {
  DbBuilder db("flow_measured_offsets");
  constexpr uint64_t kS = 0x7f0000000000;  // one 20 MiB caching-allocator segment
  db.alloc(kS, 20 << 20, 0);
  const uint64_t x = kS, delta = kS + 0x300000, sum = kS + 0x600000, gamma = kS + 0x900000, beta = kS + 0x900600,
                 mean = kS + 0x910000, rstd = kS + 0x912000, y = kS + 0x920000;
  auto add = db.kernel(kAdd, 1000, 3500);
  auto ln = db.kernel(kLayerNorm, 5000, 6000);
  db.add(add);
  db.add(ln);
  for (auto [offset, v] : {std::pair{8, sum}, {16, x}, {24, delta}}) {
    db.writer().add(core::KernelArgRecord{add.correlation_id, db.processId(), 2, offset, 24, v});
  }
  db.args(ln, {0, 0, sum, gamma, beta, mean, rstd, y});
  auto role = [&](const std::string& name, int32_t index, int32_t offset, const char* r) {
    db.writer().add(core::FunctionArgRecord{db.processId(), name, index, r, "sampled", 4096, 1, offset});
  };
  role(kAdd, 2, 8, "write");
  role(kAdd, 2, 16, "read");
  role(kAdd, 2, 24, "read");
  for (int32_t i = 2; i <= 4; ++i) role(kLayerNorm, i, 8 * (i - 1), "read");
  for (int32_t i = 5; i <= 7; ++i) role(kLayerNorm, i, 8 * (i - 1), "write");
  const DataFlow df = analyzeDataFlow(db.load());
  EXPECT_EQ(df.opaque, (std::vector<uint8_t>{0, 0}));
  ASSERT_EQ(edges(df), (std::vector<std::pair<size_t, size_t>>{{0, 1}}));
  EXPECT_EQ(df.edges[0].roles, RoleSource::kMeasured);
  EXPECT_EQ(df.edges[0].bytes, 0x300000) << "the sum up to the next pointer into the segment (gamma)";
  EXPECT_EQ(df.edges[0].linked_readers, 1);
}

// A measured function writes through its words measured as written. A launch that does not show
// one of them (the collector kept a larger parameter's first 16 words; cuBLAS's nvjet GEMMs carry
// their pointers at offsets 176-496 of a 1720-byte struct, PyTorch's strided elementwise kernels
// theirs past offset 260) writes where fprof cannot see: opaque, so A's value does not reach B
// across it. So is a function measured to write nothing (its output past the words the probe read).
TEST(DataFlow, AMeasuredWriteTheLaunchDoesNotShowMakesItOpaque) {
  for (const bool writes_measured : {true, false}) {
    DbBuilder db(writes_measured ? "flow_hidden_write" : "flow_no_write_measured");
    for (uint64_t a : {kX, kY, kZ}) db.alloc(a, 4096, 0);
    auto a = db.kernel("void a(float const*, float*)", 1000, 1000);
    auto gemm = db.kernel("nvjet_sm90_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN", 2500, 200);
    auto b = db.kernel("void b(float const*, float*)", 3000, 1000);
    for (auto* k : {&a, &gemm, &b}) db.add(*k);
    db.args(a, {kX, kY});
    db.args(b, {kY, kZ});
    // The struct's first words (sizes), none an address; the probe found its pointers further on.
    db.writer().add(core::KernelArgRecord{gemm.correlation_id, db.processId(), 0, 0, 1720, 0x4200000042});
    db.writer().add(core::KernelArgRecord{gemm.correlation_id, db.processId(), 0, 176, 1720, kX});
    auto role = [&](int32_t offset, const char* r) {
      db.writer().add(core::FunctionArgRecord{db.processId(), "nvjet_sm90_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN", 0,
                                              r, "sampled", 4096, 2, offset});
    };
    role(176, "read");
    if (writes_measured) role(328, "write");
    const DataFlow df = analyzeDataFlow(db.load());
    EXPECT_EQ(df.opaque[1], 1);
    EXPECT_TRUE(df.edges.empty());
  }
}

// A value read by its linked consumer and again after an opaque kernel: two readers, one linked
// (fusion_chains.h keeps such a pair together and its write).
TEST(DataFlow, ReadersAfterAnOpaqueKernelCountButAreNotLinked) {
  DbBuilder db("flow_linked_readers");
  for (uint64_t a : {kX, kY, kZ, kW}) db.alloc(a, 4096, 0);
  auto a = db.kernel("A", 1000, 1000);
  auto b = db.kernel("B", 3000, 1000);
  auto gemm = db.kernel("nvjet_sm90_hsh_64x64", 4500, 200);
  auto c = db.kernel("C", 5000, 1000);
  for (auto* k : {&a, &b, &gemm, &c}) db.add(*k);
  db.args(a, {kX, kY});
  db.args(b, {kY, kZ});
  db.args(c, {kY, kW});
  const DataFlow df = analyzeDataFlow(db.load());
  ASSERT_EQ(edges(df), (std::vector<std::pair<size_t, size_t>>{{0, 1}}));
  EXPECT_EQ(df.edges[0].readers_of_value, 2);
  EXPECT_EQ(df.edges[0].linked_readers, 1);
}

}  // namespace
}  // namespace fprof::analysis
