// A profiled launch's patched duplicate between a checkpoint and its restore (duplicate_launch.h).
#include "cupti/duplicate_launch.h"

#include <cupti_driver_cbid.h>
#include <dlfcn.h>

#include <chrono>
#include <filesystem>

#include "cupti/checks.h"
#include "cupti/own_launch.h"
#include "cupti/range_profiler.h"  // profilerErrorText
#include "metrics/lap_seconds.h"

namespace fprof::collector {
namespace {

using NV::Cupti::Checkpoint::CUpti_Checkpoint;  // CUpti_Checkpoint_STRUCT_SIZE names it unqualified

// libcheckpoint.so ships beside libcupti (the toolkit's, or the one --cupti chose).
void* openCheckpointLibrary(std::string& error) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiGetVersion), &info) != 0 && info.dli_fname != nullptr) {
    const auto beside = std::filesystem::path(info.dli_fname).parent_path() / "libcheckpoint.so";
    if (void* lib = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
  }
  if (void* lib = dlopen("libcheckpoint.so", RTLD_NOW | RTLD_LOCAL)) return lib;
  const char* why = dlerror();
  error = std::string("the CUPTI Checkpoint API (libcheckpoint.so, beside libcupti) could not be loaded: ") +
          (why != nullptr ? why : "not found");
  return nullptr;
}

// The launch again, as the program's callback passed it, on the stream it resolved to (the calls
// canRelaunch accepts).
CUresult relaunch(const DriverLaunchCall& call) {
  switch (call.cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      const auto* p = static_cast<const cuLaunchKernel_params*>(call.params);
      return cuLaunchKernel(p->f, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ,
                            p->sharedMemBytes, call.stream, p->kernelParams, p->extra);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto* p = static_cast<const cuLaunchKernelEx_params*>(call.params);
      if (p->config == nullptr) return CUDA_ERROR_INVALID_VALUE;
      CUlaunchConfig config = *p->config;
      config.hStream = call.stream;
      return cuLaunchKernelEx(&config, p->f, p->kernelParams, p->extra);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      const auto* p = static_cast<const cuLaunchCooperativeKernel_params*>(call.params);
      return cuLaunchCooperativeKernel(p->f, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
                                       p->blockDimZ, p->sharedMemBytes, call.stream, p->kernelParams);
    }
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

// The argument words of a launch call whose params struct has both kernelParams and extra.
template <class Params>
void takeParamsAndExtra(const void* params, LaunchArguments& a) {
  const auto* p = static_cast<const Params*>(params);
  a.kernel_params = p->kernelParams;
  a.extra = p->extra;
}

// The launch's arguments as its driver call passed them, for the own checkpoint's look at them.
LaunchArguments argumentsOf(const DriverLaunchCall& call) {
  LaunchArguments a;
  a.function = call.function;
  a.name = call.name;
  switch (call.cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
      takeParamsAndExtra<cuLaunchKernel_params>(call.params, a);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
      takeParamsAndExtra<cuLaunchKernelEx_params>(call.params, a);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      a.kernel_params = static_cast<const cuLaunchCooperativeKernel_params*>(call.params)->kernelParams;
      break;
    default:
      break;
  }
  return a;
}

}  // namespace

DuplicateCounter::~DuplicateCounter() { teardown(); }

bool DuplicateCounter::setup(CUcontext ctx, int device_ordinal, const AllocationMap* allocations,
                             const ModuleWritesIndex* modules, std::string& error) {
  void* lib = openCheckpointLibrary(error);
  if (lib == nullptr) return false;
  save_ = reinterpret_cast<CheckpointCall>(dlsym(lib, "cuptiCheckpointSave"));
  restore_ = reinterpret_cast<CheckpointCall>(dlsym(lib, "cuptiCheckpointRestore"));
  free_ = reinterpret_cast<CheckpointCall>(dlsym(lib, "cuptiCheckpointFree"));
  if (save_ == nullptr || restore_ == nullptr || free_ == nullptr) {
    error = "libcheckpoint.so lacks cuptiCheckpointSave/Restore/Free";
    return false;
  }
  checkpoint_.structSize = CUpti_Checkpoint_STRUCT_SIZE;
  checkpoint_.ctx = ctx;
  checkpoint_.allowOverwrite = 1;  // one checkpoint a profiled launch, each over the last
  ctx_ = ctx;
  own_off_why_ = "fprof's own checkpoint is off (FPROF_OWN_CHECKPOINT=0)";
  if (allocations != nullptr && modules != nullptr) {
    own_ = std::make_unique<OwnCheckpoint>(*allocations, *modules);
    if (std::string own_error; !own_->setup(own_error)) {
      own_off_why_ = "fprof's own checkpoint could not be set up: " + own_error;
      own_.reset();
    }
  }
  return patching_.setup(ctx, device_ordinal, error);
}

// fprof's own checkpoint, where it holds all the launch can write; why not in last_ otherwise.
bool DuplicateCounter::saveOwn(const DriverLaunchCall& call) {
  if (!own_) {
    last_.why_not_own = own_off_why_;
    return false;
  }
  std::vector<MemoryRange> ranges;
  if (!own_->covers(ctx_, argumentsOf(call), ranges, last_.why_not_own) || !own_->save(ranges, last_.why_not_own)) {
    return false;
  }
  last_.own_checkpoint = true;
  last_.own_bytes = own_->savedBytes();
  return true;
}

bool DuplicateCounter::saveCupti(std::string& error) {
  if (CUptiResult r = save_(&checkpoint_); r != CUPTI_SUCCESS) {
    error = profilerErrorText("cuptiCheckpointSave", r);
    return false;
  }
  saved_ = true;
  return true;
}

bool DuplicateCounter::count(const DriverLaunchCall& call, std::vector<core::SassPcFunction>& functions,
                             std::string& error) {
  last_ = {};
  auto t = std::chrono::steady_clock::now();
  OwnLaunchScope own;
  if (!saveOwn(call) && !saveCupti(error)) return false;
  last_.save = lapSeconds(t);
  const bool counted = duplicate(call, functions, error);
  last_.duplicate = lapSeconds(t);
  std::string restore_error;
  CUresult synchronized = CUDA_SUCCESS;
  if (last_.own_checkpoint) {
    (void)own_->restore(restore_error);
  } else if (CUptiResult r = restore_(&checkpoint_); r != CUPTI_SUCCESS) {
    restore_error = profilerErrorText("cuptiCheckpointRestore", r);
  }
  if (restore_error.empty()) synchronized = cuCtxSynchronize();
  last_.restore = lapSeconds(t);
  if (!restore_error.empty()) {
    error = restore_error;
    return false;
  }
  if (synchronized != CUDA_SUCCESS) {
    error = cuErrorText("cuCtxSynchronize after the restore", synchronized);
    return false;
  }
  return counted;
}

// The launch again with its functions patched; SASS patching waits for it and reads the counts.
bool DuplicateCounter::duplicate(const DriverLaunchCall& call, std::vector<core::SassPcFunction>& functions,
                                 std::string& error) {
  if (!patching_.begin(error)) return false;
  const CUresult launched = relaunch(call);
  std::string read_error;
  const bool read = patching_.end(functions, read_error);
  if (launched != CUDA_SUCCESS) {
    error = cuErrorText("the duplicate launch", launched);
    return false;
  }
  if (!read) error = "reading the duplicate's SASS counts: " + read_error;
  return read;
}

void DuplicateCounter::teardown() {
  if (saved_ && free_ != nullptr) (void)free_(&checkpoint_);
  saved_ = false;
  if (own_) own_->teardown();
  patching_.teardown();
}

}  // namespace fprof::collector
