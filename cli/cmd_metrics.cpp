// fprof metrics list: the metric sets of `fprof run --metrics`, each metric checked against the
// GPU's chip (or a named one) with the CUPTI host API, and the replay passes each set costs.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "paths.h"

namespace fprof::cli {
namespace {

// What the tool printed, read through a pipe: fprof writes it to its own standard output, whose
// failures (a full disk behind a redirection) are fprof's to say, as for every command.
core::Expected<std::string> toolOutput(std::vector<std::string> args, int& exit_status) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int fds[2];
  if (::pipe(fds) != 0) return core::makeError("metrics: cannot start " + args[0] + ": " + core::systemCause(errno));
  std::fflush(stdout);
  const pid_t child = fork();
  if (child < 0) return core::makeError("metrics: cannot start " + args[0] + ": " + core::systemCause(errno));
  if (child == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    execv(argv[0], argv.data());
    _exit(127);
  }
  ::close(fds[1]);
  std::string out;
  std::array<char, 4096> buf{};
  for (ssize_t n; (n = ::read(fds[0], buf.data(), buf.size())) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf.data(), static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

int runList(const std::string& chip) {
  const std::string tool = findSibling("fprof-metrics-host");
  if (tool.empty()) {
    return inputError("metrics: fprof-metrics-host not found next to fprof (this build has no CUPTI)");
  }
  std::vector<std::string> args = {tool, "--list"};
  if (!chip.empty()) args.insert(args.end(), {"--chip", chip});
  int exit_status = 0;
  auto out = toolOutput(std::move(args), exit_status);
  if (!out) return inputError(out.error());
  printText(stdout, *out);
  return exit_status == 0 ? 0 : 2;
}

}  // namespace

Command addMetricsCommand(CLI::App& root) {
  auto chip = std::make_shared<std::string>();
  CLI::App* app = root.add_subcommand("metrics", "Show the hardware-counter sets of 'fprof run --metrics'.");
  app->require_subcommand(1);
  CLI::App* list = app->add_subcommand(
      "list",
      "List the metric sets (memory, roofline, full), check each metric against this GPU's chip with the CUPTI host "
      "API (no program is run; without a GPU, against --chip, default GH100) and show the replay passes per kernel.");
  list->add_option("--chip", *chip, "Check against this chip (e.g. GH100, GA100, AD102) instead of the GPU's");
  return {app, [chip] { return runList(*chip); }};
}

}  // namespace fprof::cli
