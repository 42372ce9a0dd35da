// fprof merge, and info, report, gate and view on merged databases, as a user meets them: exit
// codes, messages, per-rank output, and golden files under tests/golden/merge. Regenerate the
// goldens (only for an intended change) with
//   FPROF_GOLDEN_UPDATE=1 <build>/tests/unit/merge/merge_tests --gtest_filter='MergeCli*'
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "fprof/core/merge.h"
#include "fprof/core/schema.h"
#include "fprof/core/store.h"
#include "rank_fixture.h"

namespace fprof {
namespace {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out;  // stdout (and stderr, when asked)
};

// Runs `fprof ARGS` in `dir`.
Result fprofIn(const std::string& dir, const std::string& args, bool with_stderr = true) {
  const std::string cmd = "cd '" + dir + "' && " + FPROF_BIN + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  Result r;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(f);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Golden check: `fprof ARGS` run in `dir` must exit with `code` and print tests/golden/merge/NAME.
// Point it at any directory, e.g. FPROF_SOURCE_DIR and "info tests/data/<recorded>.fprof".
void expectGolden(const std::string& dir, const std::string& args, int code, const std::string& name) {
  const Result r = fprofIn(dir, args);
  EXPECT_EQ(r.code, code) << r.out;
  const std::string path = std::string(FPROF_SOURCE_DIR) + "/tests/golden/merge/" + name;
  if (std::getenv("FPROF_GOLDEN_UPDATE")) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << r.out;
  }
  ASSERT_TRUE(fs::exists(path)) << path << " missing; regenerate with FPROF_GOLDEN_UPDATE=1";
  EXPECT_EQ(r.out, readFile(path)) << "fprof " << args << "\nregenerate with FPROF_GOLDEN_UPDATE=1 if the change is intended";
}

std::string dropFirstLine(const std::string& s) { return s.substr(s.find('\n') + 1); }

// Three rank databases (rank_fixture.h) and their merge, job.fprof, in a fresh directory.
class MergeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(FPROF_TEST_TMP) + "/cli_" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    ASSERT_EQ(testing::writeThreeRanks(dir_).size(), 3u);
  }
  void merge(const std::string& args = "job.rank0.fprof job.rank1.fprof job.rank2.fprof -o job.fprof") {
    const Result r = fprofIn(dir_, "merge " + args);
    ASSERT_EQ(r.code, 0) << r.out;
  }
  std::string dir_;
};

TEST_F(MergeCli, MergeSaysWhatItWrote) {
  const Result r = fprofIn(dir_, "merge job.rank0.fprof job.rank1.fprof job.rank2.fprof -o job.fprof");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "[fprof] merged 3 files into job.fprof: 3 processes (ranks 0-2), 27 kernels (next: fprof info "
                   "job.fprof)\n");
  EXPECT_TRUE(core::loadProfile(dir_ + "/job.fprof").ok());
  EXPECT_EQ(fprofIn(dir_, "merge -q job.rank0.fprof job.rank1.fprof -o two.fprof").out, "");
}

TEST_F(MergeCli, MergeRefusesWithExit2AndWritesNothing) {
  Result r = fprofIn(dir_, "merge job.rank0.fprof job.rank0.fprof -o job.fprof");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "fprof: job.rank0.fprof is given twice; name each database once\n");
  r = fprofIn(dir_, "merge job.rank0.fprof job.rank1.fprof -o job.rank1.fprof");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "fprof: job.rank1.fprof is an input of this command; write the merged database to another file\n");
  std::ofstream(dir_ + "/junk.fprof") << "junk";
  r = fprofIn(dir_, "merge job.rank0.fprof junk.fprof -o job.fprof");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "fprof: junk.fprof: not an fprof database (not a SQLite file)\n");
  r = fprofIn(dir_, "merge job.rank0.fprof");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--output is required"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_ + "/job.fprof"));
  merge();
  r = fprofIn(dir_, "merge job.rank0.fprof job.rank1.fprof -o job.fprof");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "fprof: job.fprof: file exists; choose another name or overwrite it with --force\n");
  r = fprofIn(dir_, "merge job.rank0.fprof job.rank1.fprof -o job.fprof --force -q");
  EXPECT_EQ(r.code, 0) << r.out;
  auto p = core::loadProfile(dir_ + "/job.fprof");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->processes.size(), 2u);
}

