// Data flow, step 2 of 4 (docs/analysis.md, "Data flow"): buffers and their lifetimes.
//   - Allocations: cudaMalloc/cudaFree records (memory_event) in time order, per (process,
//     device), with the allocated bytes over time and the peak.
//   - Extents: which bytes a pointer argument covers. The driver sees allocations, not tensors: a
//     caching allocator (PyTorch's, JAX's BFC) carves one cudaMalloc'd segment into many blocks and
//     records none of them. A pointer is taken to cover the bytes from its address up to the next
//     address any kernel passed into the same allocation, or the allocation's end: tensors start
//     where pointers to them are passed. (So a kernel reading a slice of another's output at an
//     offset is not linked to it: a missed pair, never an invented one.)
//   - Versions: every write starts a new version of the bytes it covers; a read sees the versions
//     last written over its bytes; a free ends every version of the allocation.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
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
  int32_t writer_launches = 0;  // kernels that wrote it (by the roles of arg_roles.h)
  int32_t reader_launches = 0;
  std::optional<size_t> first_writer;  // kernel index
  std::optional<size_t> first_reader;
  // Each write starts a value; a value is read by the kernels that read its bytes before they are
  // written again or freed. Programs reuse buffers every step, so "written once, read once" is
  // judged per value: every value written was read by exactly one kernel.
  int32_t values_written = 0;
  int32_t values_read_once = 0;
};

struct MemoryTimeline {
  uint32_t process_id = 0;
  uint32_t device_id = 0;
  std::vector<std::pair<int64_t, int64_t>> points;  // (timestamp_ns, allocated bytes after the event)
  int64_t peak_allocated_bytes = 0;
  int64_t peak_ns = 0;
};

struct AllocationTable {
  std::vector<Allocation> allocations;    // in allocation order
  std::vector<MemoryTimeline> timelines;  // per (process, device)
  int64_t unmatched_frees = 0;            // frees of addresses with no recorded allocation
};

// Allocations and their timelines from memory events ordered by timestamp (a profile's).
AllocationTable buildAllocations(const std::vector<core::MemoryEventRecord>& memory_events);
inline AllocationTable buildAllocations(const core::Profile& p) { return buildAllocations(p.memory_events); }

// The allocations live at a point in time: memory events replayed in order, so an address reused
// after a free resolves to the new allocation.
class LiveAllocations {
 public:
  LiveAllocations(const std::vector<core::MemoryEventRecord>& memory_events, const AllocationTable& table)
      : events_(memory_events), table_(table) {}
  LiveAllocations(const core::Profile& p, const AllocationTable& table) : LiveAllocations(p.memory_events, table) {}
  // Applies every memory event at or before `ns`; `on_free(allocation)` is called for each free.
  template <typename OnFree>
  void advanceTo(int64_t ns, OnFree&& on_free);
  // The live allocation holding `address` in `process_id`, if any.
  std::optional<uint32_t> find(uint32_t process_id, uint64_t address) const;

 private:
  const std::vector<core::MemoryEventRecord>& events_;
  const AllocationTable& table_;
  size_t next_event_ = 0;
  uint32_t next_allocation_ = 0;
  std::unordered_map<uint32_t, std::map<uint64_t, uint32_t>> live_;  // process -> address -> allocation
  mutable uint32_t last_process_ = 0;  // the last process looked up, and its map
  mutable const std::map<uint64_t, uint32_t>* last_live_ = nullptr;
  void apply(const core::MemoryEventRecord& e, std::optional<uint32_t>* freed);
};

// Half-open byte range [begin, end) of device addresses.
struct ByteRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  int64_t bytes() const { return end > begin ? static_cast<int64_t>(end - begin) : 0; }
};

// The extent of each pointer: from its address to the next address passed into the same
// allocation, or the allocation's end (the rule at the top of this file).
class Extents {
 public:
  explicit Extents(const AllocationTable& table) : table_(table), starts_(table.allocations.size()) {}
  void addPointer(uint32_t allocation, uint64_t address) { starts_[allocation].push_back(address); }
  void finish();  // call once every pointer is added
  ByteRange of(uint32_t allocation, uint64_t address) const;

 private:
  const AllocationTable& table_;
  std::vector<std::vector<uint64_t>> starts_;  // per allocation, sorted and unique after finish()
};

