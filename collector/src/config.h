// The environment contract between `fprof run` and the collector (documented in
// collector/README.md), parsed without touching the process: tests pass their own environment.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fprof::collector {

using EnvLookup = std::function<const char*(const char*)>;

struct Ranks {
  std::optional<int> rank;
  std::optional<int> local_rank;
};

struct CollectorConfig {
  bool enabled = false;      // false when FPROF_OUTPUT is unset
  std::string output;        // FPROF_OUTPUT as given
  bool force = false;        // FPROF_FORCE=1: overwrite an existing file
  int flush_interval_ms = 500;
  bool quiet = false;
  Ranks ranks;
  std::vector<std::string> warnings;  // to print once, each prefixed "[fprof] "
};

CollectorConfig readConfig(const EnvLookup& env);

// RANK / OMPI_COMM_WORLD_RANK / SLURM_PROCID and LOCAL_RANK / OMPI_COMM_WORLD_LOCAL_RANK /
// SLURM_LOCALID, first one set wins; a value that is not a non-negative integer is ignored.
Ranks readRanks(const EnvLookup& env);

// The path to try first: `.rank<N>` goes before a `.fprof` suffix (or at the end without one).
std::string rankedOutputPath(const std::string& output, std::optional<int> rank);
// Where to write when the ranked path already exists and FPROF_FORCE is not 1: `<stem>.pid<PID>.fprof`.
std::string pidOutputPath(const std::string& path, int64_t pid);

}  // namespace fprof::collector
