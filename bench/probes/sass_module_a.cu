// Module A of the SASS Metrics probe (see sass_kernels.h).
#include "sass_kernels.h"

namespace sass_probe {

__global__ void k_ffma64(float* out, float b, float c) {
  float a = static_cast<float>(threadIdx.x);
#pragma unroll
  for (int i = 0; i < 64; ++i) a = fmaf(a, b, c);
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

__global__ void k_hfma2x64(__half2* out, __half2 b, __half2 c) {
  __half2 a = __floats2half2_rn(static_cast<float>(threadIdx.x), 1.f);
#pragma unroll
  for (int i = 0; i < 64; ++i) a = __hfma2(a, b, c);
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

void launchFfma64(float* out, cudaStream_t s) { k_ffma64<<<kGrid, kBlock, 0, s>>>(out, 0.999f, 0.5f); }
void launchHfma2x64(__half2* out, cudaStream_t s) {
  k_hfma2x64<<<kGrid, kBlock, 0, s>>>(out, __floats2half2_rn(0.999f, 0.999f), __floats2half2_rn(0.5f, 0.5f));
}
const void* ffma64Symbol() { return reinterpret_cast<const void*>(k_ffma64); }
const void* hfma2x64Symbol() { return reinterpret_cast<const void*>(k_hfma2x64); }

}  // namespace sass_probe
