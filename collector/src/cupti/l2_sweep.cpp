// The L2 sweep (see l2_sweep.h): a PTX kernel JIT-compiled into the program's context.
#include "cupti/l2_sweep.h"

#include "cupti/checks.h"
#include "cupti/sweep_cubins.h"
#include "cupti/sweep_ptx.h"

#include <cstdint>
#include <string>

namespace fprof::collector {
namespace {

constexpr int kThreadsPerBlock = 256;
constexpr int kBlocksPerSm = 4;

// Marks the driver calls of the sweep as the collector's own (insideOwnLaunch).
using SweepScope = OwnLaunchScope;

}  // namespace

L2Sweep::~L2Sweep() {
  // The context may be gone at exit (its memory and module with it): nothing is released here.
}

bool L2Sweep::setup(CUdevice device, std::string& error) {
  SweepScope own;
  int l2 = 0, sms = 0;
  if (CUresult r = cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device); r != CUDA_SUCCESS) {
    error = cuErrorText("cuDeviceGetAttribute(L2_CACHE_SIZE)", r);
    return false;
  }
  if (CUresult r = cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device); r != CUDA_SUCCESS) {
    error = cuErrorText("cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)", r);
    return false;
  }
  bytes_ = 2 * static_cast<size_t>(l2);
  blocks_ = sms * kBlocksPerSm;
  sms_ = sms;
  if (!loadKernels(device, error)) return false;
  if (CUresult r = cuMemAlloc(&buffer_, bytes_); r != CUDA_SUCCESS) {
    error = cuErrorText("cuMemAlloc(2 x the L2 for the sweep)", r);
    return false;
  }
  if (CUresult r = cuMemAlloc(&sink_, sizeof(uint32_t)); r != CUDA_SUCCESS) {
    error = cuErrorText("cuMemAlloc(the sweep's result word)", r);
    return false;
  }
  return true;
}

// The sweeps' cubins built for the device's architecture where the build made them, else their PTX
// compiled by the driver's JIT (1.4 s for the code sweep on a fresh H100 machine).
bool L2Sweep::loadKernels(CUdevice device, std::string& error) {
  int major = 0, minor = 0;
  (void)cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  (void)cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  if (const SweepCubins* built = sweepCubinsFor(major, minor)) {
    std::string ignored;
    const bool code = loadKernel(built->code, kCodeSweepKernelName, "the code sweep", code_module_, code_kernel_, ignored);
    if (code && loadKernel(built->l2, kL2SweepKernelName, "the L2 sweep", module_, kernel_, ignored)) {
      loaded_from_ = "cubins built for sm_" + std::to_string(built->sm);
      return true;
    }
    if (code) (void)cuModuleUnload(code_module_);  // both from the PTX below
  }
  const std::string code_ptx = codeSweepPtx(), l2_ptx = l2SweepPtx();
  loaded_from_ = "PTX compiled by the driver";
  return loadKernel(code_ptx.c_str(), kCodeSweepKernelName, "the code sweep", code_module_, code_kernel_, error) &&
         loadKernel(l2_ptx.c_str(), kL2SweepKernelName, "the L2 sweep", module_, kernel_, error);
}

// Loads `image` (PTX text or a cubin) into the current context and finds its kernel `name`.
bool L2Sweep::loadKernel(const void* image, const char* name, const char* what, CUmodule& module, CUfunction& kernel,
                         std::string& error) {
  if (CUresult r = cuModuleLoadData(&module, image); r != CUDA_SUCCESS) {
    error = cuErrorText(std::string("cuModuleLoadData(") + what + ")", r);
    return false;
  }
  if (CUresult r = cuModuleGetFunction(&kernel, module, name); r != CUDA_SUCCESS) {
    error = cuErrorText(std::string("cuModuleGetFunction(") + what + ")", r);
    return false;
  }
  return true;
}

bool L2Sweep::launchCodeSweep(CUstream stream, std::string& error) {
  SweepScope own;
  float seed = 0.5f;
  void* params[] = {&sink_, &seed};
  // One warp a block and as many blocks as SMs: one block fits any SM, so every SM runs one.
  if (CUresult r = cuLaunchKernel(code_kernel_, static_cast<unsigned>(sms_), 1, 1, 32, 1, 1, 0, stream, params, nullptr);
      r != CUDA_SUCCESS) {
    error = cuErrorText("cuLaunchKernel(the code sweep)", r);
    return false;
  }
  return true;
}

bool L2Sweep::launch(CUstream stream, uint32_t discard, std::string& error) {
  SweepScope own;
  uint64_t vectors = bytes_ / 16;
  void* params[] = {&buffer_, &vectors, &sink_, &discard};
  CUresult r = cuLaunchKernel(kernel_, static_cast<unsigned>(blocks_), 1, 1, kThreadsPerBlock, 1, 1, 0, stream,
                              params, nullptr);
  if (r != CUDA_SUCCESS) {
    error = cuErrorText("cuLaunchKernel(the L2 sweep)", r);
    return false;
  }
  return true;
}

// Reading alone leaves the L2 full of clean lines, discarding after it leaves it empty; both gave
// the same agreement with ncu (bench/RESULTS.md), and empty is what ncu's flush leaves.
bool L2Sweep::run(CUstream stream, std::string& error) {
  return launchCodeSweep(stream, error) && launch(stream, 0, error) && launch(stream, 1, error);
}

}  // namespace fprof::collector
