// Reading nvdisasm's text, shared by the SASS parsers (sass_half.cpp, sass_pc.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <vector>
#include <string>
#include <string_view>

#include "fprof/core/sass_half.h"  // CodeRange

namespace fprof::core::detail {

template <typename F>
void forEachLine(std::string_view text, F&& f) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    f(text.substr(pos, end - pos));
    pos = end + 1;
  }
}

// The address nvdisasm prints before an instruction ("/*0180*/"), none on other lines.
inline std::optional<uint64_t> addressOf(std::string_view line) {
  const size_t open = line.find("/*"), close = line.find("*/");
  if (open == std::string_view::npos || close == std::string_view::npos || close <= open + 2) return std::nullopt;
  const std::string address(line.substr(open + 2, close - open - 2));
  if (address.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) return std::nullopt;
  return std::stoull(address, nullptr, 16);
}

// Each instruction line of nvdisasm's text over several functions' code laid end to end, with the
// range holding its address: f(range, address, line). Lines outside every range are skipped.
template <typename F>
void forEachLineInRanges(std::string_view text, const std::vector<CodeRange>& ranges, F&& f) {
  // The ranges do not overlap: by start, the one holding an address is the last starting at or before it.
  std::vector<CodeRange> by_start = ranges;
  std::sort(by_start.begin(), by_start.end(), [](const CodeRange& a, const CodeRange& b) { return a.begin < b.begin; });
  forEachLine(text, [&](std::string_view line) {
    const std::optional<uint64_t> at = addressOf(line);
    if (!at) return;
    auto after = std::upper_bound(by_start.begin(), by_start.end(), *at,
                                  [](uint64_t a, const CodeRange& r) { return a < r.begin; });
    if (after == by_start.begin() || *at >= std::prev(after)->end) return;
    f(*std::prev(after), *at, line);
  });
}

}  // namespace fprof::core::detail
