// CUPTI subscription and activity buffers; see cupti_activity_api.h.
#include "cupti/cupti_activity_api.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>

#include "cupti/checks.h"

namespace fprof::collector {
namespace {

constexpr CUpti_CallbackId kRuntimeLaunches[] = {
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
};
constexpr CUpti_CallbackId kDriverLaunches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

}  // namespace

CuptiActivityApi& CuptiActivityApi::instance() {
  // Leaked on purpose: CUPTI threads may call back while static destructors run at exit.
  static auto* api = new CuptiActivityApi();
  return *api;
}

bool CuptiActivityApi::subscribe(CUpti_CallbackFunc callback, void* userdata, std::string& error) {
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "fprof";
  char old_name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {0};
  params.oldSubscriberName = old_name;
  params.oldSubscriberSize = sizeof old_name;
  const CUptiResult r = cuptiSubscribe_v2(&subscriber_, callback, userdata, &params);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    error = std::string("another CUPTI client is already active (") + (old_name[0] ? old_name : "unnamed") +
            "; nsys, ncu, compute-sanitizer or a framework profiler?)";
    subscriber_ = nullptr;
    return false;
  }
  if (r != CUPTI_SUCCESS) {
    const char* text = nullptr;
    cuptiGetResultString(r, &text);
    error = std::string("cuptiSubscribe_v2 failed: ") + (text ? text : "?") +
            (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ? " (profiling is restricted to admin users on this machine)"
                                                     : "");
    subscriber_ = nullptr;
    return false;
  }
  return true;
}

bool CuptiActivityApi::enableCallbacks(Callbacks which) {
  bool ok = true;
  for (CUpti_CallbackId id : kRuntimeLaunches) {
    ok &= FPROF_CUPTI_OK(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, id));
  }
  for (CUpti_CallbackId id : kDriverLaunches) {
    ok &= FPROF_CUPTI_OK(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id));
  }
  ok &= FPROF_CUPTI_OK(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API,
                                           CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020));
  ok &= FPROF_CUPTI_OK(
      cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2));
  ok &= FPROF_CUPTI_OK(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API,
                                           CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2));
  ok &= FPROF_CUPTI_OK(
      cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED));
  if (which.nvtx) ok &= FPROF_CUPTI_OK(cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_NVTX));
  return ok;
}

std::vector<std::string> CuptiActivityApi::enableActivities(BufferSink sink, Kinds kinds) {
  sink_ = std::move(sink);
  std::vector<std::string> warnings;
  if (zeroed_buffers_) {
    uint8_t zeroed = 1;
    size_t size = sizeof zeroed;
    if (!FPROF_CUPTI_OK(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &zeroed))) {
      zeroed_buffers_ = false;  // CUPTI zeroes them itself, as by default
    }
  }
  if (!FPROF_CUPTI_OK(cuptiActivityRegisterCallbacks(onBufferRequested, onBufferCompleted))) {
    warnings.push_back("cannot register activity buffers: no kernel, memcpy, memset or memory records");
    return warnings;
  }
  struct Kind {
    CUpti_ActivityKind kind;
    const char* what;
    bool wanted;
  };
  const CUpti_ActivityKind kernel_kind =
      kinds.serialized_kernels ? CUPTI_ACTIVITY_KIND_KERNEL : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  kernel_kind_ = kernel_kind;
  for (Kind k : {Kind{kernel_kind, "kernel", kinds.kernel},
                 Kind{CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy", kinds.memcpy},
                 Kind{CUPTI_ACTIVITY_KIND_MEMSET, "memset", kinds.memset},
                 Kind{CUPTI_ACTIVITY_KIND_MEMORY2, "memory allocation", kinds.memory}}) {
    if (k.wanted && !FPROF_CUPTI_OK(cuptiActivityEnable(k.kind))) {
      warnings.push_back(std::string("CUPTI refused ") + k.what + " activity; those records are missing");
    }
  }
  return warnings;
}

bool CuptiActivityApi::setHostPinnedProfilingBuffers() {
  uint8_t pinned = 1;
  size_t size = sizeof pinned;
  return FPROF_CUPTI_OK(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, &size, &pinned));
}

void CuptiActivityApi::setFlushPeriod(int period_ms) {
  FPROF_CUPTI_OK(cuptiActivityFlushPeriod(static_cast<uint32_t>(period_ms)));
}

void CuptiActivityApi::holdFlushes() {
  flush_mu_.lock();
  flush_holder_.store(std::this_thread::get_id());
}

void CuptiActivityApi::releaseFlushes() {
  flush_holder_.store(std::thread::id{});
  flush_mu_.unlock();
}

bool CuptiActivityApi::pauseConcurrentKernelRecords() {
  if (released_.load() || kernel_kind_ != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) return false;
  return FPROF_CUPTI_OK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
}

void CuptiActivityApi::resumeConcurrentKernelRecords() {
  if (!released_.load()) FPROF_CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
}

