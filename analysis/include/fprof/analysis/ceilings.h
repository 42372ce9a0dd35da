// The roofs a kernel is placed against: bandwidth per memory level and FLOP/s per precision, for
// one device. Measured ceilings (the `ceiling` table, written by `fprof ceilings`) are preferred;
// otherwise datasheet values are computed from the device attributes (docs/analysis.md).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "fprof/core/store.h"

namespace fprof::analysis {

// Memory levels of the hierarchical roofline, outermost first.
enum class MemLevel { kDram = 0, kL2 = 1, kL1 = 2 };
inline constexpr size_t kMemLevelCount = 3;
std::string_view memLevelName(MemLevel level);  // "dram", "l2", "l1"

// Precisions with their own compute roof. Names match the `ceiling` table and KernelCounters.
enum class Precision {
  kFp64 = 0,
  kFp32,
  kFp16,
  kBf16,
  kTensorFp16,
  kTensorBf16,
  kTensorTf32,
  kTensorFp8,
  kTensorFp64,
  kTensorInt8,
};
inline constexpr size_t kPrecisionCount = 10;
std::string_view precisionName(Precision p);  // "fp64", ..., "tensor_int8"

enum class CeilingSource { kMeasured, kDatasheet };
std::string_view ceilingSourceName(CeilingSource s);  // "measured", "datasheet"

struct Roof {
  double value = 0;  // bytes/s for a memory level, FLOP/s (or OP/s for int8) for a precision
  CeilingSource source = CeilingSource::kDatasheet;
  std::string method;  // how it was measured or computed, in words
};

struct Ceilings {
  std::string device_name;
  std::array<std::optional<Roof>, kMemLevelCount> bandwidth;  // bytes/s per MemLevel
  std::array<std::optional<Roof>, kPrecisionCount> compute;   // FLOP/s per Precision

  const std::optional<Roof>& bw(MemLevel l) const { return bandwidth[static_cast<size_t>(l)]; }
  const std::optional<Roof>& peak(Precision p) const { return compute[static_cast<size_t>(p)]; }
};

// Datasheet rates per SM per clock for one compute capability (dense, no sparsity). None for a
// capability that is not in the table; a missing precision is none in the result.
struct DatasheetRates {
  int compute_major = 0;
  int compute_minor = 0;
  const char* example = "";  // a GPU of this capability, for the method text
  std::array<double, kPrecisionCount> flops_per_clock_per_sm{};  // 0 = no such unit
};
std::optional<DatasheetRates> datasheetRates(int compute_major, int compute_minor);

// Datasheet ceilings from the device attributes alone (the table above, clocks, bus width).
Ceilings datasheetCeilings(const core::DeviceInfo& device);

// Measured ceilings for this device's name where the profile holds them, datasheet otherwise,
// roof by roof.
Ceilings ceilingsFor(const core::Profile& profile, const core::DeviceInfo& device);

}  // namespace fprof::analysis
