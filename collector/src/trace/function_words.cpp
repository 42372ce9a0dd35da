// Which words of a function's parameters a launch records beyond its 8-byte parameters and their
// first words; see function_cache.h (probedPointerWords).
#include <algorithm>

#include "trace/function_cache.h"

namespace fprof::collector {

std::vector<FunctionInfo::Param> probedPointerWords(const FunctionInfo& info,
                                                    const std::vector<std::pair<int32_t, int32_t>>& pointer_words) {
  std::vector<FunctionInfo::Param> out;
  for (const auto& [index, offset] : pointer_words) {
    if (index < 0 || static_cast<size_t>(index) >= info.params.size()) continue;
    const FunctionInfo::Layout& param = info.params[static_cast<size_t>(index)];
    if (offset < param.offset_bytes || offset + 8 > param.offset_bytes + param.size_bytes) continue;
    const auto same = [&](const FunctionInfo::Param& p) { return p.index == index && p.offset_bytes == offset; };
    if (std::any_of(info.eight_byte_params.begin(), info.eight_byte_params.end(), same) ||
        std::any_of(out.begin(), out.end(), same)) {
      continue;
    }
    out.push_back({index, offset, offset - param.offset_bytes, param.size_bytes});
  }
  return out;
}

}  // namespace fprof::collector