void CuptiActivityApi::flushAll(bool forced) {
  if (released_.load()) return;
  std::unique_lock<std::mutex> after_patching(flush_mu_, std::defer_lock);
  if (flush_holder_.load() != std::this_thread::get_id()) after_patching.lock();
  FPROF_CUPTI_OK(cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0));
}

void CuptiActivityApi::release() {
  if (released_.load() || subscriber_ == nullptr) return;
  FPROF_CUPTI_OK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_KERNEL,
                                  CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMORY2}) {
    (void)cuptiActivityDisable(kind);  // a kind that was refused at enable fails here too
  }
  for (CUpti_CallbackId id : kRuntimeLaunches) (void)cuptiActivityEnableRuntimeApi(id, 0);
  FPROF_CUPTI_OK(cuptiActivityFlushPeriod(0));
  FPROF_CUPTI_OK(cuptiUnsubscribe(subscriber_));
  subscriber_ = nullptr;
  released_.store(true);
}

std::string CuptiActivityApi::libraryPath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiGetVersion), &info) != 0 && info.dli_fname != nullptr) {
    return info.dli_fname;
  }
  return {};
}

std::string CuptiActivityApi::globalBindingPath() {
  Dl_info info{};
  void* symbol = dlsym(RTLD_DEFAULT, "cuptiActivityEnable");
  if (symbol != nullptr && dladdr(symbol, &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
  return {};
}

std::vector<std::string> CuptiActivityApi::loadedLibraries() {
  std::set<std::string> found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        const char* path = info->dlpi_name;
        if (path == nullptr) return 0;
        const char* base = std::strrchr(path, '/');
        base = base ? base + 1 : path;
        if (std::strncmp(base, "libcupti", 8) == 0) static_cast<std::set<std::string>*>(data)->insert(path);
        return 0;
      },
      &found);
  return {found.begin(), found.end()};
}

uint32_t CuptiActivityApi::version() const {
  uint32_t v = 0;
  FPROF_CUPTI_OK(cuptiGetVersion(&v));
  return v;
}

int64_t CuptiActivityApi::timestampNs() {
  uint64_t ts = 0;
  cuptiGetTimestamp(&ts);  // cannot fail once CUPTI is loaded; 0 would show as an obviously bad time
  return static_cast<int64_t>(ts);
}

const CUpti_Activity* CuptiActivityApi::nextRecord(uint8_t* buffer, size_t valid_bytes,
                                                   const CUpti_Activity* previous) {
  CUpti_Activity* record = const_cast<CUpti_Activity*>(previous);
  const CUptiResult r = cuptiActivityGetNextRecord(buffer, valid_bytes, &record);
  if (r == CUPTI_SUCCESS) return record;
  if (r != CUPTI_ERROR_MAX_LIMIT_REACHED) FPROF_CUPTI_OK(r);
  return nullptr;
}

void CuptiActivityApi::releaseBuffer(uint8_t* buffer) {
  {
    std::lock_guard lock(pool_mu_);
    if (pool_.size() >= kPooledBuffers) {
      std::free(buffer);
      return;
    }
  }
  // Zeroed here, on the writer thread, not by CUPTI on the thread that gets the buffer next.
  if (zeroed_buffers_) std::memset(buffer, 0, buffer_bytes_);
  std::lock_guard lock(pool_mu_);
  pool_.push_back(buffer);
}

void CuptiActivityApi::prepareBuffers(size_t count) {
  if (!zeroed_buffers_ || released_.load()) return;
  count = std::min(count, kPooledBuffers);
  for (;;) {
    {
      std::lock_guard lock(pool_mu_);
      if (pool_.size() >= count) return;
    }
    auto* b = static_cast<uint8_t*>(std::aligned_alloc(8, buffer_bytes_));
    if (b == nullptr) return;
    std::memset(b, 0, buffer_bytes_);  // touches every page: the faults happen here
    std::lock_guard lock(pool_mu_);
    pool_.push_back(b);
  }
}

void CUPTIAPI CuptiActivityApi::onBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  CuptiActivityApi& self = instance();
  uint8_t* b = nullptr;
  {
    std::lock_guard lock(self.pool_mu_);
    if (!self.pool_.empty()) {
      b = self.pool_.back();
      self.pool_.pop_back();
    }
  }
  if (b == nullptr) {
    b = static_cast<uint8_t*>(std::aligned_alloc(8, self.buffer_bytes_));
    if (b != nullptr && self.zeroed_buffers_) std::memset(b, 0, self.buffer_bytes_);  // CUPTI counts on it
  }
  self.requested_.fetch_add(1, std::memory_order_relaxed);
  *buffer = b;
  *size = b == nullptr ? 0 : self.buffer_bytes_;  // size 0: CUPTI drops records and counts them
  *max_records = 0;
}

