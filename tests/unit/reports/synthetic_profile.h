// Synthetic .fprof databases for the report tests, golden files, browser test and benchmark:
// a small transformer-like run whose every number is chosen by hand, so tests can assert exact
// values, plus hostile kernel names and a large run.
#pragma once

#include <cstdint>
#include <string>

#include "fprof/core/expected.h"

namespace fprof::testing {

struct SyntheticOptions {
  bool counters = false;       // metrics-mode run: counters for every kernel, measured ceilings
  bool hostile_names = false;  // add kernels whose names try to inject script into the report
  double slowdown = 1.0;       // scales the duration of the matmul epilogue (a baseline diff)
};

// The reference fixture: 10 kernel groups (gemm in two shapes) in the NVTX op convention: three
// unfused pairs (matmul_bias_relu, residual_layernorm, attention), the fused variant of the first,
// a vendor matmul, and two kernels outside any range.
core::Status writeSyntheticProfile(const std::string& path, const SyntheticOptions& options);

// A large run: `kernels` launches cycling over `distinct_names` names and 4 launch shapes, with
// counters when asked (used by the size and speed tests and bench/RESULTS.md).
core::Status writeLargeProfile(const std::string& path, int64_t kernels, int64_t distinct_names, bool counters);

// Number of groups (name + shape) in writeSyntheticProfile's output, and how many have FLOPs
// and DRAM bytes (so sit on the roofline); the hostile names add 4 of each.
inline constexpr int kSyntheticGroups = 10;
inline constexpr int kSyntheticRooflineGroups = 9;
inline constexpr int kHostileGroups = 4;

}  // namespace fprof::testing
