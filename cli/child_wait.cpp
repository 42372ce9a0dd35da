// Waiting for the profiled program's process (see child_wait.h).
#include "child_wait.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace fprof::cli {
namespace {

// SIGINT and SIGTERM ignored for as long as it lives, then as before.
class IgnoredInterrupts {
 public:
  IgnoredInterrupts() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGINT, &ignore, &old_int_);
    sigaction(SIGTERM, &ignore, &old_term_);
  }
  ~IgnoredInterrupts() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  IgnoredInterrupts(const IgnoredInterrupts&) = delete;
  IgnoredInterrupts& operator=(const IgnoredInterrupts&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

}  // namespace

int waitForChild(pid_t child) {
  if (child < 0) return kNotStarted;
  IgnoredInterrupts ignored;
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::optional<int> waitForChildUntil(pid_t child, std::chrono::steady_clock::time_point deadline) {
  if (child < 0) return kNotStarted;
  IgnoredInterrupts ignored;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) return status;
    if (done < 0 && errno != EINTR) return kNotStarted;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(child, SIGKILL);
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return std::nullopt;
}

}  // namespace fprof::cli
