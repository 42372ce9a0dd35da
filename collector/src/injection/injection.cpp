// The two entry points libcuda and the NVTX loader look up in this library.
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>

#include "injection/collector.h"
#include "injection/log.h"
#include "trace/nvtx_injection.h"

// Exported by libcupti but not declared in the CUDA 13.0 headers.
extern "C" CUptiResult CUPTIAPI cuptiNvtxInitialize2(void* get_export_table);

// Called by libcuda inside cuInit when CUDA_INJECTION64_PATH names this library. Returning 0
// would make cuInit fail, so it returns 1 even when collection is off.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  fprof::collector::initializeCollector();
  return 1;
}

// Called by the NVTX loader at the first NVTX call of each module when NVTX_INJECTION64_PATH
// names this library; it may come before cuInit. 0 turns NVTX into no-ops for that module, the
// cheapest choice when nothing is collected. By default fprof's own handlers take the module's
// NVTX calls (nvtx_injection.h); FPROF_NVTX_INJECTION=cupti routes them through CUPTI.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  if (!fprof::collector::initializeCollector()) return 0;
  if (fprof::collector::nvtxInjectionDirect()) {
    if (fprof::collector::installNvtxHandlers(get_export_table)) return 1;
    fprof::collector::logWarning("this module's NVTX offers no function tables; its NVTX ranges are not recorded");
    return 0;
  }
  const CUptiResult r = cuptiNvtxInitialize2(reinterpret_cast<void*>(get_export_table));
  if (r != CUPTI_SUCCESS) {
    const char* text = nullptr;
    cuptiGetResultString(r, &text);
    fprof::collector::logWarning("cuptiNvtxInitialize2 failed: %s; NVTX ranges are not recorded", text ? text : "?");
    return 0;
  }
  return 1;
}
