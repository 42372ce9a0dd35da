// Aligned plain-text tables for terminal output (units come from fprof/reports/format.h, so the
// terminal and the reports read the same).
#pragma once

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

std::string truncateMiddle(const std::string& s, size_t max_chars);

}  // namespace fprof::cli
