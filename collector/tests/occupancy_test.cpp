// core::theoreticalOccupancy against CUDA's own header-only calculator (cuda_occupancy.h) over
// a grid of launch configurations, for several architectures: blocks/SM must match exactly.
#include <cuda_occupancy.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "fprof/core/occupancy.h"

namespace {

using fprof::core::DeviceInfo;

struct Arch {
  const char* label;
  int major, minor, threads_per_sm, sms;
  int64_t smem_per_sm, smem_per_block_optin, reserved;
};

// Limits as cudaGetDeviceProperties reports them (H100 SXM, A100, RTX 3090, T4, V100, B200).
constexpr Arch kArchs[] = {
    {"sm_90", 9, 0, 2048, 132, 228 * 1024, 227 * 1024, 1024},
    {"sm_80", 8, 0, 2048, 108, 164 * 1024, 163 * 1024, 1024},
    {"sm_86", 8, 6, 1536, 82, 100 * 1024, 99 * 1024, 1024},
    {"sm_75", 7, 5, 1024, 40, 64 * 1024, 64 * 1024, 0},
    {"sm_70", 7, 0, 2048, 80, 96 * 1024, 96 * 1024, 0},
    {"sm_100", 10, 0, 2048, 148, 228 * 1024, 227 * 1024, 1024},
};

DeviceInfo deviceOf(const Arch& a) {
  DeviceInfo d;
  d.compute_major = a.major;
  d.compute_minor = a.minor;
  d.sm_count = a.sms;
  d.max_threads_per_sm = a.threads_per_sm;
  d.max_threads_per_block = 1024;
  d.regs_per_sm = 65536;
  d.regs_per_block = 65536;
  d.warp_size = 32;
  d.shared_per_sm_bytes = a.smem_per_sm;
  d.shared_per_block_bytes = 48 * 1024;
  d.shared_per_block_optin_bytes = a.smem_per_block_optin;
  d.reserved_shared_per_block_bytes = a.reserved;
  return d;
}

cudaOccDeviceProp propOf(const DeviceInfo& d) {
  cudaOccDeviceProp p;
  p.computeMajor = d.compute_major;
  p.computeMinor = d.compute_minor;
  p.maxThreadsPerBlock = d.max_threads_per_block;
  p.maxThreadsPerMultiprocessor = d.max_threads_per_sm;
  p.regsPerBlock = d.regs_per_block;
  p.regsPerMultiprocessor = d.regs_per_sm;
  p.warpSize = d.warp_size;
  p.sharedMemPerBlock = static_cast<size_t>(d.shared_per_block_bytes);
  p.sharedMemPerMultiprocessor = static_cast<size_t>(d.shared_per_sm_bytes);
  p.numSms = d.sm_count;
  p.sharedMemPerBlockOptin = static_cast<size_t>(d.shared_per_block_optin_bytes);
  p.reservedSharedMemPerBlock = static_cast<size_t>(d.reserved_shared_per_block_bytes);
  return p;
}

unsigned limiterFlag(const std::string& limiter) {
  if (limiter == "warps") return OCC_LIMIT_WARPS;
  if (limiter == "registers") return OCC_LIMIT_REGISTERS;
  if (limiter == "shared") return OCC_LIMIT_SHARED_MEMORY;
  if (limiter == "blocks") return OCC_LIMIT_BLOCKS;
  if (limiter == "barriers") return OCC_LIMIT_BARRIERS;
  return 0;
}

TEST(Occupancy, MatchesCudaOccupancyHeaderOnAGrid) {
  const int regs[] = {0, 1, 16, 24, 32, 40, 48, 56, 64, 72, 80, 96, 128, 168, 200, 232, 255};
  const int blocks[] = {1, 32, 33, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024};
  const int64_t statics[] = {0, 100, 2048, 12 * 1024, 48 * 1024 - 1};
  const int64_t dynamics[] = {0, 1, 1000, 16 * 1024, 40 * 1024, 64 * 1024, 100 * 1024, 150 * 1024, 200 * 1024};
  const std::optional<int> carveouts[] = {std::nullopt, 0, 25, 50, 100};
  for (const Arch& arch : kArchs) {
    const DeviceInfo device = deviceOf(arch);
    const cudaOccDeviceProp prop = propOf(device);
    int compared = 0, fitting = 0;
    for (int r : regs)
      for (int b : blocks)
        for (int64_t s : statics)
          for (int64_t dyn : dynamics)
            for (const auto& carve : carveouts) {
              cudaOccFuncAttributes attr;
              attr.maxThreadsPerBlock = 1024;
              attr.numRegs = r;
              attr.sharedSizeBytes = static_cast<size_t>(s);
              attr.partitionedGCConfig = PARTITIONED_GC_OFF;
              attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
              attr.maxDynamicSharedSizeBytes = static_cast<size_t>(dyn);
              attr.numBlockBarriers = 1;
              cudaOccDeviceState state;
              if (carve) state.carveoutConfig = *carve;
              cudaOccResult expected{};
              const cudaOccError err =
                  cudaOccMaxActiveBlocksPerMultiprocessor(&expected, &prop, &attr, &state, b, static_cast<size_t>(dyn));
              fprof::core::OccupancyInput in;
              in.registers_per_thread = r;
              in.threads_per_block = b;
              in.static_shared_bytes = s;
              in.dynamic_shared_bytes = dyn;
              in.carveout_percent = carve;
              const auto got = fprof::core::theoreticalOccupancy(device, in);
              const std::string where = std::string(arch.label) + " regs=" + std::to_string(r) + " block=" +
                                        std::to_string(b) + " static=" + std::to_string(s) + " dyn=" +
                                        std::to_string(dyn) + " carveout=" + (carve ? std::to_string(*carve) : "default");
              if (err != CUDA_OCC_SUCCESS) {
                EXPECT_FALSE(got.has_value()) << where;
                continue;
              }
              ASSERT_TRUE(got.has_value()) << where;
              ASSERT_EQ(got->blocks_per_sm, expected.activeBlocksPerMultiprocessor) << where;
              EXPECT_NE(expected.limitingFactors & limiterFlag(got->limiter), 0u) << where << " limiter=" << got->limiter;
              const int warps = (b + 31) / 32;
              EXPECT_DOUBLE_EQ(got->occupancy, static_cast<double>(expected.activeBlocksPerMultiprocessor * warps) /
                                                   (arch.threads_per_sm / 32))
                  << where;
              EXPECT_EQ(got->shared_allocated_per_block_bytes, static_cast<int64_t>(expected.allocatedSharedMemPerBlock))
                  << where;
              ++compared;
              if (got->blocks_per_sm > 0) ++fitting;
            }
    // The grid must exercise both fitting and non-fitting launches on every architecture.
    EXPECT_GT(compared, 10000) << arch.label;
    EXPECT_GT(fitting, 5000) << arch.label;
    EXPECT_LT(fitting, compared) << arch.label;
  }
}

TEST(Occupancy, KnownH100Values) {
  const DeviceInfo h100 = deviceOf(kArchs[0]);
  fprof::core::OccupancyInput in;
  in.registers_per_thread = 64;
  in.threads_per_block = 256;
  auto r = fprof::core::theoreticalOccupancy(h100, in);
  ASSERT_TRUE(r);
  // 64 regs x 32 lanes = 2048 per warp; 16384 per sub-partition -> 8 warps x 4 = 32 warps = 4 blocks.
  EXPECT_EQ(r->blocks_per_sm, 4);
  EXPECT_DOUBLE_EQ(r->occupancy, 0.5);
  EXPECT_EQ(r->limiter, "registers");

  in.registers_per_thread = 32;
  in.dynamic_shared_bytes = 100 * 1024;  // + 1 KiB reserved -> 101 KiB; 228 KiB / 101 KiB = 2 blocks
  r = fprof::core::theoreticalOccupancy(h100, in);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->blocks_per_sm, 2);
  EXPECT_EQ(r->limiter, "shared");
  EXPECT_DOUBLE_EQ(r->occupancy, 16.0 / 64.0);

  in.dynamic_shared_bytes = 0;
  in.threads_per_block = 32;  // 1 warp per block: the 32-blocks-per-SM limit binds
  r = fprof::core::theoreticalOccupancy(h100, in);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->blocks_per_sm, 32);
  EXPECT_EQ(r->limiter, "blocks");
  EXPECT_DOUBLE_EQ(r->occupancy, 0.5);
}

TEST(Occupancy, UnknownArchitectureOrMissingLimitsIsNone) {
  DeviceInfo d = deviceOf(kArchs[0]);
  fprof::core::OccupancyInput in;
  in.registers_per_thread = 32;
  in.threads_per_block = 128;
  d.compute_major = 6;
  EXPECT_FALSE(fprof::core::theoreticalOccupancy(d, in));
  d = deviceOf(kArchs[0]);
  d.regs_per_sm = 0;
  EXPECT_FALSE(fprof::core::theoreticalOccupancy(d, in));
  d = deviceOf(kArchs[0]);
  in.threads_per_block = 0;
  EXPECT_FALSE(fprof::core::theoreticalOccupancy(d, in));
}

}  // namespace
