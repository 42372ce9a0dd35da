// Starting and waiting for the profiled program (see child_process.h).
#include "fprof/runner/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace fprof::runner {
namespace {

constexpr int kCaught[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};
constexpr int kMaxForwarded = 16;

// What the handler shares with the waiting thread (it may run on any thread of fprof).
volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_interrupts = 0;
volatile sig_atomic_t g_forwarded[kMaxForwarded];
volatile sig_atomic_t g_forwarded_count = 0;
int g_wake_fd = -1;  // the write end of the waiting thread's pipe

void onSignal(int sig, siginfo_t* info, void*) {
  const int saved_errno = errno;
  if (sig != SIGCHLD) {
    if (sig == SIGINT) g_interrupts = g_interrupts + 1;
    const pid_t child = g_child;
    // SI_KERNEL: a terminal's signal, sent to its whole foreground process group, the program too.
    if (child > 0 && info != nullptr && info->si_code != SI_KERNEL && kill(child, sig) == 0 &&
        g_forwarded_count < kMaxForwarded) {
      g_forwarded[g_forwarded_count] = sig;
      g_forwarded_count = g_forwarded_count + 1;
    }
  }
  if (g_wake_fd >= 0) {
    const char byte = 1;
    (void)!write(g_wake_fd, &byte, 1);
  }
  errno = saved_errno;
}

// The handlers and the wake-up pipe for as long as it lives, then fprof's own dispositions again.
class Forwarding {
 public:
  explicit Forwarding(pid_t child) {
    if (pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) pipe_[0] = pipe_[1] = -1;
    g_wake_fd = pipe_[1];
    g_interrupts = 0;
    g_forwarded_count = 0;
    g_child = child;
    struct sigaction sa {};
    sa.sa_sigaction = onSignal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < std::size(kCaught); ++i) sigaction(kCaught[i], &sa, &old_[i]);
  }
  ~Forwarding() {
    for (size_t i = 0; i < std::size(kCaught); ++i) sigaction(kCaught[i], &old_[i], nullptr);
    g_child = 0;
    g_wake_fd = -1;
    for (int fd : pipe_) {
      if (fd >= 0) close(fd);
    }
  }
  Forwarding(const Forwarding&) = delete;
  Forwarding& operator=(const Forwarding&) = delete;

  // Sleeps until a signal arrives or `timeout_ms` passes (-1: no timeout).
  void sleep(int timeout_ms) {
    if (pipe_[0] < 0) {
      usleep(100'000);
      return;
    }
    pollfd p{pipe_[0], POLLIN, 0};
    if (poll(&p, 1, timeout_ms) > 0) {
      char drain[64];
      while (read(pipe_[0], drain, sizeof drain) > 0) {
      }
    }
  }

  std::vector<int> forwarded() const {
    std::vector<int> out;
    for (int i = 0; i < g_forwarded_count && i < kMaxForwarded; ++i) out.push_back(static_cast<int>(g_forwarded[i]));
    return out;
  }

 private:
  int pipe_[2] = {-1, -1};
  struct sigaction old_[std::size(kCaught)] {};
};

int millisecondsUntil(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count() + 1, 0, 1'000'000));
}

int reap(pid_t child) {
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

StartedProgram startProgram(const std::vector<std::string>& argv, const std::vector<std::string>& environment) {
  std::vector<char*> args, env;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  for (const std::string& e : environment) env.push_back(const_cast<char*>(e.c_str()));
  args.push_back(nullptr);
  env.push_back(nullptr);
  // exec's error comes back through a pipe that a successful exec closes (O_CLOEXEC).
  int report[2];
  if (argv.empty()) return {-1, ENOENT, true};
  if (pipe2(report, O_CLOEXEC) != 0) return {-1, errno, false};
  const pid_t child = fork();
  if (child < 0) {
    const int e = errno;
    close(report[0]);
    close(report[1]);
    return {-1, e, false};
  }
  if (child == 0) {
    close(report[0]);
    execvpe(args[0], args.data(), env.data());
    const int e = errno;
    (void)!write(report[1], &e, sizeof e);
    _exit(127);
  }
  close(report[1]);
  int exec_errno = 0;
  ssize_t n = 0;
  while ((n = read(report[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  close(report[0]);
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    reap(child);
    return {-1, exec_errno, true};
  }
  return {child, 0, false};
}

WaitOutcome waitForProgram(pid_t child, std::optional<std::chrono::steady_clock::time_point> deadline) {
  WaitOutcome out;
  if (child <= 0) return out;
  Forwarding forwarding(child);
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) {
      out.ending = WaitOutcome::Ending::kEnded;
      out.status = status;
      break;
    }
    if (done < 0 && errno != EINTR) break;  // kLost
    if (g_interrupts >= 2) {
      out.ending = WaitOutcome::Ending::kAbandoned;
      break;
    }
    if (deadline && std::chrono::steady_clock::now() >= *deadline) {
      kill(child, SIGKILL);
      reap(child);
      out.ending = WaitOutcome::Ending::kTimedOut;
      break;
    }
    forwarding.sleep(deadline ? millisecondsUntil(*deadline) : -1);
  }
  out.forwarded = forwarding.forwarded();
  return out;
}

std::string signalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace fprof::runner
