// Half-precision FLOPs per lane from SASS: the parser on real nvdisasm output of kernels with each
// form (tests/data/sass/half_ops.cu), and the FLOPs behind dynamic instruction counts.
#include "fprof/core/sass_half.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "fprof/core/metric_sets.h"
#include "fprof/core/store.h"
#include "test_util.h"

namespace fprof::core {
namespace {

std::map<std::string, SassHalfCounts> recorded() {
  std::ifstream in(std::string(FPROF_SOURCE_DIR) + "/tests/data/sass/half_ops_sm90.sass");
  std::stringstream text;
  text << in.rdbuf();
  return parseNvdisasmHalfOps(text.str());
}

TEST(SassHalf, ParsesEachFormFromNvdisasmOutput) {
  const auto sass = recorded();
  EXPECT_EQ(sass.at("_Z11scalar_hfmaP6__halfi").count("HFMA2.f16.scalar"), 1u);
  EXPECT_EQ(sass.at("_Z11scalar_hfmaP6__halfi").count("HFMA2.f16.packed"), 0u);
  EXPECT_EQ(sass.at("_Z11packed_hfmaP7__half2i").count("HFMA2.f16.scalar"), 0u);
  EXPECT_GT(sass.at("_Z11packed_hfmaP7__half2i").at("HFMA2.f16.packed"), 0);
  EXPECT_EQ(sass.at("_Z4convPK6__halfPfi"), (SassHalfCounts{{"HADD2.f16.zero", 1}})) << "a conversion, no FLOP";
  EXPECT_EQ(sass.at("_Z11fp32_constsPfi"), (SassHalfCounts{{"HFMA2.MMA.f16.zero", 1}}))
      << "an immediate move on the MMA pipe, no FLOP";
  // ptxas alternates packed HFMA2 between the FMA pipe and the MMA pipe (HFMA2.MMA).
  EXPECT_EQ(sass.at("_Z11packed_hfmaP7__half2i").at("HFMA2.f16.packed"), 4);
  EXPECT_EQ(sass.at("_Z11packed_hfmaP7__half2i").at("HFMA2.MMA.f16.packed"), 4);
  const SassHalfCounts& bf = sass.at("_Z9packed_bfP14__nv_bfloat162i");
  EXPECT_EQ(bf.at("HFMA2.bf16.packed"), 4);
  EXPECT_EQ(bf.at("HFMA2.MMA.bf16.packed"), 4);
  EXPECT_EQ(bf.at("HADD2.bf16.packed"), 1);
  EXPECT_EQ(bf.at("HMUL2.bf16.packed"), 1);
  EXPECT_EQ(sass.at("_Z5mixedP7__half2i"), (SassHalfCounts{{"HFMA2.MMA.f16.packed", 1}, {"HFMA2.f16.scalar", 1}}));
}

TEST(SassHalf, ParsesComparesAndMinMaxAsOtherAndKeepsPredicates) {
  const auto sass = parseNvdisasmHalfOps(
      ".text._Z4reluP7__half2i:\n"
      "        /*0080*/                   HMNMX2 R5, R4, RZ.H0_H0, !PT ;\n"
      "        /*0090*/               @P0 HSETP2.GT.AND P1, PT, R4.H0_H0, RZ.H0_H0, PT ;\n"
      "        /*00a0*/              @!P0 HFMA2.MMA.BF16_V2 R6, R4, R7, R8 ;\n"
      "        /*00b0*/                   HADD2.F32 R0, -RZ, R2.H0_H0 ;\n");
  EXPECT_EQ(sass.at("_Z4reluP7__half2i"), (SassHalfCounts{{"HMNMX2.f16.other", 1},
                                                          {"HSETP2.f16.other", 1},
                                                          {"HFMA2.MMA.bf16.packed", 1},
                                                          {"HADD2.f16.zero", 1}}));
}

TEST(SassHalf, OneFormPerOpcodeGivesExactFlops) {
  const auto sass = recorded();
  // 1000 thread-level HFMA2 instructions: 2 lanes x 2 FLOPs packed, 1 x 2 scalar.
  HalfFlops packed = halfFlopsFromSass(sass.at("_Z11packed_hfmaP7__half2i"), 0, 0, 1000);
  EXPECT_EQ(packed.fp16, 4000);
  EXPECT_EQ(packed.bf16, 0);
  EXPECT_NE(packed.method.find("HFMA2 packed"), std::string::npos) << packed.method;
  HalfFlops scalar = halfFlopsFromSass(sass.at("_Z11scalar_hfmaP6__halfi"), 0, 0, 1000);
  EXPECT_EQ(scalar.fp16, 2000);
  HalfFlops bf = halfFlopsFromSass(sass.at("_Z9packed_bfP14__nv_bfloat162i"), 10, 10, 80);
  EXPECT_EQ(bf.fp16, 0);
  EXPECT_EQ(bf.bf16, 10 * 2 + 10 * 2 + 80 * 4);
  HalfFlops conversions = halfFlopsFromSass(sass.at("_Z4convPK6__halfPfi"), 4096, 0, 0);
  EXPECT_EQ(conversions.fp16, 0) << "HADD2.F32 conversions are no FLOPs";
  HalfFlops moves = halfFlopsFromSass(sass.at("_Z11fp32_constsPfi"), 0, 0, 4096);
  EXPECT_EQ(moves.fp16, 0) << "HFMA2.MMA immediate moves are no FLOPs";
}

TEST(SassHalf, MixedFormsAreUnknownWithBounds) {
  const auto sass = recorded();
  HalfFlops mixed = halfFlopsFromSass(sass.at("_Z5mixedP7__half2i"), 0, 0, 100);
  EXPECT_FALSE(mixed.fp16);
  EXPECT_FALSE(mixed.bf16);
  EXPECT_NE(mixed.method.find("between 200 and 400 FLOPs"), std::string::npos) << mixed.method;
  HalfFlops absent = halfFlopsFromSass({}, 0, 0, 10);
  EXPECT_FALSE(absent.fp16);
  EXPECT_NE(absent.method.find("not in the SASS read"), std::string::npos);
  HalfFlops none = halfFlopsFromSass({}, 0, 0, 0);
  EXPECT_EQ(none.fp16, 0);
  EXPECT_EQ(none.method, "");
  EXPECT_NE(mixed.method.find("`roofline` and `full` count the FMA pipe"), std::string::npos) << "one form per pipe: the split would help";
}

// The validation program's mixed16_kernel on an H100 (bench/RESULTS.md): per thread and
// iteration one packed HFMA2.MMA and one scalar HFMA2; the fp16 pipe counter X counts the scalar
// ones only, so X - hadd - hmul of the hfma count ran on the FMA pipe, the rest as HFMA2.MMA.
TEST(SassHalf, TheFp16PipeCounterSplitsHfma2ByPipe) {
  const auto sass = recorded();
  const SassHalfCounts& mixed = sass.at("_Z5mixedP7__half2i");
  const double n = 262144.0 * 9;  // thread-iterations
  HalfFlops split = halfFlopsFromSass(mixed, 0, 0, 2 * n, n);
  EXPECT_EQ(split.fp16, 6 * n) << split.method;  // packed 2 lanes x 2 FLOPs + scalar 1 lane x 2 FLOPs
  EXPECT_EQ(split.bf16, 0);
  EXPECT_NE(split.method.find("HFMA2 scalar x 2359296, HFMA2.MMA packed x 2359296"), std::string::npos)
      << split.method;
  EXPECT_NE(split.method.find(kFp16PipeMetric), std::string::npos) << split.method;
  EXPECT_NE(split.method.find("steps of 32 threads"), std::string::npos) << split.method;
  // As read on the H100 (n = 262,181 threads: one warp of 5): the counter read 2,359,616 where
  // 9n = 2,359,629 scalar HFMA2 ran, so the split is 13 HFMA2 (26 FLOPs) off 6 * 9n.
  HalfFlops h100 = halfFlopsFromSass(mixed, 0, 0, 4719258, 2359616);
  ASSERT_TRUE(h100.fp16);
  EXPECT_EQ(*h100.fp16, 2 * 2359616.0 + 4 * (4719258.0 - 2359616.0));
  EXPECT_NEAR(*h100.fp16, 6 * 2359629.0, 64);
  // HADD2/HMUL2 run on the FMA pipe too: X - hadd - hmul is the FMA pipe's HFMA2.
  SassHalfCounts with_add = mixed;
  with_add["HADD2.f16.packed"] = 1;
  HalfFlops add = halfFlopsFromSass(with_add, 100, 0, 2 * n, n + 100);
  EXPECT_EQ(add.fp16, 6 * n + 200) << add.method;
  // A counter a little below hadd + hmul reads as no HFMA2 on the FMA pipe, not a negative count.
  HalfFlops low = halfFlopsFromSass(with_add, 100, 0, 2 * n, 90);
  EXPECT_EQ(low.fp16, 200 + 2 * n * 4) << low.method;
  // One form per opcode needs no split: the counter changes nothing.
  HalfFlops packed = halfFlopsFromSass(sass.at("_Z11packed_hfmaP7__half2i"), 0, 0, 1000, 500);
  EXPECT_EQ(packed.fp16, 4000);
  EXPECT_EQ(packed.method.find(kFp16PipeMetric), std::string::npos) << packed.method;
}

TEST(SassHalf, NoSplitWhereAPipeHoldsSeveralFormsOrTheCounterMayCountMore) {
  // Immediate moves and packed FMAs, both HFMA2.MMA: the split leaves the MMA pipe's share unknown.
  const SassHalfCounts moves = {{"HFMA2.MMA.f16.zero", 1}, {"HFMA2.MMA.f16.packed", 1}, {"HFMA2.f16.scalar", 1}};
  HalfFlops narrowed = halfFlopsFromSass(moves, 0, 0, 100, 40);
  EXPECT_FALSE(narrowed.fp16);
  // FMA pipe: 40 scalar = 80 FLOPs; MMA pipe: 60 of 0 or 2 lanes = 0..240.
  EXPECT_NE(narrowed.method.find("between 80 and 320 FLOPs"), std::string::npos) << narrowed.method;
  EXPECT_NE(narrowed.method.find("HFMA2.MMA x 60"), std::string::npos) << narrowed.method;
  EXPECT_EQ(narrowed.method.find("count the FMA pipe"), std::string::npos) << "the counter was there";
  EXPECT_NE(narrowed.method.find("--replay application` counts each instruction"), std::string::npos)
      << "where no counter tells the forms apart, the way to exact counts: " << narrowed.method;
  HalfFlops unsplit = halfFlopsFromSass(moves, 0, 0, 100);
  EXPECT_EQ(unsplit.method.find("count the FMA pipe"), std::string::npos) << "it would not make them exact";
  // A 16-bit min/max may be counted by the fp16 pipe counter too: no split.
  const SassHalfCounts with_max = {{"HFMA2.MMA.f16.packed", 1}, {"HFMA2.f16.scalar", 1}, {"HMNMX2.f16.other", 1}};
  HalfFlops max = halfFlopsFromSass(with_max, 0, 0, 100, 50);
  EXPECT_FALSE(max.fp16);
  EXPECT_NE(max.method.find("between 200 and 400 FLOPs"), std::string::npos) << max.method;
  // An HADD2 on the MMA pipe (none seen from ptxas yet) would take X - hadd - hmul off the mark.
  const SassHalfCounts mma_add = {{"HFMA2.MMA.f16.packed", 1}, {"HFMA2.f16.scalar", 1}, {"HADD2.MMA.f16.packed", 1}};
  EXPECT_FALSE(halfFlopsFromSass(mma_add, 10, 0, 100, 60).fp16);
}

TEST(SassHalf, DeriveCountersLeavesHalfFlopsToTheSass) {
  const std::vector<std::string> names = {kHaddMetric, kHmulMetric, kHfmaMetric};
  KernelCounters none = deriveCounters(names, {0, 0, 0});
  EXPECT_EQ(none.flops_fp16, 0);
  EXPECT_EQ(none.flops_bf16, 0);
  EXPECT_EQ(none.half_flops_method, "");
  KernelCounters some = deriveCounters(names, {0, 0, 64});
  EXPECT_FALSE(some.flops_fp16);
  EXPECT_EQ(some.half_flops_method, kHalfFlopsPending);
}

TEST(SassHalf, AppliedToADatabaseOnlyWhereTheSassWasRead) {
  const std::string path = fprof::testing::tempPath("sass_half.fprof");
  {
    auto w = Writer::create(path);
    ASSERT_TRUE(w.ok());
    KernelRecord a = fprof::testing::makeKernel("_Z11packed_hfmaP7__half2i", 0, 5, 1);
    KernelRecord b = fprof::testing::makeKernel("_Z7unknownv", 10, 5, 2);
    KernelRecord c = fprof::testing::makeKernel("_Z5mixedP7__half2i", 20, 5, 3);
    KernelRecord d = fprof::testing::makeKernel("_Z5mixedP7__half2i", 30, 5, 4);
    (*w)->add(a);
    (*w)->add(b);
    (*w)->add(c);
    (*w)->add(d);
    // Launches 1-3 with the fp16 pipe counter (`full`), launch 4 without it (`roofline`).
    for (uint32_t corr : {1u, 2u, 3u, 4u}) {
      std::vector<std::string> names = {kHaddMetric, kHmulMetric, kHfmaMetric};
      std::vector<double> values = {0, 0, 1000};
      if (corr != 4) {
        names.push_back(kFp16PipeMetric);
        values.push_back(400);
      }
      std::vector<std::pair<std::string, double>> raw;
      for (size_t i = 0; i < names.size(); ++i) raw.emplace_back(names[i], values[i]);
      (*w)->addCountersForLaunch(1, corr, 0, deriveCounters(names, values), raw);
    }
    ASSERT_TRUE((*w)->close());
  }
  auto pending = functionsNeedingSass(path);
  ASSERT_TRUE(pending.ok()) << pending.error();
  EXPECT_EQ(pending->size(), 3u);
  const auto sass = recorded();
  const Status applied = applySassHalfFlops(path,
                                            {{"_Z11packed_hfmaP7__half2i", sass.at("_Z11packed_hfmaP7__half2i")},
                                             {"_Z5mixedP7__half2i", sass.at("_Z5mixedP7__half2i")}},
                                            "the SASS could not be read");
  ASSERT_TRUE(applied) << applied.error();
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->counters.size(), 4u);
  for (const KernelCounters& c : p->counters) {
    if (c.kernel_id == 1) {
      EXPECT_EQ(c.flops_fp16, 4000);
      EXPECT_NE(c.half_flops_method.find("per lane"), std::string::npos);
    } else if (c.kernel_id == 3) {
      EXPECT_EQ(c.flops_fp16, 400 * 2 + 600 * 4) << c.half_flops_method;  // 400 scalar, 600 packed
    } else if (c.kernel_id == 4) {
      EXPECT_FALSE(c.flops_fp16);
      EXPECT_NE(c.half_flops_method.find("between 2000 and 4000 FLOPs"), std::string::npos) << c.half_flops_method;
    } else {
      EXPECT_FALSE(c.flops_fp16);
      EXPECT_EQ(c.half_flops_method, "the SASS could not be read");
    }
  }
  ASSERT_FALSE(p->function_sass_ops.empty());
  EXPECT_EQ(p->str(p->function_sass_ops[0].name_id), "_Z11packed_hfmaP7__half2i");
  auto after = functionsNeedingSass(path);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->empty());
}

}  // namespace
}  // namespace fprof::core
