// What the metrics path asks of CUPTI and the driver, behind interfaces: the range profiler (with
// its toggled session), SASS patching, the cache sweep, the duplicate under a checkpoint, and the
// few driver and activity-API calls around them. The collector's library implements them with
// CUPTI (cupti_counting_backend.h); CPU tests fake them with hand-built ranges and counts, so which
// strategy runs, which launches are counted and what each kernel ends with are tested without a GPU.
#pragma once

#include <cuda.h>
#include <cupti_callbacks.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fprof/core/sass_pc.h"
#include "metrics/metrics_config.h"

namespace fprof::collector {

class AllocationMap;
class ModuleWritesIndex;

// One context's range profiler (range_profiler.h says what each call does on CUPTI).
class RangeCounter {
 public:
  virtual ~RangeCounter() = default;
  // false and `error` (a sentence a user can act on) where the counters cannot be had.
  virtual bool setup(CUcontext ctx, int device_ordinal, const std::vector<std::string>& metrics, size_t max_ranges,
                     CacheControl cache_control, ReplayMode replay, std::string& error) = 0;
  virtual void keepSessionOpen(bool keep) = 0;  // before setup
  virtual bool sessionKeptOpen() const = 0;
  virtual bool cacheControlApplied() const = 0;
  virtual bool readyToCount(std::string& error) = 0;
  virtual bool start(std::string& error) = 0;
  virtual bool stop(std::string& error) = 0;
  virtual bool useUserRanges(bool user, std::string& error) = 0;
  virtual bool pushRange(const char* name, std::string& error) = 0;
  virtual bool popRange(std::string& error) = 0;
  // Appends one row of values per range gathered since the last decode (in launch order), and
  // each range's name to `names` where given.
  virtual bool decode(std::vector<std::vector<double>>& rows, std::string& error,
                      std::vector<std::string>* names) = 0;
  bool stopAndDecode(std::vector<std::vector<double>>& rows, std::string& error, std::vector<std::string>* names) {
    return stop(error) && decode(rows, error, names);
  }
  virtual bool userRanges() const = 0;
  virtual size_t passes() const = 0;
  virtual ReplayMode replay() const = 0;  // what setup chose
  virtual const std::string& chip() const = 0;
  virtual void teardown() = 0;
};

// One context's SASS patching (sass_patching.h).
class SassCounter {
 public:
  // Where the time of begin and end went, summed over launches (seconds).
  struct Seconds {
    double enable = 0, wait = 0, read = 0, disable = 0;
  };
  virtual ~SassCounter() = default;
  virtual bool setup(CUcontext ctx, int device_ordinal, std::string& error) = 0;
  virtual bool begin(std::string& error) = 0;
  virtual bool end(std::vector<core::SassPcFunction>& functions, std::string& error) = 0;
  virtual void teardown() = 0;
  virtual const std::string& chip() const = 0;
  virtual const Seconds& seconds() const = 0;
};

// Cache control of the program's own run (l2_sweep.h).
class CacheSweep {
 public:
  virtual ~CacheSweep() = default;
  virtual bool setup(CUdevice device, std::string& error) = 0;
  virtual bool run(CUstream stream, std::string& error) = 0;
  virtual bool launchCodeSweep(CUstream stream, std::string& error) = 0;
  virtual const std::string& loadedFrom() const = 0;
};

// A driver launch call as its callback saw it, with the stream it runs on resolved.
struct DriverLaunchCall {
  CUpti_CallbackId cbid = 0;
  const void* params = nullptr;  // the callback's functionParams (valid inside the callback only)
  CUstream stream = nullptr;
  CUfunction function = nullptr;  // the context's function (a CUkernel resolved); null: unknown
  const char* name = nullptr;     // mangled
};

// Whether `cbid` is a launch the duplicate can repeat (cuLaunchKernel, cuLaunchKernelEx,
// cuLaunchCooperativeKernel and their per-thread-stream forms: what duplicate_launch.cpp relaunches).
bool canRelaunch(CUpti_CallbackId cbid);

// A profiled launch's duplicate, counted by SASS patching between a checkpoint and its restore
// (duplicate_launch.h).
class DuplicateCounting {
 public:
  struct Seconds {
    double save = 0, duplicate = 0, restore = 0;
    bool own_checkpoint = false;  // fprof's own checkpoint held the launch's memory, not CUPTI's
    uint64_t own_bytes = 0;       // what the own checkpoint copied aside
    std::string why_not_own;      // one sentence, where CUPTI's held it
  };
  virtual ~DuplicateCounting() = default;
  virtual bool setup(CUcontext ctx, int device_ordinal, const AllocationMap* allocations,
                     const ModuleWritesIndex* modules, std::string& error) = 0;
  virtual bool count(const DriverLaunchCall& call, std::vector<core::SassPcFunction>& functions,
                     std::string& error) = 0;
  virtual void teardown() = 0;
  virtual const Seconds& last() const = 0;  // of the last count() call
};

// The objects above for one context, and the driver and activity-API calls the strategies make.
class CountingBackend {
 public:
  virtual ~CountingBackend() = default;
  virtual std::unique_ptr<RangeCounter> rangeCounter() = 0;
  virtual std::unique_ptr<SassCounter> sassCounter() = 0;
  virtual std::unique_ptr<CacheSweep> cacheSweep() = 0;
  virtual std::unique_ptr<DuplicateCounting> duplicateCounter() = 0;

  // The loaded CUPTI's version and the driver's CUDA version; false where either is unknown.
  virtual bool versions(uint32_t& cupti, int& driver) = 0;
  // The calling thread's current context and its device; a failure is logged with the call.
  virtual bool currentContextAndDevice(CUcontext& ctx, CUdevice& device) = 0;
  virtual CUcontext currentContext() = 0;
  virtual void pushContext(CUcontext ctx) = 0;
  virtual void popContext() = 0;
  virtual CUresult synchronize() = 0;      // cuCtxSynchronize of the current context
  virtual bool synchronizeLogged() = 0;    // the same, a failure logged with the call
  virtual bool memoryInfo(size_t& free_bytes, size_t& total_bytes) = 0;  // cuMemGetInfo
  // CUPTI's id of `ctx`; false and `error` (the call's sentence) where CUPTI refuses.
  virtual bool contextId(CUcontext ctx, uint32_t& id, std::string& error) = 0;

  // The activity API (cupti_activity_api.h).
  virtual void holdFlushes() = 0;
  virtual void releaseFlushes() = 0;
  virtual bool pauseConcurrentKernelRecords() = 0;
  virtual void resumeConcurrentKernelRecords() = 0;
  virtual int64_t timestampNs() = 0;
};

// A context made current on this thread for as long as it lives (decoding needs it current).
class CurrentContext {
 public:
  CurrentContext(CountingBackend& backend, CUcontext ctx) : backend_(backend), ctx_(ctx) {
    previous_ = backend_.currentContext();
    if (previous_ != ctx_) backend_.pushContext(ctx_);
  }
  ~CurrentContext() {
    if (previous_ != ctx_) backend_.popContext();
  }
  CurrentContext(const CurrentContext&) = delete;
  CurrentContext& operator=(const CurrentContext&) = delete;

 private:
  CountingBackend& backend_;
  CUcontext ctx_;
  CUcontext previous_ = nullptr;
};

}  // namespace fprof::collector
