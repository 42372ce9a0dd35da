// Metrics mode: hardware counters per kernel, one counting strategy per context
// (counting_strategy.h says which there are and how each counts).
//
// Every launch (and every memset/memcpy, which the driver may run as a kernel) holds its context's
// window from the driver callback's ENTER to its EXIT. Counting runs only inside the window of a
// launch chosen for profiling, so no other thread's kernel can be counted with it. The collector
// decides which launches are profiled (LaunchSelector: filters, signature sampling), sets up each
// context's strategy at its first profiled launch and hands it the launch; launches identical to one
// already profiled (same signature) get its values, marked as copied; launches that are not profiled
// get a stored reason. Every kernel of a metrics run ends with counters or a reason.
#pragma once

#include <cuda.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cupti/own_checkpoint_map.h"
#include "fprof/core/model.h"
#include "fprof/core/sass_pc.h"
#include "metrics/counter_ledger.h"
#include "metrics/counting_backend.h"
#include "metrics/counting_strategy.h"
#include "metrics/metrics_config.h"
#include "metrics/metrics_run.h"
#include "metrics/own_kernel_windows.h"

namespace fprof::collector {

class MetricsCollector {
 public:
  // Every CUPTI and driver call of the metrics path goes through `backend`.
  explicit MetricsCollector(CountingBackend& backend) : run_(backend) {}

  // Returns false (and keeps metrics off) when the configuration cannot be used.
  bool configure(const MetricsConfig& config);
  bool enabled() const { return enabled_; }
  // The run counts by SASS patching (ReplayMode::kSassPatching): the kernel activity records must
  // be the serialized kind, under which the patched counts are exact (sass_patching.h).
  bool countsBySassPatching() const { return enabled_ && run_.config.replay == ReplayMode::kSassPatching; }
  // Functions are patched in this run (a second run by SASS patching, or duplicates in the first):
  // the same activity kind as countsBySassPatching, and the saved cubins named by CRC.
  bool patchesSass() const { return countsBySassPatching() || duplicatesLaunches(); }
  // The database this process writes: duplicates write their per-PC counts to the file named
  // after it in the run's cubin folder (core::duplicatesPcFile).
  void setDatabasePath(const std::string& path) {
    if (run_.config.sass_duplicate) run_.config.sass_pc_file = core::duplicatesPcFile(path, run_.config.cubin_dir);
  }
  // Where a profiled launch's duplicate and the checkpoint around it ran (for the translator).
  void recordOwnWindowsIn(OwnKernelWindows* windows) { run_.own_windows = windows; }
  // What fprof's own checkpoint around a duplicate reads (own_checkpoint.h); the collector keeps
  // both up to date from its callbacks.
  void useOwnCheckpointMaps(const AllocationMap* allocations, const ModuleWritesIndex* modules) {
    run_.allocations = allocations;
    run_.modules = modules;
  }
  bool duplicatesLaunches() const { return enabled_ && run_.config.sass_duplicate; }
  bool ownCheckpointMapsInUse() const { return run_.allocations != nullptr; }

  // At the driver launch callback's ENTER, just before the launch is submitted, and its EXIT.
  void beforeLaunch(const LaunchRequest& launch);
  void afterLaunch(CUresult result);
  // At a driver memset/memcpy's ENTER and EXIT: it holds the window too, with nothing counting.
  void beforeMemoryOperation(CUcontext context);
  void afterMemoryOperation();
  // Stops and decodes every context (teardown, exit, signals). Safe to call repeatedly.
  void finishAll();
  // On a fatal signal, from the writer thread: decodes the launches profiled since the last batch,
  // skipping a context whose window the dying thread holds (never waits for it).
  void decodeOnFatalSignal();

  // CUDA graphs (graph_launch_counting.h). From the resource callbacks: a kernel node made (key
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
  struct ContextState {
    std::mutex window;  // held by a launch or copy on this context from ENTER to EXIT
    bool set_up = false;
    bool counts_programs_own_run = false;  // as the setup found it, also where a later step failed
    std::unique_ptr<CountingStrategy> strategy;  // null: the context cannot count
  };

  CountingStrategy* strategyOf(ContextState& s);  // set up at the first call; null: cannot count
  void openWindow(const LaunchRequest& launch, ContextState& s);
  void openGraphWindow(const LaunchRequest& launch, const LaunchFacts& facts, ContextState& s, LaunchRef ref);
  bool countGraphLaunch(const LaunchRequest& launch, ContextState& s, LaunchRef ref);
  void countLaunch(const LaunchRequest& launch, const LaunchFacts& facts, const Decision& decision, ContextState& s,
                   LaunchRef ref);
  void closeWindow(CUresult result);
  std::vector<std::pair<CUcontext, ContextState*>> contextStates();  // requires mu_
  void progress();

  std::mutex mu_;  // taken after a context's window, never before it; guards everything below
  bool enabled_ = false;
  bool finished_ = false;
  MetricsRun run_;
  std::map<CUcontext, ContextState> contexts_;  // node-based: windows and states stay put
  std::map<std::string, uint64_t> unsafe_skips_;
  std::chrono::steady_clock::time_point started_at_{};
  std::chrono::steady_clock::time_point last_progress_{};
};

}  // namespace fprof::collector
