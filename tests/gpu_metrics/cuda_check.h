// CK(call): a CUDA runtime call that must succeed, or the test program stops with the call, its
// place and CUDA's message. Shared by the programs of tests/gpu_metrics.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(call)                                                                                          \
  do {                                                                                                    \
    cudaError_t e_ = (call);                                                                              \
    if (e_ != cudaSuccess) {                                                                              \
      std::fprintf(stderr, "%s failed at %s:%d: %s\n", #call, __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                                       \
    }                                                                                                     \
  } while (0)
