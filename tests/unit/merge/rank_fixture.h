// Small per-rank databases, as the collector writes them under torchrun/mpirun/srun, built with
// the core Writer: same pid, same correlation ids and same NVTX range ids in every rank on purpose
// (two hosts reuse them), different hosts and ranks, one rank in metrics mode, NCCL kernels,
// launch arguments, allocations, copies, collector events and ceilings. Every number is chosen
// by hand so the merge tests can assert exact values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fprof/core/expected.h"

namespace fprof::testing {

struct RankFixture {
  int rank = 0;
  int local_rank = 0;
  std::string host = "nodeA";
  int64_t pid = 4242;                // the same in every rank unless a test says otherwise
  bool metrics = false;              // metrics mode: counters for every kernel but the NCCL ones
  std::string device_name = "NVIDIA H200";
  int64_t start_unix_ns = 1'780'000'000'000'000'000;
  double slowdown = 1.0;             // scales every kernel duration (a slower rank, a slower run)
  int steps = 3;                     // training steps: each runs matmul, bias_relu and an all-reduce
  bool measured_ceilings = true;     // a measured DRAM roof for the device (the same value per model)
  double measured_dram_bytes_per_s = 4.5e12;
};

// Kernels per step and per rank database: matmul, bias_relu, ncclDevKernel_AllReduce.
inline constexpr int kKernelsPerStep = 3;

// Writes one rank's database at `path` (replacing a file there).
core::Status writeRankDatabase(const std::string& path, const RankFixture& fixture);

// The three ranks the merge tests use: ranks 0 and 1 on nodeA (trace, devices 0 and 1), rank 2 on
// nodeB (metrics mode, device 0, an H100, 1.5x slower). Written as DIR/job.rank<N>.fprof.
std::vector<RankFixture> threeRanks();
std::vector<std::string> writeThreeRanks(const std::string& dir);

}  // namespace fprof::testing
