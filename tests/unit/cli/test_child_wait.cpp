// Waiting for the profiled program (cli/child_wait.h): its status, or, past a deadline, the
// program killed and no status (application replay's second run by SASS patching is bounded so).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "child_wait.h"

namespace fprof::cli {
namespace {

pid_t startSleep(const char* seconds) {
  const pid_t child = fork();
  if (child == 0) {
    execlp("sleep", "sleep", seconds, static_cast<char*>(nullptr));
    _exit(127);
  }
  return child;
}

TEST(ChildWait, AProgramThatEndsInTimeGivesItsStatus) {
  const pid_t child = fork();
  if (child == 0) _exit(3);
  const auto status = waitForChildUntil(child, std::chrono::steady_clock::now() + std::chrono::seconds(10));
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 3);
}

TEST(ChildWait, AProgramPastTheDeadlineIsKilledAndReaped) {
  const pid_t child = startSleep("30");
  const auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(waitForChildUntil(child, started + std::chrono::milliseconds(300)).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5)) << "not waited for to its end";
  EXPECT_EQ(kill(child, 0), -1) << "gone, and no zombie left to signal";
}

TEST(ChildWait, WithoutADeadlineTheStatusOfAForkThatFailedIsNotStarted) {
  EXPECT_EQ(waitForChild(-1), kNotStarted);
  EXPECT_EQ(waitForChildUntil(-1, std::chrono::steady_clock::now()), kNotStarted);
  const pid_t child = startSleep("0");
  const int status = waitForChild(child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace fprof::cli
