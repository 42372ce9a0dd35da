// A reference point for bench/trace_overhead.sh, not part of fprof: the least a CUPTI kernel
// tracer can do, injected the same way as the collector. TRACE_BASELINE=activity enables kernel
// activity records and throws them away; TRACE_BASELINE=callbacks also subscribes to the same
// runtime and driver launch callbacks as the collector, with empty handlers. The difference to
// the collector is what fprof's own work costs per launch.
#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

std::atomic<unsigned long long> g_records{0};

void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8u << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) g_records.fetch_add(1);
  std::free(buffer);
}

void CUPTIAPI onCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

void atExit() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::fprintf(stderr, "baseline: %llu activity records\n", g_records.load());
}

bool check(CUptiResult r, const char* call) {
  if (r == CUPTI_SUCCESS) return true;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::fprintf(stderr, "baseline: %s failed: %s\n", call, text ? text : "?");
  return false;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static bool done = false;
  if (done) return 1;
  done = true;
  const char* mode = std::getenv("TRACE_BASELINE");
  if (mode != nullptr && std::strcmp(mode, "callbacks") == 0) {
    CUpti_SubscriberHandle sub = nullptr;
    if (!check(cuptiSubscribe(&sub, onCallback, nullptr), "cuptiSubscribe")) return 1;
    for (CUpti_CallbackId id : {CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
                                CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000}) {
      check(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, id), "cuptiEnableCallback(runtime)");
    }
    for (CUpti_CallbackId id : {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz}) {
      check(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id), "cuptiEnableCallback(driver)");
    }
  }
  if (!check(cuptiActivityRegisterCallbacks(requested, completed), "cuptiActivityRegisterCallbacks")) return 1;
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable");
  std::atexit(atExit);
  return 1;
}
