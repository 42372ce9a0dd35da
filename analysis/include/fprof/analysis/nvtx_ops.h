// The NVTX op convention (docs/nvtx-convention.md): ranges in domain "fprof" whose message is
// space-separated key=value tokens, `op=<name> variant=<unfused|fused|vendor> pair=<id>
// reads=<a,b> writes=<c> [layer=<i>]`, payload = repeat index. Stage ranges nest inside an
// unfused op and name the intermediate buffers in their reads/writes.
#pragma once

#include <cstdint>
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

struct OpInstance {
  size_t range_index = 0;  // into Profile::nvtx_ranges
  OpTags tags;
  std::optional<uint64_t> repeat;  // the payload
  std::optional<size_t> parent;    // enclosing op instance
  std::vector<size_t> children;    // nested op instances, in start order
  std::vector<size_t> kernels;     // kernels whose innermost op is this one, in start order
  std::vector<size_t> all_kernels; // this op's and its descendants', in start order
};

struct OpIndex {
  std::vector<OpInstance> ops;           // in range start order
  std::vector<int32_t> kernel_op;        // innermost op instance per kernel, -1 if none
};

OpIndex indexOps(const core::Profile& p);

}  // namespace fprof::analysis
