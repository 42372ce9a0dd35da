// Instruction counts per SASS instruction through CUPTI's SASS Metrics API: the function's code is
// patched to count (lazily, at its first launch while enabled), so nothing is replayed and no
// memory saved. The second run of application replay counts the roofline set's SASS counters this
// way (core/sass_pc.h turns the per-PC counts into those counters once the opcodes are read).
//
// Measured on an H100 under CUPTI 13.0 (bench/RESULTS.md): the counts read 0 whenever
// concurrent kernel activity records are enabled, and are exact for every function with the
// serialized kind (CUPTI_ACTIVITY_KIND_KERNEL), which a run counting this way therefore enables
// instead. Patched kernels run slower and their counter updates go through the memory system, so
// nothing else is counted in the same run.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fprof/core/sass_pc.h"
#include "metrics/counting_backend.h"

namespace fprof::collector {

class SassPatching final : public SassCounter {
 public:
  ~SassPatching() override;
  // For the device of `ctx`; false and `error` where the API or a metric is missing.
  bool setup(CUcontext ctx, int device_ordinal, std::string& error) override;
  // Around one launch: enable before it is submitted; after it, wait for it and read what its
  // functions counted (end disables again, so later launches run unpatched).
  bool begin(std::string& error) override;
  bool end(std::vector<core::SassPcFunction>& functions, std::string& error) override;
  void teardown() override;
  const std::string& chip() const override { return chip_; }
  // Where the time of begin and end went, summed over launches (seconds).
  const Seconds& seconds() const override { return seconds_; }

 private:
  bool flush(std::vector<core::SassPcFunction>& functions, std::string& error);
  CUcontext ctx_ = nullptr;
  int device_ = 0;
  std::string chip_;
  uint64_t warp_inst_id_ = 0, thread_inst_id_ = 0, local_sectors_id_ = 0;
  bool initialized_ = false, configured_ = false, enabled_ = false;
  Seconds seconds_;
};

}  // namespace fprof::collector
