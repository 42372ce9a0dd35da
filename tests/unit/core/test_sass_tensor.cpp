// Tensor FLOPs from the tensor pipe's cycles and the SASS: the rates and the cases of
// sass_tensor.h, with counter values recorded on an H200 (measured against the ops_path counters; docs/metrics.md).
#include "fprof/core/sass_tensor.h"

#include <gtest/gtest.h>

#include "fprof/core/metric_sets.h"
#include "fprof/core/store.h"
#include "test_util.h"

namespace fprof::core {
namespace {

std::string mma(const std::string& mnemonic) { return kMmaClassPrefix + mnemonic; }

TEST(SassTensor, RatesOfTheCalibratedKinds) {
  EXPECT_EQ(mmaRateOf("HGMMA.64x128x16.F32", 90)->ops_per_cycle, 1024);
  EXPECT_EQ(mmaRateOf("HGMMA.64x128x16.F32", 90)->precision, "fp16");
  EXPECT_EQ(mmaRateOf("HGMMA.64x32x16.F32.BF16", 90)->precision, "bf16");
  EXPECT_EQ(mmaRateOf("HGMMA.64x128x8.F32.TF32", 90)->ops_per_cycle, 512);
  EXPECT_EQ(mmaRateOf("QGMMA.64x64x32.F32.E4M3.E4M3", 90)->precision, "fp8");
  EXPECT_EQ(mmaRateOf("QGMMA.64x64x32.F32.E4M3.E4M3", 90)->ops_per_cycle, 2048);
  EXPECT_DOUBLE_EQ(mmaRateOf("HMMA.16816.F32", 90)->ops_per_cycle, 2048.0 / 3.0);
  EXPECT_EQ(mmaRateOf("HMMA.1688.F32.BF16", 90)->ops_per_cycle, 512);
  EXPECT_FALSE(mmaRateOf("HMMA.1688.F32.TF32", 90)) << "not calibrated";
  EXPECT_FALSE(mmaRateOf("HMMA.16816.F32.SP", 90)) << "sparse: not calibrated";
  EXPECT_FALSE(mmaRateOf("HMMA.16816.F32", 80)) << "calibrated on sm_90 only";
}

TEST(SassTensor, DmmaFlopsFromTheShape) {
  EXPECT_EQ(*dmmaFlopsOf("DMMA.16x8x16"), 4096);  // 2*16*8*16; an H200 read 268435456 for 65536
  EXPECT_EQ(*dmmaFlopsOf("DMMA.884"), 512);
  EXPECT_FALSE(dmmaFlopsOf("DMMA"));
}

TEST(SassTensor, ExactWhereKindsShareRateAndPrecision) {
  // cuDNN's flash attention (QK^T 64x128, PV 64x64): 1310720 cycles, ops_path read 1342177280.
  const SassHalfCounts attention = {{mma("HGMMA.64x128x16.F32"), 4}, {mma("HGMMA.64x64x16.F32"), 8}};
  TensorFlops t = tensorFlopsFromSass(attention, 90, 1310720, 0);
  EXPECT_EQ(t.fp16, 1342177280);
  EXPECT_EQ(t.bf16, 0);
  EXPECT_EQ(t.fp64, 0);
  EXPECT_NE(t.method.find("1024 ops a cycle"), std::string::npos) << t.method;
  // FlashAttention-2 (HMMA.16816, bf16): 1966080 cycles, ops_path 1342177280.
  t = tensorFlopsFromSass({{mma("HMMA.16816.F32.BF16"), 512}}, 90, 1966080, 0);
  EXPECT_EQ(t.bf16, 1342177280);
  EXPECT_EQ(t.fp16, 0);
  // cuBLAS DGEMM: 65536 DMMA.16x8x16, ops_path 268435456.
  t = tensorFlopsFromSass({{mma("DMMA.16x8x16"), 8}}, 90, 0, 65536);
  EXPECT_EQ(t.fp64, 268435456);
  EXPECT_EQ(t.fp16, 0);
}

TEST(SassTensor, UnknownWhereTheSassCannotSplitTheCycles) {
  // The same name in an fp16 and a bf16 module (cuDNN's run-time compiled kernels): total only.
  const SassHalfCounts both = {{mma("HGMMA.64x64x16.F32"), 24}, {mma("HGMMA.64x64x16.F32.BF16"), 24}};
  TensorFlops t = tensorFlopsFromSass(both, 90, 3276800, 0);
  EXPECT_FALSE(t.fp16);
  EXPECT_FALSE(t.bf16);
  EXPECT_NE(t.method.find("3355443200 FLOPs in all"), std::string::npos) << t.method;
  // Kinds of different rates: bounds.
  t = tensorFlopsFromSass({{mma("HMMA.16816.F32"), 1}, {mma("HMMA.1688.F32"), 1}}, 90, 3000, 0);
  EXPECT_FALSE(t.fp16);
  EXPECT_NE(t.method.find("between 1536000 and 2048000 FLOPs"), std::string::npos) << t.method;
  // A kind without a calibrated rate.
  t = tensorFlopsFromSass({{mma("HMMA.1688.F32.TF32"), 4}}, 90, 100, 0);
  EXPECT_FALSE(t.tf32);
  EXPECT_NE(t.method.find("no calibrated ops a cycle for HMMA.1688.F32.TF32"), std::string::npos) << t.method;
  // DMMA instructions counted but none in the SASS read.
  t = tensorFlopsFromSass({}, 90, 0, 64);
  EXPECT_FALSE(t.fp64);
  EXPECT_EQ(t.fp16, 0);
}

TEST(SassTensor, HalfMmaBesideTensorWorkGivesBounds) {
  // HFMA2.MMA cycles may be in the counter: 100 of them beside 4096 HGMMA cycles.
  TensorFlops t = tensorFlopsFromSass({{mma("HGMMA.64x64x16.F32"), 8}}, 90, 4096, 0, 100);
  EXPECT_FALSE(t.fp16);
  EXPECT_NE(t.method.find("between 4091904 and 4194304 FLOPs"), std::string::npos) << t.method;
}

TEST(SassTensor, NoMmaInTheSassMeansNoTensorFlops) {
  // Cycles without an HMMA/HGMMA/QGMMA in the function come from other instructions.
  TensorFlops t = tensorFlopsFromSass({{"HFMA2.MMA.f16.zero", 4}}, 90, 7796, 0);
  EXPECT_EQ(t.fp16, 0);
  EXPECT_EQ(t.bf16, 0);
  EXPECT_EQ(t.method, "");
  // Integer MMA is outside these counters: said, not counted.
  t = tensorFlopsFromSass({{mma("IMMA.16832.S8.S8.SAT"), 64}}, 90, 0, 0);
  EXPECT_EQ(t.fp16, 0);
  EXPECT_NE(t.method.find("integer tensor ops (IMMA.16832.S8.S8.SAT) not counted"), std::string::npos) << t.method;
}

TEST(SassTensor, NvdisasmLinesGiveMmaClasses) {
  const std::string text =
      "        /*0090*/                   HGMMA.64x128x16.F32 gdesc[UR4], RZ, !UPT ;\n"
      "        /*00a0*/              @P0  HMMA.16816.F32.BF16 R4, R8, R12, R4 ;\n"
      "        /*00b0*/                   HFMA2.MMA R2, -RZ, RZ, 1.5 ;\n";
  const auto classes = parseNvdisasmHalfOpsByRange(text, {{"f", 0, 0x100}});
  const SassHalfCounts& f = classes.at("f");
  EXPECT_EQ(f.at(mma("HGMMA.64x128x16.F32")), 1);
  EXPECT_EQ(f.at(mma("HMMA.16816.F32.BF16")), 1);
  EXPECT_EQ(f.at("HFMA2.MMA.f16.zero"), 1);
  // The half-precision count ignores the tensor classes.
  EXPECT_EQ(halfFlopsFromSass(f, 0, 0, 10).fp16, 0);
}

TEST(SassTensor, AppliedToADatabaseWithCopiesAndMissingSass) {
  const std::string path = fprof::testing::tempPath("sass_tensor.fprof");
  const std::vector<std::string> names = *expandMetricSelection("roofline");
  auto valuesWith = [&](double cycles) {
    std::vector<double> v(names.size(), 0.0);
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == kTensorCyclesMetric) v[i] = cycles;
    }
    return v;
  };
  {
    auto w = Writer::create(path);
    ASSERT_TRUE(w.ok());
    (*w)->add(fprof::testing::makeKernel("_Z4gemmv", 0, 5, 1));
    (*w)->add(fprof::testing::makeKernel("_Z5otherv", 10, 5, 2));
    (*w)->add(fprof::testing::makeKernel("_Z4axpyv", 20, 5, 3));
    for (uint32_t corr : {1u, 2u, 3u}) {
      const std::vector<double> values = valuesWith(corr == 3 ? 0 : 786432);
      std::vector<std::pair<std::string, double>> raw;
      for (size_t i = 0; i < names.size(); ++i) raw.emplace_back(names[i], values[i]);
      (*w)->addCountersForLaunch(1, corr, 0, deriveCounters(names, values), raw);
    }
    ASSERT_TRUE((*w)->close());
  }
  auto pending = functionsNeedingTensorSass(path);
  ASSERT_TRUE(pending.ok()) << pending.error();
  EXPECT_EQ(pending->size(), 2u);
  const Status applied = applySassTensorFlops(path, {{"_Z4gemmv", {{mma("HGMMA.64x256x16.F32"), 16}}}}, 90,
                                              "the SASS could not be read");
  ASSERT_TRUE(applied) << applied.error();
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->counters.size(), 3u);
  for (const KernelCounters& c : p->counters) {
    if (c.kernel_id == 1) {
      EXPECT_EQ(c.flops_tensor_fp16, 786432.0 * 1024) << c.tensor_flops_method;
      EXPECT_NE(c.tensor_flops_method.find("HGMMA.64x256x16.F32"), std::string::npos);
    } else if (c.kernel_id == 2) {
      EXPECT_FALSE(c.flops_tensor_fp16);
      EXPECT_EQ(c.tensor_flops_method, "the SASS could not be read");
    } else {
      EXPECT_EQ(c.flops_tensor_fp16, 0);
      EXPECT_EQ(c.tensor_flops_method, "");
    }
  }
  bool recorded = false;
  for (const auto& op : p->function_sass_ops) recorded = recorded || op.opcode == mma("HGMMA.64x256x16.F32");
  EXPECT_TRUE(recorded);
  auto after = functionsNeedingTensorSass(path);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->empty());
}

}  // namespace
}  // namespace fprof::core
