// Theoretical occupancy: the allocation rules of cuda_occupancy.h (CUDA 13.0) restated in plain
// C++, so that offline code computes the same blocks/SM the driver's calculator does.
#include "fprof/core/occupancy.h"

#include <algorithm>
#include <climits>
#include <initializer_list>

namespace fprof::core {
namespace {

int divideRoundUp(int64_t x, int64_t y) { return static_cast<int>((x + y - 1) / y); }
int64_t roundUp(int64_t x, int64_t y) { return y * ((x + y - 1) / y); }

struct ArchRules {
  int shared_granularity_bytes = 0;
  int max_blocks_per_sm = 0;
  int barriers_per_block_slot = 0;  // block barriers available per resident-block slot
  std::initializer_list<int> shared_configs_kib;  // per-SM shared memory sizes the carveout can pick
  bool zero_config_allowed = true;                // Turing has no 0 KiB configuration
};

std::optional<ArchRules> archRules(int major, int minor) {
  static constexpr std::initializer_list<int> kVolta = {0, 8, 16, 32, 64, 96};
  static constexpr std::initializer_list<int> kTuring = {32, 64};
  static constexpr std::initializer_list<int> kGa100 = {0, 8, 16, 32, 64, 100, 132, 164};
  static constexpr std::initializer_list<int> kGa10x = {0, 8, 16, 32, 64, 100};
  static constexpr std::initializer_list<int> kHopper = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};
  switch (major) {
    case 7:
      if (minor == 5) return ArchRules{256, 16, 2, kTuring, false};
      return ArchRules{256, 32, 2, kVolta, true};
    case 8:
      if (minor == 0 || minor == 7) return ArchRules{128, minor == 0 ? 32 : 16, minor == 0 ? 2 : 1, kGa100, true};
      return ArchRules{128, minor == 9 ? 24 : 16, 1, kGa10x, true};
    case 9:
      return ArchRules{128, 32, 2, kHopper, true};
    case 10:
    case 11:
      if (minor != 0 && minor != 1 && minor != 3) return std::nullopt;
      if ((major == 10 && minor == 1) || (major == 11 && minor == 0)) return ArchRules{128, 24, 1, kHopper, true};
      return ArchRules{128, 32, 2, kHopper, true};
    default:
      return std::nullopt;  // allocation rules not known to this build
  }
}

// The smallest per-SM shared memory configuration holding `bytes` (cudaOccAlignUpShmemSizeVoltaPlus).
std::optional<int64_t> alignSharedConfig(int64_t bytes, const ArchRules& rules) {
  if (bytes == 0 && rules.zero_config_allowed) return 0;
  for (int kib : rules.shared_configs_kib) {
    if (kib == 0) continue;
    if (bytes <= int64_t{kib} * 1024) return int64_t{kib} * 1024;
  }
  return std::nullopt;
}

constexpr int kRegisterGranularity = 256;
constexpr int kMaxRegistersPerThread = 256;
constexpr int kSubPartitions = 4;

// The device limits and launch values the rules divide by are there.
bool computable(const DeviceInfo& device, const OccupancyInput& launch) {
  return device.max_threads_per_block > 0 && device.max_threads_per_sm > 0 && device.regs_per_block > 0 &&
         device.regs_per_sm > 0 && device.warp_size > 0 && device.shared_per_block_bytes > 0 &&
         device.shared_per_sm_bytes > 0 && launch.threads_per_block > 0 && launch.registers_per_thread >= 0;
}

// Blocks per SM the registers allow: they are allocated per warp, in sub-partitions.
int registerLimit(const DeviceInfo& device, const OccupancyInput& launch, int warps_per_block, OccupancyResult& out) {
  const int regs_per_warp = static_cast<int>(roundUp(int64_t{launch.registers_per_thread} * device.warp_size,
                                                     kRegisterGranularity));
  out.registers_allocated_per_block = regs_per_warp * warps_per_block;
  const int regs_assumed_per_block = static_cast<int>(regs_per_warp * roundUp(warps_per_block, kSubPartitions));
  if (device.regs_per_block < regs_assumed_per_block || device.regs_per_block < out.registers_allocated_per_block ||
      launch.registers_per_thread > kMaxRegistersPerThread) {
    return 0;
  }
  if (regs_per_warp == 0) return INT_MAX;
  const int warps_per_sub_partition = (device.regs_per_sm / kSubPartitions) / regs_per_warp;
  return warps_per_sub_partition * kSubPartitions / warps_per_block;
}

// Blocks per SM the shared memory allows: the driver reserves some per block and allocates in
// granules; the carveout preference is honoured only while one block still fits. None where the
// carveout asked for is impossible or no configuration holds the block.
std::optional<int> sharedLimit(const DeviceInfo& device, const OccupancyInput& launch, const ArchRules& rules,
                               OccupancyResult& out) {
  int64_t preference_bytes = device.shared_per_sm_bytes;
  if (launch.carveout_percent) {
    if (*launch.carveout_percent < 0 || *launch.carveout_percent > 100) return std::nullopt;
    preference_bytes = *launch.carveout_percent * device.shared_per_sm_bytes / 100;
  }
  const auto preference_config = alignSharedConfig(preference_bytes, rules);
  if (!preference_config) return std::nullopt;
  const int64_t static_bytes = launch.static_shared_bytes + device.reserved_shared_per_block_bytes;
  const int64_t allocated_bytes = roundUp(static_bytes + launch.dynamic_shared_bytes, rules.shared_granularity_bytes);
  out.shared_allocated_per_block_bytes = allocated_bytes;
  // A launch that ran was allowed its dynamic size, so the opt-in limit applies whenever the
  // block asks for more than the default per-block limit.
  int64_t block_limit_bytes = static_bytes + launch.dynamic_shared_bytes > device.shared_per_block_bytes
                                  ? device.shared_per_block_optin_bytes
                                  : device.shared_per_block_bytes;
  if (device.compute_major >= 8) block_limit_bytes += device.reserved_shared_per_block_bytes;
  if (allocated_bytes > block_limit_bytes) return 0;
  int64_t per_sm_bytes = *preference_config;
  if (per_sm_bytes < allocated_bytes) {
    const auto fitting = alignSharedConfig(allocated_bytes, rules);
    if (!fitting) return std::nullopt;
    per_sm_bytes = *fitting;
  }
  return allocated_bytes > 0 ? static_cast<int>(per_sm_bytes / allocated_bytes) : INT_MAX;
}

// The resource that binds, the first in the documented order on a tie.
const char* limiterOf(int blocks, int warps, int registers, int shared, int block_slots) {
  if (blocks == warps) return "warps";
  if (blocks == registers) return "registers";
  if (blocks == shared) return "shared";
  if (blocks == block_slots) return "blocks";
  return "barriers";
}

}  // namespace

