// The collector's settings, from the environment `fprof run` gives it (core/environment.h declares
// every variable; docs/environment.md), parsed without touching the process: tests pass their own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fprof/core/environment.h"

namespace fprof::collector {

using EnvLookup = core::env::Lookup;

struct Ranks {
  std::optional<int> rank;
  std::optional<int> local_rank;
};

// What CUPTI is asked to do: the defaults are what trace mode needs; the internal switches of
// docs/environment.md change them to measure CUPTI's own cost piece by piece (docs/overhead.md).
struct CuptiSettings {
  bool kernel = true, memcpy = true, memset = true, memory = true;  // FPROF_ACTIVITY: activity kinds
  bool nvtx_callbacks = true;        // FPROF_NVTX_CALLBACKS=0: NVTX is injected, no callbacks asked
  bool periodic_flush_all = true;    // FPROF_CUPTI_FLUSH_ALL=0: the writer never calls cuptiActivityFlushAll
  // FPROF_CUPTI_HOST_PINNED=1 (fprof run --gpu-fault-safe): CUPTI keeps the kernels' timestamps in
  // pinned host memory instead of device memory (CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED).
  bool host_pinned = false;
};

struct CollectorConfig {
  bool enabled = false;      // false when FPROF_OUTPUT is unset
  std::string output;        // FPROF_OUTPUT as given
  bool force = false;        // FPROF_FORCE=1: overwrite an existing file
  int flush_interval_ms = 500;  // FPROF_FLUSH_MS
  bool quiet = false;           // FPROF_QUIET=1
  bool self_timing = false;  // FPROF_SELF_TIMING=1: time the collector's own work, report at exit
  // FPROF_NVTX_INJECTION=direct (default): fprof's own NVTX handlers; `cupti`: NVTX through
  // CUPTI's NVTX layer and callbacks.
  bool nvtx_direct = true;
  CuptiSettings cupti;
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
