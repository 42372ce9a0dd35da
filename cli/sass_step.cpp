// The post-run SASS step of `fprof run --metrics` (see sass_step.h).
#include "sass_step.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <vector>

#include "fprof/core/sass_half.h"

extern char** environ;

namespace fprof::cli {
namespace {

namespace fs = std::filesystem;

bool executable(const fs::path& p) { return ::access(p.c_str(), X_OK) == 0; }

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs nvdisasm -c on one cubin and returns what it printed ("" on failure).
std::string disassemble(const std::string& nvdisasm, const fs::path& cubin) {
  int out[2];
  if (pipe(out) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  const std::string path = cubin.string();
  char* argv[] = {const_cast<char*>(nvdisasm.c_str()), const_cast<char*>("-c"), const_cast<char*>(path.c_str()),
                  nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, nvdisasm.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  std::string text;
  if (rc == 0) {
    char buffer[1 << 16];
    ssize_t n;
    while ((n = ::read(out[0], buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(n));
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) text.clear();
  }
  ::close(out[0]);
  return text;
}

// The cubins that hold any of the names (a function's mangled name is in its cubin's symbol table).
std::vector<fs::path> cubinsHolding(const std::string& dir, const std::vector<std::string>& names) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".cubin") continue;
    const std::string bytes = readFile(e.path());
    for (const std::string& n : names) {
      if (bytes.find(n) != std::string::npos) {
        out.push_back(e.path());
        break;
      }
    }
  }
  return out;
}

}  // namespace

std::string findNvdisasm() {
  if (const char* env = std::getenv("FPROF_NVDISASM"); env && *env) return executable(env) ? env : "";
  std::vector<fs::path> candidates;
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (size_t start = 0; start <= p.size();) {
      const size_t colon = p.find(':', start);
      const std::string d = p.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!d.empty()) candidates.push_back(fs::path(d) / "nvdisasm");
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  if (const char* home = std::getenv("CUDA_HOME")) candidates.push_back(fs::path(home) / "bin" / "nvdisasm");
  candidates.push_back("/usr/local/cuda/bin/nvdisasm");
  for (const fs::path& c : candidates) {
    if (executable(c)) return c.string();
  }
  return {};
}

std::string applySassStep(const std::string& db_path, const std::string& cubin_dir) {
  auto needed = core::functionsNeedingSass(db_path);
  if (!needed) return "half-precision FLOPs not completed: " + needed.error();
  if (needed->empty()) return {};
  const std::string nvdisasm = findNvdisasm();
  std::map<std::string, core::SassHalfCounts> sass;
  std::string why_missing;
  if (nvdisasm.empty()) {
    why_missing = "unknown: nvdisasm (CUDA toolkit) was not found to read the function's SASS; set FPROF_NVDISASM";
  } else {
    why_missing = "unknown: the function's SASS was not found among the modules the program loaded";
    const std::set<std::string> wanted(needed->begin(), needed->end());
    for (const fs::path& cubin : cubinsHolding(cubin_dir, *needed)) {
      for (auto& [name, counts] : core::parseNvdisasmHalfOps(disassemble(nvdisasm, cubin))) {
        if (wanted.count(name)) sass.emplace(name, std::move(counts));
      }
    }
  }
  if (core::Status s = core::applySassHalfFlops(db_path, sass, why_missing); !s) {
    return "half-precision FLOPs not completed: " + s.error();
  }
  return "read the SASS of " + std::to_string(sass.size()) + " of " + std::to_string(needed->size()) +
         " functions with half-precision instructions (fp16/bf16 FLOPs per lane)";
}

}  // namespace fprof::cli
