// Metrics mode: hardware counters per kernel through the CUPTI range profiler (auto range,
// kernel replay), one profiler per context.
//
// Every launch (and every memset/memcpy, which the driver may run as a kernel) holds its context's
// profiling window from the driver callback's ENTER to its EXIT. The profiler runs only inside the
// window of a launch chosen for profiling, so no other thread's kernel can become a range, and each
// range is matched to its launch by name and order when a batch is decoded. Launches identical to
// one already profiled (same signature) get its values, marked as copied; launches that are not
// profiled get a stored reason. Every kernel of a metrics run ends with counters or a reason.
#pragma once

#include <cuda.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "fprof/core/model.h"
#include "duplicate_launch.h"
#include "metrics_config.h"
#include "l2_sweep.h"
#include "own_kernel_windows.h"
#include "range_profiler.h"
#include "sass_patching.h"

namespace fprof::collector {

struct LaunchRef {
  uint32_t correlation_id = 0;
  uint32_t nested_correlation_id = 0;  // the driver call inside a runtime launch (0 = none)
  uint64_t graph_node_id = 0;          // not 0: the kernel of this node in a graph launch
};

// What the writer gets for one launch: counters (profiled or copied from `source`), or a reason.
struct LaunchCounterResult {
  LaunchRef launch;
  core::KernelCounters counters;
  std::vector<std::pair<std::string, double>> raw;
  std::optional<LaunchRef> source;  // copied from this profiled launch
  std::string missing_reason;       // not empty: no counters, and why
};

struct LaunchRequest {
  CUcontext context = nullptr;
  CUstream stream = nullptr;  // where the kernel runs (the per-thread stream resolved)
  uint32_t correlation_id = 0;
  uint32_t nested_correlation_id = 0;
  const char* symbol_name = nullptr;  // mangled
  const std::string* nvtx_path = nullptr;
  bool selected_elsewhere = false;  // see LaunchFacts::selected_elsewhere
  bool graph_launch = false;
  uint64_t graph_exec = 0;  // the CUgraphExec a graph launch runs (0 = unknown)
  bool cooperative = false;
  bool capturing = false;             // the stream records a graph: nothing runs now
  std::optional<uint64_t> signature;  // see LaunchFacts::signature
  std::optional<uint64_t> loose_signature;  // see LaunchFacts::loose_signature
  std::optional<uint64_t> graph_key;        // the loose signature without the cluster shape
  // The driver call itself, for a duplicate of the launch (MetricsConfig::sass_duplicate).
  CUpti_CallbackId cbid = 0;
  const void* driver_params = nullptr;
  CUfunction function = nullptr;  // the context's function behind the launch's handle (null: unknown)
};

class MetricsCollector {
 public:
  // Returns false (and keeps metrics off) when the configuration cannot be used.
  bool configure(const MetricsConfig& config);
  bool enabled() const { return enabled_; }
  // The run counts by SASS patching (ReplayMode::kSassPatching): the kernel activity records must
  // be the serialized kind, under which the patched counts are exact (sass_patching.h).
  bool countsBySassPatching() const { return enabled_ && config_.replay == ReplayMode::kSassPatching; }
  // Functions are patched in this run (a second run by SASS patching, or duplicates in the first):
  // the same activity kind as countsBySassPatching, and the saved cubins named by CRC.
  bool patchesSass() const { return countsBySassPatching() || (enabled_ && config_.sass_duplicate); }
  // The database this process writes: duplicates write their per-PC counts beside it (+ ".pcs").
  void setDatabasePath(const std::string& path) {
    if (config_.sass_duplicate) config_.sass_pc_file = path + ".pcs";
  }
  // Where a profiled launch's duplicate and the checkpoint around it ran (for the translator).
  void recordOwnWindowsIn(OwnKernelWindows* windows) { own_windows_ = windows; }
  // What fprof's own checkpoint around a duplicate reads (own_checkpoint.h); the collector keeps
  // both up to date from its callbacks.
  void useOwnCheckpointMaps(const AllocationMap* allocations, const ModuleWritesIndex* modules) {
    allocations_ = allocations;
    modules_ = modules;
  }
  bool duplicatesLaunches() const { return enabled_ && config_.sass_duplicate; }
  bool ownCheckpointMapsInUse() const { return allocations_ != nullptr; }

  // At the driver launch callback's ENTER, just before the launch is submitted, and its EXIT.
  void beforeLaunch(const LaunchRequest& launch);
  void afterLaunch(CUresult result);
  // At a driver memset/memcpy's ENTER and EXIT: it holds the window too, with the profiler stopped.
  void beforeMemoryOperation(CUcontext context);
  void afterMemoryOperation();
  // Stops and decodes every context (teardown, exit, signals). Safe to call repeatedly.
  void finishAll();
  // On a fatal signal, from the writer thread: decodes the launches profiled since the last batch,
  // skipping a context whose window the dying thread holds (never waits for it).
  void decodeOnFatalSignal();

