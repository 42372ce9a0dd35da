// Metrics mode's settings (from the environment `fprof run --metrics` sets) and the choice of
// which launches to profile. Pure C++: tested on the CPU.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "config.h"

namespace fprof::collector {

struct MetricsConfig {
  bool enabled = false;               // FPROF_MODE=metrics
  std::string selection = "roofline";  // FPROF_METRICS: a set name or metric names
  std::vector<std::string> metrics;    // expanded
  std::string kernel_regex;            // FPROF_KERNEL_REGEX (ECMAScript, searched in the demangled name)
  std::vector<std::string> nvtx_include;  // FPROF_NVTX_INCLUDE: substrings of the NVTX path, any matches
  std::vector<std::string> ops;        // FPROF_OPS: NVTX op names (op=<name> tokens, docs/nvtx-convention.md)
  uint64_t launch_skip = 0;            // FPROF_LAUNCH_SKIP: selected launches to let pass first
  std::optional<uint64_t> launch_count;  // FPROF_LAUNCH_COUNT: selected launches to profile at most
  size_t batch_ranges = 256;           // FPROF_METRICS_BATCH: ranges decoded at once
  std::vector<std::string> errors;     // settings that could not be used: metrics mode stays off
};

MetricsConfig readMetricsConfig(const EnvLookup& env);

// What the launch callback knows when it decides.
struct LaunchFacts {
  std::string demangled_name;
  const std::string* nvtx_path = nullptr;
  bool graph_launch = false;
  bool cooperative = false;
};

enum class LaunchDecision { kProfile, kSkipFiltered, kSkipUnsafe };

class LaunchSelector {
 public:
  explicit LaunchSelector(const MetricsConfig& config);
  // Counts selected launches for skip/count; call once per launch, in launch order.
  LaunchDecision decide(const LaunchFacts& facts, std::string* unsafe_reason = nullptr);
  uint64_t profiled() const { return profiled_; }
  bool exhausted() const { return config_.launch_count && profiled_ >= *config_.launch_count; }

 private:
  bool matchesFilters(const LaunchFacts& facts) const;
  MetricsConfig config_;
  std::optional<std::regex> regex_;
  uint64_t selected_ = 0;
  uint64_t profiled_ = 0;
};

}  // namespace fprof::collector