void CUPTIAPI CuptiActivityApi::onBufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t,
                                                  size_t valid_bytes) {
  CuptiActivityApi& self = instance();
  size_t dropped = 0;
  if (FPROF_CUPTI_OK(cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped)) && dropped > 0) {
    self.dropped_.fetch_add(dropped, std::memory_order_relaxed);
  }
  if (buffer == nullptr) return;
  if (self.sink_ && valid_bytes > 0) {
    self.sink_(buffer, valid_bytes);
  } else {
    self.releaseBuffer(buffer);
  }
}

bool CuptiActivityApi::isLaunchCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const CUpti_CallbackId* begin = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? std::begin(kRuntimeLaunches)
                                  : domain == CUPTI_CB_DOMAIN_DRIVER_API ? std::begin(kDriverLaunches)
                                                                         : nullptr;
  if (begin == nullptr) return false;
  const CUpti_CallbackId* end =
      domain == CUPTI_CB_DOMAIN_RUNTIME_API ? std::end(kRuntimeLaunches) : std::end(kDriverLaunches);
  for (const CUpti_CallbackId* p = begin; p != end; ++p) {
    if (*p == cbid) return true;
  }
  return false;
}

bool CuptiActivityApi::isDriverLaunch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return domain == CUPTI_CB_DOMAIN_DRIVER_API && isLaunchCallback(domain, cbid);
}

bool CuptiActivityApi::isGraphLaunch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000;
  }
  return domain == CUPTI_CB_DOMAIN_DRIVER_API &&
         (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch || cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz);
}

bool CuptiActivityApi::isContextTeardown(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020) ||
         (domain == CUPTI_CB_DOMAIN_DRIVER_API && (cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2 ||
                                                   cbid == CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2));
}

const char* CuptiActivityApi::launchApiName(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000: return "__cudaLaunchKernel";
      case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000: return "__cudaLaunchKernel_ptsz";
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000: return "cudaLaunchKernel";
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000: return "cudaLaunchKernel_ptsz";
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060: return "cudaLaunchKernelExC";
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: return "cudaLaunchKernelExC_ptsz";
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000: return "cudaLaunchCooperativeKernel";
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000: return "cudaLaunchCooperativeKernel_ptsz";
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000: return "cudaGraphLaunch";
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000: return "cudaGraphLaunch_ptsz";
      default: return "";
    }
  }
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel: return "cuLaunchKernel";
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: return "cuLaunchKernel_ptsz";
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx: return "cuLaunchKernelEx";
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: return "cuLaunchKernelEx_ptsz";
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel: return "cuLaunchCooperativeKernel";
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: return "cuLaunchCooperativeKernel_ptsz";
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch: return "cuGraphLaunch";
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: return "cuGraphLaunch_ptsz";
    default: return "";
  }
}

}  // namespace fprof::collector

namespace fprof::collector {
namespace {

// Driver callback ids whose API name starts with cuMemset or cuMemcpy, found once by name so
// that every variant (async, 2D/3D, _v2, _ptds) is covered.
const std::vector<bool>& memoryOperationIds() {
  static const std::vector<bool> ids = [] {
    std::vector<bool> v(CUPTI_DRIVER_TRACE_CBID_SIZE, false);
    for (int id = 0; id < CUPTI_DRIVER_TRACE_CBID_SIZE; ++id) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, static_cast<uint32_t>(id), &name) != CUPTI_SUCCESS ||
          name == nullptr) {
        continue;
      }
      const std::string n = name;
      v[static_cast<size_t>(id)] = n.rfind("cuMemset", 0) == 0 || n.rfind("cuMemcpy", 0) == 0;
    }
    return v;
  }();
  return ids;
}

}  // namespace

bool CuptiActivityApi::isMemoryOperation(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return false;
  const std::vector<bool>& ids = memoryOperationIds();
  return cbid < ids.size() && ids[cbid];
}

bool CuptiActivityApi::enableMemoryOperationCallbacks() {
  bool ok = true;
  const std::vector<bool>& ids = memoryOperationIds();
  for (size_t id = 0; id < ids.size(); ++id) {
    if (ids[id]) {
      ok &= FPROF_CUPTI_OK(
          cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, static_cast<CUpti_CallbackId>(id)));
    }
  }
  return ok;
}

bool CuptiActivityApi::enableGraphNodeCallbacks() {
  return FPROF_CUPTI_OK(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED));
}

bool CuptiActivityApi::enableGraphNodeChangeCallbacks() {
  bool ok = true;
  for (CUpti_CallbackId id : {CUPTI_CBID_RESOURCE_GRAPH_NODE_UPDATED, CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS}) {
    ok &= FPROF_CUPTI_OK(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, id));
  }
  return ok;
}

bool CuptiActivityApi::enableModuleLoadCallbacks() {
  return FPROF_CUPTI_OK(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED));
}

bool CuptiActivityApi::enableDriverCallbacks(const uint32_t* ids, size_t count) {
  bool ok = true;
  for (size_t i = 0; i < count; ++i) {
    ok &= FPROF_CUPTI_OK(
        cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, static_cast<CUpti_CallbackId>(ids[i])));
  }
  return ok;
}

}  // namespace fprof::collector
