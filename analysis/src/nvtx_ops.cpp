// Parsing the NVTX op convention and attaching kernels to op instances (see nvtx_ops.h).
#include "fprof/analysis/nvtx_ops.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>
#include <utility>

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

// (process, range key): range keys are unique per process only.
struct RangeKeyHash {
  size_t operator()(const std::pair<uint32_t, uint64_t>& k) const {
    return std::hash<uint64_t>{}(k.second * 0x9E3779B97F4A7C15ull ^ k.first);
  }
};

// Cuts op parent links that run in a circle, at the link that closes it. The reader already cuts
// circles of NVTX ranges in a file; this keeps a hand-built profile's walks finite too.
void cutParentCycles(std::vector<int32_t>& parent) {
  enum : uint8_t { kUnseen, kOnPath, kDone };
  std::vector<uint8_t> state(parent.size(), kUnseen);
  std::vector<size_t> path;
  for (size_t start = 0; start < parent.size(); ++start) {
    path.clear();
    for (size_t at = start; state[at] == kUnseen;) {
      state[at] = kOnPath;
      path.push_back(at);
      if (parent[at] < 0) break;
      const auto next = static_cast<size_t>(parent[at]);
      if (state[next] == kOnPath) {
        parent[at] = -1;
        break;
      }
      at = next;
    }
    for (size_t x : path) state[x] = kDone;
  }
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
  std::unordered_map<std::pair<uint32_t, uint64_t>, size_t, RangeKeyHash> range_of;
  range_of.reserve(p.nvtx_ranges.size());
  auto rkey = [](uint32_t process, uint64_t key) { return std::make_pair(process, key); };
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
  // Nearest enclosing op range, walking parent links (ranges of other domains are skipped). Each
  // range is walked over once (the answer is kept for every range on the way), and no walk takes
  // more steps than there are ranges, whatever the links.
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
  std::vector<int32_t> op_parent(idx.ops.size(), -1);
  for (size_t i = 0; i < idx.ops.size(); ++i) {
    const core::NvtxRangeRecord& r = p.nvtx_ranges[idx.ops[i].range_index];
    if (!r.parent_key) continue;
    auto it = range_of.find(rkey(r.process_id, *r.parent_key));
    if (it == range_of.end()) continue;
    op_parent[i] = nearestOp(it->second);
  }
  cutParentCycles(op_parent);
  for (size_t i = 0; i < idx.ops.size(); ++i) {
    if (op_parent[i] < 0) continue;
    idx.ops[i].parent = static_cast<size_t>(op_parent[i]);
    idx.ops[static_cast<size_t>(op_parent[i])].children.push_back(i);
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
    size_t steps = 0;  // the parents hold no circle (cut above); the bound says so again
    for (std::optional<size_t> o = static_cast<size_t>(op); o && steps++ < idx.ops.size(); o = idx.ops[*o].parent) {
      idx.ops[*o].all_kernels.push_back(k);
    }
  }
  return idx;
}

}  // namespace fprof::analysis
