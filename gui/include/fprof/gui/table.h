// The kernel table without a GUI: columns, cell text, name-regex and NVTX filtering, sorting with
// "n/a" last, and CSV export of exactly what the table shows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fprof/core/expected.h"
#include "fprof/gui/document.h"

namespace fprof::gui {

enum class Column {
  kName = 0,
  kCalls,
  kTime,
  kShare,
  kIntensity,
  kFlops,
  kRoof,
  kBound,
  kRegisters,
  kLocal,
  kShared,
  kOccTheoretical,
  kOccAchieved,
  kNvtx,
};
inline constexpr size_t kColumnCount = 14;
const char* columnName(Column c);

// Text of one cell. Intensity is at `level`; share is of `total_kernel_ns`.
std::string cellText(const Item& item, Column c, MemLevel level, int64_t total_kernel_ns);

struct TableFilter {
  std::string name_regex;  // ECMAScript, case-insensitive, searched anywhere in the name as shown
                           // (its first core::kMaxShownCodePoints characters); "" = all
  std::string nvtx;        // substring of the NVTX path as shown or as recorded, case-insensitive; "" = all
};

// Indices of the items passing the filter, in item order; an error for a bad regex.
core::Expected<std::vector<uint32_t>> filterItems(const std::vector<Item>& items, const TableFilter& filter);

// Stable sort of `rows` (indices into items) by a column; unknown values sort last either way.
void sortRows(std::vector<uint32_t>& rows, const std::vector<Item>& items, Column c, bool ascending, MemLevel level);

// CSV (RFC 4180 quoting) of the rows, every column, numbers unformatted (ns, bytes, FLOP/s); the
// full kernel name first, the short one the table shows last.
std::string tableCsv(const std::vector<Item>& items, const std::vector<uint32_t>& rows, MemLevel level,
                     int64_t total_kernel_ns);

}  // namespace fprof::gui
