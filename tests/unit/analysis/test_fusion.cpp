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
// test GPU's 1.024e12 B/s DRAM roof. Trace model: A loses 1000 ns (writes Y), B 2000 (reads Y,
// writes Z), C 1000 (reads Z): 9000 + 3000 + 4000 = 16000 ns fused for 20000 unfused.
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
  EXPECT_DOUBLE_EQ(*c.predicted_fused_ns, 16000.0);
  EXPECT_DOUBLE_EQ(*c.predicted_saving_ns, 4000.0);
  EXPECT_DOUBLE_EQ(*c.total_saving_ns, 8000.0);
  EXPECT_DOUBLE_EQ(*c.program_share, 0.2);
  EXPECT_DOUBLE_EQ(*c.fused_occupancy, 1.0);
  EXPECT_TRUE(c.fuse);
  EXPECT_FALSE(c.measured_fused_ns);
}

TEST(Fusion, ValueWithTwoReadersIsNotFused) {
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
    EXPECT_FALSE(cand.fuse);
    EXPECT_EQ(cand.reason, "the intermediate is also read by 1 other kernel(s): it would still be written");
  }
  // Only the consumer's read is saved: B loses 1000 ns -> 14000 fused of 15000.
  EXPECT_EQ(r.candidates[0].id, "A -> B");
  EXPECT_DOUBLE_EQ(*r.candidates[0].predicted_fused_ns, 14000.0);
}

// Declared pair p1: stage "matmul" (K1) writes t, stage "bias_relu" (K2) reads t; the fused
// variant K3 was measured too. Counters give the roofline model (test GPU: fp32 2.56e13 FLOP/s,
// DRAM 1.024e12 B/s):
//   K1: 2.56e8 FLOP (10 us), 1.536e7 B DRAM (15 us) -> roof 15 us; measured 20 us
//   K2: 1.024e6 FLOP, 2.048e7 B (20 us) -> roof 20 us; measured 25 us
//   intermediate = min(K1 writes 1.024e7, K2 reads 1.024e7) = 1.024e7 B
//   fused work: 2.57024e8 FLOP (10.04 us), 1.536e7 + 2.048e7 - 2 x 1.024e7 = 1.536e7 B (15 us)
//   predicted fused = 15 us x (45 us measured / 35 us roof of the parts) = 19.2857 us
TEST(Fusion, NvtxPairRooflineModelWithMeasuredFusedVariant) {
  DbBuilder db("fusion_nvtx");
  db.range(1, std::nullopt, "op=mm_bias_relu variant=unfused pair=p1 reads=x,w writes=y", 0, 60000, 0);
  // Stage ranges repeat variant and pair, as docs/nvtx-convention.md has them.
  db.range(2, 1, "op=matmul variant=unfused pair=p1 reads=x,w writes=t", 0, 25000, 0);
  db.range(3, 1, "op=bias_relu variant=unfused pair=p1 reads=t writes=y", 25000, 60000, 0);
  db.range(4, std::nullopt, "op=mm_bias_relu variant=fused pair=p1 reads=x,w writes=y", 70000, 100000, 0);
  auto k1 = db.kernel("matmul_kernel", 1000, 20000);
  k1.nvtx_range_key = 2;
  auto k2 = db.kernel("bias_relu_kernel", 26000, 25000);
  k2.nvtx_range_key = 3;
  auto k3 = db.kernel("matmul_bias_relu_fused", 71000, 24000);
  k3.nvtx_range_key = 4;
  const int64_t id1 = db.add(k1), id2 = db.add(k2);
  db.add(k3);
  core::KernelCounters c1;
  c1.kernel_id = id1;
  c1.flops_fp32 = 2.56e8;
  c1.dram_read_bytes = 5.12e6;
  c1.dram_write_bytes = 1.024e7;
  core::KernelCounters c2;
  c2.kernel_id = id2;
  c2.flops_fp32 = 1.024e6;
  c2.dram_read_bytes = 1.024e7;
  c2.dram_write_bytes = 1.024e7;
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
  EXPECT_DOUBLE_EQ(c.unfused_ns, 45000.0);
  EXPECT_DOUBLE_EQ(*c.intermediate_bytes, 1.024e7);
  EXPECT_EQ(c.bytes_source, BytesSource::kCounters);
  EXPECT_EQ(*c.model, PredictionModel::kRoofline);
  const double predicted = 15000.0 * 45000.0 / 35000.0;
  EXPECT_DOUBLE_EQ(*c.predicted_fused_ns, predicted);
  EXPECT_DOUBLE_EQ(*c.predicted_saving_ns, 45000.0 - predicted);
  EXPECT_DOUBLE_EQ(*c.program_share, (45000.0 - predicted) / 69000.0);
  EXPECT_DOUBLE_EQ(*c.measured_fused_ns, 24000.0);
  EXPECT_DOUBLE_EQ(*c.measured_saving_ns, 21000.0);
  EXPECT_DOUBLE_EQ(*c.prediction_error, (predicted - 24000.0) / 24000.0);
  EXPECT_EQ(r.measured_pairs, 1);
  EXPECT_DOUBLE_EQ(*r.median_abs_error, (24000.0 - predicted) / 24000.0);
  EXPECT_TRUE(c.fuse);
}

TEST(Fusion, SharedMemoryPressureMarksThePair) {
  DbBuilder db("fusion_pressure");
  db.range(1, std::nullopt, "op=big variant=unfused pair=p2", 0, 60000, 0);
  db.range(2, 1, "op=s1 writes=t", 0, 25000, 0);
  db.range(3, 1, "op=s2 reads=t", 25000, 60000, 0);
  auto k1 = db.kernel("tile_a", 1000, 20000);
  k1.nvtx_range_key = 2;
  k1.static_shared_bytes = 102400;
  k1.theoretical_occupancy = 0.25;
  auto k2 = db.kernel("tile_b", 26000, 20000);
  k2.nvtx_range_key = 3;
  k2.dynamic_shared_bytes = 102400;
  k2.theoretical_occupancy = 0.25;
  db.add(k1);
  db.add(k2);
  const FusionResult r = fusionOf(db.load());
  ASSERT_EQ(r.candidates.size(), 1u);
  const FusionCandidate& c = r.candidates[0];
  EXPECT_FALSE(c.fuse);
  // 204800 B of shared memory: one 256-thread block per SM = 8 of 64 warps.
  EXPECT_DOUBLE_EQ(*c.fused_occupancy, 0.125);
  EXPECT_EQ(c.reason.rfind("register/shared-memory pressure: the fused kernel (32 registers/thread, 204800 B shared, "
                           "256 threads)",
                           0),
            0u)
      << c.reason;
  EXPECT_FALSE(c.intermediate_bytes);  // no counters, no allocations: unknown, not 0
  EXPECT_FALSE(c.predicted_fused_ns);
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
  EXPECT_DOUBLE_EQ(*c.predicted_fused_ns, 18000.0);
}

}  // namespace
}  // namespace fprof::analysis
