// What fprof's own checkpoint reads from a cubin (collector/src/cupti/own_checkpoint_map.h): module
// variables a kernel can store to, and device functions called outside the module.
// writes_sm90.cubin: nvcc -cubin -arch=sm_90 -o writes_sm90.cubin writes.cu (CUDA 13.0).
#include <cassert>
#include <cstdio>

__device__ unsigned counter;               // .nv.global
__device__ float table[256] = {1.0f};      // .nv.global.init
__constant__ float coeffs[4];              // .nv.constant3: not writable by a kernel
__managed__ int managed_value;             // .nv.global, marked managed
namespace scoped {
static __device__ int hidden;              // a mangled internal name
}

__global__ void bump(float* out) {
  __shared__ float tile[128];  // .nv.shared.*: writable, but no module variable
  tile[threadIdx.x % 128] = table[threadIdx.x % 256] * coeffs[0] + float(managed_value);
  __syncthreads();
  atomicAdd(&counter, 1u);
  scoped::hidden += 1;
  out[threadIdx.x] = tile[127 - threadIdx.x % 128];
}

__global__ void checked(const int* in, int* out) {
  assert(in[threadIdx.x] >= 0);  // __assertfail: not a reason for the whole checkpoint
  out[threadIdx.x] = in[threadIdx.x];
}

__global__ void talk() { printf("hello %d\n", threadIdx.x); }

__global__ void heap() {
  int* p = static_cast<int*>(malloc(16));
  p[0] = 1;
  free(p);
}
