// Parsing the NVTX op convention and attaching kernels to op instances (see nvtx_ops.h).
#include "fprof/analysis/nvtx_ops.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>

namespace fprof::analysis {

namespace {

std::vector<std::string> splitList(std::string_view v) {
  std::vector<std::string> out;
  while (!v.empty()) {
    const size_t comma = v.find(',');
    std::string_view item = v.substr(0, comma);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

std::optional<OpTags> parseOpTags(std::string_view message) {
  OpTags t;
  bool has_op = false;
  while (!message.empty()) {
    const size_t space = message.find(' ');
    const std::string_view token = message.substr(0, space);
    message = space == std::string_view::npos ? std::string_view{} : message.substr(space + 1);
    const size_t eq = token.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = token.substr(0, eq), value = token.substr(eq + 1);
    if (key == "op") {
      t.op = std::string(value);
      has_op = !value.empty();
    } else if (key == "variant") {
      t.variant = std::string(value);
    } else if (key == "pair") {
      t.pair = std::string(value);
    } else if (key == "reads") {
      t.reads = splitList(value);
    } else if (key == "writes") {
      t.writes = splitList(value);
    } else if (key == "layer") {
      int layer = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), layer);
      if (ec == std::errc() && ptr == value.data() + value.size()) t.layer = layer;
    }
  }
  if (!has_op) return std::nullopt;
  return t;
}

OpIndex indexOps(const core::Profile& p) {
  OpIndex idx;
  idx.kernel_op.assign(p.kernels.size(), -1);
  // (process, range key) -> range index; and range index -> op instance (or -1).
  std::unordered_map<uint64_t, size_t> range_of;
  range_of.reserve(p.nvtx_ranges.size());
  auto rkey = [](uint32_t process, uint64_t key) { return (uint64_t{process} << 40) ^ key; };
  for (size_t i = 0; i < p.nvtx_ranges.size(); ++i) range_of[rkey(p.nvtx_ranges[i].process_id, p.nvtx_ranges[i].key)] = i;
  std::vector<int32_t> op_of_range(p.nvtx_ranges.size(), -1);
  for (size_t i = 0; i < p.nvtx_ranges.size(); ++i) {
    const core::NvtxRangeRecord& r = p.nvtx_ranges[i];
    // The fprof domain; and the default domain for messages that start with "op=", because
    // Python's torch.cuda.nvtx has no domains (docs/nvtx-convention.md).
    if (r.domain != kNvtxDomain && !(r.domain.empty() && r.message.rfind("op=", 0) == 0)) continue;
    auto tags = parseOpTags(r.message);
    if (!tags) continue;
    OpInstance op;
    op.range_index = i;
    op.tags = std::move(*tags);
    op.repeat = r.payload;
    op_of_range[i] = static_cast<int32_t>(idx.ops.size());
    idx.ops.push_back(std::move(op));
  }
  // Nearest enclosing op range, walking parent links (ranges of other domains are skipped).
  std::vector<int32_t> nearest(p.nvtx_ranges.size(), -2);  // -2 = not computed yet
  auto nearestOp = [&](size_t start) {
    std::vector<size_t> path;
    size_t cur = start;
    int32_t found = -1;
    for (;;) {
      if (nearest[cur] != -2) {
        found = nearest[cur];
        break;
      }
      path.push_back(cur);
      if (op_of_range[cur] >= 0) {
        found = op_of_range[cur];
        break;
      }
      const core::NvtxRangeRecord& r = p.nvtx_ranges[cur];
      if (!r.parent_key) break;
      auto it = range_of.find(rkey(r.process_id, *r.parent_key));
      if (it == range_of.end() || path.size() > p.nvtx_ranges.size()) break;
      cur = it->second;
    }
    for (size_t x : path) nearest[x] = found;
    return found;
  };
  for (size_t i = 0; i < idx.ops.size(); ++i) {
    const core::NvtxRangeRecord& r = p.nvtx_ranges[idx.ops[i].range_index];
    if (!r.parent_key) continue;
    auto it = range_of.find(rkey(r.process_id, *r.parent_key));
    if (it == range_of.end()) continue;
    const int32_t parent = nearestOp(it->second);
    if (parent >= 0) {
      idx.ops[i].parent = static_cast<size_t>(parent);
      idx.ops[static_cast<size_t>(parent)].children.push_back(i);
    }
  }
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const core::KernelRow& kr = p.kernels[k];
    if (!kr.nvtx_range_key) continue;
    auto it = range_of.find(rkey(kr.process_id, *kr.nvtx_range_key));
    if (it == range_of.end()) continue;
    const int32_t op = nearestOp(it->second);
    idx.kernel_op[k] = op;
    if (op < 0) continue;
    idx.ops[static_cast<size_t>(op)].kernels.push_back(k);
    for (std::optional<size_t> o = static_cast<size_t>(op); o; o = idx.ops[*o].parent) {
      idx.ops[*o].all_kernels.push_back(k);
    }
  }
  return idx;
}

}  // namespace fprof::analysis
