// Roofline: ceilings (datasheet and measured), intensity, attainable time, % of roof, bound labels,
// the mixed-precision rule, and what a kernel without counters gets.
#include <gtest/gtest.h>

#include "fixture.h"
#include "fprof/analysis/ceilings.h"
#include "fprof/analysis/origin.h"
#include "fprof/analysis/roofline.h"

namespace fprof::analysis {
namespace {

using testing::DbBuilder;
using testing::testDevice;

TEST(Ceilings, DatasheetFromDeviceAttributes) {
  const Ceilings c = datasheetCeilings(testDevice());
  ASSERT_TRUE(c.bw(MemLevel::kDram));
  EXPECT_DOUBLE_EQ(c.bw(MemLevel::kDram)->value, 1.024e12);  // 2 x 1e9 Hz x 4096 bit / 8
  EXPECT_EQ(c.bw(MemLevel::kDram)->source, CeilingSource::kDatasheet);
  EXPECT_DOUBLE_EQ(c.bw(MemLevel::kL1)->value, 1.28e13);  // 100 SMs x 128 B x 1e9
  EXPECT_FALSE(c.bw(MemLevel::kL2));                     // no datasheet L2 figure: measure it
  EXPECT_DOUBLE_EQ(c.peak(Precision::kFp32)->value, 2.56e13);
  EXPECT_DOUBLE_EQ(c.peak(Precision::kFp64)->value, 1.28e13);
  EXPECT_DOUBLE_EQ(c.peak(Precision::kTensorFp16)->value, 4.096e14);
  EXPECT_DOUBLE_EQ(c.peak(Precision::kTensorFp8)->value, 8.192e14);
}

TEST(Ceilings, H100SxmMatchesTheDatasheet) {
  core::DeviceInfo d = testDevice();
  d.sm_count = 132;
  d.sm_clock_khz = 1980000;
  d.memory_clock_khz = 2619000;
  d.memory_bus_width_bits = 5120;
  const Ceilings c = datasheetCeilings(d);
  EXPECT_DOUBLE_EQ(c.bw(MemLevel::kDram)->value, 3.35232e12);      // NVIDIA: 3.35 TB/s
  EXPECT_DOUBLE_EQ(c.peak(Precision::kFp32)->value, 6.690816e13);  // NVIDIA: 67 TFLOP/s
  EXPECT_DOUBLE_EQ(c.peak(Precision::kFp64)->value, 3.345408e13);  // NVIDIA: 34 TFLOP/s
}

TEST(Ceilings, UnknownCapabilityHasNoComputeRoofs) {
  core::DeviceInfo d = testDevice();
  d.compute_major = 6;
  d.compute_minor = 1;
  const Ceilings c = datasheetCeilings(d);
  EXPECT_TRUE(c.bw(MemLevel::kDram));
  EXPECT_FALSE(c.peak(Precision::kFp32));
  EXPECT_FALSE(c.bw(MemLevel::kL1));
}

TEST(Ceilings, MeasuredPreferredRoofByRoof) {
  DbBuilder db("ceilings_measured");
  db.writer().add(core::CeilingRecord{"TestGPU", "dram", "bytes_per_s", 8e11, "measured", "stream copy"});
  db.writer().add(core::CeilingRecord{"TestGPU", "l2", "bytes_per_s", 4e12, "measured", "l2 read"});
  db.writer().add(core::CeilingRecord{"OtherGPU", "fp32", "flops_per_s", 1.0, "measured", "other"});
  const core::Profile p = db.load();
  const Ceilings c = ceilingsFor(p, p.devices.at(0));
  EXPECT_DOUBLE_EQ(c.bw(MemLevel::kDram)->value, 8e11);
  EXPECT_EQ(c.bw(MemLevel::kDram)->source, CeilingSource::kMeasured);
  EXPECT_EQ(c.bw(MemLevel::kDram)->method, "stream copy");
  EXPECT_DOUBLE_EQ(c.bw(MemLevel::kL2)->value, 4e12);
  EXPECT_DOUBLE_EQ(c.peak(Precision::kFp32)->value, 2.56e13);  // another GPU's roof is not used
  EXPECT_EQ(c.peak(Precision::kFp32)->source, CeilingSource::kDatasheet);
}

PlacementInput input(int64_t duration_ns) {
  PlacementInput in;
  in.duration_ns = duration_ns;
  in.blocks = 200;
  in.sm_count = 100;
  in.occupancy = 1.0;
  in.work.has_counters = true;
  return in;
}

TEST(Roofline, MemoryBoundKernel) {
  PlacementInput in = input(100000);
  in.work.flops[static_cast<size_t>(Precision::kFp32)] = 2.56e8;
  in.work.bytes[static_cast<size_t>(MemLevel::kDram)] = 5.12e7;
  in.work.bytes[static_cast<size_t>(MemLevel::kL1)] = 1.28e8;
  const Placement p = place(in, datasheetCeilings(testDevice()));
  EXPECT_DOUBLE_EQ(*p.total_flops, 2.56e8);
  EXPECT_DOUBLE_EQ(*p.intensity_flop_per_byte[0], 5.0);
  EXPECT_DOUBLE_EQ(*p.intensity_flop_per_byte[2], 2.0);
  EXPECT_FALSE(p.intensity_flop_per_byte[1]);  // L2 bytes not counted
  EXPECT_DOUBLE_EQ(*p.achieved_flops_per_s, 2.56e12);
  EXPECT_DOUBLE_EQ(*p.bytes_per_s[0], 5.12e11);
  EXPECT_DOUBLE_EQ(*p.compute_time_ns, 10000.0);
  EXPECT_DOUBLE_EQ(*p.memory_time_ns[0], 50000.0);
  EXPECT_DOUBLE_EQ(*p.memory_time_ns[2], 10000.0);
  EXPECT_DOUBLE_EQ(*p.attainable_ns, 50000.0);
  EXPECT_EQ(p.binding, "dram");
  EXPECT_EQ(*p.binding_source, CeilingSource::kDatasheet);
  EXPECT_DOUBLE_EQ(*p.roof_fraction, 0.5);
  EXPECT_EQ(p.bound, Bound::kMemory);
}

TEST(Roofline, ComputeBoundKernel) {
  PlacementInput in = input(25000);
  in.work.flops[static_cast<size_t>(Precision::kFp32)] = 5.12e8;  // 20 us at 2.56e13
  in.work.bytes[static_cast<size_t>(MemLevel::kDram)] = 1.024e7;  // 10 us at 1.024e12
  const Placement p = place(in, datasheetCeilings(testDevice()));
  EXPECT_DOUBLE_EQ(*p.intensity_flop_per_byte[0], 50.0);
  EXPECT_DOUBLE_EQ(*p.attainable_ns, 20000.0);
  EXPECT_EQ(p.binding, "fp32");
  EXPECT_DOUBLE_EQ(*p.roof_fraction, 0.8);
  EXPECT_EQ(p.bound, Bound::kCompute);
}

TEST(Roofline, MixedPrecisionUsesTheHarmonicMix) {
  PlacementInput in = input(40000);
  in.work.flops[static_cast<size_t>(Precision::kTensorFp16)] = 8.192e9;  // 20 us at 4.096e14
  in.work.flops[static_cast<size_t>(Precision::kFp32)] = 2.56e8;         // 10 us at 2.56e13
  in.work.bytes[static_cast<size_t>(MemLevel::kDram)] = 1.024e7;         // 10 us
  const Placement p = place(in, datasheetCeilings(testDevice()));
  // Compute time is the sum of each precision's share: 30 us, not the tensor roof's 20.6 us.
  EXPECT_DOUBLE_EQ(*p.compute_time_ns, 30000.0);
  EXPECT_DOUBLE_EQ(*p.effective_peak_flops_per_s, (8.192e9 + 2.56e8) / 30e-6);
  EXPECT_EQ(p.binding, "tensor_fp16+fp32");
  EXPECT_DOUBLE_EQ(*p.roof_fraction, 0.75);
  EXPECT_EQ(p.bound, Bound::kCompute);
}

TEST(Roofline, MissingRoofMakesComputeTimeUnknown) {
  PlacementInput in = input(40000);
  in.work.flops[static_cast<size_t>(Precision::kBf16)] = 1e9;
  core::DeviceInfo d = testDevice();
  d.compute_major = 7;  // V100 table: no bf16
  d.compute_minor = 0;
  const Placement p = place(in, datasheetCeilings(d));
  EXPECT_FALSE(p.compute_time_ns);
  EXPECT_FALSE(p.attainable_ns);
  EXPECT_EQ(p.bound, Bound::kUnknown);
  ASSERT_EQ(p.missing.size(), 1u);
  EXPECT_EQ(p.missing[0], "bf16 roof");
  EXPECT_FALSE(rooflineTimeNs(in.work, datasheetCeilings(d)));
}

TEST(Roofline, ZeroBytesHasNoIntensity) {
  PlacementInput in = input(40000);
  in.work.flops[static_cast<size_t>(Precision::kFp32)] = 1e9;
  in.work.bytes[0] = 0.0;
  const Placement p = place(in, datasheetCeilings(testDevice()));
  EXPECT_FALSE(p.intensity_flop_per_byte[0]);
  EXPECT_DOUBLE_EQ(*p.memory_time_ns[0], 0.0);
}

TEST(Roofline, BoundLabels) {
  const Ceilings c = datasheetCeilings(testDevice());
  PlacementInput launch = input(2000);
  launch.work = {};
  EXPECT_EQ(place(launch, c).bound, Bound::kLaunch);
  EXPECT_EQ(place(launch, c).reason, "2000 ns per launch, shorter than the ~4000 ns launch overhead");

  PlacementInput few_blocks = input(50000);
  few_blocks.work = {};
  few_blocks.blocks = 50;
  const Placement fb = place(few_blocks, c);
  EXPECT_EQ(fb.bound, Bound::kLatency);
  EXPECT_EQ(fb.reason, "50 blocks for 100 SMs: too little work in flight");

  PlacementInput low_occ = input(50000);
  low_occ.work = {};
  low_occ.occupancy = 0.125;
  EXPECT_EQ(place(low_occ, c).bound, Bound::kLatency);

  // Low occupancy but already at 80% of the DRAM roof: the roof binds, not latency.
  PlacementInput busy = input(62500);
  busy.occupancy = 0.125;
  busy.work.bytes[0] = 5.12e7;  // 50 us
  const Placement b = place(busy, c);
  EXPECT_DOUBLE_EQ(*b.roof_fraction, 0.8);
  EXPECT_EQ(b.bound, Bound::kMemory);

  PlacementInput trace_only = input(50000);
  trace_only.work = {};
  // The fast classifier agrees with place() on every case.
  for (const PlacementInput* x : {&launch, &few_blocks, &low_occ, &busy, &trace_only}) {
    EXPECT_EQ(classifyBound(*x, c), place(*x, c).bound);
  }
  const Placement t = place(trace_only, c);
  EXPECT_EQ(t.bound, Bound::kUnknown);
  EXPECT_FALSE(t.has_counters);
  EXPECT_FALSE(t.attainable_ns);
  EXPECT_EQ(t.reason, "trace only: no counters, so no intensity or roof; not launch or latency bound");
}

// A library GEMM or warp-specialized kernel runs few warps per SM by design: without counters its
// theoretical occupancy is no latency verdict, and a grid that nearly fills the GPU neither; a grid
// leaving more than half of the SMs idle still is. With achieved occupancy counted, the usual rule.
TEST(Roofline, KernelsBuiltForFewWarpsAreNotCalledLatencyBoundByDesign) {
  const Ceilings c = datasheetCeilings(testDevice());
  PlacementInput gemm = input(50000);
  gemm.work = {};
  gemm.few_warps_by_design = true;
  gemm.occupancy = 0.1875;
  gemm.blocks = 96;  // 4 of 100 SMs idle
  const Placement g = place(gemm, c);
  EXPECT_EQ(g.bound, Bound::kUnknown);
  EXPECT_EQ(g.reason,
            "no counters: theoretical occupancy 18.8% is by design for a library GEMM or warp-specialized kernel, not "
            "a sign of latency; its bound needs counters");

  PlacementInput small_grid = gemm;
  small_grid.blocks = 40;
  const Placement sg = place(small_grid, c);
  EXPECT_EQ(sg.bound, Bound::kLatency);
  EXPECT_EQ(sg.reason, "40 blocks for 100 SMs: more than half the SMs idle");

  PlacementInput counted = gemm;
  counted.occupancy_achieved = true;
  counted.occupancy = 0.1;
  EXPECT_EQ(place(counted, c).bound, Bound::kLatency);

  PlacementInput user = gemm;
  user.few_warps_by_design = false;
  EXPECT_EQ(place(user, c).bound, Bound::kLatency);  // 96 blocks for 100 SMs
  for (const PlacementInput* x : {&gemm, &small_grid, &counted, &user}) {
    EXPECT_EQ(classifyBound(*x, c), place(*x, c).bound);
  }
}

TEST(Roofline, FewWarpsByDesignFromTheKernelName) {
  EXPECT_TRUE(fewWarpsByDesign("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"));
  EXPECT_TRUE(fewWarpsByDesign("void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_f16_128x128_32x4_tn_align8>(Params)"));
  EXPECT_TRUE(fewWarpsByDesign("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_kernel0_0"));
  EXPECT_TRUE(fewWarpsByDesign("void my_gemm_wgmma_kernel<128>(float const*, float*)"));
  EXPECT_TRUE(fewWarpsByDesign("triton_tem_fused_mm_0"));
  EXPECT_FALSE(fewWarpsByDesign("void gemmWmmaKernel<__half, 0, true>(__half const*, __half*)"));
  EXPECT_FALSE(fewWarpsByDesign("triton_poi_fused_gelu_0"));
  EXPECT_FALSE(
      fewWarpsByDesign("void at::native::vectorized_elementwise_kernel<8, at::native::GeluCUDAKernelImpl>(int)"));
}

TEST(Roofline, KernelsFromADatabaseWithAndWithoutCounters) {
  DbBuilder db("roofline_db");
  auto k1 = db.kernel("memory_kernel", 1000, 100000);
  const int64_t id1 = db.add(k1);
  auto k2 = db.kernel("trace_only_kernel", 200000, 50000);
  k2.grid_x = 10;
  db.add(k2);
  core::KernelCounters c;
  c.kernel_id = id1;
  c.dram_read_bytes = 4.096e7;
  c.dram_write_bytes = 1.024e7;
  c.flops_fp32 = 2.56e8;
  c.achieved_occupancy = 0.9;
  db.writer().add(c);
  db.writer().add(core::CeilingRecord{"TestGPU", "dram", "bytes_per_s", 6.4e11, "measured", "copy"});
  const core::Profile p = db.load();
  CeilingCache cache(p);
  const Placement a = placeKernel(p, 0, cache);
  EXPECT_TRUE(a.has_counters);
  EXPECT_DOUBLE_EQ(*a.memory_time_ns[0], 80000.0);  // 5.12e7 B at the measured 6.4e11 B/s
  EXPECT_DOUBLE_EQ(*a.roof_fraction, 0.8);
  EXPECT_EQ(*a.binding_source, CeilingSource::kMeasured);
  EXPECT_EQ(a.bound, Bound::kMemory);
  const Placement b = placeKernel(p, 1, cache);
  EXPECT_FALSE(b.has_counters);
  EXPECT_EQ(b.bound, Bound::kLatency);  // 10 blocks on 100 SMs

  const RooflineResult r = analyzeRoofline(p);
  EXPECT_EQ(r.kernels_with_counters, 1);
  EXPECT_EQ(r.kernels_by_bound[static_cast<size_t>(Bound::kMemory)], 1);
  EXPECT_EQ(r.kernels_by_bound[static_cast<size_t>(Bound::kLatency)], 1);
  EXPECT_EQ(r.ns_by_bound[static_cast<size_t>(Bound::kLatency)], 50000);
  ASSERT_EQ(r.kernel_groups.size(), 2u);
  EXPECT_EQ(r.kernel_groups[0].label, "memory_kernel");
}

TEST(Roofline, OpGroupsByNvtxPath) {
  DbBuilder db("roofline_ops");
  for (int i = 0; i < 2; ++i) {
    auto k = db.kernel("elementwise", 1000 + i * 100000, 50000);
    k.nvtx_path = "fprof::op=add";
    const int64_t id = db.add(k);
    core::KernelCounters c;
    c.kernel_id = id;
    c.dram_read_bytes = 2.048e7;
    c.dram_write_bytes = 0.0;
    c.flops_fp32 = 1e6;
    db.writer().add(c);
  }
  const core::Profile p = db.load();
  const RooflineResult r = analyzeRoofline(p);
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops[0].label, "fprof::op=add");
  EXPECT_EQ(r.ops[0].calls, 2);
  const Placement& op = r.ops[0].placement;
  EXPECT_EQ(op.duration_ns, 100000);
  EXPECT_DOUBLE_EQ(*op.memory_time_ns[0], 40000.0);  // 4.096e7 B at 1.024e12
  EXPECT_DOUBLE_EQ(*op.roof_fraction, 0.4);
  EXPECT_DOUBLE_EQ(*op.intensity_flop_per_byte[0], 2e6 / 4.096e7);
}

}  // namespace
}  // namespace fprof::analysis
