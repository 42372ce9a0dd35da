// The message of an fprof NVTX range (docs/nvtx-convention.md), in plain C++ so the format the
// analyzer parses is unit-tested without CUDA.
#pragma once

#include <string>

namespace fprof::refk {

// Builds "op=<op> variant=<v> pair=<p> reads=a,b writes=c layer=<i>", leaving out empty keys.
struct RangeTags {
  std::string op;
  std::string variant;  // unfused | fused | vendor, or empty for plain ranges (layer, prefill)
  std::string pair;
  std::string reads;    // comma-separated logical buffer names
  std::string writes;
  int layer = -1;

  std::string message() const {
    // append() rather than operator+: GCC 12 at -O3 reports a false -Wrestrict on the latter.
    std::string m;
    m.append("op=").append(op);
    auto add = [&m](const char* key, const std::string& value) {
      if (!value.empty()) m.append(" ").append(key).append("=").append(value);
    };
    add("variant", variant);
    add("pair", pair);
    add("reads", reads);
    add("writes", writes);
    if (layer >= 0) add("layer", std::to_string(layer));
    return m;
  }
};

}  // namespace fprof::refk
