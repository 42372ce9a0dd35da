// Warp-level pieces of sm_80+ kernels: cp.async copies into shared memory, ldmatrix and mma.sync
// m16n8k16 with fp32 accumulation for fp16 and bf16 operands. Fragment layout (PTX ISA, "mma.m16n8k16"): g = lane / 4, t = lane % 4;
// A (row-major 16x16): a0 = rows g, k 2t..2t+1; a1 = rows g + 8; a2 = k + 8; a3 = rows g + 8, k + 8.
// B (column-major 16x8): b0 = k 2t..2t+1 of column g; b1 = k + 8. C: c0,c1 = row g, columns 2t, 2t+1;
// c2,c3 = row g + 8.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace fprof::refk {

// 16 bytes global -> shared without registers (L2 only); valid == false writes 16 zero bytes.
__device__ __forceinline__ void cpAsync16(void* smem, const void* gmem, bool valid) {
  const auto saddr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(saddr), "l"(gmem), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N> __device__ __forceinline__ void cpAsyncWait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Four 8x8 16-bit matrices from shared memory: lanes 8i..8i+7 give the row addresses of matrix i
// (16-byte aligned), and register i receives matrix i in the fragment layout above.
__device__ __forceinline__ void ldmatrixX4(std::uint32_t (&r)[4], const void* smem_row) {
  const auto addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// The same with each 8x8 matrix transposed on the way (a B operand from a row-major K x N tile).
__device__ __forceinline__ void ldmatrixX4Trans(std::uint32_t (&r)[4], const void* smem_row) {
  const auto addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// c += a * b for one 16x8x16 tile, T = __half or __nv_bfloat16.
template <class T>
__device__ __forceinline__ void mmaM16N8K16(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                            std::uint32_t b1) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "fp16 or bf16 operands");
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// 2^x with the hardware approximation (relative error ~2^-22, far under fp16/bf16 rounding);
// exp2f adds range handling softmax scores never need (they are <= 0 after the max is subtracted).
__device__ __forceinline__ float fastExp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Two floats rounded to T (fp16 or bf16) in one register, lo in the low half: an A fragment pair.
template <class T> __device__ __forceinline__ std::uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&h);
  } else {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&h);
  }
}

}  // namespace fprof::refk
