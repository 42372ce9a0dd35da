// One CUDA context's CUPTI range profiler: auto range (one range per kernel launch) with kernel
// replay, or counting the program's own execution (application replay of one pass), there also
// with user ranges (a CUDA graph launch as one range). Ranges accumulate in a counter-data image
// and are decoded in batches, not per kernel, because a decode synchronizes the context.
#pragma once

#include <cuda.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>

#include "cupti/toggled_session.h"
#include "metrics/counting_backend.h"
#include "metrics/metrics_config.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fprof::collector {

class RangeProfiler final : public RangeCounter {
 public:
  RangeProfiler() = default;
  ~RangeProfiler() override;
  RangeProfiler(const RangeProfiler&) = delete;
  RangeProfiler& operator=(const RangeProfiler&) = delete;

  // Sets up host config + target for ctx. On failure returns false and sets `error` to a sentence
  // a user can act on (permission, unsupported device, unknown metric, ...).
  // cache_control: kAll makes every replay pass start with caches invalidated (ncu's
  // --cache-control all); it needs CUPTI 13.4's cacheControlMode, and with an older CUPTI setup
  // fails with a sentence, where kAllIfSupported falls back to none (cacheControlApplied() says).
  // `replay` as asked (chooseReplay decides, from the pass count); replay() says what was chosen.
  bool setup(CUcontext ctx, int device_ordinal, const std::vector<std::string>& metrics, size_t max_ranges,
             CacheControl cache_control, ReplayMode replay, std::string& error) override;
  bool cacheControlApplied() const override { return cache_control_applied_; }
  // Auto range under application replay counted by a profiler session kept open, with counting
  // switched on and off around each launch (toggled_session.h), instead of a start and stop each.
  // Set before setup; kernel replay keeps the range profiler.
  void keepSessionOpen(bool keep) override { keep_session_open_ = keep; }
  bool sessionKeptOpen() const override { return toggled_ != nullptr; }

  // Before the caches are emptied for a counted launch: a kept session begins here if it is not
  // open (toggled_session.h says why not at the launch).
  bool readyToCount(std::string& error) override;
  bool start(std::string& error) override;
  bool stop(std::string& error) override;
  // User ranges instead of auto range (one range per kernel launch): a range is then whatever
  // runs between pushRange and popRange, a CUDA graph launch included. Application replay only
  // (kernel replay knows no user ranges). Called before setup, setup configures them; after,
  // a change disables and enables the profiler again (17 ms on an H100), so it must be stopped
  // and the ranges gathered so far decoded.
  bool useUserRanges(bool user, std::string& error) override;
  bool pushRange(const char* name, std::string& error) override;
  bool popRange(std::string& error) override;
  // Decodes the ranges gathered since the last decode, appends one row of values per range (in
  // launch order) to `rows`, and readies a fresh counter-data image.
  // `names`, when given, gets each range's name (empty where CUPTI gives none).
  bool decode(std::vector<std::vector<double>>& rows, std::string& error,
              std::vector<std::string>* names) override;

  bool userRanges() const override { return user_ranges_; }
  size_t passes() const override { return passes_; }
  ReplayMode replay() const override { return replay_; }
  const std::string& chip() const override { return chip_; }
  void teardown() override;

 private:
  // The steps of setup, in order.
  bool readCounterAvailability(std::string& error);
  bool buildConfigImage(std::string& error);
  bool choosePasses(ReplayMode replay, std::string& error);
  bool chooseCacheControl(CacheControl cache_control, std::string& error);
  bool enable(std::string& error);
  // The counter-data image sized and initialized by a range profiler object, which is then
  // disabled, and the toggled session set up over it.
  bool switchToToggledSession(std::string& error);
  bool wantsToggledSession() const { return keep_session_open_ && replay_ == ReplayMode::kApplication; }
  bool collectRanges(size_t& dropped, std::string& error);
  CUptiResult disable();  // the profiler object, which is gone afterwards whatever CUPTI says
  bool resetCounterData(std::string& error);
  std::string rangeName(size_t range_index) const;

  CUcontext ctx_ = nullptr;
  std::string chip_;
  std::vector<std::string> metric_names_;
  std::vector<const char*> metric_ptrs_;
  std::vector<uint8_t> availability_, config_, counter_data_;
  CUpti_Profiler_Host_Object* host_ = nullptr;
  CUpti_RangeProfiler_Object* object_ = nullptr;
  std::unique_ptr<ToggledSession> toggled_;
  size_t max_ranges_ = 0;
  size_t passes_ = 0;
  ReplayMode replay_ = ReplayMode::kKernel;
  bool started_ = false;
  bool user_ranges_ = false;
  bool cache_control_applied_ = false;
  bool keep_session_open_ = false;
  bool initialized_ = false;
};

// A sentence for a CUPTI result in the profiler context (permission and busy get their fix).
std::string profilerErrorText(const char* call, CUptiResult result);

// cuptiProfilerInitialize, whether the device supports `api` (`what` names it in the sentence that
// says what the device lacks: vGPU, WSL, ...), and its chip's name. `initialized` is set once the
// first step succeeded, so the caller deinitializes whatever followed. The range profiler and the
// SASS Metrics API start so.
bool initializeProfilerFor(int device_ordinal, CUpti_Profiler_API api, const char* what, bool& initialized,
                           std::string& chip, std::string& error);

// In a function that returns false with `error` set (a std::string in scope): the call, or that.
#define FPROF_PROFILER_CALL(call)                          \
  do {                                                     \
    CUptiResult r_ = (call);                               \
    if (r_ != CUPTI_SUCCESS) {                             \
      error = ::fprof::collector::profilerErrorText(#call, r_); \
      return false;                                        \
    }                                                      \
  } while (0)

}  // namespace fprof::collector
