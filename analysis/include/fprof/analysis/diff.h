// Run diff and the CI gate: kernels of two runs matched by name, launch shape and op (the op each
// launch is reported under, run_analysis.h's KernelOps: emit_nvtx's "aten::mm" without its op_id
// and sizes), NVTX ops by path (its framework ranges by their op names, framework_ops.h); time
// with repeat statistics, counters as near-exact signals; new, vanished and renamed kernels, and
// what differs in how the runs were recorded. The gate turns a diff into a verdict: per launch
// group, per kernel for groups too rare to test alone, and over the whole run (docs/gate.md).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fprof/analysis/kernel_names.h"
#include "fprof/analysis/stats.h"
#include "fprof/core/store.h"

namespace fprof::analysis {

// Deterministic per-launch quantities compared between runs. "Higher is worse" for all but the
// occupancies.
enum class CounterMetric {
  kDramBytes = 0,
  kL2Bytes,
  kL1Bytes,
  kFlops,
  kLocalBytes,            // local-memory (spill) traffic, load + store
  kRegistersPerThread,    // trace
  kLocalBytesPerThread,   // trace: stack frame and spills
  kTheoreticalOccupancy,  // trace
  kAchievedOccupancy,
};
inline constexpr size_t kCounterMetricCount = 9;
std::string_view counterMetricName(CounterMetric m);
bool higherIsWorse(CounterMetric m);

// Where one launch ran on its device's timeline: its own time (core::KernelLaunch::ownStartNs to
// end_ns), for the time the device was busy.
struct LaunchSpan {
  uint64_t device_key = 0;  // the GPU: its UUID's hash where recorded, else process id << 32 | device id
  int64_t start_ns = 0, end_ns = 0;
};

struct SideStats {
  int64_t calls = 0;
  // Per launch (kernels) or per range instance (ops). Of a launch group kept by a rank summary
  // (fprof job), at most kSummarySamples evenly spaced order statistics of them (orderStatistics):
  // the tests then run on that many samples; calls, totals, median and spread stay exact.
  std::vector<double> samples_ns;
  double total_ns = 0;
  std::optional<double> median_ns;
  double squared_deviation_ns2 = 0;  // sum over the launches of (duration - mean)^2: the noise estimate
  std::array<std::optional<double>, kCounterMetricCount> metrics{};  // per launch: mean, max or min
  std::vector<LaunchSpan> spans;   // kernels: one per launch, in the order of samples_ns
};

enum class MatchKind { kMatched, kRenamed, kNew, kVanished };
std::string_view matchKindName(MatchKind k);

struct DiffEntry {
  MatchKind kind = MatchKind::kMatched;
  std::string name;       // current name (base name for vanished)
  std::string base_name;  // differs from name for renamed kernels
  std::string shape;      // "grid 128x1x1 block 256x1x1" ("" for ops)
  std::string op;         // kernels: the op the launches ran under ("" = none)
  // ops: the path, its framework ranges by op name (nvtxPathOpNames); kernels: the path all
  // launches share, "" when they differ
  std::string nvtx_path;
  std::optional<SideStats> base, cur;
  std::optional<double> time_change;  // median cur / median base - 1
  std::optional<MannWhitney> test;    // cur slower than base?
  std::optional<MannWhitney> test_faster;
};

// Something that differs in how the two runs were recorded, which makes their times or counters
// not directly comparable: the GPUs, the mode (trace or metrics), the counters collected.
struct SetupDifference {
  std::string what;  // "devices", "mode", "metrics"
  std::string base, cur;
  std::string message;
};

// GPU busy time recorded with the runs rather than computed from launch spans (rank summaries
// keep a rank's busy time, not its launches); absent for a run without a timeline.
struct RecordedBusy {
  std::optional<double> base_ns, cur_ns;
};

struct RunDiff {
  std::vector<DiffEntry> kernels;  // by |time change in total ns|, largest first
  std::vector<DiffEntry> ops;      // by NVTX path
  double base_total_ns = 0, cur_total_ns = 0;
  std::vector<SetupDifference> setup_differences;
  // Set when the launches carry no spans: the busy-time check reads these (ignore lists do not
  // apply to them).
  std::optional<RecordedBusy> busy;
};

struct KernelOps;  // run_analysis.h: the op each kernel is reported under

// Front ends read the diff from RunAnalysis::comparison(), which passes each run's KernelOps; the
// two-profile form names the ops itself.
RunDiff diffProfiles(const core::Profile& base, const KernelOps& base_ops, const core::Profile& cur,
                     const KernelOps& cur_ops);
RunDiff diffProfiles(const core::Profile& base, const core::Profile& cur);

// One launch group of a run (kernel, launch shape, op) with its statistics, as diffProfiles
// compares it; a rank summary of fprof job keeps these, with their samples cut to
// kSummarySamples, so that two jobs compare as two files do.
struct LaunchGroupStats {
  std::string name, shape, op;
  std::string nvtx_path;  // the path every launch shares, "" when they differ
  SideStats stats;        // without spans
};
inline constexpr size_t kSummarySamples = 64;
std::vector<LaunchGroupStats> launchGroupStats(const core::Profile& p, const KernelOps& ops);
// Samples cut to at most kSummarySamples order statistics and spans dropped: what a summary keeps.
LaunchGroupStats summarized(LaunchGroupStats g);
// The launch groups of several runs (a job's ranks) as those of one run, added one run at a time:
// calls, times and spread summed; counters combined per launch, kept only where every run that
// has the group had them; samples pooled, each run giving at most max_samples / runs order
// statistics of its own, so that memory stays bounded however many runs there are.
class LaunchGroupCombiner {
 public:
  LaunchGroupCombiner(size_t runs, size_t max_samples);
  void add(const std::vector<LaunchGroupStats>& run);
  std::vector<LaunchGroupStats> groups() const;

