// Run diff and the CI gate: kernels (and NVTX ops) of two runs matched by name, launch shape and
// NVTX path; time with repeat statistics, counters as near-exact signals; new, vanished and
// renamed kernels. The gate turns a diff into a verdict (docs/gate.md).
#pragma once

#include <array>
#include <cstdint>
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

struct SideStats {
  int64_t calls = 0;
  std::vector<double> samples_ns;  // per launch (kernels) or per range instance (ops)
  double total_ns = 0;
  std::optional<double> median_ns;
  std::array<std::optional<double>, kCounterMetricCount> metrics{};  // per launch: mean, max or min
};

enum class MatchKind { kMatched, kRenamed, kNew, kVanished };
std::string_view matchKindName(MatchKind k);

struct DiffEntry {
  MatchKind kind = MatchKind::kMatched;
  std::string name;       // current name (base name for vanished)
  std::string base_name;  // differs from name for renamed kernels
  std::string shape;      // "grid 128x1x1 block 256x1x1" ("" for ops)
  std::string nvtx_path;
  std::optional<SideStats> base, cur;
  std::optional<double> time_change;  // median cur / median base - 1
  std::optional<MannWhitney> test;    // cur slower than base?
  std::optional<MannWhitney> test_faster;
};

struct RunDiff {
  std::vector<DiffEntry> kernels;  // by |time change in total ns|, largest first
  std::vector<DiffEntry> ops;      // by NVTX path
  double base_total_ns = 0, cur_total_ns = 0;
};

RunDiff diffProfiles(const core::Profile& base, const core::Profile& cur);

struct GateOptions {
  double time_threshold = 0.05;     // median slowdown that counts, when significant
  double counter_threshold = 0.01;  // relative change of a counter that counts
  double alpha = 0.01;              // one-sided Mann-Whitney significance level
  double min_share = 0.0;           // ignore kernels under this share of the base run's kernel time
  bool fail_on_vanished = false;
  bool fail_on_new = false;
  std::vector<std::string> ignore;  // substrings of kernel names to skip
};

struct GateFinding {
  enum class Kind { kTime, kCounter, kNew, kVanished, kRenamed, kUntestable, kImproved };
  Kind kind = Kind::kTime;
  bool regression = false;
  std::string kernel;
  std::string shape;
  std::string metric;  // "time", a counter name, or ""
  std::optional<double> base_value, cur_value, change;
  std::optional<double> p_value;
  std::string message;
  std::string base_kernel;  // a renamed kernel's name in the base run, which the message quotes
};
std::string_view findingKindName(GateFinding::Kind k);
// The message with the kernel names it quotes in their short form, for text a person reads.
std::string shortMessage(const GateFinding& f, const KernelNames& names);

struct GateResult {
  std::vector<GateFinding> findings;  // regressions first
  int64_t kernels_checked = 0;
  int64_t regressions = 0;
  bool passed() const { return regressions == 0; }
};

GateResult evaluateGate(const RunDiff& diff, const GateOptions& opt);

}  // namespace fprof::analysis
