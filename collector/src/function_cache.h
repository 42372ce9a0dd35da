// Per-function facts the launch callback needs: the kernel's own local memory per thread and the
// layout of its 8-byte parameters. Queried once per CUfunction; later launches pay one lookup in
// a per-thread cache.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
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
  struct Layout {
    int32_t offset_bytes = 0;
    int32_t size_bytes = 0;
  };
  std::vector<Layout> params;  // every parameter, in order
};

// Grid, block, cluster and dynamic shared memory of a launch: with the function and its
// non-pointer argument bytes, what makes two launches do the same work.
struct LaunchShape {
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t cluster[3] = {0, 0, 0};
  uint32_t dynamic_shared_bytes = 0;
};

// What the driver says about a function once (the function table), queued for the writer.
struct FunctionFacts {
  std::string name;  // mangled (cuFuncGetName)
  std::optional<int> registers_per_thread;  // CU_FUNC_ATTRIBUTE_NUM_REGS: what ptxas -v says
  std::optional<int64_t> local_bytes_per_thread;
  std::optional<int64_t> static_shared_bytes;
  std::optional<int64_t> const_bytes;
  std::optional<int> max_threads_per_block;
  std::optional<int> binary_version;
  std::optional<int> ptx_version;
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

  // A hash of function, shape and every argument byte except device addresses (8-byte values the
  // driver knows as device memory): equal for launches that do the same work. None when the
  // arguments cannot be read.
  static std::optional<uint64_t> signature(CUfunction handle, const FunctionInfo& info, const LaunchShape& shape,
                                           void** kernel_params, void** extra);

  // Facts of the functions queried since the last call (writer thread).
  std::vector<FunctionFacts> takeNewFunctions();

 private:
  FunctionInfo query(CUfunction handle);
  void recordFacts(CUfunction function, int local_bytes);  // requires mu_
  std::vector<FunctionFacts> new_functions_;

  std::mutex mu_;
  std::unordered_map<CUfunction, FunctionInfo> infos_;  // node-based: references stay valid
  std::atomic<uint64_t> resolved_{0};
  std::atomic<uint64_t> failed_{0};
};

}  // namespace fprof::collector
