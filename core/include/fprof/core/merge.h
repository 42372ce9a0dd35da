// Many processes in one database: `fprof merge` joins the databases the ranks of a torchrun,
// mpirun or srun job wrote (one per process) into one, with rank and host kept; the functions
// below take one rank (or any set of processes) back out, so every analysis and front-end works
// on a rank exactly as on the file that rank wrote.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fprof/core/expected.h"
#include "fprof/core/store.h"

namespace fprof::core {

// Metadata keys of one process in a merged database: "process.<id>.<key>" (e.g. process.2.mode =
// metrics). The top-level keys hold what every process agrees on; see combineProcessMetadata.
std::string processMetadataKey(uint32_t process_id, const std::string& key);

// A fact about one process: its own "process.<id>.<key>" where the database has one (merged
// files), else the database's top-level key (a file written by one process), else fallback.
std::string processMeta(const Profile& p, uint32_t process_id, const std::string& key,
                        const std::string& fallback = "");

// Every metadata fact of one process (the "process.<id>." prefix stripped), as processMeta reads it.
std::map<std::string, std::string> processMetadata(const Profile& p, uint32_t process_id);

// The top-level metadata of several processes together: a key every process has with one value
// keeps it; mode and fprof_version that differ read "mixed"; dropped_records are summed; other
// keys that differ are left out (each process keeps its own).
std::map<std::string, std::string> combineProcessMetadata(const std::vector<std::map<std::string, std::string>>& per_process);

struct MergeOptions {
  bool overwrite = false;  // replace an existing output (never an input)
};

struct MergeResult {
  int64_t processes = 0;
  int64_t kernels = 0;
  std::vector<std::string> notes;  // what the user should know: duplicate ranks, ceilings that disagreed
};

// Writes `output` holding every row of every input, with ids renumbered so nothing collides: one
// process row per input process (two ranks on two hosts may share a pid and correlation ids; their
// new process ids keep (process, correlation) unique), kernel ids, NVTX range ids and their
// references shifted per input, counters moved with their kernels. Ceilings are kept once where
// identical and per GPU model where they differ. A merged database can be merged again.
// Refuses, writing nothing, when an input is missing, damaged or of a newer schema, an input is
// given twice (or two inputs hold the same process), or the output is one of the inputs. The
// database is written to a temporary file beside `output` and renamed at the end.
Expected<MergeResult> mergeDatabases(const std::vector<std::string>& inputs, const std::string& output,
                                     const MergeOptions& options = {});

// The processes of one rank. Processes sharing a global rank are one group (an elastic launcher
// that restarts a rank leaves two); a process without a rank is a group of its own.
struct RankGroup {
  std::optional<int> rank;
  std::vector<uint32_t> process_ids;  // ascending
  std::string label;                  // "rank 0", or "pid 4242 on nodeA" for a process without a rank
};
// Ranked groups by rank, then processes without a rank by process id.
std::vector<RankGroup> rankGroups(const Profile& p);

// "ranks 0-3", "ranks 0, 2, 5", "rank 1", with ", 1 process without a rank" where there are such.
std::string describeRanks(const std::vector<RankGroup>& groups);

// A copy of `p` with only these processes' rows: processes, devices, kernels (ids kept), their
// counters and metrics, launch arguments, NVTX ranges, copies, sets, memory events, collector
// events; strings and ceilings whole. Top-level metadata becomes that of the chosen processes
// (combineProcessMetadata), so `mode` reads the chosen rank's mode.
Profile selectProcesses(const Profile& p, const std::vector<uint32_t>& process_ids);

// selectProcesses for the processes of global rank `rank`; an error naming the ranks the file has.
Expected<Profile> selectRank(const Profile& p, int rank);

}  // namespace fprof::core
