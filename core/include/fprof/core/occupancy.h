// Theoretical occupancy of a kernel launch from its resource usage and the device's limits.
// Pure C++ (no CUDA headers) so every layer can use it; it reproduces cuda_occupancy.h's
// cudaOccMaxActiveBlocksPerMultiprocessor, which the collector's tests check block for block.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fprof/core/model.h"

namespace fprof::core {

struct OccupancyInput {
  int registers_per_thread = 0;
  int threads_per_block = 0;
  int64_t static_shared_bytes = 0;
  int64_t dynamic_shared_bytes = 0;
  // Requested L1/shared carveout in percent of the maximum shared memory (0..100), as set with
  // cudaFuncAttributePreferredSharedMemoryCarveout; none = the driver's default preference.
  std::optional<int> carveout_percent;
  // Block barriers the kernel uses; only Hopper and later count them. 1 matches what the runtime
  // assumes for a kernel compiled with __syncthreads().
  int block_barriers = 1;
};

struct OccupancyResult {
  int blocks_per_sm = 0;
  int warps_per_block = 0;
  int active_warps_per_sm = 0;
  double occupancy = 0.0;  // active warps / maximum warps per SM, 0..1
  // The resource that binds: "warps", "registers", "shared", "blocks" or "barriers". On a tie the
  // first in that order is named.
  std::string limiter;
  int64_t shared_allocated_per_block_bytes = 0;  // after the driver's reservation and granularity
  int registers_allocated_per_block = 0;
};

// None when the device's compute capability is not one whose allocation rules are known
// (7.x, 8.x, 9.0, 10.x, 11.x) or when the device limits are missing.
std::optional<OccupancyResult> theoreticalOccupancy(const DeviceInfo& device,
                                                    const OccupancyInput& launch);

}  // namespace fprof::core
