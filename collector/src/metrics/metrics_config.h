// Metrics mode's settings (from the environment `fprof run --metrics` sets) and the choice of
// which launches to profile. Pure C++: tested on the CPU.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>

#include "injection/config.h"

namespace fprof::collector {

enum class CacheControl { kNone, kAll, kAllIfSupported };

// How a profiled launch is counted. kKernel: CUPTI's kernel replay runs the kernel once per pass,
// saving and restoring device memory around the passes. kApplication: the program's own execution
// of the launch is counted (CUPTI's user replay, no memory saved), so the metrics must fit one pass
// and hold no SASS-instrumented metric (those read 0 or less than the truth without kernel replay:
// bench/RESULTS.md); application replay of several passes, one program run per pass, is not
// built. kAuto: kApplication where the metrics allow it, else kKernel.
//
// kSassPatching: no replay; CUPTI's SASS Metrics API patches each profiled launch's functions to
// count every instruction (sass_patching.h). Internal, for the second run of two-run application
// replay (cli/cmd_run.cpp): it counts only the SASS counters core/sass_pc.h derives from per-PC
// counts, which `fprof run` completes after the run from the functions' SASS.
enum class ReplayMode { kKernel, kApplication, kAuto, kSassPatching };

// The replay a run uses for `metrics` taking `passes` passes, or an error sentence (`error`) when
// `requested` cannot collect them.
std::optional<ReplayMode> chooseReplay(ReplayMode requested, const std::vector<std::string>& metrics, size_t passes,
                                       std::string& error);

struct MetricsConfig {
  bool enabled = false;               // FPROF_MODE=metrics
  std::string selection = "roofline";  // FPROF_METRICS: a set name or metric names
  std::vector<std::string> metrics;    // expanded
  std::string kernel_regex;            // FPROF_KERNEL_REGEX (ECMAScript, searched in the demangled name)
  std::vector<std::string> nvtx_include;  // FPROF_NVTX_INCLUDE: substrings of the NVTX path, any matches
  // FPROF_NVTX_SCOPE: "process" (default): a push/pop range matching nvtx_include that is open on
  // any thread selects the launches of every thread meanwhile (PyTorch's backward runs on
  // autograd's thread inside the main thread's step range); "thread": only the launching
  // thread's own ranges count, as in Nsight Compute. Start/end ranges are process-wide either way.
  bool nvtx_process_scope = true;
  std::vector<std::string> ops;        // FPROF_OPS: NVTX op names (op=<name> tokens, docs/nvtx-convention.md)
  uint64_t launch_skip = 0;            // FPROF_LAUNCH_SKIP: selected launches to let pass first
  std::optional<uint64_t> launch_count;  // FPROF_LAUNCH_COUNT: selected launches to profile at most
  size_t batch_ranges = 256;           // ranges decoded at once
  // FPROF_SAMPLES_PER_LAUNCH_KIND: launches of one signature (function, grid, block, shared memory,
  // non-pointer argument bytes) that are profiled; later ones get their values, marked as copied.
  // 0 = every launch (--every-launch).
  uint64_t samples_per_signature = 1;
  // FPROF_CACHE_CONTROL: "all" (as ncu: caches invalidated before every replay pass, so a kernel's
  // bytes do not depend on what ran before it; needs CUPTI 13.4) or "none" (caches as the program
  // left them). Unset: all where the loaded CUPTI can, none (said so) where it cannot.
  CacheControl cache_control = CacheControl::kAllIfSupported;
  ReplayMode replay = ReplayMode::kAuto;  // FPROF_REPLAY: kernel | application | auto | sass_patching
  // FPROF_SECOND_RUN=1: this is the second run of two-run application replay (SASS counters
  // under kernel replay, cli/cmd_run.cpp); what the first run already said is not said again.
  bool second_run = false;
  // FPROF_SASS_PC_FILE: where kSassPatching appends each profiled launch's per-PC counts
  // (core::sassPcLaunchText); required by it.
  std::string sass_pc_file;
  // FPROF_SASS_DUPLICATE=1 (application replay): each profiled launch's SASS counts come from a
  // duplicate of it counted by SASS patching between a checkpoint of the context's memory and its
  // restore (duplicate_launch.h), into the file core::duplicatesPcFile names after the database, in
  // the run's cubin folder (each process its own, whatever its rank); no second run unless they stop.
  bool sass_duplicate = false;
  // FPROF_OWN_CHECKPOINT=0: every duplicate takes CUPTI's checkpoint of the whole context instead of
  // fprof's own where it can vouch for the launch (own_checkpoint.h), to compare the two.
  bool own_checkpoint = true;
  // FPROF_PROFILER_SESSION (application replay): "toggled" (default) counts each launch with a
  // profiler session kept open and counting switched on and off around it (toggled_session.h);
  // "range" with a range profiler start and stop each.
  bool toggled_session = true;
  // FPROF_CUBIN_DIR: where each loaded module's cubin is saved for fprof run's SASS step ("" = none).
  std::string cubin_dir;
  // FPROF_DEBUG_RANGES=1: each decoded range and the launch it went to, logged.
  bool debug_ranges = false;
  std::vector<std::string> errors;     // settings that could not be used: metrics mode stays off
};

MetricsConfig readMetricsConfig(const EnvLookup& env);
// Where a process counted by SASS patching writes its per-PC counts: FPROF_SASS_PC_FILE, with
// ".rank<N>" appended in a process of a rank (torchrun, mpirun, srun), so the ranks of one run
// write apart and `fprof run` pairs each file with that rank's database.
std::string sassPcFileOfRank(const std::string& file, std::optional<int> rank);

// Whether an NVTX path matches --nvtx-include (any of its substrings); true when there is none.
bool nvtxPathIncluded(const MetricsConfig& config, const std::string& path);

// What the launch callback knows when it decides.
struct LaunchFacts {
  std::string demangled_name;
  const std::string* nvtx_path = nullptr;
  bool selected_elsewhere = false;  // another thread is in a range matching nvtx_include
  bool graph_launch = false;
  bool cooperative = false;
  // Hash of function, grid, block, cluster, shared memory and non-pointer argument bytes: launches
  // with the same one do the same work. None: unknown (each such launch is profiled).
  std::optional<uint64_t> signature;
  // The signature without the 1-byte parameters (LaunchSignatures::loose); where it differs
  // from `signature`, launches equal but for those bytes copy a profiled one once a second sample
  // showed the bytes do not change the counts.
  std::optional<uint64_t> loose_signature;
};

// Why a kernel of a CUDA graph has no counters: graphs are not replayed (their nodes are not
// separate launches), and no launch with its node's signature was profiled to copy from.
inline constexpr const char* kGraphCountedWholeReason =
    "CUDA graph kernel: counted with its whole graph launch as one range (graph_launch_counter holds the launch's "
    "sums), and no launch of the same signature outside the graph to copy from";
inline constexpr const char* kGraphKernelReason =
    "CUDA graph kernel: graphs are not replayed, and no launch of the same signature was profiled outside the graph "
    "to copy from";

enum class LaunchDecision {
  kProfile,       // replay it under the range profiler
  kCopy,          // an identical launch was profiled: it gets those values (Decision::source_index)
  kSkipFiltered,  // not selected by the user's filters
  kSkipUnsafe,    // cannot be replayed safely
  kGraph,         // a graph launch the filters select: its kernels are not replayed, but each may
                  // take the counters of a profiled launch with its node's signature
};

struct Decision {
  LaunchDecision kind = LaunchDecision::kProfile;
  std::string reason;          // for the skips: why this kernel has no counters, one phrase
  uint64_t source_index = 0;   // kCopy: the selected-launch index of the profiled launch to copy
  uint64_t launch_index = 0;   // this launch's index among the selected launches
  // kProfile: this launch checks whether 1-byte parameters matter for `loose_check` (its loose
  // signature), against the first sample, whose full signature is `loose_first_signature`.
  std::optional<uint64_t> loose_check;
  uint64_t loose_first_signature = 0;
};

class LaunchSelector {
 public:
  explicit LaunchSelector(const MetricsConfig& config);
  // Counts selected launches for skip/count; call once per launch, in launch order.
  Decision decide(const LaunchFacts& facts);
  // A graph launch (facts.graph_launch): kGraph, or kSkipFiltered when the NVTX or op filters
  // leave it out. The kernel-name filter is for its kernels' sources (they passed it), and it
  // does not count towards --launch-skip and --launch-count.
  Decision decideGraphLaunch(const LaunchFacts& facts) const;
  // The check a Decision asked for came out: `same` when the deterministic counts were equal.
  void looseChecked(uint64_t loose_signature, bool same);
  bool looseSame(uint64_t loose_signature) const {
    auto it = loose_.find(loose_signature);
    return it != loose_.end() && it->second.state == Loose::State::kSame;
  }
  uint64_t profiled() const { return profiled_; }
  uint64_t copied() const { return copied_; }
  bool exhausted() const { return config_.launch_count && given_ >= *config_.launch_count; }

 private:
  std::string filterMiss(const LaunchFacts& facts) const;  // "" when every filter matches
  std::string rangeFilterMiss(const LaunchFacts& facts) const;  // the same for --nvtx-include and --ops
  MetricsConfig config_;
  std::optional<std::regex> regex_;
  uint64_t selected_ = 0;
  uint64_t given_ = 0;  // selected launches that got (or will get) counters: profiled or copied
  uint64_t profiled_ = 0;
  uint64_t copied_ = 0;
  struct Samples {
    uint64_t first_index = 0;
    uint64_t profiled = 0;
  };
  std::unordered_map<uint64_t, Samples> samples_;  // by signature
  struct Loose {
    enum class State { kUnchecked, kChecking, kSame, kDiffer };
    uint64_t first_index = 0;
    uint64_t first_signature = 0;
    State state = State::kUnchecked;
  };
  std::unordered_map<uint64_t, Loose> loose_;  // by loose signature
  // kCopy from the first launch of the loose signature, when its check said the bytes do not
  // matter; otherwise nothing (the full signature decides), possibly marking `d` as the check.
  bool copyByLooseSignature(const LaunchFacts& f, Decision& d);
};

}  // namespace fprof::collector
