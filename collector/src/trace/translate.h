// Translation of CUPTI activity records into core records: the one place where CUpti_* meets
// the neutral model. Single-threaded and pure (no CUPTI calls), so tests feed it hand-built
// records, out of order and duplicated, and compare what comes out.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <cupti_activity.h>

#include "fprof/core/model.h"
#include "fprof/core/store.h"
#include "metrics/own_kernel_windows.h"
#include "trace/launch_info.h"

namespace fprof::collector {

struct TranslatedBatch {
  std::vector<core::KernelRecord> kernels;
  std::vector<core::KernelArgRecord> kernel_args;
  std::vector<core::MemcpyRecord> memcpys;
  std::vector<core::MemsetRecord> memsets;
  std::vector<core::MemoryEventRecord> memory_events;
  size_t size() const {
    return kernels.size() + kernel_args.size() + memcpys.size() + memsets.size() + memory_events.size();
  }
};

struct TranslatorStats {
  uint64_t duplicates = 0;          // records seen twice (dropped)
  uint64_t ignored_kernels = 0;     // fprof's and CUPTI's own (ignoreKernelsNamed, ignoreOwnWindows)
  uint64_t unmatched_kernels = 0;   // kernels with no launch callback (no API name, NVTX, args)
  uint64_t ignored_records = 0;     // kinds this translator does not handle
  // Kernels whose activity record's localMemoryPerThread differed from the function's
  // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES (the attribute is stored); one example is kept.
  uint64_t local_memory_mismatches = 0;
  std::string local_memory_example;
  uint64_t dropped_launches = 0;    // launches forgotten because kMaxPendingLaunches were waiting
};

class Translator {
 public:
  // How many flush periods a launch that never matched a kernel is kept (a kernel queued behind
  // long work, or a launch captured into a graph, whose kernels carry the graph launch's id).
  static constexpr int kUnmatchedLaunchGenerations = 120;
  // Metrics mode: kernel replay delays kernel records by far more than 120 periods (a model run
  // of 90 s lost the launch facts and NVTX paths of its first 40 kernels), and runs launch few
  // kernels, so launches are kept for this many periods instead.
  static constexpr int kUnmatchedLaunchGenerationsReplay = 1 << 20;
  void setUnmatchedLaunchGenerations(int periods) { unmatched_generations_ = periods; }
  void setMaxPendingLaunches(size_t launches) { max_pending_ = launches; }
  // Graph launches match one record per kernel node; keep them this many periods after the first.
  static constexpr int kGraphLaunchGenerations = 2;
  // At most this many launches wait for their kernel record; beyond it the oldest is dropped
  // (counted). Launches made during stream capture never get a record of their own.
  static constexpr size_t kMaxPendingLaunches = size_t{1} << 20;

  void setProcessId(uint32_t process_id) { process_id_ = process_id; }
  void addDevice(const core::DeviceInfo& device) { devices_[device.id] = device; }
  void addLaunch(LaunchInfo launch);
  // A copy of fprof's own (the argument-role probe's): its memcpy record is not the program's.
  // Every memcpy record with that id is dropped; ids are forgotten with the launches (bounded).
  void ignoreCopies(uint32_t correlation_id) { ignored_copies_.insert(correlation_id); }
  // Kernels of fprof's or CUPTI's own, by exact name: the L2 sweep, and the `WaitNs` kernel CUPTI's
  // range profiler puts before each profiled launch it counts without kernel replay (1 block,
  // about 80 us, filed under the program's launch's correlation id). Counted in stats().
  void ignoreKernelsNamed(std::string name) { ignored_kernel_names_.push_back(std::move(name)); }
  // Kernels, copies and memsets inside these windows are the collector's own (a profiled launch's
  // duplicate and the checkpoint around it); dropped and counted in stats().ignored_kernels.
  void ignoreOwnWindows(const OwnKernelWindows* windows) { own_windows_ = windows; }

  // Appends the translation of one record to `out`; duplicates and unknown kinds add nothing.
  void translate(const CUpti_Activity& record, TranslatedBatch& out);
  // Marks the end of one flush period: forgets old launches and old duplicate keys.
  void endGeneration();

  const TranslatorStats& stats() const { return stats_; }
  size_t pendingLaunches() const { return launches_.size(); }
  // Entries of the expiry queues (bounded by a small multiple of pendingLaunches()).
  size_t expiryEntries() const { return unmatched_expiry_.size() + graph_expiry_.size(); }

 private:
  struct PendingLaunch {
    LaunchInfo info;
    uint64_t added_generation = 0;
    uint64_t first_match_generation = 0;  // 0 = not matched yet
  };
  struct Expiry {
    uint64_t generation;
    uint32_t correlation_id;
  };
  void forget(std::unordered_map<uint32_t, PendingLaunch>::iterator it);

  void translateKernel(const CUpti_ActivityKernel10& k, TranslatedBatch& out);
  bool isIgnoredKernel(const char* name) const;
  bool insideOwnWindow(uint32_t context_id, uint64_t start_ns, uint64_t end_ns) const;
  void translateMemcpy(const CUpti_ActivityMemcpy6& m, TranslatedBatch& out);
  void translateMemset(const CUpti_ActivityMemset4& m, TranslatedBatch& out);
  void translateMemory(const CUpti_ActivityMemory4& m, TranslatedBatch& out);
  bool seenBefore(uint64_t key);
  struct NameInfo {
    std::string demangled;
    int64_t local_bytes_per_thread = -1;  // learnt from a launch of this kernel with function info
  };
  NameInfo& nameInfo(const char* mangled);
  bool joinLaunch(const CUpti_ActivityKernel10& k, core::KernelRecord& r, NameInfo* name_info, TranslatedBatch& out);
  void addOccupancy(const CUpti_ActivityKernel10& k, core::KernelRecord& r) const;

  uint32_t process_id_ = 0;
  std::map<uint32_t, core::DeviceInfo> devices_;
  std::unordered_map<uint32_t, PendingLaunch> launches_;  // by outermost correlation id
  // Pending launches in the order they came, and matched graph launches in the order of their
  // first match: expiry looks only at the front, so a period's upkeep is O(launches expired).
  std::deque<Expiry> unmatched_expiry_;
  std::deque<Expiry> graph_expiry_;
  std::unordered_map<uint32_t, uint32_t> nested_to_outer_;
  std::unordered_set<uint64_t> seen_current_, seen_previous_;
  std::unordered_map<std::string, NameInfo> names_;
  uint64_t generation_ = 1;
  int unmatched_generations_ = kUnmatchedLaunchGenerations;
  size_t max_pending_ = kMaxPendingLaunches;
  TranslatorStats stats_;
  std::unordered_set<uint32_t> ignored_copies_;
  std::vector<std::string> ignored_kernel_names_;
  const OwnKernelWindows* own_windows_ = nullptr;
};

// Hands one period's translated records to the store, in the order Collector::drain always used.
void addToStore(core::Writer& writer, const TranslatedBatch& batch);

// Names CUPTI enums the way the store spells them.
const char* memcpyKindName(uint32_t kind);
const char* memoryKindName(uint32_t kind);

}  // namespace fprof::collector
