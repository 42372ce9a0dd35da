// `fprof run` end to end without a GPU: the program is tests/unit/runner/fake_program.cpp, which
// makes no CUDA call and in a collector's place writes a database at FPROF_OUTPUT, records the
// signals it gets and sleeps as told (FPROF_COLLECTOR names any existing file: nothing loads it).
// Checked: --force loses nothing to a mistyped program and replaces only the files the run wrote,
// signals sent to fprof reach the program and the ending is recorded, a second SIGINT stops the
// waiting, SIGKILL of fprof leaves the program to finish its own database, --explain runs nothing,
// and the file holding the kernels is named last.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fprof/core/store.h"

extern char** environ;

namespace fprof {
namespace {

namespace fs = std::filesystem;
using std::chrono::steady_clock;

struct Result {
  int code = -1;     // exit code; 128 + N for signal N
  std::string err;   // stderr and stdout together
};

class RunCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    dir_ = fs::path(FPROF_TEST_TMP) /
           ("run_command_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    log_ = (dir_ / "fprof.log").string();
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string fprof_ = FPROF_BIN;  // the fprof run
  static std::string readText(const std::string& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void writeText(const std::string& name, const std::string& text) const { std::ofstream(path(name)) << text; }

  // Starts `fprof run ARGS` with its output in the log; its pid. `extra`: variables added.
  pid_t start(const std::vector<std::string>& args, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {fprof_, "run"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env = {std::string("FPROF_COLLECTOR=") + FPROF_FAKE_PROGRAM, "PATH=/usr/bin:/bin",
                                    "XDG_CACHE_HOME=" + path("cache")};
    env.insert(env.end(), extra.begin(), extra.end());
    std::vector<char*> a, e;
    for (std::string& s : argv) a.push_back(s.data());
    for (std::string& s : env) e.push_back(s.data());
    a.push_back(nullptr);
    e.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 1, log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&files, 1, 2);
    pid_t pid = -1;
    EXPECT_EQ(posix_spawn(&pid, a[0], &files, nullptr, a.data(), e.data()), 0);
    posix_spawn_file_actions_destroy(&files);
    return pid;
  }
  Result finish(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), readText(log_)};
  }
  Result run(const std::vector<std::string>& args, const std::vector<std::string>& extra = {}) {
    return finish(start(args, extra));
  }
  // The pid the fake program wrote, once it has started.
  static pid_t waitForPidFile(const std::string& file) {
    for (int i = 0; i < 500; ++i) {
      if (std::ifstream in(file); in) {
        pid_t pid = 0;
        if (in >> pid && pid > 0) return pid;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  static bool stillRunning(pid_t pid) { return kill(pid, 0) == 0; }
  // The program, orphaned when fprof ends first, becomes this test's child (a subreaper), so that
  // its end can be waited for here; its exit status.
  static int reapOrphan(pid_t pid) {
    int status = 0;
    return waitpid(pid, &status, 0) == pid ? status : -1;
  }
  static std::string meta(const std::string& db, const std::string& key) {
    auto p = core::loadProfile(db);
    return p ? p->meta(key) : "(not a database: " + p.error() + ")";
  }

  fs::path dir_;
  std::string log_;
};

TEST_F(RunCommandTest, ForceWithAProgramThatCannotStartLosesNothing) {
  writeText("job.fprof", "the previous run");
  writeText("job.rank0.fprof", "the previous run's rank 0");
  const Result r = run({"--force", "-o", path("job.fprof"), "/nonexistent/program"});
  EXPECT_EQ(r.code, 127) << r.err;
  EXPECT_NE(r.err.find("cannot start /nonexistent/program: no such file or directory"), std::string::npos) << r.err;
  EXPECT_EQ(readText(path("job.fprof")), "the previous run");
  EXPECT_EQ(readText(path("job.rank0.fprof")), "the previous run's rank 0");
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().rfind(".job.fprof.run", 0), std::string::npos) << "staging left behind";
  }
}

// A metrics run keeps its saved cubins (and a second run's files) in a folder made for it, removed
// when it ends: a folder or file of the user's named after the output (OUTPUT.cubins,
// OUTPUT.second-run.fprof, or the folder's own pattern) is not touched.
TEST_F(RunCommandTest, AMetricsRunRemovesOnlyItsOwnScratchFolder) {
  fs::create_directory(path("job.fprof.cubins"));
  writeText("job.fprof.cubins/mine.txt", "mine");
  writeText("job.fprof.second-run.fprof", "mine too");
  writeText(".job.fprof.work-XXXXXX", "and this");
  const std::string seen = path("cubin_dir.txt");
  const Result r = run({"--metrics", "memory", "-o", path("job.fprof"), FPROF_FAKE_PROGRAM, "--database", "3",
                        "--cubin-dir-file", seen});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(meta(path("job.fprof"), "exit_status"), "exited with 0");
  const std::string cubin_dir = readText(seen);
  EXPECT_EQ(cubin_dir.rfind(path(".job.fprof.work-"), 0), 0u) << cubin_dir;
  EXPECT_EQ(readText(path("job.fprof.cubins/mine.txt")), "mine");
  EXPECT_EQ(readText(path("job.fprof.second-run.fprof")), "mine too");
  EXPECT_EQ(readText(path(".job.fprof.work-XXXXXX")), "and this");
  for (const auto& e : fs::directory_iterator(dir_)) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name.rfind(".job.fprof.work-", 0) != 0 || name == ".job.fprof.work-XXXXXX") << name << " left behind";
  }
}

