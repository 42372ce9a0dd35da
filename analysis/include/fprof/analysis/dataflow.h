// Data flow, step 3 of 4 (docs/analysis.md, "Data flow"): which kernel consumed which kernel's
// output. It puts steps 1 and 2 together:
//   1. argument roles (arg_roles.h): each pointer argument read, written or not known, and how
//      that was learnt (measured, signature, position); opaque kernels;
//   2. buffers (buffers.h): each pointer resolved to the allocation live at the kernel's start,
//      the bytes it covers, and the versions of those bytes;
//   3. edges (here): consumer B read bytes whose last version producer A wrote, on the same stream,
//      with nothing in between that may have written them: no other write to those bytes, no free,
//      no opaque kernel and no copy or memset into device memory on the device (a caching
//      allocator may have handed the block to any of them).
// Step 4, chains and their payoff, is fusion.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fprof/analysis/arg_roles.h"
#include "fprof/analysis/buffers.h"
#include "fprof/core/store.h"

namespace fprof::analysis {

// One pointer argument of a kernel (several arguments passing the same pointer are one access).
struct KernelAccess {
  uint32_t allocation = 0;
  bool read = false;
  bool write = false;
  bool unknown = false;  // passed, role not known: may have read or written it (arg_roles.h)
  RoleSource source = RoleSource::kPosition;  // how the role was learnt (the weakest, if merged)
  uint64_t address = 0;
  int64_t bytes = 0;  // the pointer's extent (buffers.h): the bytes versions and edges are judged on
  // Its tensor's size, for payoffs: as the launches around it say (NearExtents), the median over
  // the launches of the same function and launch shape (same work, same tensor sizes: one launch's
  // neighbour may pass a pointer into the block the tensor had before or gets after).
  int64_t tensor_bytes = 0;
  int32_t arg_offset = 0;  // the parameter-buffer offset of the (first) argument passing it
};

// One producer -> consumer edge (the rule at the top of this file).
struct DataEdge {
  size_t producer = 0;  // kernel indices
  size_t consumer = 0;
  uint32_t allocation = 0;
  int64_t bytes = 0;              // the bytes both touched: the write's and the read's extents overlap
  int64_t tensor_bytes = 0;       // the intermediate: the producer's tensor (KernelAccess::tensor_bytes) from the read on
  int32_t readers_of_value = 0;   // kernels that read this written value before it was overwritten or freed
  // ... of which linked to it by an edge of their own (same stream, nothing unseen in between); the
  // others read it on another stream or after an opaque kernel (maybe a later tensor in the block)
  int32_t linked_readers = 0;
  RoleSource roles = RoleSource::kPosition;  // the weaker of the producer's write and the consumer's read
};

struct DataFlow {
  std::vector<Allocation> allocations;    // in allocation order
  std::vector<MemoryTimeline> timelines;  // per (process, device)
  int64_t unmatched_frees = 0;            // frees of addresses with no recorded allocation
  // Per kernel (CSR): accesses[access_begin[k] .. access_begin[k+1]), in argument order.
  std::vector<uint32_t> access_begin;
  std::vector<KernelAccess> accesses;
  // Per kernel: whether its pointer arguments are known. Graph-launched kernels share the graph
  // launch's correlation id, so their arguments cannot be told apart: unknown.
  std::vector<uint8_t> args_known;
  // Per kernel: it may have written memory fprof cannot see (arg_roles.h, launchIsOpaque).
  std::vector<uint8_t> opaque;
  bool have_args = false;            // the profile recorded launch arguments at all
  bool have_allocations = false;     // ... and allocation records
  bool have_measured_roles = false;  // ... and measured argument roles (schema v2)
  std::vector<DataEdge> edges;       // by consumer, then producer
  std::vector<uint32_t> written_once_read_once;  // allocations whose every value had one reader (fusion candidates)
};

// The tables data flow reads besides the profile's kernels, copies and functions, given to it to
// keep apart from their profile (an owning RunAnalysis with release_launch_tables takes them out of
// its profile): data flow frees them once it has read them, before its largest step (the extents
// and edges).
// Kernel arguments by (process, correlation id), memory events by timestamp (core/store.h).
using OwnedLaunchTables = core::LaunchTables;

// The measured roles come from the profile's function_arg rows; the overloads take them from the
// caller (tests, or a profile whose roles were measured separately), and the launch tables.
DataFlow analyzeDataFlow(const core::Profile& p);
DataFlow analyzeDataFlow(const core::Profile& p, const MeasuredRoles& measured);
DataFlow analyzeDataFlow(const core::Profile& p, OwnedLaunchTables tables, const MeasuredRoles& measured);

}  // namespace fprof::analysis
