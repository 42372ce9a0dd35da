// Parsing the NVTX op convention and attaching kernels to op instances (see nvtx_ops.h).
#include "fprof/analysis/nvtx_ops.h"

#include "fprof/analysis/nvtx_ranges.h"

#include <algorithm>
#include <charconv>
#include <memory>
#include <unordered_map>
#include <utility>

namespace fprof::analysis {

static_assert(sizeof(void*) != 8 || sizeof(OpInstance) == 56, "an op instance is held once per op call");

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

namespace {

// The op tags of every range that carries some, parsed once per distinct message: a loop of a
// million ops repeats a few hundred messages, and the instances share their tags.
class TagsByMessage {
 public:
  const OpTags* of(const core::NvtxRangeRow& r) {
    // The fprof domain; and the default domain for messages that start with "op=", because
    // Python's torch.cuda.nvtx has no domains (docs/nvtx-convention.md).
    if (r.domain != kNvtxDomain && !(r.domain.empty() && r.message.view().rfind("op=", 0) == 0)) return nullptr;
    auto [it, added] = parsed_.try_emplace(r.message, nullptr);
    if (added) {
      if (auto tags = parseOpTags(r.message)) {
        owned_.push_back(std::make_unique<const OpTags>(std::move(*tags)));
        it->second = owned_.back().get();
      }
    }
    return it->second;
  }
  std::vector<std::unique_ptr<const OpTags>> release() { return std::move(owned_); }

 private:
  std::unordered_map<std::string_view, const OpTags*> parsed_;  // views into the profile
  std::vector<std::unique_ptr<const OpTags>> owned_;
};

// Per range, the nearest op instance at or above it along parent links (ranges of other domains
// are skipped), -1 if none. Each range is walked over once (the answer is kept for every range on
// the way), and no walk takes more steps than there are ranges, whatever the links.
class NearestOp {
 public:
  NearestOp(const NvtxRangeLookup& ranges, const std::vector<int32_t>& op_of_range)
      : ranges_(ranges), op_of_range_(op_of_range), nearest_(op_of_range.size(), kUnset) {}

  int32_t of(size_t start) {
    path_.clear();
    int32_t found = -1;
    for (std::optional<size_t> cur = start; cur; cur = ranges_.parent(*cur)) {
      if (nearest_[*cur] != kUnset) {
        found = nearest_[*cur];
        break;
      }
      path_.push_back(*cur);
      if (op_of_range_[*cur] >= 0) {
        found = op_of_range_[*cur];
        break;
      }
      if (path_.size() > nearest_.size()) break;
    }
    for (size_t x : path_) nearest_[x] = found;
    return found;
  }

