// The output rules (core/output.h) one by one: what a target must be, when bytes appear there,
// who wins a race, what a failure or a signal leaves behind.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fprof/core/output.h"
#include "fprof/core/store.h"
#include "test_util.h"

namespace fprof {
namespace {

namespace fs = std::filesystem;
using core::OutputFile;
using core::OutputKind;
using core::OutputRules;

class Output : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(FPROF_TEST_TMP) + "/output-" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  static std::string read(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void write(const std::string& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }
  // Every name in the folder: nothing but what the test expects may be left there.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string dir_;
};

OutputRules rules(bool replace = false, std::vector<std::string> inputs = {}) {
  OutputRules r;
  r.replace = replace;
  r.inputs = std::move(inputs);
  r.what = "the test output";
  return r;
}

TEST_F(Output, BytesAppearAtTheTargetOnlyOnCommit) {
  auto out = OutputFile::create(path("a.txt"), rules());
  ASSERT_TRUE(out) << out.error();
  ASSERT_TRUE((*out)->write("hello ").ok());
  ASSERT_TRUE((*out)->write(std::string(3 << 20, 'x')).ok());  // past the buffer: bytes reach the temporary file
  EXPECT_FALSE(fs::exists(path("a.txt")));
  ASSERT_EQ(names().size(), 1u);
  EXPECT_EQ(names()[0].rfind(".a.txt.fprof-", 0), 0u) << names()[0];
  ASSERT_TRUE((*out)->commit().ok());
  EXPECT_EQ(read(path("a.txt")), "hello " + std::string(3 << 20, 'x'));
  EXPECT_EQ(names(), std::vector<std::string>{"a.txt"});
}

TEST_F(Output, AnExistingFileIsKeptUnlessReplacing) {
  write(path("a.txt"), "precious");
  ::chmod(path("a.txt").c_str(), 0640);
  auto refused = OutputFile::create(path("a.txt"), rules());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), path("a.txt") + ": file exists; choose another name or overwrite it with --force");
  EXPECT_EQ(read(path("a.txt")), "precious");
  auto out = OutputFile::create(path("a.txt"), rules(/*replace=*/true));
  ASSERT_TRUE(out) << out.error();
  ASSERT_TRUE((*out)->write("new").ok());
  EXPECT_EQ(read(path("a.txt")), "precious");  // until the new file is complete
  ASSERT_TRUE((*out)->commit().ok());
  EXPECT_EQ(read(path("a.txt")), "new");
  struct stat st {};
  ASSERT_EQ(::stat(path("a.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);  // the replaced file's permissions
  EXPECT_EQ(names(), std::vector<std::string>{"a.txt"});
}

TEST_F(Output, AnInputIsRefusedByNameHardLinkAndSymlink) {
  write(path("in.fprof"), "input bytes");
  ASSERT_EQ(::link(path("in.fprof").c_str(), path("hard.fprof").c_str()), 0);
  fs::create_symlink("in.fprof", path("sym.fprof"));
  for (const char* name : {"in.fprof", "hard.fprof", "sym.fprof"}) {
    auto out = OutputFile::create(path(name), rules(/*replace=*/true, {path("in.fprof")}));
    ASSERT_FALSE(out) << name;
    EXPECT_NE(out.error().find("write the test output to another file"), std::string::npos) << out.error();
    EXPECT_EQ(read(path("in.fprof")), "input bytes");
  }
  // The input named through its link: the same refusal from the other side.
  auto out = OutputFile::create(path("in.fprof"), rules(true, {path("sym.fprof")}));
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error(), path("in.fprof") + " is the same file as the input " + path("sym.fprof") +
                             "; write the test output to another file");
  EXPECT_EQ(names(), (std::vector<std::string>{"hard.fprof", "in.fprof", "sym.fprof"}));
}

TEST_F(Output, ADirectoryOrAMissingDirectoryIsRefused) {
  fs::create_directories(path("sub"));
  auto dir = OutputFile::create(path("sub"), rules(true));
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.error(), path("sub") + ": is a directory; name a file for the test output");
  auto missing = OutputFile::create(path("nowhere/a.txt"), rules());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error(), path("nowhere/a.txt") + ": the directory " + path("nowhere") + " does not exist");
  write(path("file"), "x");
  auto under_file = OutputFile::create(path("file/a.txt"), rules());
  ASSERT_FALSE(under_file);
  EXPECT_EQ(under_file.error(), path("file/a.txt") + ": cannot write the test output: not a directory");
}

TEST_F(Output, OfTwoWritersRacingForOnePathExactlyOneWins) {
  auto first = OutputFile::create(path("a.txt"), rules());
  auto second = OutputFile::create(path("a.txt"), rules());
  ASSERT_TRUE(first && second);
  ASSERT_TRUE((*first)->write("first").ok());
  ASSERT_TRUE((*second)->write("second").ok());
  ASSERT_TRUE((*second)->commit().ok());
  const core::Status lost = (*first)->commit();
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.error(), path("a.txt") +
                              ": file exists (it appeared while fprof was writing the test output); it was left as it is");
  EXPECT_EQ(read(path("a.txt")), "second");
  EXPECT_EQ(names(), std::vector<std::string>{"a.txt"});
}

TEST_F(Output, AFileThatAppearsWhileWritingIsLeftAlone) {
  auto out = OutputFile::create(path("a.txt"), rules());
  ASSERT_TRUE(out);
  ASSERT_TRUE((*out)->write("fprof's").ok());
  write(path("a.txt"), "someone else's");
  EXPECT_FALSE((*out)->commit().ok());
  EXPECT_EQ(read(path("a.txt")), "someone else's");
  EXPECT_EQ(names(), std::vector<std::string>{"a.txt"});
}

