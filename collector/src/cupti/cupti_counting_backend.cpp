// The counting backend on CUPTI and the driver (see cupti_counting_backend.h).
#include "cupti/cupti_counting_backend.h"

#include <cupti.h>

#include "cupti/checks.h"
#include "cupti/cupti_activity_api.h"
#include "cupti/duplicate_launch.h"
#include "cupti/l2_sweep.h"
#include "cupti/range_profiler.h"
#include "cupti/sass_patching.h"

namespace fprof::collector {
namespace {

class CuptiCountingBackend final : public CountingBackend {
 public:
  std::unique_ptr<RangeCounter> rangeCounter() override { return std::make_unique<RangeProfiler>(); }
  std::unique_ptr<SassCounter> sassCounter() override { return std::make_unique<SassPatching>(); }
  std::unique_ptr<CacheSweep> cacheSweep() override { return std::make_unique<L2Sweep>(); }
  std::unique_ptr<DuplicateCounting> duplicateCounter() override { return std::make_unique<DuplicateCounter>(); }

  bool versions(uint32_t& cupti, int& driver) override {
    return cuptiGetVersion(&cupti) == CUPTI_SUCCESS && cuDriverGetVersion(&driver) == CUDA_SUCCESS;
  }
  bool currentContextAndDevice(CUcontext& ctx, CUdevice& device) override {
    return FPROF_CU_OK(cuCtxGetCurrent(&ctx)) && FPROF_CU_OK(cuCtxGetDevice(&device));
  }
  CUcontext currentContext() override {
    CUcontext ctx = nullptr;
    (void)cuCtxGetCurrent(&ctx);
    return ctx;
  }
  void pushContext(CUcontext ctx) override { (void)cuCtxPushCurrent(ctx); }
  void popContext() override { (void)cuCtxPopCurrent(nullptr); }
  CUresult synchronize() override { return cuCtxSynchronize(); }
  bool synchronizeLogged() override { return FPROF_CU_OK(cuCtxSynchronize()); }
  bool memoryInfo(size_t& free_bytes, size_t& total_bytes) override {
    return cuMemGetInfo(&free_bytes, &total_bytes) == CUDA_SUCCESS;
  }
  bool contextId(CUcontext ctx, uint32_t& id, std::string& error) override {
    if (CUptiResult r = cuptiGetContextId(ctx, &id); r != CUPTI_SUCCESS) {
      error = profilerErrorText("cuptiGetContextId", r);
      return false;
    }
    return true;
  }

  void holdFlushes() override { CuptiActivityApi::instance().holdFlushes(); }
  void releaseFlushes() override { CuptiActivityApi::instance().releaseFlushes(); }
  bool pauseConcurrentKernelRecords() override { return CuptiActivityApi::instance().pauseConcurrentKernelRecords(); }
  void resumeConcurrentKernelRecords() override { CuptiActivityApi::instance().resumeConcurrentKernelRecords(); }
  int64_t timestampNs() override { return CuptiActivityApi::timestampNs(); }
};

}  // namespace

CountingBackend& cuptiCountingBackend() {
  static auto* backend = new CuptiCountingBackend();  // leaked, as the collector: callbacks may come late
  return *backend;
}

}  // namespace fprof::collector
