// Environment parsing for the collector; see config.h.
#include "config.h"

#include <charconv>
#include <cstring>

namespace fprof::collector {
namespace {

std::optional<int64_t> parseInt(const char* text) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  int64_t value = 0;
  const char* end = text + std::strlen(text);
  auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::optional<int> firstRank(const EnvLookup& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    auto v = parseInt(env(name));
    if (v && *v >= 0 && *v <= 0x7fffffff) return static_cast<int>(*v);
  }
  return std::nullopt;
}

constexpr std::string_view kSuffix = ".fprof";

bool endsWithSuffix(const std::string& path) {
  return path.size() > kSuffix.size() && path.compare(path.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
}

}  // namespace

Ranks readRanks(const EnvLookup& env) {
  Ranks r;
  // torchrun, Open MPI, Slurm, then MPICH/Intel MPI (Hydra's PMI_RANK, MPI_LOCALRANKID) and MVAPICH2.
  r.rank = firstRank(env, {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK", "MV2_COMM_WORLD_RANK"});
  r.local_rank = firstRank(env, {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID",
                                 "MV2_COMM_WORLD_LOCAL_RANK"});
  return r;
}

CollectorConfig readConfig(const EnvLookup& env) {
  CollectorConfig c;
  const char* output = env("FPROF_OUTPUT");
  if (output == nullptr || *output == '\0') {
    c.warnings.push_back("FPROF_OUTPUT is not set; the collector stays off (use `fprof run`)");
    return c;
  }
  c.enabled = true;
  c.output = output;
  const char* force = env("FPROF_FORCE");
  c.force = force != nullptr && std::strcmp(force, "1") == 0;
  const char* quiet = env("FPROF_QUIET");
  c.quiet = quiet != nullptr && std::strcmp(quiet, "1") == 0;
  if (const char* mode = env("FPROF_MODE");
      mode != nullptr && std::strcmp(mode, "trace") != 0 && std::strcmp(mode, "metrics") != 0) {
    c.warnings.push_back(std::string("FPROF_MODE=") + mode + " is not supported by this collector; using trace");
  }
  if (const char* flush = env("FPROF_FLUSH_MS"); flush != nullptr) {
    auto v = parseInt(flush);
    if (v && *v >= 10 && *v <= 3'600'000) {
      c.flush_interval_ms = static_cast<int>(*v);
    } else {
      c.warnings.push_back(std::string("FPROF_FLUSH_MS=") + flush +
                           " is not a number of milliseconds in 10..3600000; using 500");
    }
  }
  c.ranks = readRanks(env);
  return c;
}

std::string rankedOutputPath(const std::string& output, std::optional<int> rank) {
  if (!rank) return output;
  const std::string tag = ".rank" + std::to_string(*rank);
  if (endsWithSuffix(output)) return output.substr(0, output.size() - kSuffix.size()) + tag + std::string(kSuffix);
  return output + tag;
}

std::string pidOutputPath(const std::string& path, int64_t pid) {
  const std::string stem = endsWithSuffix(path) ? path.substr(0, path.size() - kSuffix.size()) : path;
  return stem + ".pid" + std::to_string(pid) + std::string(kSuffix);
}

}  // namespace fprof::collector