 private:
  static constexpr int32_t kUnset = -2;
  const NvtxRangeLookup& ranges_;
  const std::vector<int32_t>& op_of_range_;
  std::vector<int32_t> nearest_;
  std::vector<size_t> path_;
};

// One op instance per range that carries op tags; op_of_range maps each range to it (or -1).
void addOpInstances(const core::Profile& p, OpIndex& idx, std::vector<int32_t>& op_of_range) {
  TagsByMessage tags;
  std::vector<const OpTags*> tags_of_range(p.nvtx_ranges.size());
  size_t count = 0;
  for (size_t i = 0; i < p.nvtx_ranges.size(); ++i) {
    tags_of_range[i] = tags.of(p.nvtx_ranges[i]);
    count += tags_of_range[i] != nullptr;
  }
  idx.ops.reserve(count);
  op_of_range.assign(p.nvtx_ranges.size(), -1);
  for (size_t i = 0; i < p.nvtx_ranges.size(); ++i) {
    if (!tags_of_range[i]) continue;
    OpInstance op;
    op.range_index = static_cast<uint32_t>(i);
    op.tags = tags_of_range[i];
    op.repeat = p.nvtx_ranges[i].payload;
    op_of_range[i] = static_cast<int32_t>(idx.ops.size());
    idx.ops.push_back(op);
  }
  idx.tags = tags.release();
}

// Parents, and each op's children counted.
void linkParents(const core::Profile& p, const NvtxRangeLookup& ranges, NearestOp& nearest, OpIndex& idx) {
  std::vector<int32_t> op_parent(idx.ops.size(), -1);
  for (size_t i = 0; i < idx.ops.size(); ++i) {
    const core::NvtxRangeRow& r = p.nvtx_ranges[idx.ops[i].range_index];
    if (!r.parent_key) continue;
    if (const std::optional<size_t> parent = ranges.find(r.process_id, *r.parent_key)) op_parent[i] = nearest.of(*parent);
  }
  cutParentCycles(op_parent);
  for (size_t i = 0; i < idx.ops.size(); ++i) {
    if (op_parent[i] < 0) continue;
    idx.ops[i].parent = static_cast<uint32_t>(op_parent[i]);
    ++idx.ops[static_cast<size_t>(op_parent[i])].child_count;
  }
}

template <typename Visit>
void forEachAncestor(const OpIndex& idx, size_t op, Visit&& visit) {
  size_t steps = 0;  // the parents hold no circle (cut in linkParents); the bound says so again
  for (std::optional<size_t> o = op; o && steps++ < idx.ops.size(); o = idx.ops[*o].parent) visit(*o);
}

// Each kernel's innermost op, and each op's kernels counted.
void findKernelOps(const core::Profile& p, const NvtxRangeLookup& ranges, NearestOp& nearest, OpIndex& idx) {
  idx.kernel_op.assign(p.kernels.size(), -1);
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const std::optional<size_t> range = ranges.ofKernel(p.kernels[k]);
    if (!range) continue;
    const int32_t op = nearest.of(*range);
    idx.kernel_op[k] = op;
    if (op < 0) continue;
    ++idx.ops[static_cast<size_t>(op)].kernel_count;
    forEachAncestor(idx, static_cast<size_t>(op), [&](size_t o) { ++idx.ops[o].all_kernel_count; });
  }
}

// The lists filled in one array, each op's three one after the other: children in op order,
// kernels in launch order. Each list is filled with its count as the cursor (counted again from
// zero to the same total), so building them holds one offset an op besides the lists.
void fillLists(OpIndex& idx) {
  const size_t n = idx.ops.size();
  std::vector<size_t> first(n);
  size_t total = 0;
  for (size_t o = 0; o < n; ++o) {
    first[o] = total;
    total += size_t{idx.ops[o].child_count} + idx.ops[o].kernel_count + idx.ops[o].all_kernel_count;
  }
  idx.lists.assign(total, 0);
  for (OpInstance& op : idx.ops) op.child_count = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!idx.ops[i].parent) continue;
    OpInstance& parent = idx.ops[*idx.ops[i].parent];
    idx.lists[first[*idx.ops[i].parent] + parent.child_count++] = static_cast<uint32_t>(i);
  }
  for (OpInstance& op : idx.ops) op.kernel_count = op.all_kernel_count = 0;
  for (size_t k = 0; k < idx.kernel_op.size(); ++k) {
    if (idx.kernel_op[k] < 0) continue;
    const auto o = static_cast<size_t>(idx.kernel_op[k]);
    OpInstance& op = idx.ops[o];
    idx.lists[first[o] + op.child_count + op.kernel_count++] = static_cast<uint32_t>(k);
  }
  for (size_t k = 0; k < idx.kernel_op.size(); ++k) {
    if (idx.kernel_op[k] < 0) continue;
    forEachAncestor(idx, static_cast<size_t>(idx.kernel_op[k]), [&](size_t o) {
      OpInstance& op = idx.ops[o];
      idx.lists[first[o] + op.child_count + op.kernel_count + op.all_kernel_count++] = static_cast<uint32_t>(k);
    });
  }
  for (size_t o = 0; o < n; ++o) idx.ops[o].lists = idx.lists.data() + first[o];
}

}  // namespace

OpIndex indexOps(const core::Profile& p) {
  OpIndex idx;
  std::vector<int32_t> op_of_range;
  addOpInstances(p, idx, op_of_range);
  if (idx.ops.empty()) {
    // No range carries op tags (a PyTorch or JAX run): no kernel is in an op, and the ranges need
    // no lookup (16 bytes a range, beside the framework ops' own).
    idx.kernel_op.assign(p.kernels.size(), -1);
    return idx;
  }
  const NvtxRangeLookup ranges(p);
  NearestOp nearest(ranges, op_of_range);
  linkParents(p, ranges, nearest, idx);
  findKernelOps(p, ranges, nearest, idx);
  fillLists(idx);
  return idx;
}

}  // namespace fprof::analysis
