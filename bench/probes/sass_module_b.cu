// Module B of the SASS Metrics probe (see sass_kernels.h).
#include "sass_kernels.h"

namespace sass_probe {

__global__ void k_dfma32(double* out, double b, double c) {
  double a = static_cast<double>(threadIdx.x);
#pragma unroll
  for (int i = 0; i < 32; ++i) a = fma(a, b, c);
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

__global__ void k_hfma64(__half* out, __half b, __half c) {
  __half a = __float2half(static_cast<float>(threadIdx.x));
#pragma unroll
  for (int i = 0; i < 64; ++i) a = __hfma(a, b, c);
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

void launchDfma32(double* out, cudaStream_t s) { k_dfma32<<<kGrid, kBlock, 0, s>>>(out, 0.999, 0.5); }
void launchHfma64(__half* out, cudaStream_t s) {
  k_hfma64<<<kGrid, kBlock, 0, s>>>(out, __float2half(0.999f), __float2half(0.5f));
}
const void* dfma32Symbol() { return reinterpret_cast<const void*>(k_dfma32); }
const void* hfma64Symbol() { return reinterpret_cast<const void*>(k_hfma64); }

}  // namespace sass_probe