  // CUDA graphs. Their kernels are not replayed; under application replay the first launches of
  // each executable graph (samples_per_signature of them; every one with --every-launch) are
  // counted whole, as one user range (the profiler is enabled again with user ranges for them, 17
  // ms a switch on an H100, and again with auto range for the next profiled kernel), and their
  // kernels keep a reason that says so. Besides, a kernel whose node has the graph key of a
  // profiled launch (LaunchSignatures, read when the node was made) takes that launch's counters,
  // marked same_signature like any copy. From the resource callbacks: a kernel node made (key
  // unknown: nullopt), and a node whose parameters changed after it was made (no copies then).
  void noteGraphNode(uint64_t node_id, std::optional<uint64_t> graph_key);
  void noteGraphNodeChanged(uint64_t node_id);
  // Node changes cannot be seen (their callbacks failed): graph kernels then get no copies.
  void noteGraphNodesUntrusted();
  // From the writer thread: the kernel records of a period; those of selected graph launches are
  // resolved by takeResults once the run has ended (every profiled launch decoded).
  void addGraphKernels(const std::vector<core::KernelRecord>& kernels);

  std::vector<LaunchCounterResult> takeResults();
  std::vector<core::GraphLaunchCounters> takeGraphLaunchResults();  // process_id left 0
  std::vector<std::pair<std::string, std::string>> takeNotes();      // (severity, message)
  std::vector<std::pair<std::string, std::string>> takeMetadata();   // (key, value)

 private:
  struct Entry {
    LaunchRef launch;
    std::string mangled;
    std::string demangled;
    uint64_t launch_index = 0;
    std::optional<uint64_t> signature;
    std::optional<uint64_t> loose_signature;
    std::optional<uint64_t> graph_key;
    std::optional<uint64_t> loose_check;  // see Decision::loose_check
    uint64_t loose_first_signature = 0;
    bool graph = false;  // a whole graph launch in one user range
  };
  struct ContextState {
    std::mutex window;  // held by a launch or copy on this context from ENTER to EXIT
    std::unique_ptr<RangeProfiler> profiler;
    std::unique_ptr<SassPatching> patching;  // instead of the profiler under kSassPatching
    bool application = false;       // the program's own run is counted (no kernel replay)
    std::unique_ptr<L2Sweep> sweep;  // cache control under application replay
    std::unique_ptr<DuplicateCounter> duplicate;  // SASS counts in this run (config_.sass_duplicate)
    uint32_t context_id = 0;                      // CUPTI's, for own_windows_
    std::vector<Entry> batch;  // profiled launches whose ranges are not decoded yet
    bool failed = false;
    bool set_up = false;
    bool warned_footprint = false;  // warnIfReplayGoesThroughHost said it once
    std::chrono::steady_clock::time_point launch_started{};  // of the profiled launch in its window
    std::chrono::steady_clock::time_point phase_mark{};      // the end of its last timed step (lap)
  };
  // The steps of a profiled launch's window, timed apart (metadata.metrics_launch_steps_seconds).
  enum class LaunchStep { kDrain, kDuplicate, kSweep, kStart, kLaunch, kStop, kEnd, kCount };
  struct Profiled {  // a decoded launch that copies may come from
    core::KernelCounters counters;
    std::vector<std::pair<std::string, double>> raw;
    LaunchRef launch;
    uint64_t signature = 0;
  };

  ContextState& stateOf(CUcontext ctx);  // requires mu_
  bool setUp(ContextState& s);           // requires mu_
  bool setUpSweep(ContextState& s, CUdevice device);
  void countThrowawayRange(ContextState& s);  // requires mu_
  void warnIfReplayGoesThroughHost(ContextState& s);  // requires mu_
  bool setUpPatching(ContextState& s, CUcontext ctx, CUdevice device);  // requires mu_
  void countPatched(ContextState& s, CUresult result);                   // requires mu_
  void writePcCounts(const core::SassPcLaunch& launch);                  // requires mu_
  void logPatchTimes(const Entry& e, double in_launch, const SassPatching::Seconds& before,
                     const SassPatching::Seconds& after);
  void missingWithCopies(const Entry& e, const std::string& why, const std::string& copies_why);  // requires mu_
  void missingNotANumber(const Entry& e);                                                          // requires mu_
  // Drains the context, counts the launch's duplicate (a kernel launch: `launch`; a graph launch:
  // none), sweeps the caches.
  bool prepareOwnRun(ContextState& s, CUstream stream, const LaunchRequest* launch, std::string& error);
  void setUpDuplicates(ContextState& s, CUcontext ctx, CUdevice device);  // requires mu_
  void countDuplicate(ContextState& s, const LaunchRequest& launch);     // requires mu_
  void stopDuplicates(const std::string& why);                           // requires mu_
  std::string duplicatesText() const;
  void countCheckpoint(const DuplicateCounter::Seconds& last);
  std::string checkpointsText() const;
  void beginSteps(ContextState& s);              // a profiled launch's window opens
  void lap(ContextState& s, LaunchStep step);  // the step that just ended
  std::string launchStepsText() const;
  void recordRunFacts(const std::string& teardown);  // requires mu_
  bool countGraphLaunch(const LaunchRequest& launch, ContextState& s, LaunchRef ref);  // requires mu_
  bool useRanges(ContextState& s, bool user);                                          // requires mu_
  void openWindow(const LaunchRequest& launch, ContextState& s);  // requires mu_
  void closeWindow(CUresult result);     // requires mu_
  void decode(ContextState& s);          // requires mu_
  void keepDecoded(const Entry& e, const std::vector<double>& row, const std::string& range_name);
  void keepCounted(const Entry& e, LaunchCounterResult r, const std::string& range_name);
  void copyOrWait(uint64_t source_index, LaunchRef launch);
  LaunchCounterResult copiedFrom(const Profiled& source, LaunchRef launch) const;
  void resolveGraphKernels();  // requires mu_
  void keepGraphSource(const Entry& e, const LaunchCounterResult& r);  // requires mu_
  void checkLooseSignature(const Entry& e, const LaunchCounterResult& r);  // requires mu_
  void missing(LaunchRef launch, std::string reason);
  void note(const char* severity, const std::string& message);
  void progress();
  const std::string& demangled(const char* symbol);

