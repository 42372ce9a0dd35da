// Reading and writing .fprof databases. The writer batches records into transactions (WAL), so
// a target that dies leaves a valid file holding every batch flushed before it died. The reader
// checks what it opens and says in one sentence what is wrong with a bad file.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fprof/core/expected.h"
#include "fprof/core/model.h"

struct sqlite3;

namespace fprof::core {

// Everything a .fprof database holds, loaded into memory.
struct Profile {
  std::string path;
  int schema_version = 0;
  std::map<std::string, std::string> metadata;
  std::vector<ProcessInfo> processes;
  std::vector<DeviceInfo> devices;
  std::vector<std::string> strings;  // strings[id]; id 0 is ""
  std::vector<KernelRow> kernels;    // ordered by start_ns
  std::vector<KernelArgRecord> kernel_args;
  std::vector<NvtxRangeRecord> nvtx_ranges;  // key = nvtx_range.id
  std::vector<MemcpyRecord> memcpys;
  std::vector<MemsetRecord> memsets;
  std::vector<MemoryEventRecord> memory_events;  // ordered by timestamp
  std::vector<CollectorEventRecord> collector_events;
  std::vector<KernelCounters> counters;  // ordered by kernel_id; empty in trace mode
  std::vector<KernelMetricRecord> metrics;
  std::vector<CeilingRecord> ceilings;
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
Expected<Profile> loadProfile(const std::string& path);

// Only validates (cheap): is it SQLite, an fprof database, complete, of a readable version?
Status checkDatabase(const std::string& path);

// Adds (or replaces) ceiling rows in an existing database, e.g. to attach measured ceilings to a
// run recorded earlier. One transaction: on error nothing is changed.
Status appendCeilings(const std::string& path, const std::vector<CeilingRecord>& ceilings);

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
  void add(const MemsetRecord& r) { memsets_.push_back(r); }
  void add(const MemoryEventRecord& r) { memory_events_.push_back(r); }
  void add(const CollectorEventRecord& r) { events_.push_back(r); }
  void add(const KernelCounters& r) { counters_.push_back(r); }
  void add(const KernelMetricRecord& r) { metrics_.push_back(r); }
  void add(const CeilingRecord& r) { ceilings_.push_back(r); }  // same device/ceiling/source replaces
  // Counters of a launch known by its correlation id (or, for a runtime launch, the id of the
  // driver call inside it: alt_correlation_id, 0 if none); written once the kernel row with that
  // (process_id, correlation_id) exists, in this flush or a later one. `raw` keeps the metric
  // names and values behind them (kernel_metric). A kernel whose trace duration is 0 (the range
  // profiler hides kernel timestamps) takes its duration from counters.gpu_time_ns.
  void addCountersForLaunch(uint32_t process_id, uint32_t correlation_id, uint32_t alt_correlation_id,
                            const KernelCounters& counters, std::vector<std::pair<std::string, double>> raw);
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
  std::vector<MemsetRecord> memsets_;
  std::vector<MemoryEventRecord> memory_events_;
  std::vector<CollectorEventRecord> events_;
  std::vector<KernelCounters> counters_;
  std::vector<KernelMetricRecord> metrics_;
  std::vector<CeilingRecord> ceilings_;
  int64_t next_kernel_id_ = 1;
  struct LaunchCounters {
    uint32_t process_id;
    uint32_t correlation_id;
    uint32_t alt_correlation_id;
    KernelCounters counters;
    std::vector<std::pair<std::string, double>> raw;
  };
  std::vector<LaunchCounters> pending_launch_counters_;
  // (process_id << 32 | correlation_id) -> kernel id of every kernel written, so launch counters
  // find their kernel without an index during collection (indexes are built at close).
  std::unordered_map<uint64_t, std::pair<int64_t, int64_t>> kernel_by_correlation_;  // id, duration
};

}  // namespace fprof::core
