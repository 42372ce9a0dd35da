// Running the Python package's commands (see python_package.h).
#include "python_package.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "command.h"
#include "paths.h"

extern char** environ;

namespace fprof::cli {
namespace {

std::vector<char*> argvOf(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return argv;
}

// Whether `python` starts and finds the package (without importing it: that takes a second).
bool hasPackage(const std::string& python) {
  std::vector<std::string> args = {python, "-c",
                                   "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('fprof') else 1)"};
  std::vector<char*> argv = argvOf(args);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int started = posix_spawnp(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (started != 0) return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

core::Expected<std::string> findPackagePython() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path venv = fs::path(selfDirectory()) / ".." / "python" / "venv" / "bin" / "python";
  std::vector<std::string> candidates;
  // Not canonical: the venv's python is a link to the base interpreter, and only its own path is the venv.
  if (fs::exists(venv, ec)) candidates.push_back(venv.lexically_normal().string());
  candidates.push_back("python3");
  for (const std::string& python : candidates) {
    if (hasPackage(python)) return python;
  }
  return core::makeError(
      "this command runs in fprof's Python package, which is not installed: install it with `pip install ./python` "
      "from the fprof checkout (docs/python-package.md), or build fprof with `make test`, which installs it in "
      "build/python/venv");
}

int runPackageCommand(const std::vector<std::string>& args) {
  auto python = findPackagePython();
  if (!python) return inputError(python.error());
  std::vector<std::string> command = {*python, "-m", "fprof"};
  command.insert(command.end(), args.begin(), args.end());
  std::vector<char*> argv = argvOf(command);
  std::fflush(stdout);
  std::fflush(stderr);
  execvp(command.front().c_str(), argv.data());
  return inputError(*python + ": cannot run: " + core::systemCause(errno));
}

}  // namespace fprof::cli
