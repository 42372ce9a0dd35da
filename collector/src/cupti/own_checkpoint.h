// fprof's own checkpoint around a profiled launch's duplicate (duplicate_launch.h): the device
// memory the program allocated in the launch's context, its pinned host memory and the writable
// variables of the launched function's module, copied aside before the duplicate and back after
// it. The CUPTI Checkpoint API saves the whole context instead, and its cost follows the modules
// the context has loaded, not the memory the program holds (bench/RESULTS.md:
// 10-15 ms a save and restore in the PyTorch step, holding 191 MB).
//
// Used only where it holds everything the launch can write (covers()); otherwise the duplicate
// takes the CUPTI checkpoint, as before:
// - the allocation map followed every allocation call (no managed memory, CUDA arrays, graph
//   memory or memory imported from another process: AllocationMap::refuse);
// - the function's module was seen loaded, calls neither printf nor the device heap, and each of
//   its writable variables is found in the launched function's module;
// - no argument word points into device memory that is neither an allocation the map holds nor
//   one of those variables (a gap in the map shows there before a kernel can write through it).
// Pointers the kernel reads from memory reach allocated memory, which the map holds, or module
// variables: another module's variable written through an address read from memory is the one
// write only CUPTI's checkpoint holds (docs/metrics.md; FPROF_OWN_CHECKPOINT=0).
#pragma once

#include <cuda.h>
#include <cupti.h>

#include <string>
#include <vector>

#include "cupti/own_checkpoint_map.h"

namespace fprof::collector {

// The driver calls that allocate or release memory, for the allocation map.
const std::vector<CUpti_CallbackId>& allocationCallbackIds();
bool isAllocationCall(CUpti_CallbackId cbid);
// At an allocation call's EXIT: the map follows it (a failed call changes nothing).
void trackAllocationCall(AllocationMap& map, CUpti_CallbackId cbid, const CUpti_CallbackData& cb);

struct LaunchArguments {
  CUfunction function = nullptr;  // the context's function (a CUkernel resolved)
  const char* name = nullptr;     // mangled
  void** kernel_params = nullptr;
  void** extra = nullptr;
};

class OwnCheckpoint {
 public:
  OwnCheckpoint(const AllocationMap& allocations, const ModuleWritesIndex& modules)
      : allocations_(allocations), modules_(modules) {}
  ~OwnCheckpoint();
  bool setup(std::string& error);  // its stream, in the current context
  // Whether the own checkpoint holds all the launch can write in `ctx`; `ranges` then what to
  // save, `why` otherwise (one sentence).
  bool covers(CUcontext ctx, const LaunchArguments& launch, std::vector<MemoryRange>& ranges, std::string& why);
  // With the context drained. False where a copy failed (nothing to restore then).
  bool save(const std::vector<MemoryRange>& ranges, std::string& error);
  bool restore(std::string& error);
  void teardown();
  uint64_t savedBytes() const { return saved_bytes_; }

 private:
  bool addModuleVariables(const LaunchArguments& launch, std::vector<MemoryRange>& ranges, std::string& why);
  bool argumentsPointIntoKnownMemory(CUcontext ctx, const LaunchArguments& launch,
                                     const std::vector<MemoryRange>& variables, std::string& why);
  bool growScratch(uint64_t bytes, std::string& error);
  bool copyAll(bool to_scratch, std::string& error);

  const AllocationMap& allocations_;
  const ModuleWritesIndex& modules_;
  CUstream stream_ = nullptr;
  CUdeviceptr scratch_ = 0;
  uint64_t scratch_bytes_ = 0;
  std::vector<MemoryRange> saved_;       // device ranges, in scratch order
  std::vector<uint64_t> scratch_at_;     // each saved range's offset in the scratch
  std::vector<MemoryRange> saved_host_;  // host ranges, copied into host_copy_ in order
  std::string host_copy_;
  uint64_t saved_bytes_ = 0;
};

}  // namespace fprof::collector
