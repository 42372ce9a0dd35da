// Per-function attribute and parameter-layout cache; see function_cache.h.
#include "function_cache.h"

#include <cstring>

#include "checks.h"

namespace fprof::collector {

const FunctionInfo& FunctionCache::lookup(CUfunction handle) {
  thread_local CUfunction last_handle = nullptr;
  thread_local const FunctionInfo* last_info = nullptr;
  if (handle == last_handle && last_info != nullptr) return *last_info;
  std::lock_guard lock(mu_);
  auto it = infos_.find(handle);
  if (it == infos_.end()) it = infos_.emplace(handle, query(handle)).first;
  last_handle = handle;
  last_info = &it->second;
  return it->second;
}

FunctionInfo FunctionCache::query(CUfunction handle) {
  FunctionInfo info;
  // The runtime passes a CUkernel (library kernel) where the driver API passes a CUfunction;
  // cuFuncGetAttribute rejects the former, so resolve it to this context's CUfunction first.
  CUfunction function = handle;
  int local_bytes = 0;
  if (cuFuncGetAttribute(&local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, function) != CUDA_SUCCESS) {
    CUfunction resolved = nullptr;
    if (!FPROF_CU_OK(cuKernelGetFunction(&resolved, reinterpret_cast<CUkernel>(handle))) ||
        !FPROF_CU_OK(cuFuncGetAttribute(&local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, resolved))) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      return info;
    }
    function = resolved;
    resolved_.fetch_add(1, std::memory_order_relaxed);
  }
  info.local_bytes_per_thread = local_bytes;
  // cuFuncGetParamInfo answers CUDA_ERROR_INVALID_VALUE past the last parameter.
  for (size_t i = 0; i < 4096; ++i) {
    size_t offset = 0, size = 0;
    if (cuFuncGetParamInfo(function, i, &offset, &size) != CUDA_SUCCESS) break;
    if (size == 8) info.eight_byte_params.push_back({static_cast<int32_t>(i), static_cast<int32_t>(offset)});
  }
  return info;
}

void FunctionCache::readArgs(const FunctionInfo& info, void** kernel_params, void** extra, LaunchArgs& out) {
  if (info.eight_byte_params.empty()) return;
  const uint8_t* buffer = nullptr;
  size_t buffer_bytes = 0;
  if (kernel_params == nullptr && extra != nullptr) {
    for (void** p = extra; *p != CU_LAUNCH_PARAM_END; p += 2) {
      if (*p == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = static_cast<const uint8_t*>(p[1]);
      if (*p == CU_LAUNCH_PARAM_BUFFER_SIZE && p[1] != nullptr) buffer_bytes = *static_cast<const size_t*>(p[1]);
    }
    if (buffer == nullptr) return;
  } else if (kernel_params == nullptr) {
    return;
  }
  for (const FunctionInfo::Param& p : info.eight_byte_params) {
    uint64_t value = 0;
    if (buffer != nullptr) {
      if (static_cast<size_t>(p.offset_bytes) + 8 > buffer_bytes) continue;
      std::memcpy(&value, buffer + p.offset_bytes, 8);
    } else {
      std::memcpy(&value, kernel_params[p.index], 8);
    }
    out.push_back(LaunchArg{p.index, p.offset_bytes, 8, value});
  }
}

}  // namespace fprof::collector
