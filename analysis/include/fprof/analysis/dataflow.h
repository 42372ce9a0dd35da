// Device memory and data flow: allocations and their timeline (peak allocated), which kernels
// touch which allocation (pointer arguments matched to live allocations by address range), and
// producer -> consumer edges between kernels.
//
// Reads vs writes: pointer arguments do not say which buffers a kernel writes. Where the demangled
// name carries the parameter list (C++ kernels), a `T const*` parameter is read and a `T*`
// parameter written. Otherwise (extern "C", Triton) the heuristic is: the resolved pointer argument
// with the highest index is the one written (outputs last: f(in, out, n), cuBLAS's C after A and
// B), every other one read, and an allocation passed both last and earlier is read and written.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fprof/core/store.h"

namespace fprof::analysis {

struct Allocation {
  uint32_t process_id = 0;
  uint32_t device_id = 0;
  uint64_t address = 0;
  int64_t bytes = 0;
  int64_t alloc_ns = 0;
  std::optional<int64_t> free_ns;  // none if never freed while profiled
  std::string memory_kind;
  int32_t writer_launches = 0;  // kernels that wrote it (heuristic above)
  int32_t reader_launches = 0;
  std::optional<size_t> first_writer;  // kernel index
  std::optional<size_t> first_reader;
  // Each write starts a new value; a value is read by the kernels that read the allocation before
  // the next write or the free. Programs reuse buffers every step, so "written once, read once"
  // is judged per value: every value written was read by exactly one kernel.
  int32_t values_written = 0;
  int32_t values_read_once = 0;
};

struct KernelAccess {
  uint32_t allocation = 0;
  bool read = false;
  bool write = false;
};

// One producer -> consumer edge: consumer read an allocation whose latest writer was producer,
// on the same stream, with no kernel of unknown arguments in between on that stream.
struct DataEdge {
  size_t producer = 0;  // kernel indices
  size_t consumer = 0;
  uint32_t allocation = 0;
  int32_t readers_of_value = 0;  // kernels that read this written value before it was overwritten or freed
};

struct MemoryTimeline {
  uint32_t process_id = 0;
  uint32_t device_id = 0;
  std::vector<std::pair<int64_t, int64_t>> points;  // (timestamp_ns, allocated bytes after the event)
  int64_t peak_allocated_bytes = 0;
  int64_t peak_ns = 0;
};

struct DataFlow {
  std::vector<Allocation> allocations;  // in allocation order
  std::vector<MemoryTimeline> timelines;  // per (process, device)
  int64_t unmatched_frees = 0;            // frees of addresses with no recorded allocation
  // Per kernel (CSR): accesses[access_begin[k] .. access_begin[k+1]).
  std::vector<uint32_t> access_begin;
  std::vector<KernelAccess> accesses;
  // Per kernel: whether its pointer arguments are known. Graph-launched kernels share the graph
  // launch's correlation id, so their arguments cannot be told apart: unknown.
  std::vector<uint8_t> args_known;
  bool have_args = false;         // the profile recorded launch arguments at all
  bool have_allocations = false;  // ... and allocation records
  std::vector<DataEdge> edges;    // by consumer, then producer
  std::vector<uint32_t> written_once_read_once;  // allocations whose every value had one reader (fusion candidates)
};

DataFlow analyzeDataFlow(const core::Profile& p);

}  // namespace fprof::analysis
