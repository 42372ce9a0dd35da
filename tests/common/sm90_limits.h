// The per-SM and per-block limits of sm_90 (H100 and H200 report the same ones), for test and
// benchmark databases that need a realistic device. SM count, memory and clocks stay with each
// fixture: they are what the fixtures' expected numbers are computed from.
#pragma once

#include "fprof/core/model.h"

namespace fprof::testing {

inline void setSm90Limits(core::DeviceInfo& d) {
  d.compute_major = 9;
  d.compute_minor = 0;
  d.warp_size = 32;
  d.max_threads_per_sm = 2048;
  d.max_threads_per_block = 1024;
  d.max_blocks_per_sm = 32;
  d.max_warps_per_sm = 64;
  d.regs_per_sm = 65536;
  d.regs_per_block = 65536;
  d.shared_per_sm_bytes = 233472;
  d.shared_per_block_bytes = 49152;
  d.shared_per_block_optin_bytes = 232448;
  d.reserved_shared_per_block_bytes = 1024;
}

}  // namespace fprof::testing
