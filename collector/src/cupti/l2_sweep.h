// Cache control without kernel replay: before a profiled launch counted in the program's own run
// (application replay), a code sweep fills every SM's and GPC's instruction caches with its own
// code (a kernel's code fetches count in its L2 and DRAM bytes, and ncu's flush empties those
// caches too), then a kernel reads twice the L2's size with L2-only loads, so every line the
// program left in the L2 is evicted (dirty ones written back before the profiled kernel starts),
// and a second launch discards the buffer's lines: the L2 is empty, as after ncu's flush, and the
// kernel's DRAM bytes are its own, as under ncu's --cache-control all. It holds 2 x the L2 of
// device memory (100 MB on an H100) for the rest of the run. Kernel replay cannot use this: its memory save and restore
// runs after it and refills the L2 (bench/RESULTS.md).
#pragma once

#include <cuda.h>

#include <string>

#include "cupti/own_launch.h"
#include "metrics/counting_backend.h"

namespace fprof::collector {

// The sweep kernels' names: the translator drops their activity records (they run inside a launch
// callback, so CUPTI files them under the program's launch's correlation id).
inline constexpr const char* kL2SweepKernelName = "fprof_l2_sweep";
inline constexpr const char* kCodeSweepKernelName = "fprof_code_sweep";
// The kernel CUPTI's range profiler launches before each launch it counts without kernel replay
// (seen on H100, CUPTI 13.0: 1 block, about 80 us, under the program's launch's correlation id).
inline constexpr const char* kCuptiWaitKernelName = "WaitNs";


class L2Sweep final : public CacheSweep {
 public:
  L2Sweep() = default;
  ~L2Sweep() override;
  L2Sweep(const L2Sweep&) = delete;
  L2Sweep& operator=(const L2Sweep&) = delete;

  // Loads the kernel and allocates the buffer in the current context (2 x the L2 of `device`).
  bool setup(CUdevice device, std::string& error) override;
  // Enqueues the sweep on `stream`; the next work on that stream starts after it.
  bool run(CUstream stream, std::string& error) override;
  // Enqueues the code sweep alone (a few microseconds): also a kernel of fprof's own to count.
  bool launchCodeSweep(CUstream stream, std::string& error) override;
  // How the kernels were loaded: "cubins built for sm_90" or "PTX compiled by the driver".
  const std::string& loadedFrom() const override { return loaded_from_; }

 private:
  bool launch(CUstream stream, uint32_t discard, std::string& error);
  bool loadKernels(CUdevice device, std::string& error);
  static bool loadKernel(const void* image, const char* name, const char* what, CUmodule& module, CUfunction& kernel,
                         std::string& error);

  CUmodule module_ = nullptr;
  CUfunction kernel_ = nullptr;
  CUmodule code_module_ = nullptr;
  CUfunction code_kernel_ = nullptr;
  int sms_ = 0;
  CUdeviceptr buffer_ = 0;
  CUdeviceptr sink_ = 0;
  size_t bytes_ = 0;
  int blocks_ = 0;
  std::string loaded_from_;
};

}  // namespace fprof::collector
