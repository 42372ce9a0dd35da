// A database read table by table, as loadProfile reads it but without holding its big tables:
// merge copies each row into the merged file as it comes, so its memory does not grow with the
// inputs. Rows are decoded, cleaned and repaired as loadProfile does and come in the order its
// vectors hold them (kernels by id, as merge takes them); warnings() says what loadProfile says.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fprof/core/expected.h"
#include "fprof/core/store.h"

namespace fprof::core::detail {

template <class Row>
class RowStream {
 public:
  virtual ~RowStream() = default;
  // The next row into `row`: false at the end, an error where the file is damaged.
  virtual Expected<bool> next(Row& row) = 0;
};

class ProfileStream {
 public:
  // Opens and checks the file, reads its small tables whole and looks once over the big ones
  // (kernel ids, NVTX links, which process ids have no process row).
  static Expected<std::unique_ptr<ProfileStream>> open(const std::string& path);
  ~ProfileStream();
  ProfileStream(const ProfileStream&) = delete;
  ProfileStream& operator=(const ProfileStream&) = delete;

  // The small tables as loadProfile returns them: metadata, strings, processes, devices, function
  // tables, graph launch counters, ceilings. The big tables' vectors stay empty; their rows' string
  // ids index strings here.
  const Profile& small() const;

  // The first process id a table's rows name (in loadProfile's order) that has no process row.
  std::optional<uint32_t> unknownProcess(std::string_view table) const;
  // Every kernel id, ascending.
  const std::vector<int64_t>& kernelIds() const;
  // The lowest and highest NVTX range id the ranges and kernels name; none without any.
  std::optional<std::pair<uint64_t, uint64_t>> nvtxKeys() const;

  // A big table's rows: KernelRow (by id), KernelCounters, KernelMetricRecord, KernelCounterMissing,
  // KernelArgRecord, NvtxRangeRecord, MemcpyRecord, MemcpyAddressRecord, MemsetRecord,
  // MemoryEventRecord, CollectorEventRecord. A table the file's schema lacks has none.
  template <class Row>
  Expected<std::unique_ptr<RowStream<Row>>> rows();

  // What loadProfile says of the file's damage; complete once every stream was read to its end.
  std::vector<std::string> warnings();

  struct Impl;

 private:
  explicit ProfileStream(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fprof::core::detail