std::optional<OccupancyResult> theoreticalOccupancy(const DeviceInfo& device, const OccupancyInput& launch) {
  const auto rules = archRules(device.compute_major, device.compute_minor);
  if (!rules || !computable(device, launch)) return std::nullopt;
  OccupancyResult out;
  const int warps_per_block = divideRoundUp(launch.threads_per_block, device.warp_size);
  const int max_warps_per_sm = device.max_threads_per_sm / device.warp_size;
  out.warps_per_block = warps_per_block;

  const int limit_registers = registerLimit(device, launch, warps_per_block, out);
  const int limit_warps = launch.threads_per_block > device.max_threads_per_block ? 0 : max_warps_per_sm / warps_per_block;
  const int limit_blocks = rules->max_blocks_per_sm;
  const std::optional<int> limit_shared = sharedLimit(device, launch, *rules, out);
  if (!limit_shared) return std::nullopt;

  int blocks = std::min({limit_registers, *limit_shared, limit_warps, limit_blocks});
  if (device.compute_major >= 9 && launch.block_barriers > 0) {
    blocks = std::min(blocks, rules->barriers_per_block_slot * limit_blocks / launch.block_barriers);
  }
  out.limiter = limiterOf(blocks, limit_warps, limit_registers, *limit_shared, limit_blocks);
  out.blocks_per_sm = blocks;
  out.active_warps_per_sm = blocks * warps_per_block;
  out.occupancy = static_cast<double>(out.active_warps_per_sm) / max_warps_per_sm;
  return out;
}

}  // namespace fprof::core
