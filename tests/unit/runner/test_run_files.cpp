// The files of a run (runner/run_files.h): the databases of one run told apart, --force's new
// files put over only the old ones of the same names, and the database holding the program's
// kernels named last.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "fprof/core/store.h"
#include "fprof/runner/run_files.h"

namespace fprof::runner {
namespace {

namespace fs = std::filesystem;

class RunFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(FPROF_TEST_TMP) / ("run_files_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void writeText(const std::string& name, const std::string& text) const { std::ofstream(path(name)) << text; }
  std::string readText(const std::string& p) const {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // A database with `kernels` kernel rows.
  void writeDatabase(const std::string& p, int kernels) const {
    auto w = core::Writer::create(p, true);
    ASSERT_TRUE(w.ok()) << w.error();
    core::ProcessInfo info;
    info.pid = 1;
    info.host = "h";
    info.command_line = "program";
    auto process = (*w)->addProcess(info);
    ASSERT_TRUE(process.ok());
    for (int i = 0; i < kernels; ++i) {
      core::KernelRecord k;
      k.process_id = *process;
      k.name = k.demangled_name = "k";
      k.correlation_id = static_cast<uint32_t>(i + 1);
      k.start_ns = 100 * (i + 1);
      k.end_ns = k.start_ns + 50;
      k.grid_x = k.grid_y = k.grid_z = k.block_x = k.block_y = k.block_z = 1;
      (*w)->add(k);
    }
    ASSERT_TRUE((*w)->flush().ok());
    ASSERT_TRUE((*w)->close().ok());
  }
  fs::path dir_;
};

TEST_F(RunFilesTest, TheDatabasesOfOneRunAndTheirTags) {
  for (const char* name : {"job.fprof", "job.rank0.fprof", "job.rank1.fprof", "job.pid77.fprof", "job-2.fprof",
                           "jobs.fprof", "job.rank0.fprof-wal", "other.rank0.fprof"}) {
    writeText(name, "x");
  }
  EXPECT_EQ(runDatabases(path("job.fprof")),
            (std::vector<std::string>{path("job.fprof"), path("job.pid77.fprof"), path("job.rank0.fprof"),
                                      path("job.rank1.fprof")}));
  EXPECT_EQ(processTag(path("job.rank1.fprof"), path("job.fprof")), ".rank1");
  EXPECT_EQ(processTag(path("job.pid77.fprof"), path("job.fprof")), ".pid77");
  EXPECT_EQ(processTag(path("job.fprof"), path("job.fprof")), "");
}

TEST_F(RunFilesTest, WithoutForceTheCollectorWritesAtTheOutput) {
  auto place = OutputPlace::prepare(path("run.fprof"), false);
  ASSERT_TRUE(place.ok());
  EXPECT_FALSE(place->staged());
  EXPECT_EQ(place->workingOutput(), path("run.fprof"));
}

// --force: the new databases replace those of the same names, their old -wal and -shm too, and
// the files of ranks the run did not write stay as they were.
TEST_F(RunFilesTest, ForcePutsOnlyTheNewFilesOverTheOldOnes) {
  writeText("job.fprof", "old main");
  writeText("job.fprof-wal", "old main's wal");
  writeText("job.rank0.fprof", "old rank 0");
  writeText("job.rank1.fprof", "old rank 1");
  auto place = OutputPlace::prepare(path("job.fprof"), true);
  ASSERT_TRUE(place.ok()) << place.error();
  ASSERT_TRUE(place->staged());
  EXPECT_TRUE(fs::is_directory(place->folder()));
  EXPECT_EQ(fs::path(place->workingOutput()).filename(), "job.fprof");
  EXPECT_TRUE(runDatabases(place->workingOutput()).empty()) << "a fresh folder";
  const std::string new_rank0 = (fs::path(place->folder()) / "job.rank0.fprof").string();
  std::ofstream(new_rank0) << "new rank 0";
  std::vector<std::string> problems;
  EXPECT_EQ(place->publish({new_rank0}, problems), std::vector<std::string>{path("job.rank0.fprof")});
  EXPECT_TRUE(problems.empty());
  place->discard();
  EXPECT_FALSE(fs::exists(place->folder()));
  EXPECT_EQ(readText(path("job.rank0.fprof")), "new rank 0");
  EXPECT_EQ(readText(path("job.rank1.fprof")), "old rank 1");
  EXPECT_EQ(readText(path("job.fprof")), "old main");
  EXPECT_EQ(readText(path("job.fprof-wal")), "old main's wal") << "not the replaced database's";

  auto again = OutputPlace::prepare(path("job.fprof"), true);
  ASSERT_TRUE(again.ok());
  std::ofstream(again->workingOutput()) << "new main";
  EXPECT_EQ(again->publish({again->workingOutput()}, problems), std::vector<std::string>{path("job.fprof")});
  EXPECT_EQ(readText(path("job.fprof")), "new main");
  EXPECT_FALSE(fs::exists(path("job.fprof-wal"))) << "the old database's wal would be read as the new one's";
  again->discard();
}

// A staging folder left by an earlier fprof of the same process id (killed before it moved its
// files) holds that run's databases: a new run stages in a folder of its own and keeps it.
TEST_F(RunFilesTest, ForceKeepsTheFolderOfAnEarlierRunOfTheSamePid) {
  const std::string left = path(".job.fprof.run" + std::to_string(getpid()));
  fs::create_directory(left);
  std::ofstream(left + "/job.fprof") << "killed run's database";
  for (const std::string& name : {left + "-", left + "-XXXXXX"}) {
    fs::create_directory(name);
    std::ofstream(name + "/job.fprof") << "killed run's database";
  }
  auto place = OutputPlace::prepare(path("job.fprof"), true);
  ASSERT_TRUE(place.ok()) << place.error();
  EXPECT_EQ(fs::path(place->folder()).filename().string().rfind(".job.fprof.run" + std::to_string(getpid()) + "-", 0),
            0u);
  for (const std::string& name : {left, left + "-", left + "-XXXXXX"}) {
    EXPECT_NE(place->folder(), name);
    EXPECT_EQ(readText(name + "/job.fprof"), "killed run's database");
  }
  place->discard();
  EXPECT_FALSE(fs::exists(place->folder()));
  EXPECT_EQ(readText(left + "/job.fprof"), "killed run's database");
}

TEST_F(RunFilesTest, KernelCountsOfDatabases) {
  writeDatabase(path("three.fprof"), 3);
  writeDatabase(path("none.fprof"), 0);
  writeText("text.fprof", "not a database");
  EXPECT_EQ(kernelCount(path("three.fprof")), std::optional<int64_t>(3));
  EXPECT_EQ(kernelCount(path("none.fprof")), std::optional<int64_t>(0));
  EXPECT_FALSE(kernelCount(path("text.fprof")).has_value());
  EXPECT_FALSE(kernelCount(path("missing.fprof")).has_value());
}

// torch.compile: the program's own process writes gptc.fprof; its compile workers, finding the
// name taken, write gptc.pid<N>.fprof without kernels. The last line names gptc.fprof, and the
// workers' files are said in one line before it.
TEST_F(RunFilesTest, TheFileHoldingTheKernelsIsNamedLast) {
  writeDatabase(path("gptc.fprof"), 1200);
  writeDatabase(path("gptc.pid637.fprof"), 0);
  writeDatabase(path("gptc.pid640.fprof"), 0);
  const ReadyReport r = readyReport({path("gptc.fprof"), path("gptc.pid637.fprof"), path("gptc.pid640.fprof")},
                                    path("gptc.fprof"));
  ASSERT_EQ(r.lines.size(), 2u);
  EXPECT_EQ(r.lines[0], "2 other processes ran no kernel (a launcher, torch.compile's compile workers): " +
                            path("gptc.pid637.fprof") + ", " + path("gptc.pid640.fprof"));
  EXPECT_EQ(r.lines[1], "profile ready: " + path("gptc.fprof") + " (1,200 kernels; next: fprof info " +
                            path("gptc.fprof") + ", fprof report " + path("gptc.fprof") + ")");
}

// Several processes with kernels (ranks under one fprof, or a side process that ran kernels):
// each is ready, the named output last.
TEST_F(RunFilesTest, EveryFileWithKernelsIsReadyTheNamedOutputLast) {
  writeDatabase(path("run.fprof"), 5);
  writeDatabase(path("run.pid12.fprof"), 1);
  writeDatabase(path("run.rank1.fprof"), 2);
  const ReadyReport r =
      readyReport({path("run.fprof"), path("run.pid12.fprof"), path("run.rank1.fprof")}, path("run.fprof"));
  ASSERT_EQ(r.lines.size(), 3u);
  EXPECT_EQ(r.lines[0].rfind("profile ready: " + path("run.pid12.fprof") + " (1 kernel; ", 0), 0u) << r.lines[0];
  EXPECT_EQ(r.lines[1].rfind("profile ready: " + path("run.rank1.fprof") + " (2 kernels; ", 0), 0u) << r.lines[1];
  EXPECT_EQ(r.lines[2].rfind("profile ready: " + path("run.fprof") + " (5 kernels; ", 0), 0u) << r.lines[2];
}

TEST_F(RunFilesTest, WithoutAnyKernelEachFileIsTheProfile) {
  writeDatabase(path("run.fprof"), 0);
  const ReadyReport r = readyReport({path("run.fprof")}, path("run.fprof"));
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_EQ(r.lines[0].rfind("profile ready: " + path("run.fprof") + " (no kernels; next: fprof info", 0), 0u)
      << r.lines[0];
}

TEST_F(RunFilesTest, DefaultOutputNeverAnExistingFile) {
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_);
  EXPECT_EQ(defaultOutput("./bin/model"), "model.fprof");
  writeText("model.fprof", "x");
  writeText("model-2.fprof", "x");
  EXPECT_EQ(defaultOutput("/usr/bin/model"), "model-3.fprof");
  EXPECT_EQ(defaultOutput("/"), "profile.fprof");
  fs::current_path(cwd);
}

}  // namespace
}  // namespace fprof::runner
