// Shared pieces of the reference program: checked CUDA calls, element types, device buffers,
// device-side random fill. Every CUDA/cuBLAS call goes through a CHECK macro with its text.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace fprof::refk {

[[noreturn]] inline void failCall(const char* call, const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, call, what.c_str());
  std::exit(2);
}

#define CUDA_CHECK(call)                                                                 \
  do {                                                                                   \
    const cudaError_t fprof_status_ = (call);                                            \
    if (fprof_status_ != cudaSuccess) {                                                  \
      ::fprof::refk::failCall(#call, __FILE__, __LINE__, cudaGetErrorString(fprof_status_)); \
    }                                                                                    \
  } while (0)

// After every launch: the launch error now, execution errors at the next synchronizing call.
#define CUDA_CHECK_LAUNCH(what) CUDA_CHECK(cudaGetLastError())

#define CUBLAS_CHECK(call)                                                                  \
  do {                                                                                      \
    const cublasStatus_t fprof_status_ = (call);                                            \
    if (fprof_status_ != CUBLAS_STATUS_SUCCESS) {                                           \
      ::fprof::refk::failCall(#call, __FILE__, __LINE__, cublasGetStatusString(fprof_status_)); \
    }                                                                                       \
  } while (0)

enum class DType { F32, F16, BF16 };

inline const char* dtypeName(DType t) {
  switch (t) {
    case DType::F32: return "fp32";
    case DType::F16: return "fp16";
    case DType::BF16: return "bf16";
  }
  return "?";
}

inline std::size_t dtypeBytes(DType t) { return t == DType::F32 ? 4 : 2; }

// Relative-error limits from the device tool's METHOD.md: fp32 far under 1e-3; half-precision
// operands with fp32 accumulation around 1e-3 (fp16) to 1e-2 (bf16).
inline double tolerance(DType t) {
  switch (t) {
    case DType::F32: return 1e-4;
    case DType::F16: return 5e-3;
    case DType::BF16: return 2e-2;
  }
  return 0.0;
}

template <class T> __host__ __device__ inline float toFloat(T v);
template <> __host__ __device__ inline float toFloat<float>(float v) { return v; }
template <> __host__ __device__ inline float toFloat<__half>(__half v) { return __half2float(v); }
template <> __host__ __device__ inline float toFloat<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <class T> __host__ __device__ inline T fromFloat(float v);
template <> __host__ __device__ inline float fromFloat<float>(float v) { return v; }
template <> __host__ __device__ inline __half fromFloat<__half>(float v) { return __float2half_rn(v); }
template <> __host__ __device__ inline __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

template <class T> inline cudaDataType_t cudaType();
template <> inline cudaDataType_t cudaType<float>() { return CUDA_R_32F; }
template <> inline cudaDataType_t cudaType<__half>() { return CUDA_R_16F; }
template <> inline cudaDataType_t cudaType<__nv_bfloat16>() { return CUDA_R_16BF; }

// 16 bytes of T: the unit of every vectorized load and store.
template <class T> struct alignas(16) Vec16 {
  static constexpr int kCount = 16 / int(sizeof(T));
  T v[kCount];
};

// Untyped device allocation; the element type is the op's business.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) CUDA_CHECK(cudaMalloc(&ptr_, bytes_));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = o.ptr_;
      bytes_ = o.bytes_;
      o.ptr_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  // All-ones bytes are NaN in fp32, fp16 and bf16: an element a kernel forgets to write fails.
  void poison() const { if (bytes_ > 0) CUDA_CHECK(cudaMemset(ptr_, 0xFF, bytes_)); }

 private:
  void release() {
    if (ptr_ != nullptr) cudaFree(ptr_);  // teardown: an error here has nowhere useful to go
    ptr_ = nullptr;
  }
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Fills n elements of dtype with uniform values in [offset - scale, offset + scale) from a
// counter-based hash of (seed, index): large inputs are made on the device in milliseconds.
void fillUniform(DType dtype, void* ptr, std::size_t n, std::uint64_t seed, float scale, float offset);

// Copies n elements of dtype back as float (exact: every dtype widens to float losslessly).
std::vector<float> downloadAsFloat(DType dtype, const void* ptr, std::size_t n);
std::vector<double> toDouble(const std::vector<float>& v);

}  // namespace fprof::refk
