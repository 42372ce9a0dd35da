// Kernels with each form of half-precision arithmetic, for the SASS parser's test
// (tests/unit/core/test_sass_half.cpp). tests/data/sass/half_ops_sm90.sass is
//   nvcc -arch=sm_90 -cubin -o half_ops.cubin half_ops.cu && nvdisasm -c half_ops.cubin
// (nvcc 13.0, nvdisasm 13.5 from the nvidia-cuda-nvdisasm wheel). half_ops_sm90.cubin is that cubin
// as nvcc 13.0 builds it here (tests/unit/core/test_nvdisasm.cpp reads its symbol table).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
__global__ void scalar_hfma(__half* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { __half a = x[i]; for (int k = 0; k < 8; k++) a = __hfma(a, a, a); x[i] = a; }
}
__global__ void packed_hfma(__half2* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { __half2 a = x[i]; for (int k = 0; k < 8; k++) a = __hfma2(a, a, a); x[i] = a; }
}
__global__ void scalar_hadd(__half* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { __half a = x[i]; for (int k = 0; k < 8; k++) a = __hadd(a, x[k]); x[i] = a; }
}
__global__ void packed_bf(__nv_bfloat162* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { __nv_bfloat162 a = x[i]; for (int k = 0; k < 8; k++) a = __hfma2(a, a, a); a = __hadd2(a, x[0]); a = __hmul2(a, x[1]); x[i] = a; }
}
__global__ void scalar_bf(__nv_bfloat16* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { __nv_bfloat16 a = x[i]; for (int k = 0; k < 8; k++) a = __hfma(a, a, a); a = __hadd(a, x[0]); a = __hmul(a, x[1]); x[i] = a; }
}
__global__ void mixed(__half2* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    __half2 a = x[i];
    a = __hfma2(a, a, a);  // both lanes used: packed
    __half b = __high2half(x[n + i]);
    b = __hfma(b, b, b);  // one lane: scalar
    x[i] = a;
    reinterpret_cast<__half*>(x)[4 * n + i] = b;
  }
}
__global__ void conv(const __half* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __half2float(x[i]) * 2.f;
}
__global__ void fp32_consts(float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float a = y[i]; a = a * 1.875f + 0.5f; y[i] = a > 3.f ? 7.f : a; }
}