TEST_F(MergeCli, Help) { expectGolden(dir_, "merge --help", 0, "help_merge.txt"); }

TEST_F(MergeCli, InfoOnMergedFile) {
  merge();
  expectGolden(dir_, "info job.fprof", 0, "info_merged.txt");
}

TEST_F(MergeCli, InfoOneRankReadsAsItsOwnFile) {
  merge();
  for (int rank = 0; rank < 3; ++rank) {
    const Result merged = fprofIn(dir_, "info job.fprof --rank " + std::to_string(rank));
    const Result own = fprofIn(dir_, "info job.rank" + std::to_string(rank) + ".fprof");
    ASSERT_EQ(merged.code, 0) << merged.out;
    EXPECT_EQ(merged.out.substr(0, merged.out.find('\n')),
              "job.fprof (rank " + std::to_string(rank) + "; the file holds ranks 0-2)  (schema " + std::to_string(core::kSchemaVersion) + ", recorded by fprof "
              "0.1.0, mode " + (rank == 2 ? "metrics" : "trace") + ")");
    EXPECT_EQ(dropFirstLine(merged.out), dropFirstLine(own.out));
  }
  const Result missing = fprofIn(dir_, "info job.fprof --rank 9");
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.out, "fprof: job.fprof: no process has rank 9; the file holds ranks 0-2\n");
  const Result unranked = fprofIn(dir_, "info job.rank0.fprof --rank 1");
  EXPECT_EQ(unranked.code, 2);
  EXPECT_EQ(unranked.out, "fprof: job.rank0.fprof: no process has rank 1; the file holds rank 0\n");
}

TEST_F(MergeCli, ReportHasARankTableAndReportsOneRank) {
  merge();
  const Result md = fprofIn(dir_, "report job.fprof --format md", false);
  ASSERT_EQ(md.code, 0);
  EXPECT_NE(md.out.find("### Ranks\n"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("| 2 | nodeB | \\[0\\] NVIDIA H100 80GB HBM3 | metrics | 9 | 1.03 ms | 40.0% | 34.8% |"),
            std::string::npos)
      << md.out;
  EXPECT_NE(md.out.find("rank 2 spends 1.50x the kernel time outside NCCL of rank 0 (675.00 us against 450.00 us)"),
            std::string::npos)
      << md.out;
  EXPECT_NE(md.out.find("(mode mixed, "), std::string::npos) << md.out;
  for (int rank = 0; rank < 3; ++rank) {
    const std::string r = std::to_string(rank);
    Result one = fprofIn(dir_, "report job.fprof --rank " + r + " --format md", false);
    Result own = fprofIn(dir_, "report job.rank" + r + ".fprof --format md", false);
    ASSERT_EQ(one.code, 0);
    EXPECT_EQ(one.out.find("### Ranks"), std::string::npos);
    // The file is named in the summary line and in the run details.
    const std::string file = "`job.fprof (rank " + r + ")`";
    ASSERT_NE(one.out.find("- file: " + file), std::string::npos) << one.out;
    for (size_t at = one.out.find(file); at != std::string::npos; at = one.out.find(file, at)) {
      one.out.replace(at, file.size(), "`job.rank" + r + ".fprof`");
    }
    EXPECT_EQ(one.out, own.out);
  }
  const Result html = fprofIn(dir_, "report job.fprof --rank 1");
  EXPECT_EQ(html.code, 0) << html.out;
  EXPECT_TRUE(fs::exists(dir_ + "/job.rank1.html"));
  const Result all = fprofIn(dir_, "report job.fprof");
  EXPECT_EQ(all.code, 0) << all.out;
  const std::string page = readFile(dir_ + "/job.html");
  EXPECT_NE(page.find("<table id=\"rank-table\""), std::string::npos);
  EXPECT_EQ(readFile(dir_ + "/job.rank1.html").find("rank-table"), std::string::npos);
  const Result bad = fprofIn(dir_, "report job.fprof --rank 4 --format md");
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.out, "fprof: job.fprof: no process has rank 4; the file holds ranks 0-2\n");
}

