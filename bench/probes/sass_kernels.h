// Kernels of the SASS Metrics probe, in two translation units (two CUDA modules) plus one PTX module
// loaded at run time. Every kernel is straight-line code (no branch, grid exactly covered), so each
// SASS instruction executes once per warp per launch: per-PC smsp__sass_inst_executed must equal the
// number of warps launched, and smsp__sass_thread_inst_executed 32 times that.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace sass_probe {

constexpr int kGrid = 1024, kBlock = 256;
constexpr long long kWarpsPerLaunch = static_cast<long long>(kGrid) * kBlock / 32;

// Module A (sass_module_a.cu): 64 dependent FFMA; 64 dependent HFMA2 on packed halves.
void launchFfma64(float* out, cudaStream_t s);
void launchHfma2x64(__half2* out, cudaStream_t s);
const void* ffma64Symbol();
const void* hfma2x64Symbol();

// Module B (sass_module_b.cu): 32 dependent DFMA; 64 dependent scalar __hfma.
void launchDfma32(double* out, cudaStream_t s);
void launchHfma64(__half* out, cudaStream_t s);
const void* dfma32Symbol();
const void* hfma64Symbol();

}  // namespace sass_probe
