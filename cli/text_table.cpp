// Text tables for the terminal (see text_table.h).
#include "text_table.h"

#include <algorithm>

#include "fprof/core/text.h"

namespace fprof::cli {

TextTable::TextTable(std::vector<std::string> headers, std::vector<Align> align)
    : headers_(std::move(headers)), align_(std::move(align)) {
  align_.resize(headers_.size(), Align::kLeft);
}

void TextTable::addRow(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

std::string TextTable::render() const {
  // Widths in code points: a cleaned name shows a control character as one 3-byte picture.
  std::vector<size_t> width(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) width[c] = core::codePointCount(headers_[c]);
  for (const auto& r : rows_) {
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], core::codePointCount(r[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c) out += "  ";
      const size_t pad = width[c] - core::codePointCount(cells[c]);
      if (align_[c] == Align::kRight) out.append(pad, ' ');
      out += cells[c];
      if (align_[c] == Align::kLeft && c + 1 < cells.size()) out.append(pad, ' ');
    }
    return out + "\n";
  };
  std::string out = line(headers_);
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string truncateMiddle(const std::string& s, size_t max_chars) {
  // Between code points, never inside one: a cut must not make invalid UTF-8.
  return core::truncateTextMiddle(s, max_chars, "...");
}

}  // namespace fprof::cli