 private:
  struct Combined {
    LaunchGroupStats g;
    std::array<double, kCounterMetricCount> value{};
    std::array<bool, kCounterMetricCount> present{};
  };
  size_t per_run_samples_ = 1;
  std::map<std::string, Combined> groups_;
};
// The diff of two runs given by their launch groups (no NVTX ops): what diffProfiles gives of
// their profiles, kernels matched, renamed, new and vanished by the same rules.
RunDiff diffLaunchGroups(std::vector<LaunchGroupStats> base, std::vector<LaunchGroupStats> cur);

// How a run was recorded, as far as the gate compares it: its devices ("NAME (sm_XY)", each once,
// in name order), its mode, its counters (the metric_set and metrics metadata).
struct RecordingSetup {
  std::string devices, mode, metric_set, metrics;
};
RecordingSetup recordingSetup(const core::Profile& p);
std::vector<SetupDifference> setupDifferences(const RecordingSetup& base, const RecordingSetup& cur);
std::vector<SetupDifference> setupDifferences(const core::Profile& base, const core::Profile& cur);

// One run's side of a comparison: its launch groups and NVTX ops with their statistics (by group
// key), its kernel time and how it was recorded. Made from the run alone, so that a comparison
// need not hold both runs at once (fprof gate reads one file at a time); diffSides of the two
// sides is diffProfiles of the two runs.
struct DiffSide {
  std::map<std::string, LaunchGroupStats> kernels;
  std::map<std::string, LaunchGroupStats> ops;
  double total_ns = 0;
  RecordingSetup setup;
};
DiffSide diffSideOf(const core::Profile& p, const KernelOps& ops);
RunDiff diffSides(DiffSide base, DiffSide cur);

struct GateOptions {
  double time_threshold = 0.05;     // median slowdown that counts, when significant (keys, groups, whole run)
  double counter_threshold = 0.01;  // relative change of a counter (and of the launch count) that counts
  double alpha = 0.01;              // one-sided significance level of every time test
  double min_share = 0.0;           // keys under this share of the base run's kernel time: whole-run checks only
  bool fail_on_vanished = false;
  bool fail_on_new = false;
  std::vector<std::string> ignore;  // substrings of kernel names to skip, in every check
};

struct GateFinding {
  // kTime, kCounter: one launch group (key). kGroupTime: the launches of keys too rare to test
  // alone, pooled by kernel or over all rare kernels. kRun: a whole-run check. kFolded: a key
  // slower past the threshold but too rare to test alone; its group's test decides (information).
  enum class Kind { kTime, kCounter, kNew, kVanished, kRenamed, kFolded, kImproved, kGroupTime, kRun };
  Kind kind = Kind::kTime;
  bool regression = false;
  std::string kernel;  // "" for whole-run checks and the pool of rare kernels
  std::string shape;
  std::string op;
  std::string metric;  // "time", a counter name, a whole-run metric, or ""
  std::optional<double> base_value, cur_value, change;
  std::optional<double> p_value;
  std::string message;
  std::string base_kernel;  // a renamed kernel's name in the base run, which the message quotes
};
std::string_view findingKindName(GateFinding::Kind k);
// The message with the kernel names it quotes in their short form, for text a person reads.
std::string shortMessage(const GateFinding& f, const KernelNames& names);

// How a matched launch group (key) was tested for time. Counters are compared per key always.
enum class TimeCheck {
  kAlone,      // enough launches for the key's own test
  kKernel,     // too few: pooled with the other rare keys of the same kernel
  kPool,       // too few by kernel too: pooled with every such key
  kTotalsOnly, // too few even pooled (or under min_share): counted in the whole-run checks only
};
std::string_view timeCheckName(TimeCheck c);

// Launches of keys too rare to test alone, tested together: each launch's time divided by its
// key's median over both runs, the one-sided Mann-Whitney test over those ratios, the change of
// their median.
struct GateGroup {
  TimeCheck check = TimeCheck::kKernel;  // kKernel or kPool
  std::string kernel;                    // kKernel: the kernel's name
  int64_t keys = 0, base_launches = 0, cur_launches = 0;
  std::optional<double> change, p_value;
  bool regression = false;
};

// A whole-run check (over the launches of kernels not ignored), e.g. total kernel time.
struct RunCheck {
  std::string metric;  // kernel_time_ns, busy_time_ns, launches (of matched keys), new_kernel_time_ns
  bool known = true;   // false: busy time of a run without a timeline (kernels replayed for counters)
  double base = 0, cur = 0;
  std::optional<double> change;   // cur / base - 1; new_kernel_time_ns: net moved / base kernel time
  std::optional<double> p_value;  // time checks, where the launches' spread gives a noise estimate
  bool regression = false;
  std::string message;
};

struct GateCoverage {
  std::array<int64_t, 4> keys{};      // by TimeCheck
  std::array<int64_t, 4> launches{};  // current run's launches, by TimeCheck
};

struct GateResult {
  std::vector<GateFinding> findings;  // regressions first
  std::vector<GateGroup> groups;      // the pooled tests, kernels first, the pool last
  std::vector<RunCheck> run_checks;   // kernel time, busy time, launches, time in new kernels
  GateCoverage coverage;
  std::vector<SetupDifference> setup_differences;
  std::vector<TimeCheck> entry_checks;  // per RunDiff::kernels entry (matched and renamed; else kTotalsOnly)
  int64_t kernels_checked = 0;        // matched and renamed keys
  int64_t regressions = 0;
  bool passed() const { return regressions == 0; }
};

GateResult evaluateGate(const RunDiff& diff, const GateOptions& opt);

// Whether `base_launches` vs `cur_launches` samples can give a one-sided Mann-Whitney p below
// alpha at all (3 vs 3 cannot go below 0.05).
bool canReachSignificance(size_t base_launches, size_t cur_launches, double alpha);

}  // namespace fprof::analysis
