// Reading and writing .fprof databases. The writer batches records into transactions (WAL), so
// a target that dies leaves a valid file holding every batch flushed before it died. The reader
// checks what it opens and says in one sentence what is wrong with a bad file.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "fprof/core/expected.h"
#include "fprof/core/model.h"

struct sqlite3;

namespace fprof::core {

// A file as stat saw it, and its write-ahead log (a writer that has not closed the file yet adds
// pages there): a changed file has another stamp.
struct FileStamp {
  uint64_t device = 0;
  uint64_t inode = 0;
  int64_t size = 0;
  int64_t modified_ns = 0;
  int64_t wal_size = -1;  // -1: no -wal file
  int64_t wal_modified_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

// Everything a .fprof database holds, loaded into memory.
struct Profile {
  std::string path;
  FileStamp file_stamp;  // the file when it was loaded (loadLaunchTables reads only that file)
  int schema_version = 0;
  std::map<std::string, std::string> metadata;
  std::vector<ProcessInfo> processes;
  std::vector<DeviceInfo> devices;
  std::vector<std::string> strings;  // strings[id]; id 0 is ""
  std::vector<KernelRow> kernels;    // ordered by start_ns
  std::vector<KernelArgRecord> kernel_args;
  std::vector<NvtxRangeRow> nvtx_ranges;  // key = nvtx_range.id
  // What the ranges' messages borrow, where the reader put them in blocks (none need be: a row
  // made elsewhere owns its texts). Copies of the profile share it; their rows own their texts.
  std::shared_ptr<TextArena> nvtx_messages;
  // False where the ranges were loaded without their messages (LoadOptions::nvtx_messages): every
  // message is then empty until read from the file (forEachNvtxMessage).
  bool nvtx_messages_loaded = true;
  std::vector<MemcpyRecord> memcpys;
  std::vector<MemcpyAddressRecord> memcpy_addresses;  // ordered by (process_id, correlation_id); schema 3
  std::vector<MemsetRecord> memsets;
  std::vector<MemoryEventRecord> memory_events;  // ordered by timestamp
  std::vector<CollectorEventRecord> collector_events;
  std::vector<KernelCounters> counters;  // ordered by kernel_id; empty in trace mode
  std::vector<KernelMetricRecord> metrics;
  std::vector<CeilingRecord> ceilings;
  // Schema 2 (empty when a version-1 file is read).
  std::vector<KernelCounterMissing> counters_missing;  // ordered by kernel_id
  std::vector<FunctionRow> functions;                  // ordered by (process_id, name_id)
  std::vector<FunctionArgRow> function_args;           // ordered by (process_id, name_id, arg_index)
  std::vector<FunctionSassOpRow> function_sass_ops;    // ordered by (process_id, name_id, opcode)
  // Schema 5 (empty before): CUDA graph launches counted as one range each.
  std::vector<GraphLaunchCounters> graph_launch_counters;  // ordered by (process_id, correlation_id)
  // What the reader found damaged and how it was read anyway (a string id with no string, NVTX
  // ranges whose parents form a circle, non-finite counters, ...): one sentence per kind of
  // damage, naming the file and the first example. Front-ends show them once.
  std::vector<std::string> warnings;

