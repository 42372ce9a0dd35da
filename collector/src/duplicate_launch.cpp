// A profiled launch's patched duplicate between a checkpoint and its restore (duplicate_launch.h).
#include "duplicate_launch.h"

#include <cupti_driver_cbid.h>
#include <dlfcn.h>

#include <chrono>
#include <filesystem>

#include "lap_seconds.h"
#include "own_launch.h"
#include "range_profiler.h"  // profilerErrorText

namespace fprof::collector {
namespace {

using NV::Cupti::Checkpoint::CUpti_Checkpoint;  // CUpti_Checkpoint_STRUCT_SIZE names it unqualified

std::string cuError(const char* call, CUresult r) {
  const char* text = nullptr;
  cuGetErrorString(r, &text);
  return std::string(call) + " failed: " + (text != nullptr ? text : "unknown CUDA error");
}

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

// The launch again, as the program's callback passed it, on the stream it resolved to.
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

}  // namespace

bool canRelaunch(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      return true;
    default:
      return false;
  }
}

DuplicateCounter::~DuplicateCounter() { teardown(); }

bool DuplicateCounter::setup(CUcontext ctx, int device_ordinal, std::string& error) {
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
  return patching_.setup(ctx, device_ordinal, error);
}

bool DuplicateCounter::count(const DriverLaunchCall& call, std::vector<core::SassPcFunction>& functions,
                             std::string& error) {
  last_ = {};
  auto t = std::chrono::steady_clock::now();
  OwnLaunchScope own;
  if (CUptiResult r = save_(&checkpoint_); r != CUPTI_SUCCESS) {
    error = profilerErrorText("cuptiCheckpointSave", r);
    return false;
  }
  saved_ = true;
  last_.save = lapSeconds(t);
  const bool counted = duplicate(call, functions, error);
  last_.duplicate = lapSeconds(t);
  const CUptiResult restored = restore_(&checkpoint_);
  const CUresult synchronized = restored == CUPTI_SUCCESS ? cuCtxSynchronize() : CUDA_SUCCESS;
  last_.restore = lapSeconds(t);
  if (restored != CUPTI_SUCCESS) {
    error = profilerErrorText("cuptiCheckpointRestore", restored);
    return false;
  }
  if (synchronized != CUDA_SUCCESS) {
    error = cuError("cuCtxSynchronize after the restore", synchronized);
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
    error = cuError("the duplicate launch", launched);
    return false;
  }
  if (!read) error = "reading the duplicate's SASS counts: " + read_error;
  return read;
}

void DuplicateCounter::teardown() {
  if (saved_ && free_ != nullptr) (void)free_(&checkpoint_);
  saved_ = false;
  patching_.teardown();
}

}  // namespace fprof::collector
