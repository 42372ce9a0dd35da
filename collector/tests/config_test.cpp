// The environment contract with `fprof run` (collector/README.md).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "config.h"

namespace fprof::collector {
namespace {

EnvLookup envOf(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(Config, OffWithOneWarningWithoutOutput) {
  const CollectorConfig c = readConfig(envOf({}));
  EXPECT_FALSE(c.enabled);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("FPROF_OUTPUT"), std::string::npos);
  EXPECT_FALSE(readConfig(envOf({{"FPROF_OUTPUT", ""}})).enabled);
}

TEST(Config, Defaults) {
  const CollectorConfig c = readConfig(envOf({{"FPROF_OUTPUT", "/tmp/run.fprof"}}));
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.output, "/tmp/run.fprof");
  EXPECT_FALSE(c.force);
  EXPECT_FALSE(c.quiet);
  EXPECT_EQ(c.flush_interval_ms, 500);
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_FALSE(c.ranks.rank.has_value());
}

TEST(Config, Options) {
  const CollectorConfig c = readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"},
                                              {"FPROF_FORCE", "1"},
                                              {"FPROF_QUIET", "1"},
                                              {"FPROF_FLUSH_MS", "250"},
                                              {"FPROF_MODE", "trace"}}));
  EXPECT_TRUE(c.force);
  EXPECT_TRUE(c.quiet);
  EXPECT_EQ(c.flush_interval_ms, 250);
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_FALSE(readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_FORCE", "0"}})).force);
  EXPECT_FALSE(readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_FORCE", "yes"}})).force);
}

TEST(Config, BadValuesWarnAndFallBack) {
  const CollectorConfig c = readConfig(
      envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_FLUSH_MS", "fast"}, {"FPROF_MODE", "sampling"}}));
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.flush_interval_ms, 500);
  ASSERT_EQ(c.warnings.size(), 2u);
  EXPECT_NE(c.warnings[0].find("FPROF_MODE=sampling"), std::string::npos);
  EXPECT_NE(c.warnings[1].find("FPROF_FLUSH_MS=fast"), std::string::npos);
  EXPECT_EQ(readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_FLUSH_MS", "5"}})).flush_interval_ms, 500);
  EXPECT_EQ(readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_FLUSH_MS", "100ms"}})).flush_interval_ms, 500);
}

TEST(Config, SelfTimingAndCuptiSwitches) {
  const CollectorConfig d = readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}}));
  EXPECT_FALSE(d.self_timing);
  EXPECT_TRUE(d.cupti.kernel && d.cupti.memcpy && d.cupti.memset && d.cupti.memory);
  EXPECT_TRUE(d.cupti.nvtx_callbacks);
  EXPECT_TRUE(d.cupti.periodic_flush_all);
  EXPECT_FALSE(d.cupti.flush_period_ms.has_value());
  EXPECT_EQ(d.cupti.buffer_bytes, size_t{8} << 20);
  EXPECT_TRUE(d.nvtx_direct);
  EXPECT_FALSE(readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_NVTX_INJECTION", "cupti"}})).nvtx_direct);
  const CollectorConfig typo = readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_NVTX_INJECTION", "nsys"}}));
  EXPECT_TRUE(typo.nvtx_direct);
  ASSERT_EQ(typo.warnings.size(), 1u);
  EXPECT_NE(typo.warnings[0].find("FPROF_NVTX_INJECTION=nsys is not direct or cupti"), std::string::npos);

  const CollectorConfig c = readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"},
                                              {"FPROF_SELF_TIMING", "1"},
                                              {"FPROF_ACTIVITY", "kernel,memset"},
                                              {"FPROF_NVTX_CALLBACKS", "0"},
                                              {"FPROF_CUPTI_FLUSH_ALL", "0"},
                                              {"FPROF_CUPTI_FLUSH_PERIOD_MS", "0"},
                                              {"FPROF_BUFFER_MB", "32"}}));
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_TRUE(c.self_timing);
  EXPECT_TRUE(c.cupti.kernel);
  EXPECT_FALSE(c.cupti.memcpy);
  EXPECT_TRUE(c.cupti.memset);
  EXPECT_FALSE(c.cupti.memory);
  EXPECT_FALSE(c.cupti.nvtx_callbacks);
  EXPECT_FALSE(c.cupti.periodic_flush_all);
  EXPECT_EQ(c.cupti.flush_period_ms, std::optional<int>(0));
  EXPECT_EQ(c.cupti.buffer_bytes, size_t{32} << 20);
  EXPECT_TRUE(d.cupti.runtime_launch_callbacks && d.cupti.driver_launch_callbacks);
  EXPECT_FALSE(d.cupti.writer_idle);
  EXPECT_TRUE(d.cupti.event_prefill);
  EXPECT_TRUE(d.cupti.zeroed_buffers);
  EXPECT_FALSE(d.cupti.runtime_api_activity || d.cupti.host_pinned);
  const CollectorConfig driver = readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"},
                                                   {"FPROF_LAUNCH_CALLBACKS", "driver"},
                                                   {"FPROF_WRITER_IDLE", "1"},
                                                   {"FPROF_EVENT_PREFILL", "0"},
                                                   {"FPROF_CUPTI_ZEROED_BUFFERS", "0"},
                                                   {"FPROF_RUNTIME_API_ACTIVITY", "1"},
                                                   {"FPROF_CUPTI_HOST_PINNED", "1"}}));
  EXPECT_TRUE(driver.warnings.empty());
  EXPECT_FALSE(driver.cupti.runtime_launch_callbacks);
  EXPECT_TRUE(driver.cupti.driver_launch_callbacks);
  EXPECT_TRUE(driver.cupti.writer_idle);
  EXPECT_FALSE(driver.cupti.event_prefill);
  EXPECT_FALSE(driver.cupti.zeroed_buffers);
  EXPECT_TRUE(driver.cupti.runtime_api_activity && driver.cupti.host_pinned);
  const CollectorConfig no_launches = readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_LAUNCH_CALLBACKS", "none"}}));
  EXPECT_FALSE(no_launches.cupti.runtime_launch_callbacks || no_launches.cupti.driver_launch_callbacks);
  const CollectorConfig typo_launches =
      readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_LAUNCH_CALLBACKS", "runtime"}}));
  ASSERT_EQ(typo_launches.warnings.size(), 1u);
  EXPECT_NE(typo_launches.warnings[0].find("FPROF_LAUNCH_CALLBACKS=runtime is not all, driver or none"),
            std::string::npos);
  EXPECT_TRUE(typo_launches.cupti.runtime_launch_callbacks && typo_launches.cupti.driver_launch_callbacks);
  const CollectorConfig none = readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_ACTIVITY", "none"}}));
  EXPECT_FALSE(none.cupti.kernel || none.cupti.memcpy || none.cupti.memset || none.cupti.memory);

  const CollectorConfig bad = readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"},
                                                {"FPROF_ACTIVITY", "kernel,graphs"},
                                                {"FPROF_NVTX_CALLBACKS", "off"},
                                                {"FPROF_BUFFER_MB", "0"},
                                                {"FPROF_CUPTI_FLUSH_PERIOD_MS", "-5"}}));
  ASSERT_EQ(bad.warnings.size(), 4u);
  EXPECT_NE(bad.warnings[0].find("FPROF_NVTX_CALLBACKS=off is not 0 or 1"), std::string::npos) << bad.warnings[0];
  EXPECT_NE(bad.warnings[1].find("FPROF_CUPTI_FLUSH_PERIOD_MS=-5"), std::string::npos) << bad.warnings[1];
  EXPECT_NE(bad.warnings[2].find("FPROF_BUFFER_MB=0"), std::string::npos) << bad.warnings[2];
  EXPECT_NE(bad.warnings[3].find("FPROF_ACTIVITY=kernel,graphs"), std::string::npos) << bad.warnings[3];
  EXPECT_TRUE(bad.cupti.nvtx_callbacks && bad.cupti.memcpy);  // defaults kept
  EXPECT_EQ(bad.cupti.buffer_bytes, size_t{8} << 20);
  EXPECT_FALSE(bad.cupti.flush_period_ms.has_value());
}

