// The kernel table's logic (see table.h): cells, filter, sort, CSV.
#include "fprof/gui/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>

#include "fprof/core/text.h"

namespace fprof::gui {

const char* columnName(Column c) {
  switch (c) {
    case Column::kName: return "kernel";
    case Column::kCalls: return "calls";
    case Column::kTime: return "time";
    case Column::kShare: return "share";
    case Column::kIntensity: return "FLOP/byte";
    case Column::kFlops: return "FLOP/s";
    case Column::kRoof: return "% of roof";
    case Column::kBound: return "bound";
    case Column::kRegisters: return "regs";
    case Column::kLocal: return "local B/thr";
    case Column::kShared: return "smem B";
    case Column::kOccTheoretical: return "occ. theor.";
    case Column::kOccAchieved: return "occ. achieved";
    case Column::kNvtx: return "NVTX path";
  }
  return "?";
}

namespace {

// The sortable value of a cell; none for "n/a". Text columns sort by name separately.
std::optional<double> cellValue(const Item& it, Column c, MemLevel level, int64_t total_ns) {
  const ItemPlacement& pl = it.placement;
  switch (c) {
    case Column::kCalls: return static_cast<double>(it.calls);
    case Column::kTime: return static_cast<double>(it.duration_ns);
    case Column::kShare:
      if (total_ns <= 0) return std::nullopt;
      return static_cast<double>(it.duration_ns) / static_cast<double>(total_ns);
    case Column::kIntensity: return pl.intensity_flop_per_byte[static_cast<size_t>(level)];
    case Column::kFlops: return pl.achieved_flops_per_s;
    case Column::kRoof: return pl.roof_fraction;
    case Column::kRegisters: return it.registers_per_thread;
    case Column::kLocal: return static_cast<double>(it.local_bytes_per_thread);
    case Column::kShared: return it.static_shared_bytes + it.dynamic_shared_bytes;
    case Column::kOccTheoretical: return it.theoretical_occupancy;
    case Column::kOccAchieved: return it.achieved_occupancy;
    case Column::kName:
    case Column::kBound:
    case Column::kNvtx: return std::nullopt;
  }
  return std::nullopt;
}

bool isText(Column c) { return c == Column::kName || c == Column::kBound || c == Column::kNvtx; }

std::string lower(std::string_view text) {
  std::string s(text);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

// The CSV keeps whole texts (an export), cleaned and quoted per RFC 4180.
std::string csvQuote(std::string_view s) { return core::csvField(s); }

// What a cell shows of a text: a 1 MB name is cut (an ellipsis ends it), the CSV keeps it whole.
std::string shown(std::string_view s) { return core::truncateText(s, core::kMaxShownCodePoints); }

}  // namespace

std::string cellText(const Item& it, Column c, MemLevel level, int64_t total_ns) {
  auto pct = [](const std::optional<double>& v) { return v ? fmt::format("{:.1f}%", *v * 100) : std::string("n/a"); };
  switch (c) {
    case Column::kName: return shown(it.short_name.empty() ? it.name : it.short_name);
    case Column::kCalls: return std::to_string(it.calls);
    case Column::kTime: return formatDurationNs(static_cast<double>(it.duration_ns));
    case Column::kShare: return pct(cellValue(it, c, level, total_ns));
    case Column::kIntensity: {
      const auto v = cellValue(it, c, level, total_ns);
      return v ? fmt::format("{:.3g}", *v) : "n/a";
    }
    case Column::kFlops: {
      const auto v = it.placement.achieved_flops_per_s;
      return v ? formatSi(*v, "FLOP/s") : "n/a";
    }
    case Column::kRoof: return pct(it.placement.roof_fraction);
    case Column::kBound: return std::string(analysis::boundName(it.placement.bound));
    case Column::kRegisters: return std::to_string(it.registers_per_thread);
    case Column::kLocal: return std::to_string(it.local_bytes_per_thread);
    case Column::kShared: return std::to_string(it.static_shared_bytes + it.dynamic_shared_bytes);
    case Column::kOccTheoretical: return pct(it.theoretical_occupancy);
    case Column::kOccAchieved: return pct(it.achieved_occupancy);
    case Column::kNvtx: return shown(it.nvtx_ops);
  }
  return "";
}

core::Expected<std::vector<uint32_t>> filterItems(const std::vector<Item>& items, const TableFilter& f) {
  std::optional<std::regex> re;
  if (!f.name_regex.empty()) {
    try {
      re.emplace(f.name_regex, std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
    } catch (const std::regex_error& e) {
      return core::makeError(fmt::format("bad name regex '{}': {}", f.name_regex, e.what()));
    }
  }
  const std::string nvtx = lower(f.nvtx);
  std::vector<uint32_t> rows;
  rows.reserve(items.size());
  // Many items share a name (one per launch): test each distinct name once.
  std::string_view last_name;
  bool last_match = true;
  bool have_last = false;
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    if (re) {
      if (!have_last || it.name != last_name) {
        last_name = it.name;
        // The name as the table shows it: std::regex recurses once per character it matches, and a
        // 1 MB name would overflow the stack.
        last_match = std::regex_search(shown(it.name), *re);
        have_last = true;
      }
      if (!last_match) continue;
    }
    // The path as shown or as recorded: "aten::linear" and "op_id = 12" both find it.
    if (!nvtx.empty() && lower(it.nvtx_ops).find(nvtx) == std::string::npos &&
        lower(it.nvtx_path).find(nvtx) == std::string::npos) {
      continue;
    }
    rows.push_back(static_cast<uint32_t>(i));
  }
  return rows;
}

void sortRows(std::vector<uint32_t>& rows, const std::vector<Item>& items, Column c, bool ascending, MemLevel level) {
  if (isText(c)) {
    std::stable_sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) {
      const std::string sa = cellText(items[a], c, level, 0), sb = cellText(items[b], c, level, 0);
      return ascending ? sa < sb : sb < sa;
    });
    return;
  }
  // Precompute keys: a million comparisons should not each recompute an optional.
  std::vector<std::pair<bool, double>> keys(items.size());
  for (uint32_t r : rows) {
    const auto v = cellValue(items[r], c, level, 1);
    keys[r] = {v.has_value(), v.value_or(0)};
  }
  std::stable_sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) {
    const auto& ka = keys[a];
    const auto& kb = keys[b];
    if (ka.first != kb.first) return ka.first;  // known before unknown, in both directions
    return ascending ? ka.second < kb.second : kb.second < ka.second;
  });
}

