// Finding a recorded NVTX range by its key: a kernel names the innermost range open at its launch
// and a range its parent by (process, range key), keys being unique per process only. The lookup
// is a sorted array of 16 bytes a range, built once per analysis step that walks ranges, instead
// of a hash map of each range (about three times the memory on a file of millions of ranges).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "fprof/core/store.h"

namespace fprof::analysis {

class NvtxRangeLookup {
 public:
  explicit NvtxRangeLookup(const core::Profile& p);

  // The index into Profile::nvtx_ranges of the range with this key in this process; the last
  // one where a damaged file holds the key twice.
  std::optional<size_t> find(uint32_t process_id, uint64_t key) const;
  // The range's parent; none for a top range, a parent not recorded, or a range its own parent.
  std::optional<size_t> parent(size_t range_index) const;
  // The innermost range open at the kernel's launch, where it was recorded.
  std::optional<size_t> ofKernel(const core::KernelRow& k) const;

 private:
  struct Entry {
    uint64_t key;
    uint32_t process_id;
    uint32_t index;
  };
  const core::Profile& p_;
  std::vector<Entry> entries_;  // by (process, key), equal keys in range order
};

}  // namespace fprof::analysis
