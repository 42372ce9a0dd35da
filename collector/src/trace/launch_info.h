// What the launch callback learns about one kernel launch, kept until the kernel's activity
// record arrives. No CUPTI types: the callback fills it, the translator consumes it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace fprof::collector {

struct LaunchArg {
  int32_t index = 0;
  int32_t offset_bytes = 0;
  int32_t size_bytes = 0;
  uint64_t value = 0;
};

// The 8-byte arguments of one launch. Up to 8 live inline: a launch allocates nothing on the
// target's thread that the writer thread would then free.
class LaunchArgs {
 public:
  LaunchArgs() = default;
  LaunchArgs(std::initializer_list<LaunchArg> list) {
    for (const LaunchArg& a : list) push_back(a);
  }
  void push_back(const LaunchArg& a) {
    if (count_ < kInline) {
      inline_[count_] = a;
    } else {
      overflow_.push_back(a);
    }
    ++count_;
  }
  size_t size() const { return count_; }
  const LaunchArg& operator[](size_t i) const { return i < kInline ? inline_[i] : overflow_[i - kInline]; }

 private:
  static constexpr size_t kInline = 8;
  std::array<LaunchArg, kInline> inline_{};
  size_t count_ = 0;
  std::vector<LaunchArg> overflow_;
};

struct LaunchInfo {
  uint32_t correlation_id = 0;         // the outermost launch API's
  uint32_t nested_correlation_id = 0;  // a driver launch inside a runtime launch (0 = none)
  const char* launch_api = "";         // static string
  uint64_t nvtx_key = 0;               // 0 = no NVTX range open
  const std::string* nvtx_path = nullptr;
  uint32_t thread_id = 0;
  bool graph_launch = false;           // one launch, one record per kernel node
  bool programmatic = false;           // launched with programmatic stream serialization
  int64_t local_bytes_per_thread = -1; // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES; -1 = not known
  LaunchArgs args;                     // 8-byte parameters only (possible pointers)
};

}  // namespace fprof::collector
