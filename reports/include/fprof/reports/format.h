// Human units for reports. Durations, bytes and percentages read exactly as in `fprof info`, so
// the terminal, the Markdown summary and the HTML report agree digit for digit.
#pragma once

#include <cmath>
#include <optional>
#include <string>

namespace fprof::reports {

std::string formatDurationNs(double ns);                    // "812 ns", "3.41 us", "12.50 ms", "2.03 s"
std::string formatBytes(double bytes);                      // "512 B", "4.0 KiB", "16.0 MiB", "1.50 GiB"
std::string formatPercent(std::optional<double> fraction);  // "62.5%" or "n/a" (absent or not finite)
std::string formatFlopRate(double flops_per_s);             // "12.3 TFLOP/s"
std::string formatByteRate(double bytes_per_s);             // "1.23 TB/s" (decimal, as datasheets quote)
std::string formatIntensity(double flops_per_byte);         // "0.25 FLOP/B", "12.5 FLOP/B"
std::string formatCount(double value);                      // "1.2 G", "340 M", "12 k", "7"
std::string formatSignedPercent(double fraction);           // "+12.5%", "-3.0%"

// "n/a" for an absent value, or one that is not finite (no measurement reads "inf"), else the
// formatter's text.
template <class F>
std::string orNa(const std::optional<double>& value, F&& format) {
  return value && std::isfinite(*value) ? format(*value) : std::string("n/a");
}

// Launch shape as `fprof info` prints it: "128" or "64x8x1".
std::string formatShape(int x, int y, int z);

}  // namespace fprof::reports
