// Per-function facts the launch callback needs: the kernel's own local memory per thread and the
// layout of its 8-byte parameters. Queried once per CUfunction; later launches pay one lookup in
// a per-thread cache.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "launch_info.h"

namespace fprof::collector {

struct FunctionInfo {
  int64_t local_bytes_per_thread = -1;  // -1: the driver did not say
  struct Param {
    int32_t index = 0;
    int32_t offset_bytes = 0;
  };
  std::vector<Param> eight_byte_params;
};

class FunctionCache {
 public:
  // `handle` is what the launch passed: a CUfunction, or a CUkernel cast to one (the runtime
  // launches context-independent kernels that way). Needs the launch's context to be current.
  const FunctionInfo& lookup(CUfunction handle);

  // Reads the 8-byte arguments of a launch, from kernelParams or from a CU_LAUNCH_PARAM_BUFFER.
  // Functions whose launch handle was a CUkernel resolved with cuKernelGetFunction, and handles
  // that could not be queried at all (their launches carry no local size or arguments).
  uint64_t resolvedKernelHandles() const { return resolved_.load(std::memory_order_relaxed); }
  uint64_t failedHandles() const { return failed_.load(std::memory_order_relaxed); }

  static void readArgs(const FunctionInfo& info, void** kernel_params, void** extra, LaunchArgs& out);

 private:
  FunctionInfo query(CUfunction handle);

  std::mutex mu_;
  std::unordered_map<CUfunction, FunctionInfo> infos_;  // node-based: references stay valid
  std::atomic<uint64_t> resolved_{0};
  std::atomic<uint64_t> failed_{0};
};

}  // namespace fprof::collector