  const std::string& str(uint32_t id) const { return strings.at(id); }
  const DeviceInfo* device(uint32_t process_id, uint32_t device_id) const;
  std::string meta(const std::string& key, const std::string& fallback = "") const;
};

// Opens and validates a database, then loads it. Errors are one sentence naming the file. Every
// text is cleaned (core/text.h: valid UTF-8, control characters made visible), and damage that
// leaves the file readable is repaired in memory and said in Profile::warnings, so that whatever
// a file holds, every walk over what is loaded ends.
struct LoadOptions {
  // The kernel arguments and memory events, which only data flow reads (tens of bytes a kernel).
  // Without them a front end reads them with loadLaunchTables when it needs them, once it has let
  // go of what it no longer needs.
  bool launch_tables = true;
  // The NVTX ranges' messages (a PyTorch run under emit_nvtx records several ranges of about a
  // hundred characters a kernel). Without them a front end reads them with forEachNvtxMessage,
  // keeping only those it needs.
  bool nvtx_messages = true;
};
Expected<Profile> loadProfile(const std::string& path, const LoadOptions& options = {});

// Hands each NVTX range's message to see(range index into p.nvtx_ranges, message), as
// loadProfile reads it, in the file's order; for a profile loaded without them. An error where
// the file is not the one the profile was loaded from any more (as loadLaunchTables).
Status forEachNvtxMessage(const Profile& p, const std::function<void(size_t, std::string_view)>& see);
// Gives a profile loaded without its NVTX messages every message, as loadProfile would have
// (nvtx_messages_loaded is then true); the same error as forEachNvtxMessage, the profile unchanged.
Status loadNvtxMessages(Profile& p);

struct LaunchTables {
  std::vector<KernelArgRecord> kernel_args;
  std::vector<MemoryEventRecord> memory_events;
  std::vector<std::string> warnings;  // the damage reading them found, said as Profile::warnings say it
};
// The launch tables of a profile loaded without them, read from its file as loadProfile reads
// them (the same rows in the same order); an error where the file is not the one the profile was
// loaded from any more (replaced, rewritten, or still being written).
Expected<LaunchTables> loadLaunchTables(const Profile& p);

// Only validates (cheap): is it SQLite, an fprof database, complete, of a readable version?
Status checkDatabase(const std::string& path);

// Adds (or replaces) ceiling rows in an existing database, e.g. to attach measured ceilings to a
// run recorded earlier. One transaction: on error nothing is changed.
Status appendCeilings(const std::string& path, const std::vector<CeilingRecord>& ceilings);

// Opens an existing database for writing and runs `body` in one transaction: on error nothing is
// changed. For the post-run steps that complete a recorded file (ceilings, exit status, SASS).
Status updateDatabase(const std::string& path, const std::function<Status(sqlite3*)>& body);

// Adds (or replaces) metadata keys of an existing database, in one transaction (e.g. how the
// profiled program ended, written by `fprof run` after it exits).
Status appendMetadata(const std::string& path, const std::map<std::string, std::string>& facts);

class Writer {
 public:
  // Creates a new database at path. Fails if the file exists unless overwrite is set.
  static Expected<std::unique_ptr<Writer>> create(const std::string& path, bool overwrite = false);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  Status setMetadata(const std::string& key, const std::string& value);
  // Returns the process id to put in the process_id of this process's records.
  Expected<uint32_t> addProcess(const ProcessInfo& process);
  Status addDevice(const DeviceInfo& device);

  // Records are buffered and written by flush(), one transaction per call.
  void add(const KernelRecord& r) { kernels_.push_back(r); }
  void add(const KernelArgRecord& r) { args_.push_back(r); }
  void add(const NvtxRangeRecord& r) { ranges_.push_back(r); }  // same key again replaces it
  void add(const MemcpyRecord& r) { memcpys_.push_back(r); }
  void add(const MemcpyAddressRecord& r) { memcpy_addresses_.push_back(r); }
  void add(const MemsetRecord& r) { memsets_.push_back(r); }
  void add(const MemoryEventRecord& r) { memory_events_.push_back(r); }
  void add(const CollectorEventRecord& r) { events_.push_back(r); }
  void add(const KernelCounters& r) { counters_.push_back(r); }
  void add(const KernelMetricRecord& r) { metrics_.push_back(r); }
  void add(const CeilingRecord& r) { ceilings_.push_back(r); }  // same device/ceiling/source replaces
  void add(const KernelCounterMissing& r) { missing_.push_back(r); }  // by kernel id
  void add(const FunctionRecord& r) { functions_.push_back(r); }      // same process/name replaces
  void add(const FunctionArgRecord& r) { function_args_.push_back(r); }
  void add(const FunctionSassOpRecord& r) { function_sass_ops_.push_back(r); }
  void add(GraphLaunchCounters r) { graph_launches_.push_back(std::move(r)); }  // same launch replaces
  // Counters of a launch known by its correlation id (or, for a runtime launch, the id of the
  // driver call inside it: alt_correlation_id, 0 if none); written once the kernel row with that
  // (process_id, correlation_id) exists, in this flush or a later one. `raw` keeps the metric
  // names and values behind them (kernel_metric). A kernel whose trace duration is 0 (the range
  // profiler hides kernel timestamps) takes its duration from counters.gpu_time_ns.
  void addCountersForLaunch(uint32_t process_id, uint32_t correlation_id, uint32_t alt_correlation_id,
                            const KernelCounters& counters, std::vector<std::pair<std::string, double>> raw);
  // Counters copied from another launch (counters.source = same_signature): source_kernel_id is
  // filled in once the kernel rows of both launches exist.
  struct LaunchRef {
    uint32_t correlation_id = 0;
    uint32_t alt_correlation_id = 0;
    uint64_t graph_node_id = 0;  // not 0: the one kernel of a graph launch that ran this node
  };
  void addCopiedCountersForLaunch(uint32_t process_id, LaunchRef launch, LaunchRef source,
                                  const KernelCounters& counters, std::vector<std::pair<std::string, double>> raw);
  // Why the kernels of a launch (several for a graph launch) have no counters
  // (kernel_counter_missing); resolved when the writer closes.
  void addMissingCountersForLaunch(uint32_t process_id, LaunchRef launch, std::string reason);
  // A metrics run: at close, every kernel with neither counters nor a reason gets this one.
  void expectCountersForEveryKernel(std::string default_reason) { default_missing_reason_ = std::move(default_reason); }
  // Launch counters still waiting for their kernel row.
  size_t unmatchedCounters() const { return pending_launch_counters_.size(); }
  // Id the next added kernel will get (kernel.id), so counters can refer to it.
  int64_t nextKernelId() const { return next_kernel_id_ + static_cast<int64_t>(kernels_.size()); }
  size_t pendingRecords() const;

