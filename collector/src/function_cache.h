// Per-function facts the launch callback needs: the kernel's own local memory per thread and the
// layout of its 8-byte parameters. Queried once per CUfunction; later launches pay one lookup in
// a per-thread cache.
#pragma once

#include <cuda.h>

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
  static void readArgs(const FunctionInfo& info, void** kernel_params, void** extra, std::vector<LaunchArg>& out);

 private:
  static FunctionInfo query(CUfunction handle);

  std::mutex mu_;
  std::unordered_map<CUfunction, FunctionInfo> infos_;  // node-based: references stay valid
};

}  // namespace fprof::collector
