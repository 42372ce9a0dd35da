// The environment contract with `fprof run` (collector/README.md).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "injection/config.h"

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
  const CollectorConfig yes = readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_FORCE", "yes"}}));
  EXPECT_FALSE(yes.force);
  ASSERT_EQ(yes.warnings.size(), 1u);
  EXPECT_EQ(yes.warnings[0], "FPROF_FORCE='yes' is not 0 or 1; using the default (0)");
}

TEST(Config, BadValuesWarnAndFallBack) {
  const CollectorConfig c = readConfig(
      envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_FLUSH_MS", "fast"}, {"FPROF_MODE", "sampling"}}));
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.flush_interval_ms, 500);
  ASSERT_EQ(c.warnings.size(), 2u);
  EXPECT_EQ(c.warnings[0], "FPROF_MODE='sampling' is not trace or metrics; using the default (trace)");
  EXPECT_EQ(c.warnings[1], "FPROF_FLUSH_MS='fast' is not an integer in 10..3600000; using the default (500)");
  EXPECT_EQ(readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_FLUSH_MS", "5"}})).flush_interval_ms, 500);
  EXPECT_EQ(readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_FLUSH_MS", "100ms"}})).flush_interval_ms, 500);
}

// FPROF_SELF_TIMING is a flag like the others: 1 on, 0 off, anything else said and off.
TEST(Config, SelfTimingIsOneOrZero) {
  EXPECT_FALSE(readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}})).self_timing);
  EXPECT_TRUE(readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_SELF_TIMING", "1"}})).self_timing);
  EXPECT_FALSE(readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_SELF_TIMING", "0"}})).self_timing);
  const CollectorConfig on = readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_SELF_TIMING", "on"}}));
  EXPECT_FALSE(on.self_timing);
  ASSERT_EQ(on.warnings.size(), 1u);
  EXPECT_EQ(on.warnings[0].rfind("FPROF_SELF_TIMING='on' is not 0 or 1", 0), 0u);
}

TEST(Config, CuptiSwitches) {
  const CollectorConfig d = readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}}));
  EXPECT_TRUE(d.cupti.kernel && d.cupti.memcpy && d.cupti.memset && d.cupti.memory);
  EXPECT_TRUE(d.cupti.nvtx_callbacks);
  EXPECT_TRUE(d.cupti.periodic_flush_all);
  EXPECT_FALSE(d.cupti.host_pinned);
  EXPECT_TRUE(d.nvtx_direct);
  EXPECT_FALSE(readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_NVTX_INJECTION", "cupti"}})).nvtx_direct);
  const CollectorConfig typo = readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_NVTX_INJECTION", "nsys"}}));
  EXPECT_TRUE(typo.nvtx_direct);
  ASSERT_EQ(typo.warnings.size(), 1u);
  EXPECT_EQ(typo.warnings[0], "FPROF_NVTX_INJECTION='nsys' is not direct or cupti; using the default (direct)");

  const CollectorConfig c = readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"},
                                              {"FPROF_ACTIVITY", "kernel,memset"},
                                              {"FPROF_NVTX_CALLBACKS", "0"},
                                              {"FPROF_CUPTI_FLUSH_ALL", "0"},
                                              {"FPROF_CUPTI_HOST_PINNED", "1"}}));
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_TRUE(c.cupti.kernel);
  EXPECT_FALSE(c.cupti.memcpy);
  EXPECT_TRUE(c.cupti.memset);
  EXPECT_FALSE(c.cupti.memory);
  EXPECT_FALSE(c.cupti.nvtx_callbacks);
  EXPECT_FALSE(c.cupti.periodic_flush_all);
  EXPECT_TRUE(c.cupti.host_pinned);
  const CollectorConfig none = readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"}, {"FPROF_ACTIVITY", "none"}}));
  EXPECT_FALSE(none.cupti.kernel || none.cupti.memcpy || none.cupti.memset || none.cupti.memory);

  const CollectorConfig bad = readConfig(envOf({{"FPROF_OUTPUT", "a.fprof"},
                                                {"FPROF_ACTIVITY", "kernel,graphs"},
                                                {"FPROF_NVTX_CALLBACKS", "off"}}));
  ASSERT_EQ(bad.warnings.size(), 2u);
  EXPECT_NE(bad.warnings[0].find("FPROF_NVTX_CALLBACKS='off' is not 0 or 1"), std::string::npos) << bad.warnings[0];
  EXPECT_NE(bad.warnings[1].find("FPROF_ACTIVITY='kernel,graphs'"), std::string::npos) << bad.warnings[1];
  EXPECT_TRUE(bad.cupti.nvtx_callbacks && bad.cupti.memcpy);  // defaults kept
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
