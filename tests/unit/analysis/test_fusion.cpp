// Fusion payoff: pairs and chains from data flow (trace model) and from the NVTX convention
// (roofline model, measured fused variant, model error), and the reasons not to fuse.
#include <gtest/gtest.h>

#include "fixture.h"
#include "fprof/analysis/fusion.h"

namespace fprof::analysis {
namespace {

using testing::DbBuilder;

FusionResult fusionOf(const core::Profile& p) {
  const OpIndex ops = indexOps(p);
  const DataFlow df = analyzeDataFlow(p);
  return analyzeFusion(p, ops, df);
}

TEST(NvtxTags, ParsesTheConvention) {
  auto t = parseOpTags("op=mm_bias_relu variant=unfused pair=p1 reads=x,w,b writes=y layer=3 future=1");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->op, "mm_bias_relu");
  EXPECT_EQ(t->variant, "unfused");
  EXPECT_EQ(t->pair, "p1");
  EXPECT_EQ(t->reads, (std::vector<std::string>{"x", "w", "b"}));
  EXPECT_EQ(t->writes, std::vector<std::string>{"y"});
  EXPECT_EQ(*t->layer, 3);
  EXPECT_FALSE(parseOpTags("forward pass"));
  EXPECT_FALSE(parseOpTags("variant=fused"));
  EXPECT_FALSE(parseOpTags("op=x layer=abc")->layer);
}

// A -> B -> C on one stream, twice; intermediates Y and Z of 1,024,000 B each take 1000 ns at the
// test GPU's 1.024e12 B/s DRAM roof (they would fit in L2, but the test GPU has no measured L2
// roof). Trace model: the fixed cost is the 2000 ns cap (every kernel is longer), so the work is
// A 8000, B 3000, C 3000 ns. A moves X + Y = 2.048e6 B in 8000 ns (25% of the DRAM roof): not
// memory-bound, it loses Y's write time, 1000 ns -> 7000. B and C move 2.048e6 B in 3000 ns (67%):
// memory-bound, their time shrinks with their bytes: B loses all (reads Y, writes Z) -> 0, C loses
// Z's read, half -> 1500. Fused: 2000 + 7000 + 0 + 1500 = 10500 ns for 20000 unfused.
TEST(Fusion, DataFlowChainTraceModel) {
  DbBuilder db("fusion_chain");
  constexpr uint64_t kX = 0x100000, kY = 0x200000, kZ = 0x300000, kW = 0x400000;
  db.alloc(kX, 1024000, 0);
  db.alloc(kY, 1024000, 0);
  db.alloc(kZ, 1024000, 0);
  db.alloc(kW, 1024000, 0);
  for (int rep = 0; rep < 2; ++rep) {
    const int64_t t = 1000 + rep * 100000;
    auto a = db.kernel("A", t, 10000);
    auto b = db.kernel("B", t + 11000, 5000);
    auto c = db.kernel("C", t + 17000, 5000);
    for (auto* k : {&a, &b, &c}) db.add(*k);
    db.args(a, {kX, kY});
    db.args(b, {kY, kZ});
    db.args(c, {kZ, kW});
  }
  const FusionResult r = fusionOf(db.load());
  EXPECT_FALSE(r.nvtx_convention);
  EXPECT_EQ(r.program_gpu_ns, 40000);
  ASSERT_EQ(r.candidates.size(), 1u);
  const FusionCandidate& c = r.candidates[0];
  EXPECT_EQ(c.source, PairSource::kDataFlow);
  EXPECT_EQ(c.id, "A -> B -> C");
  EXPECT_EQ(c.instances, 2);
  EXPECT_EQ(c.launches_removed, 2);
  EXPECT_DOUBLE_EQ(c.unfused_ns, 20000.0);
  EXPECT_EQ(c.stage_ns, (std::vector<double>{10000.0, 5000.0, 5000.0}));
  EXPECT_DOUBLE_EQ(*c.intermediate_bytes, 2048000.0);
  EXPECT_EQ(c.bytes_source, BytesSource::kAllocation);
  EXPECT_EQ(*c.model, PredictionModel::kTrace);
  EXPECT_DOUBLE_EQ(*c.predicted_fused_ns, 10500.0);
  EXPECT_DOUBLE_EQ(*c.predicted_saving_ns, 9500.0);
  EXPECT_DOUBLE_EQ(*c.total_saving_ns, 19000.0);
  EXPECT_DOUBLE_EQ(*c.program_share, 0.475);
  EXPECT_DOUBLE_EQ(*c.fused_occupancy, 1.0);
  EXPECT_TRUE(c.fuse);
  EXPECT_FALSE(c.measured_fused_ns);
}

// A value two kernels were linked to (a residual feeding a norm and the next residual add): each
// link is a pair that still writes it, and says so; it is fused all the same (fused add + norm).
TEST(Fusion, ValueWithTwoReadersKeepsItsWrite) {
  DbBuilder db("fusion_two_readers");
  constexpr uint64_t kX = 0x100000, kY = 0x200000, kZ = 0x300000, kW = 0x400000;
  for (uint64_t a : {kX, kY, kZ, kW}) db.alloc(a, 1024000, 0);
  auto a = db.kernel("A", 1000, 10000);
  auto b = db.kernel("B", 12000, 5000);
  auto c = db.kernel("C", 18000, 5000);
  for (auto* k : {&a, &b, &c}) db.add(*k);
  db.args(a, {kX, kY});
  db.args(b, {kY, kZ});
  db.args(c, {kY, kW});
  const FusionResult r = fusionOf(db.load());
  ASSERT_EQ(r.candidates.size(), 2u);
  for (const auto& cand : r.candidates) {
    EXPECT_TRUE(cand.fuse);
    EXPECT_EQ(cand.risks, (std::vector<std::string>{"an intermediate is also read by other kernels or ops: the fused "
                                                    "kernel still writes it (predicted so)"}));
  }
  // Only the consumer's read is saved. Fixed cost 2000 ns (the cap); A (8000 ns of work, 25% of
  // the roof) keeps its write; B (3000 ns, memory-bound) loses half its bytes -> 1500.
  // Fused: 2000 + 8000 + 1500 = 11500 of 15000.
  EXPECT_EQ(r.candidates[0].id, "A -> B");
  EXPECT_DOUBLE_EQ(*r.candidates[0].predicted_fused_ns, 11500.0);
}

// Residual add -> norm, found by data flow. add(x, d) -> h moves 3.072e6 B in 3000 ns of work
// (5000 less the 2000 ns fixed cost): 100% of the test GPU's 1.024e12 B/s roof, memory-bound. The
// norm(h) -> y moves 2.048e6 B; in 6000 ns of work (33% of the roof, 200 blocks for 100 SMs) it is
// streamable, in 10000 ns (20%) it is not.
//   Per-stage model: add loses h's write (1/3 of its bytes) -> 2000; the norm loses h's transfer
//   (1.024e6 B at the roof, 1000 ns) -> 5000 or 9000. Fused: 2000 + 2000 + 5000 = 9000 (13000).
//   Streaming model: external bytes x, d read and y written, 3.072e6 B (h stays on chip), at the
//   add's 1.024 B/ns (capped at the roof): 2000 + 3000 = 5000. The prediction is the lower one.
TEST(Fusion, AStreamingChainRunsAtItsBestPartsBandwidth) {
  for (const bool streamable : {true, false}) {
    DbBuilder db(streamable ? "fusion_streaming" : "fusion_not_streaming");
    constexpr uint64_t kX = 0x100000, kD = 0x200000, kH = 0x300000, kY = 0x400000;
    for (uint64_t a : {kX, kD, kH, kY}) db.alloc(a, 1024000, 0);
    auto add = db.kernel("void add_kernel(float const*, float const*, float*)", 1000, 5000);
    auto norm = db.kernel("void norm_kernel(float const*, float*)", 7000, streamable ? 8000 : 12000);
    db.add(add);
    db.add(norm);
    db.args(add, {kX, kD, kH});
    db.args(norm, {kH, kY});
    const FusionResult r = fusionOf(db.load());
    ASSERT_EQ(r.candidates.size(), 1u);
    EXPECT_EQ(r.candidates[0].links, (std::vector<std::pair<size_t, size_t>>{{0, 1}}));
    EXPECT_DOUBLE_EQ(*r.candidates[0].predicted_fused_ns, streamable ? 5000.0 : 13000.0);
  }
}

// A GEMM's epilogue: gemm(x, w) -> h, a broadcasting bias add h + b -> h2 at a third of the roof,
// GELU(h2) -> y, memory-bound (1.024e6 B tensors, a 1024 B bias; roof 1024 B/ns; fixed cost 2000).
//   Per-stage trace model: the GEMM loses h's write (1000 ns) -> 17000; the add loses h's read and
//   h2's write -> 4000; GELU loses half its bytes -> 1000. Fused: 2000 + 17000 + 4000 + 1000 = 24000.
//   Streaming the non-GEMM stages: the add moves only its bias across the fused kernel's boundary
//   (1 ns), GELU only y (1000 ns); the GEMM keeps its trace time. 2000 + 17000 + 1 + 1000 = 20001,
//   the prediction, for 32000 unfused.
TEST(Fusion, AnEpilogueCostsOnlyTheBytesItBringsIntoTheGemm) {
  DbBuilder db("fusion_epilogue");
  constexpr uint64_t kX = 0x100000, kW = 0x200000, kH = 0x300000, kB = 0x400000, kH2 = 0x500000, kY = 0x600000;
  for (uint64_t a : {kX, kW, kH, kH2, kY}) db.alloc(a, 1024000, 0);
  db.alloc(kB, 1024, 0);
  auto gemm = db.kernel("void gemm_kernel(float const*, float const*, float*)", 1000, 20000);
  auto add = db.kernel("void bias_add_kernel(float const*, float const*, float*)", 22000, 8000);
  auto gelu = db.kernel("void gelu_kernel(float const*, float*)", 31000, 4000);
  for (auto* k : {&gemm, &add, &gelu}) db.add(*k);
  db.args(gemm, {kX, kW, kH});
  db.args(add, {kH, kB, kH2});
  db.args(gelu, {kH2, kY});
  const FusionResult r = fusionOf(db.load());
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_EQ(r.candidates[0].links, (std::vector<std::pair<size_t, size_t>>{{0, 1}, {1, 2}}));
  EXPECT_DOUBLE_EQ(r.candidates[0].unfused_ns, 32000.0);
  EXPECT_DOUBLE_EQ(*r.candidates[0].predicted_fused_ns, 20001.0);
}

// GPT-2's gelu_new: h = 0.5 * x and t = 1 + tanh(...) (two kernels here, each reading x) meet in
// h * t. One group, not two pairs; x is read once by the fused kernel. Each kernel moves 2.048e6 B
// (3.072e6 for the multiply) in 2000 ns of work: memory-bound. Streaming: x read once and the
// product written, 2.048e6 B at 1.024 B/ns: 2000 + 2000 = 4000 ns, for 3 x 4000 unfused.
TEST(Fusion, TwoProducersMeetingInOneConsumerAreOneGroup) {
  DbBuilder db("fusion_fan_in");
  constexpr uint64_t kX = 0x100000, kH = 0x200000, kT = 0x300000, kO = 0x400000;
  for (uint64_t a : {kX, kH, kT, kO}) db.alloc(a, 1024000, 0);
  auto half = db.kernel("void half_kernel(float const*, float*)", 1000, 4000);
  auto tanh = db.kernel("void tanh_kernel(float const*, float*)", 6000, 4000);
  auto mul = db.kernel("void mul_kernel(float const*, float const*, float*)", 11000, 5000);
  for (auto* k : {&half, &tanh, &mul}) db.add(*k);
  db.args(half, {kX, kH});
  db.args(tanh, {kX, kT});
  db.args(mul, {kH, kT, kO});
  const FusionResult r = fusionOf(db.load());
  ASSERT_EQ(r.candidates.size(), 1u);
  const FusionCandidate& c = r.candidates[0];
  EXPECT_EQ(c.stages.size(), 3u);
  EXPECT_EQ(c.links, (std::vector<std::pair<size_t, size_t>>{{0, 2}, {1, 2}}));
  EXPECT_EQ(c.launches_removed, 2);
  EXPECT_DOUBLE_EQ(*c.predicted_fused_ns, 4000.0);
}

// Declared pair p1: stage "matmul" (K1) writes t, stage "bias_relu" (K2) reads t; the fused
// variant K3 was measured too. Counters give the roofline model (test GPU: fp32 2.56e13 FLOP/s,
// DRAM 1.024e12 B/s, and a measured L2 roof of 2.048e12 B/s):
//   K1: 2.56e8 FLOP (10 us), 1.536e7 B DRAM (15 us), 4.096e7 B L2 (20 us) -> roof 20 us; measured 30 us
//   K2: 1.024e6 FLOP, 2.048e7 B DRAM (20 us), 6.144e7 B L2 (30 us) -> roof 30 us; measured 35 us
//   intermediate = min(K1 writes 1.024e7, K2 reads 1.024e7) = 1.024e7 B
//   K1 stops writing it, once at every level -> 5.12e6 B DRAM, 3.072e7 B L2
//   K2 stops reading it: all of its DRAM reads, so all of its L2 reads too (6.144e7 less the
//   1.024e7 it writes: it read t five times there) -> 1.024e7 B DRAM, 1.024e7 B L2
//   fused work: 2.57024e8 FLOP (10.04 us), 1.536e7 B DRAM (15 us), 4.096e7 B L2 (20 us)
//   fixed cost 2000 ns (the cap); work of the parts 28 + 33 = 61 us for 50 us of roof
//   predicted fused = 2 us + 20 us x 61 / 50 = 26.4 us
TEST(Fusion, NvtxPairRooflineModelWithMeasuredFusedVariant) {
  DbBuilder db("fusion_nvtx");
  db.writer().add(core::CeilingRecord{"TestGPU", "l2", "bytes_per_s", 2.048e12, "measured", "test"});
  db.range(1, std::nullopt, "op=mm_bias_relu variant=unfused pair=p1 reads=x,w writes=y", 0, 80000, 0);
  // Stage ranges repeat variant and pair, as docs/nvtx-convention.md has them.
  db.range(2, 1, "op=matmul variant=unfused pair=p1 reads=x,w writes=t", 0, 35000, 0);
  db.range(3, 1, "op=bias_relu variant=unfused pair=p1 reads=t writes=y", 35000, 80000, 0);
  db.range(4, std::nullopt, "op=mm_bias_relu variant=fused pair=p1 reads=x,w writes=y", 90000, 120000, 0);
  auto k1 = db.kernel("matmul_kernel", 1000, 30000);
  k1.nvtx_range_key = 2;
  auto k2 = db.kernel("bias_relu_kernel", 36000, 35000);
  k2.nvtx_range_key = 3;
  auto k3 = db.kernel("matmul_bias_relu_fused", 91000, 24000);
  k3.nvtx_range_key = 4;
  const int64_t id1 = db.add(k1), id2 = db.add(k2);
  db.add(k3);
  core::KernelCounters c1;
  c1.kernel_id = id1;
  c1.flops_fp32 = 2.56e8;
  c1.dram_read_bytes = 5.12e6;
  c1.dram_write_bytes = 1.024e7;
  c1.l2_bytes = 4.096e7;
  core::KernelCounters c2;
  c2.kernel_id = id2;
  c2.flops_fp32 = 1.024e6;
  c2.dram_read_bytes = 1.024e7;
  c2.dram_write_bytes = 1.024e7;
  c2.l2_bytes = 6.144e7;
  db.writer().add(c1);
  db.writer().add(c2);
  const FusionResult r = fusionOf(db.load());
  EXPECT_TRUE(r.nvtx_convention);
  ASSERT_EQ(r.candidates.size(), 1u);
  const FusionCandidate& c = r.candidates[0];
  EXPECT_EQ(c.source, PairSource::kNvtx);
  EXPECT_EQ(c.id, "p1");
  EXPECT_EQ(c.op, "mm_bias_relu");
  EXPECT_EQ(c.stages, (std::vector<std::string>{"matmul", "bias_relu"}));
  EXPECT_EQ(c.intermediates, std::vector<std::string>{"t"});
  EXPECT_EQ(c.launches_removed, 1);
  EXPECT_DOUBLE_EQ(c.unfused_ns, 65000.0);
  EXPECT_DOUBLE_EQ(*c.intermediate_bytes, 1.024e7);
  EXPECT_EQ(c.bytes_source, BytesSource::kCounters);
  EXPECT_EQ(*c.model, PredictionModel::kRoofline);
  const double predicted = 2000.0 + 20000.0 * 61000.0 / 50000.0;
  EXPECT_NEAR(*c.predicted_fused_ns, predicted, 1e-6);
  EXPECT_NEAR(*c.predicted_fused_ns, 26400.0, 1e-6);
  EXPECT_NEAR(*c.predicted_saving_ns, 65000.0 - predicted, 1e-6);
  EXPECT_NEAR(*c.program_share, (65000.0 - predicted) / 89000.0, 1e-12);
  EXPECT_DOUBLE_EQ(*c.measured_fused_ns, 24000.0);
  EXPECT_DOUBLE_EQ(*c.measured_saving_ns, 41000.0);
  EXPECT_NEAR(*c.prediction_error, (predicted - 24000.0) / 24000.0, 1e-12);
  EXPECT_EQ(r.measured_pairs, 1);
  EXPECT_NEAR(*r.median_abs_error, (predicted - 24000.0) / 24000.0, 1e-12);
  EXPECT_TRUE(c.fuse);
}

// Parts that already run at their roof: the work left after the fixed cost is below the roof,
// so the fused kernel is held to its own roof (never faster than it) plus one fixed cost.
// K1: 1.024e7 B DRAM (10 us), K2: 2.048e7 B (20 us), both measured at exactly their roof; the
// intermediate (K1's write, K2's read) is 1.024e7 B: fused work 1.024e7 B -> 10 us; fused 12 us.
TEST(Fusion, FusedKernelIsNotFasterThanItsRoof) {
  DbBuilder db("fusion_roof_bound");
  db.range(1, std::nullopt, "op=chain variant=unfused pair=p7", 0, 40000, 0);
  db.range(2, 1, "op=s1 writes=t", 0, 15000, 0);
  db.range(3, 1, "op=s2 reads=t", 15000, 40000, 0);
  auto k1 = db.kernel("s1_kernel", 1000, 10000);
  k1.nvtx_range_key = 2;
  auto k2 = db.kernel("s2_kernel", 16000, 20000);
  k2.nvtx_range_key = 3;
  const int64_t id1 = db.add(k1), id2 = db.add(k2);
  core::KernelCounters c1;
  c1.kernel_id = id1;
  c1.flops_fp32 = 0;
  c1.dram_read_bytes = 0;
  c1.dram_write_bytes = 1.024e7;
  core::KernelCounters c2;
  c2.kernel_id = id2;
  c2.flops_fp32 = 0;
  c2.dram_read_bytes = 1.024e7;
  c2.dram_write_bytes = 1.024e7;
  db.writer().add(c1);
  db.writer().add(c2);
  const FusionResult r = fusionOf(db.load());
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_EQ(*r.candidates[0].model, PredictionModel::kRoofline);
  // Without the floor: 2000 + 10000 x (8000 + 18000) / 30000 = 10667 ns, faster than the roof allows.
  EXPECT_DOUBLE_EQ(*r.candidates[0].predicted_fused_ns, 12000.0);
}

// The fused kernel keeps the registers and block of its hungriest part and needs the shared
// memory of its largest part: tile_a alone (128 registers x 128 threads) fits 4 blocks per SM
// (25%), tile_b alone (100 KB, 1024 threads) 2 blocks (100%); fused, 128-thread blocks with 100 KB
// each fit 2 per SM: 8 of 64 warps, 12.5%, below both parts and below 50%.
TEST(Fusion, SharedMemoryPressureMarksThePair) {
  DbBuilder db("fusion_pressure");
  db.range(1, std::nullopt, "op=big variant=unfused pair=p2", 0, 60000, 0);
  db.range(2, 1, "op=s1 writes=t", 0, 25000, 0);
  db.range(3, 1, "op=s2 reads=t", 25000, 60000, 0);
  auto k1 = db.kernel("tile_a", 1000, 20000);
  k1.nvtx_range_key = 2;
  k1.registers_per_thread = 128;
  k1.block_x = 128;
  k1.theoretical_occupancy = 0.25;
  auto k2 = db.kernel("tile_b", 26000, 20000);
  k2.nvtx_range_key = 3;
  k2.block_x = 1024;
  k2.dynamic_shared_bytes = 102400;
  k2.theoretical_occupancy = 1.0;
  db.add(k1);
  db.add(k2);
  const FusionResult r = fusionOf(db.load());
  ASSERT_EQ(r.candidates.size(), 1u);
  const FusionCandidate& c = r.candidates[0];
  EXPECT_FALSE(c.fuse);
  EXPECT_DOUBLE_EQ(*c.fused_occupancy, 0.125);
  EXPECT_EQ(c.reason.rfind("register/shared-memory pressure: the fused kernel (128 registers/thread, 102400 B shared, "
                           "128 threads)",
                           0),
            0u)
      << c.reason;
  EXPECT_FALSE(c.intermediate_bytes);  // no counters, no allocations: unknown, not 0
  EXPECT_FALSE(c.predicted_fused_ns);
}

// The reference's attention: two cuBLAS GEMMs with large staging buffers around a softmax. Their
// shared memory is not needed at once (the stages run one after another), so the pair is not
// marked: one 208 KB, 384-thread block per SM is what each GEMM already had.
TEST(Fusion, StagingBuffersOfSequentialStagesAreReused) {
  DbBuilder db("fusion_attention_smem");
  db.range(1, std::nullopt, "op=attention variant=unfused pair=attn reads=q,k,v writes=o", 0, 90000, 0);
  db.range(2, 1, "op=qk variant=unfused pair=attn reads=q,k writes=s", 0, 30000, 0);
  db.range(3, 1, "op=softmax variant=unfused pair=attn reads=s writes=p", 30000, 60000, 0);
  db.range(4, 1, "op=pv variant=unfused pair=attn reads=p,v writes=o", 60000, 90000, 0);
  auto qk = db.kernel("nvjet_qk", 1000, 20000);
  qk.nvtx_range_key = 2;
  auto sm = db.kernel("softmax_kernel", 31000, 20000);
  sm.nvtx_range_key = 3;
  auto pv = db.kernel("nvjet_pv", 61000, 20000);
  pv.nvtx_range_key = 4;
  for (auto* k : {&qk, &pv}) {
    k->registers_per_thread = 168;
    k->block_x = 384;
    k->theoretical_occupancy = 0.1875;
  }
  qk.dynamic_shared_bytes = 213000;
  pv.dynamic_shared_bytes = 164000;
  for (auto* k : {&qk, &sm, &pv}) db.add(*k);
  const FusionResult r = fusionOf(db.load());
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_TRUE(r.candidates[0].fuse) << r.candidates[0].reason;
  EXPECT_DOUBLE_EQ(*r.candidates[0].fused_occupancy, 0.1875);
}

TEST(Fusion, IndependentConcurrentStagesAreNotFused) {
  DbBuilder db("fusion_concurrent");
  db.range(1, std::nullopt, "op=two_convs variant=unfused pair=p3", 0, 60000, 0);
  db.range(2, 1, "op=conv_a reads=x writes=a", 0, 30000, 0);
  db.range(3, 1, "op=conv_b reads=x writes=b", 0, 30000, 0);
  auto k1 = db.kernel("conv_a", 1000, 20000, 1);
  k1.nvtx_range_key = 2;
  auto k2 = db.kernel("conv_b", 5000, 20000, 2);
  k2.nvtx_range_key = 3;
  db.add(k1);
  db.add(k2);
  const FusionResult r = fusionOf(db.load());
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_FALSE(r.candidates[0].fuse);
  EXPECT_EQ(r.candidates[0].reason,
            "independent: stage 1 shares no data with the others and ran concurrently with stage 2 (16000 ns "
            "overlap); fusing would serialize them");
}

TEST(Fusion, ChainInsideALayerRangeIsFound) {
  // The transformer wraps its ops in plain `op=layer layer=i` ranges (no pair): still a chain.
  DbBuilder db("fusion_layer");
  db.range(1, std::nullopt, "op=layer layer=0", 0, 100000, 0);
  db.range(2, 1, "op=residual_layernorm variant=unfused pair=l0.res1 reads=x,p writes=y layer=0", 0, 60000, 0);
  db.range(3, 2, "op=residual_add variant=unfused pair=l0.res1 reads=x,p writes=l0.sum layer=0", 0, 20000, 0);
  db.range(4, 2, "op=layernorm variant=unfused pair=l0.res1 reads=l0.sum writes=y layer=0", 20000, 60000, 0);
  db.range(5, 1, "op=residual_layernorm variant=fused pair=l0.res1 reads=x,p writes=y layer=0", 60000, 100000, 0);
  auto k1 = db.kernel("residual_add", 1000, 8000);
  k1.nvtx_range_key = 3;
  auto k2 = db.kernel("layernorm", 21000, 9000);
  k2.nvtx_range_key = 4;
  auto k3 = db.kernel("residual_layernorm_fused", 61000, 10000);
  k3.nvtx_range_key = 5;
  db.add(k1);
  db.add(k2);
  db.add(k3);
  const FusionResult r = fusionOf(db.load());
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_EQ(r.candidates[0].id, "l0.res1");
  EXPECT_EQ(r.candidates[0].stages, (std::vector<std::string>{"residual_add", "layernorm"}));
  EXPECT_EQ(r.candidates[0].intermediates, std::vector<std::string>{"l0.sum"});
  EXPECT_DOUBLE_EQ(*r.candidates[0].measured_saving_ns, 7000.0);
  EXPECT_FALSE(r.candidates[0].predicted_fused_ns);  // trace only, no allocations: size unknown
}

TEST(Fusion, DeclaredKernelsAreNotPairedAgainByDataFlow) {
  DbBuilder db("fusion_declared_only");
  constexpr uint64_t kX = 0x100000, kY = 0x200000, kZ = 0x300000;
  for (uint64_t a : {kX, kY, kZ}) db.alloc(a, 1024000, 0);
  db.range(1, std::nullopt, "op=pair variant=unfused pair=p4", 0, 60000, 0);
  auto k1 = db.kernel("A", 1000, 10000);
  k1.nvtx_range_key = 1;
  auto k2 = db.kernel("B", 12000, 10000);
  k2.nvtx_range_key = 1;
  db.add(k1);
  db.add(k2);
  db.args(k1, {kX, kY});
  db.args(k2, {kY, kZ});
  const FusionResult r = fusionOf(db.load());
  ASSERT_EQ(r.candidates.size(), 1u);
  const FusionCandidate& c = r.candidates[0];
  EXPECT_EQ(c.source, PairSource::kNvtx);
  EXPECT_EQ(c.stages, (std::vector<std::string>{"A", "B"}));
  // No stage ranges: consecutive kernels chained; the intermediate's size from the allocation.
  EXPECT_DOUBLE_EQ(*c.intermediate_bytes, 1024000.0);
  EXPECT_EQ(c.bytes_source, BytesSource::kAllocation);
  // Fixed cost 2000 ns; each stage (8000 ns of work, 2.048e6 B: 25% of the roof) loses Y's
  // transfer, 1000 ns: 2000 + 7000 + 7000.
  EXPECT_DOUBLE_EQ(*c.predicted_fused_ns, 16000.0);
}

// The fixed cost is the shortest kernel of the run (600 ns here, under the cap). A -> B passes
// Y (1,024,000 B), small enough to stay in L2 (under half of the 50 MiB), at the measured L2 roof
// of 2.048e12 B/s: 500 ns per side. C -> D passes Z (40 MiB), too large: DRAM, 40960 ns per side.
// No stage is memory-bound (A, B: 2.048e6 B in 19.4 us; C, D: 80 MiB in 399.4 us, 21%).
//   A -> B: 600 + 2 x (19400 - 500) = 38400 ns;  C -> D: 600 + 2 x (399400 - 40960) = 717480 ns
TEST(Fusion, TraceModelRemovesTheIntermediateAtItsLevel) {
  DbBuilder db("fusion_levels");
  db.writer().add(core::CeilingRecord{"TestGPU", "l2", "bytes_per_s", 2.048e12, "measured", "test"});
  constexpr uint64_t kX = 0x100000, kY = 0x200000, kW = 0x300000;
  constexpr uint64_t kX2 = 0x10000000, kZ = 0x20000000, kW2 = 0x30000000;
  for (uint64_t a : {kX, kY, kW}) db.alloc(a, 1024000, 0);
  for (uint64_t a : {kX2, kZ, kW2}) db.alloc(a, 40 << 20, 0);
  auto a = db.kernel("A", 1000, 20000);
  auto b = db.kernel("B", 22000, 20000);
  auto c = db.kernel("C", 50000, 400000);
  auto d = db.kernel("D", 460000, 400000);
  auto tiny = db.kernel("tiny", 900000, 600);
  for (auto* k : {&a, &b, &c, &d, &tiny}) db.add(*k);
  db.args(a, {kX, kY});
  db.args(b, {kY, kW});
  db.args(c, {kX2, kZ});
  db.args(d, {kZ, kW2});
  const FusionResult r = fusionOf(db.load());
  ASSERT_EQ(r.candidates.size(), 2u);
  EXPECT_EQ(r.candidates[0].id, "C -> D");
  EXPECT_DOUBLE_EQ(*r.candidates[0].predicted_fused_ns, 717480.0);
  EXPECT_EQ(r.candidates[1].id, "A -> B");
  EXPECT_DOUBLE_EQ(*r.candidates[1].predicted_fused_ns, 38400.0);
}

// residual + norm: the op's outer range lists h among its outputs, so the fused kernel still
// writes it and only the norm's read goes. Both stages are memory-bound (3.072e6 and 2.048e6 B in
// 1000 ns of work each, fixed cost 2000 ns): add keeps its time, norm loses half.
// Fused: 2000 + 1000 + 500 = 3500 ns (3166.7 if h's write were dropped too).
TEST(Fusion, AnIntermediateTheOpOutputsIsStillWritten) {
  DbBuilder db("fusion_op_output");
  constexpr uint64_t kX = 0x100000, kR = 0x200000, kH = 0x300000, kY = 0x400000;
  for (uint64_t a : {kX, kR, kH, kY}) db.alloc(a, 1024000, 0);
  db.range(1, std::nullopt, "op=res_norm variant=unfused pair=p5 reads=x,r writes=h,y", 0, 20000, 0);
  db.range(2, 1, "op=add variant=unfused pair=p5 reads=x,r writes=h", 0, 10000, 0);
  db.range(3, 1, "op=norm variant=unfused pair=p5 reads=h writes=y", 10000, 20000, 0);
  auto add = db.kernel("add_kernel(float const*, float const*, float*)", 1000, 3000);
  add.nvtx_range_key = 2;
  auto norm = db.kernel("norm_kernel(float const*, float*)", 11000, 3000);
  norm.nvtx_range_key = 3;
  db.add(add);
  db.add(norm);
  db.args(add, {kX, kR, kH});
  db.args(norm, {kH, kY});
  const FusionResult r = fusionOf(db.load());
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_DOUBLE_EQ(*r.candidates[0].intermediate_bytes, 1024000.0);
  EXPECT_DOUBLE_EQ(*r.candidates[0].predicted_fused_ns, 3500.0);
}

// A GEMM whose pointers are not launch arguments (cuBLAS passes a struct): its output t0 is found
// from the consumer instead, by position: `bias` declares reads=t0,b and its kernel reads two
// allocations, so t0 is the first (2,048,000 B). Fixed cost 2000 ns; the GEMM (48000 ns of work,
// bytes unknown) loses t0's write at the DRAM roof (no L2 roof here), 2000 ns; bias moves
// 4,100,096 B in 3000 ns (memory-bound) and loses t0's share of them.
TEST(Fusion, AGemmWithoutArgumentsIsMatchedFromItsConsumer) {
  DbBuilder db("fusion_positional");
  constexpr uint64_t kT0 = 0x100000, kB = 0x400000, kY = 0x500000;
  db.alloc(kT0, 2048000, 0);
  db.alloc(kB, 4096, 0);
  db.alloc(kY, 2048000, 0);
  db.range(1, std::nullopt, "op=mm_bias variant=unfused pair=p6 reads=x,w,b writes=y", 0, 80000, 0);
  db.range(2, 1, "op=matmul variant=unfused pair=p6 reads=x,w writes=t0", 0, 60000, 0);
  db.range(3, 1, "op=bias variant=unfused pair=p6 reads=t0,b writes=y", 60000, 80000, 0);
  auto mm = db.kernel("nvjet_sm90_gemm", 1000, 50000);
  mm.nvtx_range_key = 2;
  auto bias = db.kernel("bias_kernel(float const*, float const*, float*)", 61000, 5000);
  bias.nvtx_range_key = 3;
  db.add(mm);
  db.add(bias);
  db.args(bias, {kT0, kB, kY});
  const FusionResult r = fusionOf(db.load());
  ASSERT_EQ(r.candidates.size(), 1u);
  const FusionCandidate& c = r.candidates[0];
  EXPECT_DOUBLE_EQ(*c.intermediate_bytes, 2048000.0);
  EXPECT_EQ(c.bytes_source, BytesSource::kAllocation);
  EXPECT_DOUBLE_EQ(*c.predicted_fused_ns, 2000.0 + 46000.0 + 3000.0 * (1.0 - 2048000.0 / 4100096.0));
}


// emit_nvtx(record_shapes=True) on a GPT-2 MLP: linear -> gelu -> linear, each input naming its
// producer op. The GEMMs pass their pointers in a struct and the GELU in a std::array (no
// argument is recorded), so data flow sees nothing; PyTorch's op graph declares the chain. A group
// holds one matrix multiply (two only around a softmax), so the chain is the first linear and its
// GELU epilogue; the second linear starts a group of its own (and has no link left). The
// intermediate is sized from the shape (512 x 1024) and the element size the kernels' names give
// (half: 2 B): 1,048,576 B. Trace model, fixed cost 2000 ns (the cap): the GEMM (8000 ns of work,
// bytes unknown) loses one transfer at the DRAM roof (1024 ns), so does the GELU (3000 ns).
// Fused: 2000 + 6976 + 1976 = 10952 ns.
TEST(Fusion, PytorchOpGraphChainsAreNamedByOp) {
  DbBuilder db("fusion_pytorch_graph");
  const std::string gemm = "nvjet_sm90_hsh_64x64_64x13_1x2_h_bz_bias_TNT";
  const std::string gelu =
      "void at::native::vectorized_elementwise_kernel<8, at::native::GeluFunctor<c10::Half>, std::array<char*, 2ul> "
      ">(int, at::native::GeluFunctor<c10::Half>, std::array<char*, 2ul>)";
  db.range(1, std::nullopt, "aten::linear, seq = 1, op_id = 10, sizes = [[512, 256], [1024, 256], [1024]], "
           "input_op_ids = [(0,0), (0,0), (0,0)]", 0, 20000, 0, "");
  db.range(2, 1, "aten::addmm, seq = 2, op_id = 11, sizes = [[1024], [512, 256], [256, 1024]], input_op_ids = [(0,0), (0,0), (0,0)]",
           100, 20000, 0, "");
  db.range(3, std::nullopt, "aten::gelu, seq = 3, op_id = 12, sizes = [[512, 1024]], input_op_ids = [(10,0)]", 20000,
           40000, 0, "");
  db.range(4, std::nullopt, "aten::linear, seq = 4, op_id = 13, sizes = [[512, 1024], [256, 1024], [256]], "
           "input_op_ids = [(12,0), (0,0), (0,0)]", 40000, 80000, 0, "");
  auto k1 = db.kernel(gemm, 1000, 10000);
  k1.nvtx_range_key = 2;
  auto k2 = db.kernel(gelu, 21000, 5000);
  k2.nvtx_range_key = 3;
  auto k3 = db.kernel(gemm, 41000, 10000);
  k3.nvtx_range_key = 4;
  for (auto* k : {&k1, &k2, &k3}) db.add(*k);
  const FusionResult r = fusionOf(db.load());
  ASSERT_EQ(r.candidates.size(), 1u);
  const FusionCandidate& c = r.candidates[0];
  EXPECT_EQ(c.source, PairSource::kFrameworkOps);
  EXPECT_EQ(c.id, "aten::linear -> aten::gelu");
  EXPECT_EQ(c.stages, (std::vector<std::string>{"aten::linear", "aten::gelu"}));
  EXPECT_EQ(c.stage_kernels, (std::vector<std::vector<std::string>>{{gemm}, {gelu}}));
  EXPECT_EQ(c.roles, "declared by PyTorch (emit_nvtx input_op_ids)");
  EXPECT_EQ(c.intermediates, (std::vector<std::string>{"aten::gelu input 0 [512, 1024]"}));
  EXPECT_EQ(c.launches_removed, 1);
  EXPECT_DOUBLE_EQ(*c.intermediate_bytes, 1048576);
  EXPECT_EQ(*c.model, PredictionModel::kTrace);
  EXPECT_DOUBLE_EQ(*c.predicted_fused_ns, 10952.0);
}

// Without input_op_ids (emit_nvtx without record_shapes) the pairs come from data flow, and are
// named by the op their kernels ran in; a kernel outside any op by the kernel (front ends show its
// short name).
TEST(Fusion, DataFlowPairsAreNamedByOpElseByKernel) {
  DbBuilder db("fusion_names");
  constexpr uint64_t kX = 0x100000, kY = 0x200000, kZ = 0x300000, kW = 0x400000;
  for (uint64_t a : {kX, kY, kZ, kW}) db.alloc(a, 1024000, 0);
  db.range(1, std::nullopt, "aten::add, seq = 1, op_id = 2, sizes = [[256000], [256000]]", 0, 10000, 0, "");
  db.range(2, std::nullopt, "aten::relu, seq = 2, op_id = 3, sizes = [[256000]]", 10000, 20000, 0, "");
  const std::string add = "void at::native::add_kernel<float>(float const*, float const*, float*)";
  const std::string relu = "void at::native::relu_kernel<float>(float const*, float*)";
  const std::string scale = "void at::native::(anonymous namespace)::scale_kernel<float>(float const*, float*)";
  auto a = db.kernel(add, 1000, 5000);
  a.nvtx_range_key = 1;
  auto b = db.kernel(relu, 11000, 5000);
  b.nvtx_range_key = 2;
  auto c = db.kernel(scale, 21000, 5000);
  for (auto* k : {&a, &b, &c}) db.add(*k);
  db.args(a, {kX, kW, kY});
  db.args(b, {kY, kZ});
  db.args(c, {kZ, kW});
  const FusionResult r = fusionOf(db.load());
  ASSERT_EQ(r.candidates.size(), 1u);
  const FusionCandidate& cand = r.candidates[0];
  EXPECT_EQ(cand.source, PairSource::kDataFlow);
  EXPECT_EQ(cand.id, "aten::add -> aten::relu -> " + scale);
  EXPECT_EQ(cand.stage_kernels, (std::vector<std::vector<std::string>>{{add}, {relu}, {scale}}));
  EXPECT_EQ(cand.roles, "inferred from the kernel signature");
  EXPECT_EQ(cand.intermediates[0], "1024000 B in the allocation at 0x200000, inferred from the kernel signature");
}

}  // namespace
}  // namespace fprof::analysis
