// Roofline placement of one kernel or of a group of kernels (an op): arithmetic intensity per
// memory level, achieved rates, the binding roof, attainable time, % of roof and a bound label.
// Works with and without hardware counters; without them it says what trace data alone can.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fprof/analysis/ceilings.h"
#include "fprof/analysis/summary.h"
#include "fprof/core/store.h"

namespace fprof::analysis {

enum class Bound { kMemory, kCompute, kLatency, kLaunch, kUnknown };
std::string_view boundName(Bound b);  // "memory", "compute", "latency", "launch", "n/a"

struct RooflineOptions {
  // A kernel shorter than this spends less time running than the launch costs (docs/analysis.md).
  int64_t launch_overhead_ns = 4000;
  // Too little work in flight: fewer blocks than SMs, or occupancy below this fraction ...
  double low_occupancy = 0.25;
  // ... unless the kernel already reaches this fraction of its roof (then the roof binds).
  double roof_fraction_binds = 0.5;
};

// Work done by one kernel or summed over several: counters, all optional (absent = not collected).
struct Work {
  std::array<std::optional<double>, kPrecisionCount> flops{};
  std::array<std::optional<double>, kMemLevelCount> bytes{};
  bool has_counters = false;

  static Work fromCounters(const core::KernelCounters& c);
  // Sum; a quantity is present in the sum only if present in both (else it cannot be computed).
  Work& operator+=(const Work& o);
  std::optional<double> totalFlops() const;  // none unless some precision was counted
};

// What the placement is computed from.
struct PlacementInput {
  int64_t duration_ns = 0;
  int64_t launches = 1;
  std::optional<int64_t> blocks;           // per launch (kernels only)
  std::optional<int> sm_count;
  std::optional<double> occupancy;         // achieved if counted, else theoretical
  bool occupancy_achieved = false;
  // Built to run few warps per SM (origin.h, fewWarpsByDesign): its theoretical occupancy is no
  // sign of latency, and only a grid leaving more than half the SMs idle is (docs/analysis.md).
  bool few_warps_by_design = false;
  Work work;
};

struct Placement {
  int64_t duration_ns = 0;
  bool has_counters = false;
  std::optional<double> total_flops;
  std::array<std::optional<double>, kMemLevelCount> intensity_flop_per_byte{};
  std::array<std::optional<double>, kMemLevelCount> bytes_per_s{};
  std::array<std::optional<double>, kPrecisionCount> flops_per_s{};
  std::optional<double> achieved_flops_per_s;
  // Mixed precision: the compute time is the sum of each precision's FLOPs over its own peak, so
  // the effective peak is the FLOP-weighted harmonic mean of the peaks (docs/analysis.md).
  std::optional<double> compute_time_ns;
  std::optional<double> effective_peak_flops_per_s;
  std::array<std::optional<double>, kMemLevelCount> memory_time_ns{};
  std::optional<double> attainable_ns;  // max of the compute and memory times
  std::string binding;                  // "dram", "l2", "l1", "fp32", "tensor_fp16+fp32", "" if none
  std::optional<CeilingSource> binding_source;
  std::optional<double> roof_fraction;  // attainable / measured time, 0..1 (can exceed 1 if a roof is low)
  Bound bound = Bound::kUnknown;
  std::string reason;  // why this bound, in words; says when only trace data was available
  std::vector<std::string> missing;  // roofs or counters that were needed but absent
};

Placement place(const PlacementInput& in, const Ceilings& ceilings, const RooflineOptions& opt = {});
// The bound label alone, by the same rules as place(), without building any text (fast).
Bound classifyBound(const PlacementInput& in, const Ceilings& ceilings, const RooflineOptions& opt = {});

// Roofline time (ns) of a given amount of work against the ceilings: max over compute and memory
// levels; none if a needed roof is missing for any counted quantity, or nothing was counted.
std::optional<double> rooflineTimeNs(const Work& w, const Ceilings& ceilings);

// Index from kernel id to its counters in a profile (counters are sorted by kernel_id).
const core::KernelCounters* countersFor(const core::Profile& p, int64_t kernel_id);

// Ceilings per (process, device), computed once.
class CeilingCache {
 public:
  explicit CeilingCache(const core::Profile& p) : p_(p) {}
  const Ceilings& get(uint32_t process_id, uint32_t device_id);
  const core::DeviceInfo* device(uint32_t process_id, uint32_t device_id) const {
    return p_.device(process_id, device_id);
  }

 private:
  const core::Profile& p_;
  std::vector<std::pair<uint64_t, Ceilings>> cache_;
};

PlacementInput kernelInput(const core::Profile& p, const core::KernelRow& k, const core::DeviceInfo* device);
// The same for a kernel read on its own (a stream of the kernel table): its counters, if any, and
// its demangled name given.
PlacementInput kernelInput(const core::KernelRow& k, const core::DeviceInfo* device, const core::KernelCounters* counters,
                           std::string_view demangled_name);
Placement placeKernel(const core::Profile& p, size_t kernel_index, CeilingCache& ceilings,
                      const RooflineOptions& opt = {});

// A group of kernels placed together: by name+shape (RunSummary's groups) or by NVTX op.
struct GroupPlacement {
  std::string label;  // demangled name or NVTX path
  int64_t calls = 0;
  Placement placement;
};

struct RooflineResult {
  std::vector<GroupPlacement> kernel_groups;  // same order as summarize()'s groups
  std::vector<GroupPlacement> ops;            // per NVTX path (innermost range path), by time
  std::array<int64_t, 5> kernels_by_bound{};  // indexed by Bound
  std::array<int64_t, 5> ns_by_bound{};
  int64_t kernels_with_counters = 0;
};

RooflineResult analyzeRoofline(const core::Profile& p, const RooflineOptions& opt = {});
// The same, reusing a summary the caller already has (summarize(p)) instead of computing it again.
RooflineResult analyzeRoofline(const core::Profile& p, const RunSummary& summary, const RooflineOptions& opt = {});

// Kernels placed in groups of the caller's choosing, as the ops above: group_of[kernel] indexes
// `labels`, -1 for none. One placement per label that has kernels, by time, descending.
std::vector<GroupPlacement> placeKernelGroups(const core::Profile& p, const std::vector<int32_t>& group_of,
                                              const std::vector<std::string>& labels, const RooflineOptions& opt = {});

}  // namespace fprof::analysis