TEST(Config, RanksInPrecedenceOrder) {
  Ranks r = readRanks(envOf({{"RANK", "3"}, {"OMPI_COMM_WORLD_RANK", "5"}, {"LOCAL_RANK", "1"}}));
  EXPECT_EQ(r.rank, std::optional<int>(3));
  EXPECT_EQ(r.local_rank, std::optional<int>(1));
  r = readRanks(envOf({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}}));
  EXPECT_EQ(r.rank, std::optional<int>(5));
  EXPECT_EQ(r.local_rank, std::optional<int>(2));
  r = readRanks(envOf({{"SLURM_PROCID", "12"}, {"SLURM_LOCALID", "4"}}));
  EXPECT_EQ(r.rank, std::optional<int>(12));
  EXPECT_EQ(r.local_rank, std::optional<int>(4));
  r = readRanks(envOf({{"PMI_RANK", "9"}, {"MPI_LOCALRANKID", "1"}}));  // MPICH / Intel MPI (Hydra)
  EXPECT_EQ(r.rank, std::optional<int>(9));
  EXPECT_EQ(r.local_rank, std::optional<int>(1));
  r = readRanks(envOf({{"MV2_COMM_WORLD_RANK", "6"}, {"MV2_COMM_WORLD_LOCAL_RANK", "0"}}));  // MVAPICH2
  EXPECT_EQ(r.rank, std::optional<int>(6));
  EXPECT_EQ(r.local_rank, std::optional<int>(0));
  r = readRanks(envOf({{"RANK", "x"}, {"SLURM_PROCID", "7"}, {"LOCAL_RANK", "-1"}}));
  EXPECT_EQ(r.rank, std::optional<int>(7));  // a malformed RANK is skipped
  EXPECT_FALSE(r.local_rank.has_value());
}

TEST(Config, OutputPaths) {
  EXPECT_EQ(rankedOutputPath("/out/run.fprof", std::nullopt), "/out/run.fprof");
  EXPECT_EQ(rankedOutputPath("/out/run.fprof", 3), "/out/run.rank3.fprof");
  EXPECT_EQ(rankedOutputPath("/out/run", 0), "/out/run.rank0");
  EXPECT_EQ(rankedOutputPath(".fprof", 1), ".fprof.rank1");
  EXPECT_EQ(pidOutputPath("/out/run.rank3.fprof", 4242), "/out/run.rank3.pid4242.fprof");
  EXPECT_EQ(pidOutputPath("/out/run", 7), "/out/run.pid7.fprof");
}

}  // namespace
}  // namespace fprof::collector
