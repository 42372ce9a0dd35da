// The argument buffer a launch passes through `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER and
// CU_LAUNCH_PARAM_BUFFER_SIZE) in place of kernelParams: read by every reader of a launch's arguments.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace fprof::collector {

struct ParamBuffer {
  const uint8_t* bytes = nullptr;  // null: `extra` names no buffer
  size_t size = 0;
};

inline ParamBuffer paramBufferOf(void** extra) {
  ParamBuffer b;
  if (extra == nullptr) return b;
  for (void** p = extra; *p != CU_LAUNCH_PARAM_END; p += 2) {
    if (*p == CU_LAUNCH_PARAM_BUFFER_POINTER) b.bytes = static_cast<const uint8_t*>(p[1]);
    if (*p == CU_LAUNCH_PARAM_BUFFER_SIZE && p[1] != nullptr) b.size = *static_cast<const size_t*>(p[1]);
  }
  return b;
}

}  // namespace fprof::collector
