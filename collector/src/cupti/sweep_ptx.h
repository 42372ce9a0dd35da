// The PTX of the collector's cache-sweep kernels (l2_sweep.h), as text: loaded by the driver's JIT
// where no cubin of it was built for the device, and compiled by ptxas at build time otherwise
// (sweep_cubins.h). Pure C++: no CUDA needed to build it.
#pragma once

#include <string>

namespace fprof::collector {

// fprof_l2_sweep: reads (or, with `discard`, discards from the L2) a buffer of 16-byte vectors.
std::string l2SweepPtx();
// fprof_code_sweep: kCodeSweepInstructions dependent FMAs in a straight line, to fill the
// instruction caches with its own code.
std::string codeSweepPtx();

}  // namespace fprof::collector
