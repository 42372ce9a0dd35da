// Helper programs run for their output (see child_output.h).
#include "fprof/core/child_output.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fprof/core/output.h"

extern char** environ;

namespace fprof::core {
namespace {

// The environment without the variables that would inject fprof (or anything) into the child.
std::vector<char*> childEnvironment() {
  static constexpr const char* kDropped[] = {"LD_PRELOAD=", "CUDA_INJECTION64_PATH=", "NVTX_INJECTION64_PATH="};
  std::vector<char*> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    bool dropped = false;
    for (const char* d : kDropped) dropped = dropped || std::strncmp(*e, d, std::strlen(d)) == 0;
    if (!dropped) env.push_back(*e);
  }
  env.push_back(nullptr);
  return env;
}

std::string readAll(int fd) {
  std::string text;
  char buffer[1 << 16];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

int exitStatusOf(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

Expected<ChildOutput> childOutput(std::vector<std::string> args, ChildErrors errors) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return makeError("cannot start " + args[0] + ": " + systemCause(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  if (errors == ChildErrors::kDiscarded) {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> env = childEnvironment();
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    return makeError("cannot start " + args[0] + ": " + systemCause(rc));
  }
  ChildOutput result;
  result.text = readAll(out[0]);
  ::close(out[0]);
  result.exit_status = exitStatusOf(pid);
  return result;
}

}  // namespace fprof::core
