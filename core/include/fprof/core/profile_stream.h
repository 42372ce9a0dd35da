// A database read table by table, as loadProfile reads it but without holding its big tables:
// merge copies each row into the merged file as it comes, and the exports write each row as it
// comes, so that their memory does not grow with the file. Rows are decoded, cleaned and repaired
// as loadProfile does and come in the order its vectors hold them; warnings() says what
// loadProfile says.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fprof/core/expected.h"
#include "fprof/core/store.h"

namespace fprof::core {

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
  // (the order of kernels and NVTX ranges, circles of NVTX parents, which process ids have no
  // process row), holding none of their rows.
  static Expected<std::unique_ptr<ProfileStream>> open(const std::string& path);
  ~ProfileStream();
  ProfileStream(const ProfileStream&) = delete;
  ProfileStream& operator=(const ProfileStream&) = delete;

  // The small tables as loadProfile returns them: metadata, strings, processes, devices, function
  // tables, graph launch counters, ceilings. The big tables' vectors stay empty; their rows' string
  // ids index strings here (a streamed row's placeholder for a missing string is added as it comes).
  const Profile& small() const;

  // The first process id a table's rows name (in loadProfile's order) that has no process row.
  std::optional<uint32_t> unknownProcess(std::string_view table) const;
  // Every kernel id, ascending (read on first use: merge numbers kernels in this order).
  Expected<const std::vector<int64_t>*> kernelIds();
  // The lowest and highest NVTX range id the ranges and kernels name; none without any.
  std::optional<std::pair<uint64_t, uint64_t>> nvtxKeys() const;

  // A big table's rows: KernelRow (by id), KernelCounters, KernelMetricRecord, KernelCounterMissing,
  // KernelArgRecord, NvtxRangeRecord, MemcpyRecord, MemcpyAddressRecord, MemsetRecord,
  // MemoryEventRecord, CollectorEventRecord. A table the file's schema lacks has none.
  template <class Row>
  Expected<std::unique_ptr<RowStream<Row>>> rows();

  // The kernels as Profile::kernels holds them: by start, ties by id, each one's dependency wait
  // settled (core/dependency_wait.h).
  Expected<std::unique_ptr<RowStream<KernelRow>>> kernelsByStart();
  // The counters of one kernel (kernel.id), looked up in the file: none where it has none. Their
  // damage is said once the counter stream (rows<KernelCounters>) has been read to its end.
  Expected<std::optional<KernelCounters>> countersOf(int64_t kernel_id);
  // The demangled name of every kernel, each once, as string ids into small().strings.
  Expected<std::vector<uint32_t>> kernelNameIds();
  // The earliest start of a kernel, NVTX range, memcpy or memset; none in a file without any.
  Expected<std::optional<int64_t>> firstEventNs();

  // What loadProfile says of the file's damage; complete once every stream was read to its end.
  std::vector<std::string> warnings();

  struct Impl;

 private:
  explicit ProfileStream(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fprof::core