// A pointer's tensor as far as the launches around it say (data flow uses it for pointers never
// written by a kernel; written tensors are sized by WrittenLifetimes). A caching allocator hands a segment's
// bytes to many tensors over a run, and a kernel may pass views into a tensor (q, k and v of one
// qkv buffer), so the run-wide extent (Extents) is the smallest gap any two pointers ever left:
// 1536 bytes for a 3 MiB residual whose block held a qkv buffer a few launches earlier. Here a
// tensor ends at the next address passed into its allocation by a launch within `window` launches
// of it: after it for a write (the tensor lives from there on; what the block held before is gone;
// if none after, before it), on either side for a read; with none, at the allocation's end. For
// sizes (the payoff of fusing), not for versions: a tensor live then but passed to no kernel
// nearby is not seen, and the size is then too large; one launch's neighbour may still pass a view
// of the block's next tensor (dataflow.h takes the median over launches doing the same work).
class NearExtents {
 public:
  NearExtents(const AllocationTable& table, int64_t window)
      : table_(table), window_(window), starts_(table.allocations.size()) {}
  void addPointer(uint32_t allocation, uint64_t address, size_t kernel) {
    starts_[allocation].emplace_back(address, static_cast<int64_t>(kernel));
  }
  void finish();  // call once every pointer is added
  ByteRange ofWrite(uint32_t allocation, uint64_t address, size_t kernel) const;
  ByteRange ofRead(uint32_t allocation, uint64_t address, size_t kernel) const;

 private:
  // The first address above `address` passed by a launch in [first, last], if any.
  std::optional<uint64_t> nextPassed(uint32_t allocation, uint64_t address, int64_t first, int64_t last) const;
  uint64_t end(uint32_t allocation) const;
  const AllocationTable& table_;
  int64_t window_;
  std::vector<std::vector<std::pair<uint64_t, int64_t>>> starts_;  // (address, kernel), sorted
};

// Written tensors' sizes from their lifetimes. A kernel's write at an address starts a tensor that
// lives until the last access of that address before the next write there. Two tensors of one
// allocation alive at the same time do not overlap, so a tensor ends at the lowest address above
// it where another written tensor was alive at the same time, else at the allocation's end.
// Pointers only ever read (views into a tensor: q, k and v of one qkv buffer; weights) bound
// nothing here, which is what NearExtents gets wrong for a block that held a qkv buffer a few
// launches earlier.
class WrittenLifetimes {
 public:
  explicit WrittenLifetimes(const AllocationTable& table) : table_(table), pointers_(table.allocations.size()) {}
  // Every access, in kernel order.
  void add(uint32_t allocation, uint64_t address, size_t kernel, bool write);
  void finish();  // call once every access is added
  // The size of the written tensor an access of `kernel` at this address sees (the one its write
  // starts, for a kernel that writes there); none before the address's first write.
  std::optional<int64_t> sizeAt(uint32_t allocation, uint64_t address, size_t kernel) const;

 private:
  // 24 and 16 bytes: a long run holds one per access until finish().
  struct Lifetime {
    uint64_t address = 0;
    uint32_t first = 0, last = 0;  // kernels
    int64_t bytes = 0;
  };
  struct Access {
    uint64_t address = 0;
    uint32_t kernel = 0;
    bool write = false;
  };
  std::vector<Lifetime> lifetimesOf(std::vector<Access>& accesses) const;
  int64_t boundedBytes(const std::vector<Lifetime>& v, size_t i, uint64_t allocation_end) const;
  const AllocationTable& table_;
  std::vector<std::vector<Access>> pointers_;      // per allocation, until finish()
  std::vector<std::vector<Lifetime>> lifetimes_;   // per allocation, by (address, first)
};

// Who last wrote each byte: per allocation, disjoint pieces in address order, each naming the
// value (an index the caller assigns to each write) that covers it.
class ByteVersions {
 public:
  explicit ByteVersions(size_t allocations) : pieces_(allocations) {}
  void write(uint32_t allocation, ByteRange r, int32_t value);
  // f(value, overlap_bytes) for every piece overlapping r, in address order.
  template <typename F>
  void forEachOverlap(uint32_t allocation, ByteRange r, F&& f) const;
  void clear(uint32_t allocation) { pieces_[allocation].clear(); }

 private:
  struct Piece {
    uint64_t begin = 0, end = 0;
    int32_t value = 0;
  };
  std::vector<std::vector<Piece>> pieces_;
  static std::vector<Piece>::const_iterator firstOverlap(const std::vector<Piece>& v, uint64_t begin);
};

template <typename OnFree>
void LiveAllocations::advanceTo(int64_t ns, OnFree&& on_free) {
  while (next_event_ < events_.size() && events_[next_event_].timestamp_ns <= ns) {
    std::optional<uint32_t> freed;
    apply(events_[next_event_++], &freed);
    if (freed) on_free(*freed);
  }
}

template <typename F>
void ByteVersions::forEachOverlap(uint32_t allocation, ByteRange r, F&& f) const {
  const std::vector<Piece>& v = pieces_[allocation];
  for (auto it = firstOverlap(v, r.begin); it != v.end() && it->begin < r.end; ++it) {
    const uint64_t lo = std::max(it->begin, r.begin), hi = std::min(it->end, r.end);
    if (hi > lo) f(it->value, static_cast<int64_t>(hi - lo));
  }
}

}  // namespace fprof::analysis
