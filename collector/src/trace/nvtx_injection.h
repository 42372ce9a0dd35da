// fprof's own NVTX injection (FPROF_NVTX_INJECTION=direct): the NVTX loader of each module calls
// InitializeInjectionNvtx2, which fills the module's function table with handlers that go
// straight to the TraceRecorder, instead of through CUPTI's NVTX layer and callback dispatch.
// What is recorded is the same as through CUPTI's NVTX callbacks (the same calls are handled;
// the others become no-ops, as they are for fprof today).
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <cstdint>

#include "trace/trace_recorder.h"

namespace fprof::collector {

struct NvtxTarget {
  TraceRecorder* recorder = nullptr;
  int64_t (*timestamp_ns)() = nullptr;  // the clock kernels are timed with
  bool (*active)() = nullptr;           // false once collection stopped: calls are answered, not recorded
};

// Where the handlers send ranges. Domains and strings registered so far are registered with a
// new recorder too (tests switch recorders; the collector sets one).
void setNvtxTarget(const NvtxTarget& target);

// InitializeInjectionNvtx2's work: fills the calling module's CORE and CORE2 function tables.
// False when the module offers no tables (the caller then returns 0: NVTX stays no-ops there).
bool installNvtxHandlers(NvtxGetExportTableFunc_t get_export_table);

}  // namespace fprof::collector
