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

// A list of indices (op instances or kernels) held by the OpIndex: one array for every op's lists,
// not three vectors an op (a file of a million ops would spend as much on the vectors as on
// the indices).
class IndexList {
 public:
  IndexList() = default;
  IndexList(const size_t* first, size_t count) : first_(first), count_(count) {}
  const size_t* begin() const { return first_; }
  const size_t* end() const { return first_ + count_; }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  size_t operator[](size_t i) const { return first_[i]; }
  size_t front() const { return first_[0]; }
  size_t back() const { return first_[count_ - 1]; }
  std::vector<size_t> vector() const { return {begin(), end()}; }

 private:
  const size_t* first_ = nullptr;
  size_t count_ = 0;
};

struct OpInstance {
  size_t range_index = 0;  // into Profile::nvtx_ranges
  // Never null. Shared by the instances of one message (an op repeated a million times is parsed
  // once).
  std::shared_ptr<const OpTags> tags;
  std::optional<uint64_t> repeat;  // the payload
  std::optional<size_t> parent;    // enclosing op instance
  IndexList children;              // nested op instances, in start order
  IndexList kernels;               // kernels whose innermost op is this one, in start order
  IndexList all_kernels;           // this op's and its descendants', in start order
};

// Moved, not copied: the ops' lists point into `lists`.
struct OpIndex {
  OpIndex() = default;
  OpIndex(OpIndex&&) = default;
  OpIndex& operator=(OpIndex&&) = default;
  OpIndex(const OpIndex&) = delete;
  OpIndex& operator=(const OpIndex&) = delete;

  std::vector<OpInstance> ops;           // in range start order
  std::vector<int32_t> kernel_op;        // innermost op instance per kernel, -1 if none
  std::vector<size_t> lists;             // every op's children, kernels and all_kernels
};

OpIndex indexOps(const core::Profile& p);

}  // namespace fprof::analysis
