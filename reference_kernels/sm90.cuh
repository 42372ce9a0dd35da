// PTX wrappers and host helpers shared by the sm_90a kernels (gemm_sm90.cu, attention_sm90.cu):
// shared-memory descriptors for wgmma, mbarriers, bulk tensor copies (TMA), the driver's
// tensor-map encoder and the device's kind. Include only from files built for sm_90a.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

#include "common.cuh"

namespace fprof::refk::sm90 {

__device__ __forceinline__ unsigned smemAddr(const void* p) { return unsigned(__cvta_generic_to_shared(p)); }

// wgmma shared-memory descriptor of a tile in the 128-byte swizzle: rows of 128 bytes, 8-row atoms
// 1024 bytes apart. The same descriptor serves a K-major operand (rows along M or N, 64 halves of K
// a row) and an MN-major one of 64 halves along M or N (rows along K, read with the transpose flag).
__device__ __forceinline__ std::uint64_t smemDescriptor(const void* p) {
  const std::uint64_t addr = smemAddr(p);
  std::uint64_t d = (addr & 0x3FFFF) >> 4;
  d |= std::uint64_t(16 >> 4) << 16;    // leading-dimension byte offset (unused with this swizzle)
  d |= std::uint64_t(1024 >> 4) << 32;  // stride byte offset: one 8-row atom
  d |= std::uint64_t(1) << 62;          // 128-byte swizzle
  return d;
}

__device__ __forceinline__ void barrierInit(std::uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smemAddr(bar)), "r"(count));
}
__device__ __forceinline__ void barrierExpectBytes(std::uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smemAddr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void barrierArrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smemAddr(bar)) : "memory");
}
__device__ __forceinline__ void barrierWait(std::uint64_t* bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(smemAddr(bar)),
      "r"(parity)
      : "memory");
}

// Copies the box at (col, row) of a 2-D tensor map into shared memory; completes on bar.
__device__ __forceinline__ void tmaLoad(void* dst, const CUtensorMap* map, int col, int row, std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          smemAddr(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(col), "r"(row), "r"(smemAddr(bar))
      : "memory");
}
// The same for a 3-D tensor map, box at (col, row, slice).
__device__ __forceinline__ void tmaLoad3d(void* dst, const CUtensorMap* map, int col, int row, int slice,
                                          std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(
          smemAddr(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(col), "r"(row), "r"(slice), "r"(smemAddr(bar))
      : "memory");
}

// Writes the box at (col, row) of a 2-D tensor map from shared memory (bulk async group).
__device__ __forceinline__ void tmaStore(const CUtensorMap* map, int col, int row, const void* src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<std::uint64_t>(map)),
               "r"(col), "r"(row), "r"(smemAddr(src))
               : "memory");
}

// ---- host side ----
inline PFN_cuTensorMapEncodeTiled_v12000 encodeFunction() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || p == nullptr) {
      throw std::runtime_error("the driver has no cuTensorMapEncodeTiled");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

struct DeviceInfo {
  bool hopper = false;
  int sms = 0;
};
inline DeviceInfo deviceInfo() {
  static DeviceInfo info[64];
  static bool known[64] = {};
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 0 || dev >= 64) return {};
  if (!known[dev]) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    info[dev] = {prop.major == 9 && prop.minor == 0, prop.multiProcessorCount};
    known[dev] = true;
  }
  return info[dev];
}

// Encoding a tensor map is host work between a timed call's events: a repeated call with the
// same operands reuses the map `make()` encoded the first time. One cache per call site (Make).
using TensorMapKey = std::tuple<int, const void*, std::size_t, std::size_t, std::size_t, unsigned>;
template <class Make> const CUtensorMap& cachedTensorMap(const TensorMapKey& key, const Make& make) {
  static std::mutex mutex;
  static std::map<TensorMapKey, CUtensorMap> maps;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = maps.find(key);
  if (it == maps.end()) it = maps.emplace(key, make()).first;
  return it->second;
}

}  // namespace fprof::refk::sm90
