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
  EXPECT_EQ(sass.at("_Z11fp32_constsPfi"), (SassHalfCounts{{"HFMA2.f16.zero", 1}})) << "an immediate move, no FLOP";
  const SassHalfCounts& bf = sass.at("_Z9packed_bfP14__nv_bfloat162i");
  EXPECT_GT(bf.at("HFMA2.bf16.packed"), 0);
  EXPECT_EQ(bf.at("HADD2.bf16.packed"), 1);
  EXPECT_EQ(bf.at("HMUL2.bf16.packed"), 1);
  EXPECT_GT(sass.at("_Z5mixedP7__half2i").at("HFMA2.f16.packed"), 0);
  EXPECT_GT(sass.at("_Z5mixedP7__half2i").at("HFMA2.f16.scalar"), 0);
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
    (*w)->add(a);
    (*w)->add(b);
    const std::vector<std::string> names = {kHaddMetric, kHmulMetric, kHfmaMetric};
    for (uint32_t corr : {1u, 2u}) {
      const std::vector<double> values = {0, 0, 1000};
      std::vector<std::pair<std::string, double>> raw;
      for (size_t i = 0; i < names.size(); ++i) raw.emplace_back(names[i], values[i]);
      (*w)->addCountersForLaunch(1, corr, 0, deriveCounters(names, values), raw);
    }
    ASSERT_TRUE((*w)->close());
  }
  auto pending = functionsNeedingSass(path);
  ASSERT_TRUE(pending.ok()) << pending.error();
  EXPECT_EQ(pending->size(), 2u);
  const auto sass = recorded();
  const Status applied = applySassHalfFlops(
      path, {{"_Z11packed_hfmaP7__half2i", sass.at("_Z11packed_hfmaP7__half2i")}}, "the SASS could not be read");
  ASSERT_TRUE(applied) << applied.error();
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->counters.size(), 2u);
  for (const KernelCounters& c : p->counters) {
    if (c.kernel_id == 1) {
      EXPECT_EQ(c.flops_fp16, 4000);
      EXPECT_NE(c.half_flops_method.find("per lane"), std::string::npos);
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
