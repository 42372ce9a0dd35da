// Helpers for the report tests: temporary paths, fixtures, running the fprof binary.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "fprof/core/store.h"
#include "synthetic_profile.h"

namespace fprof::testing {

inline std::string tempPath(const std::string& name) {
  std::filesystem::create_directories(FPROF_TEST_TMP);
  std::string p = std::string(FPROF_TEST_TMP) + "/" + name;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(p + suffix);
  return p;
}

inline core::Profile loadSynthetic(const std::string& name, const SyntheticOptions& options) {
  const std::string path = tempPath(name);
  const core::Status st = writeSyntheticProfile(path, options);
  if (!st) throw std::runtime_error(st.error());
  auto loaded = core::loadProfile(path);
  if (!loaded) throw std::runtime_error(loaded.error());
  return std::move(*loaded);
}

inline std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct RunResult {
  int code = -1;
  std::string out;  // stdout and stderr together
};

inline RunResult runFprof(const std::string& args) {
  const std::string cmd = std::string(FPROF_BIN) + " " + args + " 2>&1";
  RunResult r;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(f);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline size_t countOf(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + needle.size())) ++n;
  return n;
}

}  // namespace fprof::testing
