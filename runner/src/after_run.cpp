// After the program's runs: how it ended, the SASS step and the measured ceilings.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>

#include "fprof/core/store.h"
#include "fprof/runner/child_process.h"
#include "fprof/runner/sass_step.h"
#include "fprof/runner/step_timer.h"
#include "run_context.h"

namespace fprof::runner {
namespace {

namespace fs = std::filesystem;

// The ceilings of `device` in `source`: a line for the user where there are none to attach.
std::vector<core::CeilingRecord> measuredCeilings(const std::string& source, const std::string& device) {
  auto measured = core::loadProfile(source);
  if (!measured) {
    std::fprintf(stderr, "[fprof] ceilings not attached: %s\n", measured.error().c_str());
    return {};
  }
  std::vector<core::CeilingRecord> rows;
  for (const core::CeilingRecord& c : measured->ceilings) {
    if (c.device_name == device) rows.push_back(c);
  }
  if (rows.empty()) {
    std::fprintf(stderr, "[fprof] %s holds no ceilings for %s; not attached\n", source.c_str(), device.c_str());
  }
  return rows;
}

// Copies measured ceilings of the run's GPU model into the run, so its analysis has both kinds of
// roofs: from --ceilings FILE, else from the per-user cache that `fprof ceilings` fills.
void attachCeilings(const RunContext& c, const std::string& run_file) {
  auto run = core::loadProfile(run_file);
  if (!run) return;
  for (const core::DeviceInfo& d : run->devices) {
    const std::string source = !c.options.ceilings.empty()       ? c.options.ceilings
                               : c.tools.ceilings_cache_path ? c.tools.ceilings_cache_path(d.name)
                                                             : std::string();
    std::error_code ec;
    if (source.empty() || !fs::exists(source, ec)) {
      std::fprintf(stderr,
                   "[fprof] no measured ceilings for %s yet: run 'fprof ceilings' once on this GPU (the analysis "
                   "uses datasheet roofs meanwhile)\n",
                   d.name.c_str());
      continue;
    }
    const std::vector<core::CeilingRecord> rows = measuredCeilings(source, d.name);
    if (rows.empty()) continue;
    if (core::Status s = core::appendCeilings(run_file, rows); !s) {
      std::fprintf(stderr, "[fprof] ceilings not attached: %s\n", s.error().c_str());
    } else {
      std::fprintf(stderr, "[fprof] attached %zu ceilings of %s from %s\n", rows.size(), d.name.c_str(),
                   source.c_str());
    }
  }
}

}  // namespace

int exitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

std::map<std::string, std::string> exitFacts(int status) {
  if (WIFEXITED(status)) {
    return {{"exit_code", std::to_string(WEXITSTATUS(status))},
            {"exit_status", "exited with " + std::to_string(WEXITSTATUS(status))}};
  }
  if (WIFSIGNALED(status)) {
    const std::string name = signalName(WTERMSIG(status));
    return {{"exit_signal", name}, {"exit_status", "killed by " + name + (WCOREDUMP(status) ? " (core dumped)" : "")}};
  }
  return {{"exit_status", "unknown (wait status " + std::to_string(status) + ")"}};
}

void completeDatabase(const RunContext& c, const std::string& db, const std::string& cubin_dir) {
  StepTimer timer;
  if (!cubin_dir.empty()) {
    if (const std::string said = applySassStep(db, cubin_dir); !said.empty()) {
      std::fprintf(stderr, "[fprof] %s: %s\n", db.c_str(), said.c_str());
    }
    timer.done("SASS step");
  }
  attachCeilings(c, db);
  timer.done("attach ceilings");
}

}  // namespace fprof::runner
