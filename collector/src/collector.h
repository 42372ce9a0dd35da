// The trace-mode collector: CUPTI callbacks on the target's threads produce launch and NVTX
// facts; a writer thread owns the database, translates activity buffers and commits one batch
// per flush period. Initialized once from the injection entry points.
#pragma once

#include <cupti.h>

namespace fprof::collector {

// Idempotent; safe from InitializeInjection (inside cuInit) and InitializeInjectionNvtx2.
// Returns false when collection is off (the target runs on either way).
bool initializeCollector();

}  // namespace fprof::collector
