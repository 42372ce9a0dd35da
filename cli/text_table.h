// Aligned plain-text tables and human units for terminal output.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fprof::cli {

class TextTable {
 public:
  enum class Align { kLeft, kRight };
  explicit TextTable(std::vector<std::string> headers, std::vector<Align> align = {});
  void addRow(std::vector<std::string> cells);
  std::string render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;
};

std::string formatDurationNs(double ns);  // "812 ns", "3.41 us", "12.5 ms", "2.03 s"
std::string formatBytes(double bytes);     // "512 B", "4.0 KiB", "16.0 MiB"
std::string formatPercent(std::optional<double> fraction);  // "62.5%" or "n/a"
std::string truncateMiddle(const std::string& s, size_t max_chars);

}  // namespace fprof::cli
