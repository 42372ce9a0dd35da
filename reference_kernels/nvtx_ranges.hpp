// The NVTX convention fprof's analyzer reads (docs/nvtx-convention.md): one domain "fprof",
// ranges whose message is space-separated key=value tokens and whose payload is the
// invocation's repeat index.
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "range_tags.hpp"

namespace fprof::refk {

inline nvtxDomainHandle_t nvtxFprofDomain() {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("fprof");
  return domain;
}

// Ranges pushed so far: the program's own count, which a profile's range count is checked
// against (model prints it at exit; bench/decode_overhead.sh compares).
inline std::atomic<std::uint64_t>& nvtxRangesPushed() {
  static std::atomic<std::uint64_t> count{0};
  return count;
}

// RAII push/pop so an early return cannot leave a range open.
class NvtxRange {
 public:
  NvtxRange(const RangeTags& tags, std::uint64_t repeat_index) {
    nvtxRangesPushed().fetch_add(1, std::memory_order_relaxed);
    const std::string message = tags.message();
    nvtxEventAttributes_t attr{};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attr.message.ascii = message.c_str();  // NVTX copies the string during the call
    attr.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    attr.payload.ullValue = repeat_index;
    nvtxDomainRangePushEx(nvtxFprofDomain(), &attr);
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
  ~NvtxRange() { nvtxDomainRangePop(nvtxFprofDomain()); }
};

}  // namespace fprof::refk
