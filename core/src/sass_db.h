// What the half-precision and tensor SASS steps (sass_half.cpp, sass_tensor.cpp) share: finding
// the kernels whose FLOPs wait for their function's SASS, reading their raw counters, recording
// the classes read, and the numbers their methods print.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fprof/core/expected.h"
#include "fprof/core/sass_half.h"
#include "sqlite_util.h"

namespace fprof::core::detail {

// The value of metric `?` for kernel c.kernel_id, as a column of a SELECT over kernel_counter c.
inline constexpr const char* kKernelMetricValueSql =
    "(SELECT m.value FROM kernel_metric m JOIN string s ON s.id = m.metric_id "
    " WHERE m.kernel_id = c.kernel_id AND s.value = ?)";

// Mangled names of the functions with a kernel whose `method_column` of kernel_counter is `pending`.
Expected<std::vector<std::string>> functionsPending(const std::string& db_path, const char* method_column,
                                                    std::string_view pending);

// Writes each function's SASS classes to function_sass_op once per (process, name); `keep`, where
// given, picks the classes written.
class SassOpWriter {
 public:
  explicit SassOpWriter(sqlite3* db);
  bool ok() const { return op_.ok(); }
  bool write(uint32_t process_id, const std::string& name, const SassHalfCounts& classes,
             bool (*keep)(const std::string& cls) = nullptr);

 private:
  Statement op_;
  std::set<std::pair<uint32_t, std::string>> written_;
};

// A count as a whole number ("%.0f").
std::string wholeNumber(double v);

// Items separated by ", ".
template <class Items>
std::string joinedList(const Items& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

}  // namespace fprof::core::detail
