// What the launch callback learns about one kernel launch, kept until the kernel's activity
// record arrives. No CUPTI types: the callback fills it, the translator consumes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fprof::collector {

struct LaunchArg {
  int32_t index = 0;
  int32_t offset_bytes = 0;
  int32_t size_bytes = 0;
  uint64_t value = 0;
};

struct LaunchInfo {
  uint32_t correlation_id = 0;         // the outermost launch API's
  uint32_t nested_correlation_id = 0;  // a driver launch inside a runtime launch (0 = none)
  const char* launch_api = "";         // static string
  uint64_t nvtx_key = 0;               // 0 = no NVTX range open
  const std::string* nvtx_path = nullptr;
  uint32_t thread_id = 0;
  bool graph_launch = false;           // one launch, one record per kernel node
  int64_t local_bytes_per_thread = -1; // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES; -1 = not known
  std::vector<LaunchArg> args;         // 8-byte parameters only (possible pointers)
};

}  // namespace fprof::collector