  Status flush();
  // Flushes, checkpoints the WAL and leaves one self-contained file.
  Status close();

  const std::string& path() const { return path_; }

 private:
  Writer() = default;
  Expected<uint32_t> intern(std::string_view s);
  Status exec(const char* sql);

  std::string path_;
  sqlite3* db_ = nullptr;
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // Transparent lookup: interning a name already seen allocates nothing.
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> string_ids_;
  uint32_t next_string_id_ = 1;
  std::vector<KernelRecord> kernels_;
  std::vector<KernelArgRecord> args_;
  std::vector<NvtxRangeRecord> ranges_;
  std::vector<MemcpyRecord> memcpys_;
  std::vector<MemcpyAddressRecord> memcpy_addresses_;
  std::vector<MemsetRecord> memsets_;
  std::vector<MemoryEventRecord> memory_events_;
  std::vector<CollectorEventRecord> events_;
  std::vector<KernelCounters> counters_;
  std::vector<KernelMetricRecord> metrics_;
  std::vector<CeilingRecord> ceilings_;
  std::vector<KernelCounterMissing> missing_;
  std::vector<FunctionRecord> functions_;
  std::vector<FunctionArgRecord> function_args_;
  std::vector<FunctionSassOpRecord> function_sass_ops_;
  std::vector<GraphLaunchCounters> graph_launches_;  // waiting for their kernel rows (writeGraphLaunches)
  bool closing_ = false;
  int64_t next_kernel_id_ = 1;
  struct LaunchCounters {
    uint32_t process_id;
    LaunchRef launch;
    std::optional<LaunchRef> source;  // copied counters: the profiled launch they came from
    KernelCounters counters;
    std::vector<std::pair<std::string, double>> raw;
  };
  std::vector<LaunchCounters> pending_launch_counters_;
  struct LaunchMissing {
    uint32_t process_id;
    LaunchRef launch;
    std::string reason;
  };
  std::vector<LaunchMissing> pending_launch_missing_;
  std::optional<std::string> default_missing_reason_;
  Status writeBatch(std::vector<GraphLaunchCounters>& graph_launches_waiting);
  Status writeKernels();
  void clearBatch();
  Status resolveLaunchCounters();
  Status resolveMissingCounters();
  Status writeGraphLaunches(std::vector<GraphLaunchCounters>& waiting);
  std::optional<std::pair<int64_t, int64_t>> kernelOf(uint32_t process_id, LaunchRef launch) const;
  // (process_id << 32 | correlation_id) -> kernel id of every kernel written, so launch counters
  // find their kernel without an index during collection (indexes are built at close).
  std::unordered_map<uint64_t, std::pair<int64_t, int64_t>> kernel_by_correlation_;  // id, duration
  // The same for the kernels of graph launches, which share their launch's correlation id:
  // (process_id, correlation_id, graph_node_id) -> kernel id, duration. Kept in metrics runs only
  // (expectCountersForEveryKernel), where copied counters are resolved to graph nodes.
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, std::pair<int64_t, int64_t>> graph_kernel_by_node_;
};

}  // namespace fprof::core
