// A reference point for bench/trace_overhead.sh, not part of fprof: the least a CUPTI kernel
// tracer can do, injected the same way as the collector. TRACE_BASELINE=activity enables kernel
// activity records and throws them away; TRACE_BASELINE=callbacks also subscribes to the same
// runtime and driver launch callbacks as the collector, with empty handlers; TRACE_BASELINE=
// callbacks-driver only the driver's; TRACE_BASELINE_ACTIVITY=0 leaves the kernel activity off
// (callbacks alone). The difference to the collector is what fprof's own work costs per launch. TRACE_BASELINE_ATTR sets CUPTI activity
// attributes first, to see whether any makes kernel activity itself cheaper:
// "device_buffer_mb=N,preallocate=N,pool_limit=N,pinned=0|1,per_thread=0|1" (comma-separated).
#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <algorithm>

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

template <typename T>
void setAttribute(CUpti_ActivityAttribute attribute, T value, const char* name) {
  size_t size = sizeof value;
  if (check(cuptiActivitySetAttribute(attribute, &size, &value), name)) {
    std::fprintf(stderr, "baseline: %s = %llu\n", name, static_cast<unsigned long long>(value));
  }
}

// TRACE_BASELINE_ATTR: key=value pairs, comma-separated (the comment at the top).
void applyAttributes(const char* spec) {
  if (spec == nullptr) return;
  std::string s(spec);
  size_t at = 0;
  while (at < s.size()) {
    const size_t end = std::min(s.find(',', at), s.size());
    const std::string item = s.substr(at, end - at);
    at = end + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = item.substr(0, eq);
    const unsigned long long v = std::strtoull(item.c_str() + eq + 1, nullptr, 10);
    if (key == "device_buffer_mb") setAttribute<size_t>(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, v << 20, "device_buffer_size");
    if (key == "preallocate") setAttribute<size_t>(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE, v, "preallocate");
    if (key == "pool_limit") setAttribute<size_t>(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, v, "pool_limit");
    if (key == "pinned") setAttribute<uint8_t>(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, static_cast<uint8_t>(v), "pinned");
    if (key == "per_thread") setAttribute<uint8_t>(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, static_cast<uint8_t>(v), "per_thread");
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static bool done = false;
  if (done) return 1;
  done = true;
  const char* mode_env = std::getenv("TRACE_BASELINE");
  const std::string mode = mode_env ? mode_env : "activity";
  if (mode == "callbacks" || mode == "callbacks-driver") {
    CUpti_SubscriberHandle sub = nullptr;
    if (!check(cuptiSubscribe(&sub, onCallback, nullptr), "cuptiSubscribe")) return 1;
    if (mode == "callbacks") {
      for (CUpti_CallbackId id : {CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000}) {
        check(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, id), "cuptiEnableCallback(runtime)");
      }
    }
    for (CUpti_CallbackId id : {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz}) {
      check(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id), "cuptiEnableCallback(driver)");
    }
  }
  const char* activity = std::getenv("TRACE_BASELINE_ACTIVITY");
  if (activity != nullptr && std::strcmp(activity, "0") == 0) return 1;
  applyAttributes(std::getenv("TRACE_BASELINE_ATTR"));
  if (!check(cuptiActivityRegisterCallbacks(requested, completed), "cuptiActivityRegisterCallbacks")) return 1;
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable");
  std::atexit(atExit);
  return 1;
}
