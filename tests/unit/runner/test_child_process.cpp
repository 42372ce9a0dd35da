// Starting and waiting for the profiled program (runner/child_process.h): its status; past a
// deadline the program killed and reaped; a program that cannot be run said so; SIGINT, SIGTERM
// and SIGHUP sent to fprof passed on; a second SIGINT ends the waiting.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>

#include "fprof/runner/child_process.h"

namespace fprof::runner {
namespace {

using std::chrono::steady_clock;

const std::vector<std::string> kPath = {"PATH=/usr/bin:/bin"};

pid_t startSleep(const char* seconds) { return startProgram({"sleep", seconds}, kPath).pid; }

TEST(ChildProcess, AProgramThatEndsInTimeGivesItsStatus) {
  const StartedProgram p = startProgram({"sh", "-c", "exit 3"}, kPath);
  ASSERT_GT(p.pid, 0);
  const WaitOutcome w = waitForProgram(p.pid, steady_clock::now() + std::chrono::seconds(10));
  ASSERT_EQ(w.ending, WaitOutcome::Ending::kEnded);
  ASSERT_TRUE(WIFEXITED(w.status));
  EXPECT_EQ(WEXITSTATUS(w.status), 3);
  EXPECT_TRUE(w.forwarded.empty());
}

TEST(ChildProcess, AProgramPastTheDeadlineIsKilledAndReaped) {
  const pid_t child = startSleep("30");
  const auto started = steady_clock::now();
  EXPECT_EQ(waitForProgram(child, started + std::chrono::milliseconds(300)).ending, WaitOutcome::Ending::kTimedOut);
  EXPECT_LT(steady_clock::now() - started, std::chrono::seconds(5)) << "not waited for to its end";
  EXPECT_EQ(kill(child, 0), -1) << "gone, and no zombie left to signal";
}

TEST(ChildProcess, TheEnvironmentIsExactlyTheOneGiven) {
  const StartedProgram p = startProgram({"sh", "-c", "test \"$FPROF_X\" = 1 && test -z \"$HOME\""},
                                        {"PATH=/usr/bin:/bin", "FPROF_X=1"});
  ASSERT_GT(p.pid, 0);
  const WaitOutcome w = waitForProgram(p.pid);
  ASSERT_EQ(w.ending, WaitOutcome::Ending::kEnded);
  EXPECT_EQ(WEXITSTATUS(w.status), 0);
}

TEST(ChildProcess, AProgramThatCannotBeRunIsSaidSo) {
  const StartedProgram p = startProgram({"/nonexistent/program"}, kPath);
  EXPECT_EQ(p.pid, -1);
  EXPECT_TRUE(p.exec_failed);
  EXPECT_EQ(p.error, ENOENT);
  EXPECT_EQ(waitForProgram(-1).ending, WaitOutcome::Ending::kLost);
}

// A signal another process sends to fprof (kill, a job scheduler) reaches the program.
TEST(ChildProcess, SigtermAndSighupArePassedOn) {
  for (int sig : {SIGTERM, SIGHUP}) {
    const pid_t child = startSleep("30");
    std::thread sender([sig] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      kill(getpid(), sig);
    });
    const WaitOutcome w = waitForProgram(child, steady_clock::now() + std::chrono::seconds(20));
    sender.join();
    ASSERT_EQ(w.ending, WaitOutcome::Ending::kEnded) << sig;
    ASSERT_TRUE(WIFSIGNALED(w.status));
    EXPECT_EQ(WTERMSIG(w.status), sig);
    EXPECT_EQ(w.forwarded, std::vector<int>{sig});
  }
  struct sigaction now {};
  sigaction(SIGTERM, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL) << "fprof's own disposition restored";
}

// The program ignores SIGINT: the first is passed on and fprof waits on; the second ends the
// waiting, the program left running.
TEST(ChildProcess, ASecondSigintStopsTheWaiting) {
  const StartedProgram p = startProgram({"sh", "-c", "trap '' INT; sleep 30"}, kPath);
  ASSERT_GT(p.pid, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the trap set
  std::thread sender([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    kill(getpid(), SIGINT);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(getpid(), SIGINT);
  });
  const auto started = steady_clock::now();
  const WaitOutcome w = waitForProgram(p.pid, started + std::chrono::seconds(20));
  sender.join();
  EXPECT_EQ(w.ending, WaitOutcome::Ending::kAbandoned);
  EXPECT_LT(steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_EQ(w.forwarded, (std::vector<int>{SIGINT, SIGINT}));
  EXPECT_EQ(kill(p.pid, 0), 0) << "the program runs on";
  kill(p.pid, SIGKILL);
  int status = 0;
  waitpid(p.pid, &status, 0);
}

TEST(ChildProcess, SignalNames) {
  EXPECT_EQ(signalName(SIGTERM), "SIGTERM");
  EXPECT_EQ(signalName(SIGSEGV), "SIGSEGV");
}

}  // namespace
}  // namespace fprof::runner
