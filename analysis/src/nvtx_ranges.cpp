// Sorted (process, key) -> range index (see nvtx_ranges.h).
#include "fprof/analysis/nvtx_ranges.h"

#include <algorithm>
#include <tuple>

namespace fprof::analysis {

NvtxRangeLookup::NvtxRangeLookup(const core::Profile& p) : p_(p) {
  entries_.reserve(p.nvtx_ranges.size());
  for (size_t i = 0; i < p.nvtx_ranges.size(); ++i) {
    entries_.push_back({p.nvtx_ranges[i].key, p.nvtx_ranges[i].process_id, static_cast<uint32_t>(i)});
  }
  // Files hold ranges by key, process by process: usually sorted already.
  auto before = [](const Entry& a, const Entry& b) {
    return std::tie(a.process_id, a.key, a.index) < std::tie(b.process_id, b.key, b.index);
  };
  if (!std::is_sorted(entries_.begin(), entries_.end(), before)) std::sort(entries_.begin(), entries_.end(), before);
}

std::optional<size_t> NvtxRangeLookup::find(uint32_t process_id, uint64_t key) const {
  auto after = std::upper_bound(entries_.begin(), entries_.end(), std::make_pair(process_id, key),
                                [](const std::pair<uint32_t, uint64_t>& k, const Entry& e) {
                                  return std::tie(k.first, k.second) < std::tie(e.process_id, e.key);
                                });
  if (after == entries_.begin()) return std::nullopt;
  const Entry& e = *(after - 1);
  if (e.process_id != process_id || e.key != key) return std::nullopt;
  return e.index;
}

std::optional<size_t> NvtxRangeLookup::parent(size_t range_index) const {
  const core::NvtxRangeRow& r = p_.nvtx_ranges[range_index];
  if (!r.parent_key) return std::nullopt;
  const std::optional<size_t> found = find(r.process_id, *r.parent_key);
  if (found == range_index) return std::nullopt;
  return found;
}

std::optional<size_t> NvtxRangeLookup::ofKernel(const core::KernelRow& k) const {
  if (!k.nvtx_range_key) return std::nullopt;
  return find(k.process_id, *k.nvtx_range_key);
}

}  // namespace fprof::analysis