// Base and current jobs of 12 steps (enough launches for the gate's test); in the current one,
// rank 1 runs 30% slower.
class MergeCliGate : public MergeCli {
 protected:
  void SetUp() override {
    MergeCli::SetUp();
    for (const char* run : {"base", "cur"}) {
      std::string inputs;
      for (testing::RankFixture f : testing::threeRanks()) {
        f.steps = 12;
        if (std::string(run) == "cur" && f.rank == 1) f.slowdown *= 1.3;
        const std::string name = std::string(run) + ".rank" + std::to_string(f.rank) + ".fprof";
        ASSERT_TRUE(testing::writeRankDatabase(dir_ + "/" + name, f).ok());
        inputs += name + " ";
      }
      merge(inputs + "-o " + run + ".fprof");
    }
  }
};

TEST_F(MergeCliGate, ComparesRankByRank) {
  expectGolden(dir_, "gate base.fprof cur.fprof", 1, "gate_per_rank.txt");
  const Result clean = fprofIn(dir_, "gate base.fprof base.fprof");
  EXPECT_EQ(clean.code, 0) << clean.out;
  EXPECT_NE(clean.out.find("Compared rank by rank: both files hold ranks 0-2. 0 of 3 ranks regressed."),
            std::string::npos)
      << clean.out;
  const Result json = fprofIn(dir_, "gate base.fprof cur.fprof -q --json gate.json --junit gate.xml");
  EXPECT_EQ(json.code, 1);
  const nlohmann::json j = nlohmann::json::parse(readFile(dir_ + "/gate.json"));
  EXPECT_EQ(j["comparison"], "per rank");
  EXPECT_EQ(j["passed"], false);
  ASSERT_EQ(j["ranks"].size(), 3u);
  EXPECT_EQ(j["ranks"][0]["passed"], true);
  EXPECT_EQ(j["ranks"][1]["passed"], false);
  EXPECT_EQ(j["ranks"][2]["passed"], true);
  EXPECT_EQ(j["regressions"], j["ranks"][1]["regressions"]);
  for (const auto& f : j["findings"]) {
    if (f["regression"] == true) {
      EXPECT_EQ(f["rank"], 1);
    }
  }
  const std::string xml = readFile(dir_ + "/gate.xml");
  EXPECT_NE(xml.find("name=\"rank 1: gemm_kernel&lt;128&gt; [grid 256x1x1 block 256x1x1] in matmul_bias_relu "
                     "(unfused) time\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("name=\"rank 1: total kernel time\""), std::string::npos) << xml;
}

TEST_F(MergeCliGate, SaysSoWhenTheRanksDiffer) {
  merge("cur.rank0.fprof cur.rank1.fprof -o cur01.fprof");
  const Result r = fprofIn(dir_, "gate base.fprof cur01.fprof", false);
  EXPECT_NE(r.out.find("Compared all processes together, not rank by rank: `base.fprof` holds ranks 0-2, "
                       "`cur01.fprof` holds ranks 0-1."),
            std::string::npos)
      << r.out;
  const Result single = fprofIn(dir_, "gate base.rank0.fprof cur.rank0.fprof", false);
  EXPECT_EQ(single.code, 0) << single.out;
  EXPECT_EQ(single.out.find("Compared"), std::string::npos) << "two single-process files read as before";
}

TEST_F(MergeCli, ViewHelpHasRank) {
  const Result r = fprofIn(dir_, "view --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--rank"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace fprof
