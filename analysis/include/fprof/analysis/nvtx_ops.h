// The NVTX op convention (docs/nvtx-convention.md): ranges in domain "fprof" whose message is
// space-separated key=value tokens, `op=<name> variant=<unfused|fused|vendor> pair=<id>
// reads=<a,b> writes=<c> [layer=<i>]`, payload = repeat index. Stage ranges nest inside an
// unfused op and name the intermediate buffers in their reads/writes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fprof/core/store.h"

namespace fprof::analysis {

inline constexpr std::string_view kNvtxDomain = "fprof";

struct OpTags {
  std::string op;
  std::string variant;  // "unfused", "fused", "vendor" or "" (a stage or plain grouping range)
  std::string pair;
  std::vector<std::string> reads;
  std::vector<std::string> writes;
  std::optional<int> layer;
};

// None unless the message carries an op= token. Unknown keys are ignored (forward compatible).
std::optional<OpTags> parseOpTags(std::string_view message);

// A list of indices (op instances or kernels) held by the OpIndex: one array of 32-bit indices
// for every op's lists, not three vectors an op (a file of a million ops would spend as much on
// the vectors as on the indices).
class IndexList {
 public:
  IndexList() = default;
  IndexList(const uint32_t* first, size_t count) : first_(first), count_(count) {}
  const uint32_t* begin() const { return first_; }
  const uint32_t* end() const { return first_ + count_; }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  size_t operator[](size_t i) const { return first_[i]; }
  size_t front() const { return first_[0]; }
  size_t back() const { return first_[count_ - 1]; }
  std::vector<size_t> vector() const { return {begin(), end()}; }

 private:
  const uint32_t* first_ = nullptr;
  size_t count_ = 0;
};

// 56 bytes: a long run holds one per op call.
struct OpInstance {
  // Never null. Owned by the OpIndex and shared by the instances of one message (an op repeated a
  // million times is parsed once).
  const OpTags* tags = nullptr;
  // Its three lists below, one after the other in OpIndex::lists (set by indexOps).
  const uint32_t* lists = nullptr;
  std::optional<uint64_t> repeat;  // the payload
  uint32_t range_index = 0;        // into Profile::nvtx_ranges
  std::optional<uint32_t> parent;  // enclosing op instance

  IndexList children() const { return {lists, child_count}; }  // nested op instances, in start order
  // Kernels whose innermost op is this one, in start order.
  IndexList kernels() const { return {lists + child_count, kernel_count}; }
  // This op's and its descendants', in start order.
  IndexList allKernels() const { return {lists + child_count + kernel_count, all_kernel_count}; }

  uint32_t child_count = 0;
  uint32_t kernel_count = 0;
  uint32_t all_kernel_count = 0;
};

// Moved, not copied: the ops point into `tags` and `lists`.
struct OpIndex {
  OpIndex() = default;
  OpIndex(OpIndex&&) = default;
  OpIndex& operator=(OpIndex&&) = default;
  OpIndex(const OpIndex&) = delete;
  OpIndex& operator=(const OpIndex&) = delete;

  std::vector<OpInstance> ops;                         // in range start order
  std::vector<int32_t> kernel_op;                      // innermost op instance per kernel, -1 if none
  std::vector<uint32_t> lists;                         // every op's children, kernels and all kernels
  std::vector<std::unique_ptr<const OpTags>> tags;     // one per distinct op message
};

OpIndex indexOps(const core::Profile& p);

}  // namespace fprof::analysis
