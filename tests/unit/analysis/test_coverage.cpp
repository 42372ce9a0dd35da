// Counter coverage (analysis/coverage.h) on hand-built profiles: kernels and time with counters,
// how the counters were obtained and why others have none (schema 2), nothing of either for a
// version-1 file.
#include <gtest/gtest.h>

#include "fprof/analysis/coverage.h"

namespace fprof::analysis {
namespace {

core::Profile profile(int schema_version) {
  core::Profile p;
  p.schema_version = schema_version;
  p.strings = {"", "k"};
  for (int64_t id = 1; id <= 6; ++id) {
    core::KernelRow k;
    k.id = id;
    k.demangled_id = 1;
    k.start_ns = id * 1000;
    k.end_ns = k.start_ns + 100 * id;  // 100, 200, ..., 600 ns: 2100 ns in all
    p.kernels.push_back(k);
  }
  auto counted = [&](int64_t id, const char* source) {
    core::KernelCounters c;
    c.kernel_id = id;
    c.source = source;
    p.counters.push_back(c);
  };
  counted(1, core::kCounterSourceProfiled);
  counted(2, core::kCounterSourceSameSignature);
  counted(3, core::kCounterSourceSameSignature);
  counted(5, core::kCounterSourceProfiled);
  return p;
}

TEST(Coverage, CountsKernelsTimeSourcesAndReasons) {
  core::Profile p = profile(2);
  p.counters_missing = {{4, "cooperative launch: not replayed"}};  // kernel 6 has no reason
  const CounterCoverage c = counterCoverage(p);
  EXPECT_EQ(c.kernels, 6);
  EXPECT_EQ(c.kernels_with_counters, 4);
  EXPECT_EQ(c.kernel_ns, 2100);
  EXPECT_EQ(c.counted_ns, 100 + 200 + 300 + 500);
  EXPECT_DOUBLE_EQ(*c.timeShare(), 1100.0 / 2100.0);
  EXPECT_EQ(describeCoverage(c), "counters for 4 of 6 kernels (52.4% of kernel time): 2 profiled, 2 same signature");
  EXPECT_EQ(describeMissing(c),
            "2 kernels without counters: cooperative launch: not replayed (1), no reason recorded (1)");
}

TEST(Coverage, KernelsOfATraceModeProcessNeverHadToHaveCounters) {
  core::Profile p = profile(2);
  for (core::KernelRow& k : p.kernels) k.process_id = k.id == 6 ? 2 : 1;
  p.metadata = {{"process.1.mode", "metrics"}, {"process.2.mode", "trace"}};  // a merged job
  EXPECT_EQ(describeMissing(counterCoverage(p)),
            "2 kernels without counters: no reason recorded (1), recorded in trace mode (1)");
}

TEST(Coverage, SchemaOneSaysNeitherSourceNorReason) {
  const CounterCoverage c = counterCoverage(profile(1));
  EXPECT_EQ(describeCoverage(c), "counters for 4 of 6 kernels (52.4% of kernel time)");
  EXPECT_EQ(describeMissing(c), "");
}

TEST(Coverage, NoKernelTimeIsNotZeroPercent) {
  core::Profile p;
  p.schema_version = 2;
  const CounterCoverage c = counterCoverage(p);
  EXPECT_FALSE(c.timeShare());
  EXPECT_EQ(describeCoverage(c), "counters for 0 of 0 kernels (n/a of kernel time)");
}

}  // namespace
}  // namespace fprof::analysis
