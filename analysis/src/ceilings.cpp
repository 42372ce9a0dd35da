// Ceilings: measured where the profile holds them, datasheet values otherwise (see ceilings.h).
#include "fprof/analysis/ceilings.h"

#include <fmt/format.h>

namespace fprof::analysis {

std::string_view memLevelName(MemLevel level) {
  switch (level) {
    case MemLevel::kDram: return "dram";
    case MemLevel::kL2: return "l2";
    case MemLevel::kL1: return "l1";
  }
  return "?";
}

std::string_view precisionName(Precision p) {
  static constexpr std::array<std::string_view, kPrecisionCount> kNames = {
      "fp64", "fp32", "fp16", "bf16", "tensor_fp16", "tensor_bf16", "tensor_tf32", "tensor_fp8", "tensor_fp64",
      "tensor_int8"};
  return kNames[static_cast<size_t>(p)];
}

std::string_view ceilingSourceName(CeilingSource s) {
  return s == CeilingSource::kMeasured ? "measured" : "datasheet";
}

std::optional<DatasheetRates> datasheetRates(int compute_major, int compute_minor) {
  // FLOP per clock per SM, dense, an FMA counted as 2; order as Precision:
  // fp64, fp32, fp16, bf16, tensor_fp16, tensor_bf16, tensor_tf32, tensor_fp8, tensor_fp64, tensor_int8.
  // From NVIDIA's architecture whitepapers (data-centre parts; GeForce parts halve tensor rates
  // with fp32 accumulation). docs/analysis.md lists the derivation.
  static const DatasheetRates kTable[] = {
      {7, 0, "V100", {64, 128, 256, 0, 1024, 0, 0, 0, 0, 0}},
      {7, 5, "T4", {4, 128, 256, 0, 512, 0, 0, 0, 0, 1024}},
      {8, 0, "A100", {64, 128, 512, 256, 2048, 2048, 1024, 0, 128, 4096}},
      {8, 6, "A10", {4, 256, 256, 256, 512, 512, 256, 0, 0, 1024}},
      {8, 9, "L4/L40", {4, 256, 256, 256, 1024, 1024, 512, 2048, 0, 2048}},
      {9, 0, "H100", {128, 256, 512, 512, 4096, 4096, 2048, 8192, 256, 8192}},
  };
  for (const DatasheetRates& r : kTable) {
    if (r.compute_major == compute_major && r.compute_minor == compute_minor) return r;
  }
  return std::nullopt;
}

Ceilings datasheetCeilings(const core::DeviceInfo& d) {
  Ceilings c;
  c.device_name = d.name;
  if (d.memory_clock_khz > 0 && d.memory_bus_width_bits > 0) {
    // Double data rate: two transfers per memory clock over the whole bus.
    const double bw = 2.0 * static_cast<double>(d.memory_clock_khz) * 1e3 * d.memory_bus_width_bits / 8.0;
    c.bandwidth[static_cast<size_t>(MemLevel::kDram)] =
        Roof{bw, CeilingSource::kDatasheet,
             fmt::format("2 x memory clock {} kHz x bus {} bits / 8", d.memory_clock_khz, d.memory_bus_width_bits)};
  }
  if (d.sm_clock_khz > 0 && d.sm_count > 0) {
    const double clock_hz = static_cast<double>(d.sm_clock_khz) * 1e3;
    if (d.compute_major >= 7) {
      // Volta through Hopper: an SM's L1 delivers 128 bytes per clock.
      c.bandwidth[static_cast<size_t>(MemLevel::kL1)] =
          Roof{128.0 * d.sm_count * clock_hz, CeilingSource::kDatasheet,
               fmt::format("{} SMs x 128 B/clock x SM clock {} kHz", d.sm_count, d.sm_clock_khz)};
    }
    if (auto rates = datasheetRates(d.compute_major, d.compute_minor)) {
      for (size_t i = 0; i < kPrecisionCount; ++i) {
        const double per_clock = rates->flops_per_clock_per_sm[i];
        if (per_clock <= 0) continue;
        c.compute[i] = Roof{per_clock * d.sm_count * clock_hz, CeilingSource::kDatasheet,
                            fmt::format("{} SMs x {} FLOP/clock/SM (sm_{}{}, {}) x SM clock {} kHz", d.sm_count,
                                        per_clock, d.compute_major, d.compute_minor, rates->example,
                                        d.sm_clock_khz)};
      }
    }
  }
  return c;
}

Ceilings ceilingsFor(const core::Profile& profile, const core::DeviceInfo& device) {
  Ceilings c = datasheetCeilings(device);
  auto apply = [&](std::optional<Roof>& slot, const core::CeilingRecord& r) {
    const CeilingSource src = r.source == "measured" ? CeilingSource::kMeasured : CeilingSource::kDatasheet;
    if (r.value <= 0) return;
    // A measured roof beats everything; a stored datasheet roof beats the computed one.
    if (slot && slot->source == CeilingSource::kMeasured && src != CeilingSource::kMeasured) return;
    slot = Roof{r.value, src, r.method.empty() ? r.source : r.method};
  };
  for (const core::CeilingRecord& r : profile.ceilings) {
    if (r.device_name != device.name) continue;
    for (size_t l = 0; l < kMemLevelCount; ++l) {
      if (r.ceiling == memLevelName(static_cast<MemLevel>(l))) apply(c.bandwidth[l], r);
    }
    for (size_t p = 0; p < kPrecisionCount; ++p) {
      if (r.ceiling == precisionName(static_cast<Precision>(p))) apply(c.compute[p], r);
    }
  }
  return c;
}

}  // namespace fprof::analysis
