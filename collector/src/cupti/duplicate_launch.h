// SASS counts in the program's own run (application replay in one run): before a profiled
// launch runs, the context's memory is saved with the CUPTI Checkpoint API, the launch is issued
// once more from its callback with the SASS Metrics API patching its functions (every instruction
// counted exactly, sass_patching.h), and the memory is restored, so the program's own launch then
// runs on the state it would have seen and is counted by the range profiler as before. The
// duplicate's per-PC counts are the launch's SASS counters (core/sass_pc.h); no second run.
//
// Measured on an H100 (bench/RESULTS.md; tests/gpu_metrics/checkpoint_sass_probe.cu at commit
// 66625e7): save 0.7-1.4 ms, duplicate 2.0-2.3 ms, restore 0.2 ms with the program
// holding 0.2 GB of device memory; save 5-8 ms and restore 3.5 ms at 4 GB; 13-26 and 13 ms at 16 GB;
// pinned host memory is saved too, at 0.6-0.8 s a GB. The program's launch afterwards read the same
// hardware counters as without the duplicate, and in-place kernels left one application.
#pragma once

#include <cuda.h>
#include <cupti.h>
#include <cupti_checkpoint.h>

#include <memory>
#include <string>
#include <vector>

#include "cupti/own_checkpoint.h"
#include "cupti/sass_patching.h"
#include "fprof/core/sass_pc.h"
#include "metrics/counting_backend.h"

namespace fprof::collector {

class DuplicateCounter final : public DuplicateCounting {
 public:
  ~DuplicateCounter() override;
  // Loads the Checkpoint API (libcheckpoint.so beside the libcupti in use) and sets up SASS
  // patching for the device of `ctx`; false and `error` where either is missing. With `allocations`
  // and `modules`, a duplicate takes fprof's own checkpoint where it holds all the launch can write
  // (own_checkpoint.h), the CUPTI checkpoint elsewhere.
  bool setup(CUcontext ctx, int device_ordinal, const AllocationMap* allocations, const ModuleWritesIndex* modules,
             std::string& error) override;
  // With the context drained: save, the patched duplicate of `call`, restore. `functions`: what
  // the duplicate's functions counted, per PC. False and `error` where a step failed (the memory
  // is restored whenever it was saved).
  bool count(const DriverLaunchCall& call, std::vector<core::SassPcFunction>& functions,
             std::string& error) override;
  void teardown() override;
  const Seconds& last() const override { return last_; }  // of the last count() call (the caller sums them)

 private:
  bool duplicate(const DriverLaunchCall& call, std::vector<core::SassPcFunction>& functions, std::string& error);
  bool saveOwn(const DriverLaunchCall& call);
  bool saveCupti(std::string& error);
  using CheckpointCall = CUptiResult (*)(NV::Cupti::Checkpoint::CUpti_Checkpoint*);
  CheckpointCall save_ = nullptr, restore_ = nullptr, free_ = nullptr;  // libcheckpoint.so, never unloaded
  NV::Cupti::Checkpoint::CUpti_Checkpoint checkpoint_{};
  bool saved_ = false;
  CUcontext ctx_ = nullptr;
  std::unique_ptr<OwnCheckpoint> own_;
  std::string own_off_why_;  // why every duplicate takes CUPTI's checkpoint, where own_ is null
  SassPatching patching_;
  Seconds last_;
};

}  // namespace fprof::collector