// A one-run metrics run's duplicates write their per-PC counts in the run's own folder, where the
// runner reads them; a file of that name beside the database is the user's and is kept.
TEST_F(RunCommandTest, TheDuplicatesCountsAreReadFromTheRunsFolderNotBesideTheDatabase) {
  writeText("job.fprof.pcs", "mine");
  const Result r = run({"--metrics", "roofline", "-o", path("job.fprof"), FPROF_FAKE_PROGRAM, "--database", "2",
                        "--duplicate-counts", "not a count"});
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string said = "the duplicates' SASS counts could not be read: " + path(".job.fprof.work-");
  const size_t at = r.err.find(said);
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_EQ(r.err.compare(at + said.size() + 6, 59, "/cubins/job.fprof.pcs: line 1 is not a PC count record: not"), 0)
      << r.err;
  EXPECT_EQ(readText(path("job.fprof.pcs")), "mine");
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_NE(e.path().filename().string().rfind(".job.fprof.work-", 0), 0u) << e.path() << " left behind";
  }
}

TEST_F(RunCommandTest, ForceReplacesOnlyTheFilesTheRunWrote) {
  writeText("job.fprof", "the previous run");
  writeText("job.fprof-wal", "the previous run's wal");
  writeText("job.rank1.fprof", "the previous run's rank 1");
  const Result r = run({"--force", "-o", path("job.fprof"), FPROF_FAKE_PROGRAM, "--database", "3"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(meta(path("job.fprof"), "exit_status"), "exited with 0");
  EXPECT_FALSE(fs::exists(path("job.fprof-wal")));
  EXPECT_EQ(readText(path("job.rank1.fprof")), "the previous run's rank 1");
  EXPECT_NE(r.err.find("profile ready: " + path("job.fprof") + " (3 kernels;"), std::string::npos) << r.err;
}

TEST_F(RunCommandTest, ForceUnderARankReplacesThatRankOnly) {
  writeText("job.fprof", "the previous run");
  writeText("job.rank0.fprof", "the previous run's rank 0");
  writeText("job.rank1.fprof", "the previous run's rank 1");
  const Result r = run({"--force", "-o", path("job.fprof"), FPROF_FAKE_PROGRAM, "--database", "1"}, {"RANK=0"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(meta(path("job.rank0.fprof"), "exit_code"), "0");
  EXPECT_EQ(readText(path("job.rank1.fprof")), "the previous run's rank 1");
  EXPECT_EQ(readText(path("job.fprof")), "the previous run");
}

TEST_F(RunCommandTest, TheExitCodePassesThroughAndTheEndingAndPlanAreRecorded) {
  const Result r = run({"-o", path("run.fprof"), FPROF_FAKE_PROGRAM, "--database", "2", "--exit", "3"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_EQ(meta(path("run.fprof"), "exit_code"), "3");
  const std::string plan = meta(path("run.fprof"), "run_plan");
  EXPECT_EQ(plan.rfind("fprof run plan", 0), 0u) << plan;
  EXPECT_NE(plan.find("mode: trace (no counters)"), std::string::npos) << plan;
}

TEST_F(RunCommandTest, WithoutForceAnExistingOutputIsRefused) {
  writeText("run.fprof", "mine");
  const Result r = run({"-o", path("run.fprof"), FPROF_FAKE_PROGRAM, "--database", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(readText(path("run.fprof")), "mine");
}

// SIGTERM and SIGHUP sent to fprof reach the program, which writes its database and dies of the
// signal; fprof waits for it, records the ending, and exits as the program did.
TEST_F(RunCommandTest, SigtermAndSighupArePassedOnAndTheEndingRecorded) {
  for (int sig : {SIGTERM, SIGHUP}) {
    const std::string db = path("run" + std::to_string(sig) + ".fprof");
    const std::string pids = path("pid" + std::to_string(sig));
    const std::string signals = path("signals" + std::to_string(sig));
    const pid_t fprof = start({"-o", db, FPROF_FAKE_PROGRAM, "--database", "1", "--sleep-ms", "20000", "--signals",
                               signals, "--pid-file", pids});
    ASSERT_GT(waitForPidFile(pids), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // its handlers set
    kill(fprof, sig);
    const Result r = finish(fprof);
    EXPECT_EQ(r.code, 128 + sig) << r.err;
    EXPECT_EQ(readText(signals), std::string(sigabbrev_np(sig)) + "\n");
    EXPECT_EQ(meta(db, "exit_signal"), "SIG" + std::string(sigabbrev_np(sig)));
    EXPECT_EQ(meta(db, "forwarded_signals"), "SIG" + std::string(sigabbrev_np(sig)));
  }
}

// The program ignores SIGINT (as a program busy saving would): the first is passed on and fprof
// waits on; the second stops the waiting, and the program runs on.
TEST_F(RunCommandTest, ASecondSigintStopsWaiting) {
  const pid_t fprof = start({"-o", path("run.fprof"), FPROF_FAKE_PROGRAM, "--sleep-ms", "20000", "--signals",
                             path("signals"), "--ignore-sigint", "--pid-file", path("pid")});
  const pid_t program = waitForPidFile(path("pid"));
  ASSERT_GT(program, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  kill(fprof, SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(waitpid(fprof, nullptr, WNOHANG), 0) << "one SIGINT: fprof waits on";
  kill(fprof, SIGINT);
  const auto sent = steady_clock::now();
  const Result r = finish(fprof);
  EXPECT_LT(steady_clock::now() - sent, std::chrono::seconds(5));
  EXPECT_EQ(r.code, 130) << r.err;
  EXPECT_NE(r.err.find("a second SIGINT: fprof stops waiting"), std::string::npos) << r.err;
  EXPECT_TRUE(stillRunning(program));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the second one recorded
  kill(program, SIGKILL);
  reapOrphan(program);
  EXPECT_EQ(readText(path("signals")), "INT\nINT\n");
}

// fprof killed outright: the program is not taken down with it and completes its own database.
TEST_F(RunCommandTest, SigkillOfFprofLeavesTheProgramToFinishItsDatabase) {
  const pid_t fprof = start({"-o", path("run.fprof"), FPROF_FAKE_PROGRAM, "--database", "2", "--sleep-ms", "1500",
                             "--pid-file", path("pid")});
  const pid_t program = waitForPidFile(path("pid"));
  ASSERT_GT(program, 0);
  kill(fprof, SIGKILL);
  finish(fprof);
  EXPECT_TRUE(stillRunning(program));
  const int status = reapOrphan(program);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(core::checkDatabase(path("run.fprof")).ok());
}

TEST_F(RunCommandTest, ExplainPrintsThePlanAndRunsNothing) {
  const Result r = run({"--explain", "--metrics", "memory", "-o", path("run.fprof"), FPROF_FAKE_PROGRAM,
                        "--database", "1", "--pid-file", path("pid")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("output: " + path("run.fprof")), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fprof run plan\n  mode: metrics, set memory"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("run.fprof")));
  EXPECT_FALSE(fs::exists(path("pid"))) << "the program was started";
  EXPECT_EQ(run({"--explain"}).code, 0) << "no program needed to explain";
}

// The metric names are given to fprof-metrics-host, which counts their passes, as arguments: a
// name holding a quote and a command is one argument, never a command run. fprof runs a copy of
// itself here, beside a stand-in for the tool that writes down its arguments and says one pass.
TEST_F(RunCommandTest, MetricNamesReachThePassCounterAsArgumentsNotAsAShellCommand) {
  const fs::path bin = dir_ / "bin";
  fs::create_directories(bin);
  fs::copy_file(FPROF_BIN, bin / "fprof");
  const std::string seen = path("arguments");
  writeText("bin/fprof-metrics-host", "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + seen + "'\necho 'passes 1'\n");
  fs::permissions(bin / "fprof-metrics-host", fs::perms::owner_all);
  fprof_ = (bin / "fprof").string();
  const std::string planted = path("planted");
  const std::string hostile = "dram__bytes_read.sum';touch " + planted + ";'";
  const Result r = run({"--explain", "--metrics", hostile, FPROF_FAKE_PROGRAM});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("fit one pass"), std::string::npos) << r.err;
  EXPECT_EQ(readText(seen), hostile + "\n") << "the name reached the tool as one argument";
  EXPECT_FALSE(fs::exists(planted)) << "a metric name ran as a shell command";
}

// A program whose side processes (torch.compile's compile workers) write databases without
// kernels beside the program's own: the last line names the program's.
TEST_F(RunCommandTest, TheFileWithTheKernelsIsNamedLast) {
  const Result r = run({"-o", path("gptc.fprof"), FPROF_FAKE_PROGRAM, "--database", "4", "--side-processes", "2"});
  EXPECT_EQ(r.code, 0) << r.err;
  const size_t others = r.err.find("[fprof] 2 other processes ran no kernel");
  const size_t ready = r.err.find("[fprof] profile ready: " + path("gptc.fprof") + " (4 kernels;");
  ASSERT_NE(others, std::string::npos) << r.err;
  ASSERT_NE(ready, std::string::npos) << r.err;
  EXPECT_LT(others, ready);
  EXPECT_EQ(r.err.find("profile ready", ready + 20), std::string::npos) << "the program's file is named last";
}

TEST_F(RunCommandTest, AnEnvironmentVariableOfTheWrongKindIsSaid) {
  const Result r = run({"-o", path("run.fprof"), FPROF_FAKE_PROGRAM}, {"FPROF_NVDISASM_JOBS=many"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("fprof: warning: FPROF_NVDISASM_JOBS='many' is not an integer in 1..256"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace fprof
