// Human units (see format.h).
#include "fprof/reports/format.h"

#include <fmt/format.h>

#include <cmath>

namespace fprof::reports {
namespace {

std::string scaled(double v, const char* unit) {
  static const char* const kPrefix[] = {"", "k", "M", "G", "T", "P", "E"};
  int p = 0;
  double a = std::fabs(v);
  while (a >= 1000.0 && p < 6) {
    a /= 1000.0;
    v /= 1000.0;
    ++p;
  }
  const char* fmt_str = a >= 100 ? "{:.0f} {}{}" : (a >= 10 ? "{:.1f} {}{}" : "{:.2f} {}{}");
  return fmt::format(fmt::runtime(fmt_str), v, kPrefix[p], unit);
}

}  // namespace

std::string formatDurationNs(double ns) {
  if (ns < 1e3) return fmt::format("{:.0f} ns", ns);
  if (ns < 1e6) return fmt::format("{:.2f} us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.2f} ms", ns / 1e6);
  return fmt::format("{:.2f} s", ns / 1e9);
}

std::string formatBytes(double bytes) {
  if (bytes < 1024) return fmt::format("{:.0f} B", bytes);
  if (bytes < 1024.0 * 1024) return fmt::format("{:.1f} KiB", bytes / 1024);
  if (bytes < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
  return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
}

std::string formatPercent(std::optional<double> fraction) {
  return fraction && std::isfinite(*fraction) ? fmt::format("{:.1f}%", *fraction * 100.0) : "n/a";
}

std::string formatFlopRate(double flops_per_s) { return scaled(flops_per_s, "FLOP/s"); }

std::string formatByteRate(double bytes_per_s) { return scaled(bytes_per_s, "B/s"); }

std::string formatIntensity(double flops_per_byte) {
  if (flops_per_byte >= 100) return fmt::format("{:.0f} FLOP/B", flops_per_byte);
  if (flops_per_byte >= 10) return fmt::format("{:.1f} FLOP/B", flops_per_byte);
  if (flops_per_byte >= 0.01 || flops_per_byte == 0) return fmt::format("{:.2f} FLOP/B", flops_per_byte);
  return fmt::format("{:.2e} FLOP/B", flops_per_byte);
}

std::string formatCount(double value) {
  if (std::fabs(value) < 1000) return fmt::format("{:.0f}", value);
  std::string s = scaled(value, "");
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::string formatSignedPercent(double fraction) { return fmt::format("{:+.1f}%", fraction * 100.0); }

std::string formatShape(int x, int y, int z) {
  if (y == 1 && z == 1) return std::to_string(x);
  return fmt::format("{}x{}x{}", x, y, z);
}

}  // namespace fprof::reports
