// Interface of libfprof_validation_dso.so, the library validation_program dlopen()s at run time:
// its kernel is unknown to the program's own CUDA runtime, so the library describes and launches
// it. C linkage, looked up with dlsym.
#pragma once

#include <cuda_runtime.h>

extern "C" {

struct ValidationDsoKernel {
  char name[256];  // mangled, as the driver reports it
  int registers_per_thread;
  int local_bytes_per_thread;
  int static_shared_bytes;
  int const_bytes;
  int max_threads_per_block;
  int binary_version;
  int ptx_version;
};

// Fills *out; 0 on success, else a cudaError_t.
typedef int (*ValidationDsoDescribeFn)(ValidationDsoKernel* out);
// Launches the library's kernel with <<<>>> on `stream`: per active thread (i < n) and
// iteration, 1 FFMA and 1 FADD (3 FLOPs). Reads n floats of `in`, writes n words of `out`.
typedef int (*ValidationDsoLaunchFn)(unsigned* out, const float* in, int n, int iters, float m, float c,
                                     cudaStream_t stream);
}