TEST_F(Output, AnOutputNeverCommittedLeavesNothing) {
  {
    auto out = OutputFile::create(path("a.txt"), rules());
    ASSERT_TRUE(out);
    ASSERT_TRUE((*out)->write(std::string(2 << 20, 'x')).ok());
  }
  EXPECT_TRUE(names().empty());
}

TEST_F(Output, ASymlinkNamedAsOutputIsKeptAndItsFileReplaced) {
  write(path("real.txt"), "old");
  fs::create_symlink("real.txt", path("link.txt"));
  auto out = OutputFile::create(path("link.txt"), rules(true));
  ASSERT_TRUE(out) << out.error();
  ASSERT_TRUE((*out)->write("new").ok());
  ASSERT_TRUE((*out)->commit().ok());
  EXPECT_TRUE(fs::is_symlink(path("link.txt")));
  EXPECT_EQ(read(path("real.txt")), "new");
  EXPECT_EQ(names(), (std::vector<std::string>{"link.txt", "real.txt"}));
}

TEST_F(Output, ADeviceIsWrittenInPlaceAndItsFailureSaid) {
  auto null = OutputFile::create("/dev/null", rules());
  ASSERT_TRUE(null) << null.error();
  ASSERT_TRUE((*null)->write("discarded").ok());
  EXPECT_TRUE((*null)->commit().ok());
  auto full = OutputFile::create("/dev/full", rules());
  ASSERT_TRUE(full) << full.error();
  ASSERT_TRUE((*full)->write("lost").ok());
  const core::Status s = (*full)->commit();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), "/dev/full: cannot write the test output: no space left on device");
}

TEST_F(Output, ADatabaseIsCompleteBeforeItIsPutInPlace) {
  write(path("db.fprof-wal"), "a stale log of a database no longer there");
  auto out = OutputFile::create(path("db.fprof"), rules(), OutputKind::kDatabase);
  ASSERT_TRUE(out) << out.error();
  {
    auto w = core::Writer::create((*out)->temporaryPath(), true);
    ASSERT_TRUE(w) << w.error();
    core::ProcessInfo p;
    p.pid = 1;
    ASSERT_TRUE((*w)->addProcess(p));
    (*w)->add(testing::makeKernel("k", 100, 10, 1));
    ASSERT_TRUE((*w)->close().ok());
  }
  ASSERT_TRUE((*out)->commit().ok());
  EXPECT_EQ(names(), std::vector<std::string>{"db.fprof"});
  auto p = core::loadProfile(path("db.fprof"));
  ASSERT_TRUE(p) << p.error();
  EXPECT_EQ(p->kernels.size(), 1u);
}

TEST_F(Output, ADatabaseLeftOpenIsNotPutInPlace) {
  auto out = OutputFile::create(path("db.fprof"), rules(), OutputKind::kDatabase);
  ASSERT_TRUE(out);
  auto w = core::Writer::create((*out)->temporaryPath(), true);
  ASSERT_TRUE(w);
  const core::Status s = (*out)->commit();  // the writer still holds its write-ahead log
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("was not completed"), std::string::npos) << s.error();
  w->reset();
  EXPECT_TRUE(names().empty());
}

TEST_F(Output, AStoppedCommandTakesItsTemporaryFilesWithIt) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    core::removeTemporaryOutputsOnSignals();
    auto text = OutputFile::create(path("a.txt"), rules());
    auto db = OutputFile::create(path("b.fprof"), rules(), OutputKind::kDatabase);
    if (!text || !db || !(*text)->write(std::string(2 << 20, 'x')).ok()) ::_exit(1);
    auto w = core::Writer::create((*db)->temporaryPath(), true);
    if (!w) ::_exit(1);
    std::raise(SIGTERM);
    ::_exit(2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_TRUE(names().empty()) << names().front();
}

TEST_F(Output, TwoOptionsNamingOneFileAreRefused) {
  write(path("x"), "");
  ::link(path("x").c_str(), path("y").c_str());
  EXPECT_TRUE(core::checkDistinctOutputs({{"--json", path("a")}, {"--junit", path("b")}, {"--markdown", ""}}).ok());
  const core::Status same = core::checkDistinctOutputs({{"--json", path("a")}, {"--junit", dir_ + "/./a"}});
  ASSERT_FALSE(same.ok());
  EXPECT_EQ(same.error(), "--json and --junit name the same file (" + dir_ + "/./a); give each output its own");
  EXPECT_FALSE(core::checkDistinctOutputs({{"--json", path("x")}, {"--junit", path("y")}}).ok());
}

TEST_F(Output, AnInputFileIsReadOrTheCauseSaid) {
  write(path("empty"), " \n");
  write(path("config"), "alpha = 0.05\n");
  EXPECT_EQ(*core::readInputFile(path("config"), "the configuration"), "alpha = 0.05\n");
  EXPECT_EQ(core::readInputFile(path("empty"), "the configuration").error(), path("empty") + ": the configuration is empty");
  EXPECT_EQ(core::readInputFile(dir_, "the configuration").error(), dir_ + ": is a directory; the configuration is a file");
  EXPECT_EQ(core::readInputFile(path("none"), "the configuration").error(), path("none") + ": no such file");
}

TEST_F(Output, AFailedWriteToStandardOutputIsSaid) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!std::freopen("/dev/full", "w", stdout)) ::_exit(1);
    (void)core::writeStandardOutput("a line\n");
    const core::Status s = core::finishStandardOutput();
    ::_exit(!s.ok() && s.error() == "standard output: no space left on device" ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace fprof