  std::mutex mu_;  // taken after a context's window, never before it
  bool enabled_ = false;
  bool finished_ = false;
  bool debug_ranges_ = false;
  MetricsConfig config_;
  std::unique_ptr<LaunchSelector> selector_;
  std::map<CUcontext, ContextState> contexts_;  // node-based: windows and states stay put
  std::unordered_map<std::string, std::string> demangled_;
  std::unordered_map<uint64_t, Profiled> decoded_;                     // by selected-launch index
  std::unordered_map<uint64_t, std::vector<LaunchRef>> waiting_copies_;  // by source index
  std::unordered_map<uint64_t, std::vector<std::pair<std::string, double>>> first_sample_;  // by signature
  std::unordered_map<uint64_t, bool> signature_varies_;
  // What graph kernels copy, by graph key: the first decoded launch, and whether launches with the
  // key differed in their cluster shape (never copied from) or in their 1-byte parameters (copied
  // from when the selector's check said those do not matter).
  struct GraphSource {
    Profiled first;
    uint64_t loose = 0;
    bool several_loose = false;
    bool several_signatures = false;
  };
  std::unordered_map<uint64_t, GraphSource> graph_sources_;
  std::unordered_map<uint64_t, std::optional<uint64_t>> graph_nodes_;  // node id -> graph key
  std::unordered_set<uint32_t> graph_launches_;  // correlation ids of the graph launches selected
  std::unordered_map<uint64_t, uint64_t> graph_exec_counts_;  // graph launches counted whole, by CUgraphExec
  std::vector<core::GraphLaunchCounters> graph_results_;
  uint64_t graph_launches_counted_ = 0;
  uint64_t graph_counted_in_metadata_ = 0;
  std::vector<LaunchRef> pending_graph_kernels_;
  uint64_t graph_kernels_copied_ = 0;
  std::optional<uint64_t> graph_copies_in_metadata_;
  bool graph_nodes_trusted_ = true;
  std::vector<LaunchCounterResult> results_;
  std::FILE* pc_file_ = nullptr;  // kSassPatching, duplicates: config_.sass_pc_file, opened at the first count
  OwnKernelWindows* own_windows_ = nullptr;
  uint64_t duplicates_ = 0;          // profiled launches whose duplicate was counted
  std::string duplicates_stopped_;  // why duplicates stopped (or never started): "" = they did not
  DuplicateCounter::Seconds duplicate_seconds_;
  const AllocationMap* allocations_ = nullptr;
  const ModuleWritesIndex* modules_ = nullptr;
  uint64_t own_checkpoints_ = 0;
  uint64_t own_checkpoint_bytes_max_ = 0;
  std::map<std::string, uint64_t> cupti_checkpoints_;  // why CUPTI's held a duplicate -> launches
  size_t duplicate_memory_held_max_ = 0;  // the most device memory in use at a checkpoint
  uint64_t patch_failures_ = 0;    // kSassPatching: profiled launches without counts
  std::vector<std::pair<std::string, std::string>> notes_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  std::map<std::string, uint64_t> unsafe_skips_;
  uint64_t profiled_ = 0;
  uint64_t copied_ = 0;
  uint64_t unmatched_ranges_ = 0;
  size_t passes_ = 0;
  // What profiling cost: the profiled launches' calls (kernel replay runs inside them) and decoding.
  double replay_seconds_ = 0, decode_seconds_ = 0;
  std::array<double, static_cast<size_t>(LaunchStep::kCount)> step_seconds_{};  // replay_seconds_ by step
  std::chrono::steady_clock::time_point started_at_{};
  std::chrono::steady_clock::time_point last_progress_{};
};

}  // namespace fprof::collector
