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

// What CUPTI is asked to do, so its own cost per launch can be measured piece by piece (the
// defaults are what trace mode needs; see docs/overhead.md).
struct CuptiSettings {
  bool kernel = true, memcpy = true, memset = true, memory = true;  // FPROF_ACTIVITY: activity kinds
  bool nvtx_callbacks = true;        // FPROF_NVTX_CALLBACKS=0: NVTX is injected, no callbacks asked
  bool periodic_flush_all = true;    // FPROF_CUPTI_FLUSH_ALL=0: the writer never calls cuptiActivityFlushAll
  std::optional<int> flush_period_ms;  // FPROF_CUPTI_FLUSH_PERIOD_MS (0 = off); default: the flush period
  size_t buffer_bytes = size_t{8} << 20;  // FPROF_BUFFER_MB, 1..256
  // FPROF_LAUNCH_CALLBACKS (measurement only): `all` (default) the runtime's and the driver's
  // launch APIs; `driver` the driver's alone; `none` no launch callbacks (no launch facts).
  bool runtime_launch_callbacks = true, driver_launch_callbacks = true;
  // FPROF_WRITER_IDLE=1 (measurement only): the writer thread reads and writes nothing until the
  // program exits, so its work cannot slow the program's threads.
  bool writer_idle = false;
  bool event_prefill = true;  // FPROF_EVENT_PREFILL=0 (measurement only): no prefilled event chunks
  // FPROF_CUPTI_ZEROED_BUFFERS=0 (measurement only): CUPTI zeroes each new activity buffer itself,
  // on the thread that needs it, instead of the writer zeroing them ahead.
  bool zeroed_buffers = true;
  // FPROF_RUNTIME_API_ACTIVITY=1 (measurement only): CUPTI also records the runtime launch APIs as
  // activity (what a collector that left the runtime's launch callbacks out would need to name
  // them); the records are counted and dropped.
  bool runtime_api_activity = false;
  // FPROF_CUPTI_HOST_PINNED=1 (measurement only): CUPTI keeps the kernels' timestamps in pinned
  // host memory instead of device memory (CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED).
  bool host_pinned = false;
};

struct CollectorConfig {
  bool enabled = false;      // false when FPROF_OUTPUT is unset
  std::string output;        // FPROF_OUTPUT as given
  bool force = false;        // FPROF_FORCE=1: overwrite an existing file
  int flush_interval_ms = 500;
  bool quiet = false;
  bool self_timing = false;  // FPROF_SELF_TIMING=1: time the collector's own work, report at exit
  // FPROF_NVTX_INJECTION=direct (default): fprof's own NVTX handlers; `cupti`: NVTX through
  // CUPTI's NVTX layer and callbacks, as before.
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
