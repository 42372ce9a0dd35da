// The trace-mode collector: CUPTI callbacks on the target's threads produce launch and NVTX
// facts; a writer thread owns the database, translates activity buffers and commits one batch
// per flush period. Initialized once from the injection entry points.
#pragma once

#include <cupti.h>

namespace fprof::collector {

// Idempotent; safe from InitializeInjection (inside cuInit) and InitializeInjectionNvtx2.
// Returns false when collection is off (the target runs on either way).
bool initializeCollector();

// Whether NVTX goes to fprof's own handlers (FPROF_NVTX_INJECTION=direct, the default) rather
// than through CUPTI's NVTX layer; valid once initializeCollector() returned true.
bool nvtxInjectionDirect();

}  // namespace fprof::collector
