// The cache-sweep kernels (sweep_ptx.h) compiled ahead by ptxas at build time, one cubin pair per
// CUDA architecture of the build (CMAKE_CUDA_ARCHITECTURES), so that the collector does not
// JIT-compile them in the profiled program: the code sweep's 32,768 instructions took the driver's
// JIT 1.4 s on a fresh H100 machine (bench/RESULTS.md). A device without a
// cubin of its architecture gets the PTX, as before. The table is generated (sweep_cubins_data.cpp
// in the build folder; empty where the build had no ptxas).
#pragma once

#include <cstddef>

namespace fprof::collector {

struct SweepCubins {
  int sm = 0;  // 90 for sm_90
  const unsigned char* l2 = nullptr;
  size_t l2_bytes = 0;
  const unsigned char* code = nullptr;
  size_t code_bytes = 0;
};

// The cubins that run on a device of compute capability major.minor (same major, the highest
// minor not above the device's), or nullptr.
const SweepCubins* sweepCubinsFor(int major, int minor);

}  // namespace fprof::collector