std::string tableCsv(const std::vector<Item>& items, const std::vector<uint32_t>& rows, MemLevel level,
                     int64_t total_ns) {
  std::string out =
      "kernel,calls,duration_ns,share,intensity_flop_per_byte,memory_level,achieved_flops_per_s,roof_fraction,"
      "binding_roof,bound,registers_per_thread,local_bytes_per_thread,shared_bytes,theoretical_occupancy,"
      "achieved_occupancy,dram_bytes,l2_bytes,l1_bytes,total_flops,nvtx_path,short_name\n";
  auto num = [](const std::optional<double>& v) { return v && std::isfinite(*v) ? fmt::format("{}", *v) : std::string(); };
  for (uint32_t r : rows) {
    const Item& it = items[r];
    const ItemPlacement& pl = it.placement;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csvQuote(it.name), it.calls,
                       it.duration_ns, num(cellValue(it, Column::kShare, level, total_ns)),
                       num(pl.intensity_flop_per_byte[static_cast<size_t>(level)]), analysis::memLevelName(level),
                       num(pl.achieved_flops_per_s), num(pl.roof_fraction), csvQuote(pl.binding),
                       analysis::boundName(pl.bound), it.registers_per_thread, it.local_bytes_per_thread,
                       it.static_shared_bytes + it.dynamic_shared_bytes, num(it.theoretical_occupancy),
                       num(it.achieved_occupancy), num(it.work.bytes[0]), num(it.work.bytes[1]),
                       num(it.work.bytes[2]), num(it.work.total_flops), csvQuote(it.nvtx_path),
                       csvQuote(it.short_name.empty() ? it.name : it.short_name));
  }
  return out;
}

}  // namespace fprof::gui
