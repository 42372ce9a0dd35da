// The counting backend of the collector's library: CUPTI's range profiler, SASS Metrics and
// Checkpoint APIs, fprof's cache sweep, and the driver (see counting_backend.h).
#pragma once

#include "metrics/counting_backend.h"

namespace fprof::collector {

// One for the process: it holds no state of its own.
CountingBackend& cuptiCountingBackend();

}  // namespace fprof::collector
