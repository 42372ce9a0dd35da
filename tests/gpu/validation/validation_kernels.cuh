// Device code of the validation program (tests/gpu/validation/validation_program.cu): kernels
// whose work per active thread is known exactly, so every FLOP, tensor op and byte expectation
// the program writes is analytic. Arithmetic uses the _rn intrinsics (no contraction, no
// reassociation), one dependent chain per instruction kind (ptxas cannot pack two scalar half
// chains into one HFMA2), `#pragma unroll 1` loops over a run-time count, and results are folded
// with integer XOR of their bits so no extra floating-point instruction appears. The SASS of
// every kernel was read with nvdisasm (sm_90a, CUDA 13.0); the per-iteration instruction counts
// below are what it showed (README.md in this folder lists them).
#pragma once

#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

namespace validation {

template <class T>
__device__ __forceinline__ unsigned bitsOf(T v) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "16- or 32-bit values");
  unsigned u = 0;
  memcpy(&u, &v, sizeof(T));
  return u;
}

__device__ __forceinline__ unsigned bitsOf(double v) {
  const unsigned long long u = static_cast<unsigned long long>(__double_as_longlong(v));
  return static_cast<unsigned>(u) ^ static_cast<unsigned>(u >> 32);
}

// fp32, per active thread and iteration: 2 FFMA, 1 FADD, 3 FMUL (8 FLOPs).
template <int Tag>
__global__ void fp32_kernel(unsigned* out, const float* in, int n, int iters, float m, float c) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float a = in[i], b = a, s = a, p = a, q = a, r = a;
#pragma unroll 1
  for (int k = 0; k < iters; ++k) {
    a = __fmaf_rn(a, m, c);
    b = __fmaf_rn(b, c, m);
    s = __fadd_rn(s, c);
    p = __fmul_rn(p, m);
    q = __fmul_rn(q, c);
    r = __fmul_rn(r, m);
  }
  out[i] = bitsOf(a) ^ bitsOf(b) ^ bitsOf(s) ^ bitsOf(p) ^ bitsOf(q) ^ bitsOf(r);
}

// fp64, per active thread and iteration: 1 DFMA, 2 DADD, 1 DMUL (5 FLOPs).
template <int Tag>
__global__ void fp64_kernel(unsigned* out, const double* in, int n, int iters, double m, double c) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double a = in[i], s = a, t = a, p = a;
#pragma unroll 1
  for (int k = 0; k < iters; ++k) {
    a = __fma_rn(a, m, c);
    s = __dadd_rn(s, c);
    t = __dadd_rn(t, m);
    p = __dmul_rn(p, m);
  }
  out[i] = bitsOf(a) ^ bitsOf(s) ^ bitsOf(t) ^ bitsOf(p);
}

// Scalar 16-bit math (T = __half or __nv_bfloat16), per active thread and iteration: one scalar
// FMA, one add, one multiply (4 FLOPs). On sm_90 each is one HFMA2/HADD2/HMUL2 (bf16: the
// .BF16_V2 forms) whose operands are lane-broadcast (.H0_H0): one lane of work.
template <class T, int Tag>
__global__ void scalar16_kernel(unsigned* out, const T* in, int n, int iters, T m, T c) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  T a = in[i], s = a, p = a;
#pragma unroll 1
  for (int k = 0; k < iters; ++k) {
    a = __hfma(a, m, c);
    s = __hadd(s, c);
    p = __hmul(p, m);
  }
  out[i] = bitsOf(a) ^ bitsOf(s) ^ bitsOf(p);
}

// Packed 16-bit math (T2 = __half2 or __nv_bfloat162), per active thread and iteration: one
// packed FMA (2 lanes: 4 FLOPs), one packed add (2 FLOPs), one packed multiply (2 FLOPs).
template <class T2, int Tag>
__global__ void packed16_kernel(unsigned* out, const T2* in, int n, int iters, T2 m, T2 c) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  T2 a = in[i], s = a, p = a;
#pragma unroll 1
  for (int k = 0; k < iters; ++k) {
    a = __hfma2(a, m, c);
    s = __hadd2(s, c);
    p = __hmul2(p, m);
  }
  out[i] = bitsOf(a) ^ bitsOf(s) ^ bitsOf(p);
}

// Conversions only: iters half -> float conversions per active thread (the compiler emits
// HADD2.F32 for them). 0 FLOPs.
template <int Tag>
__global__ void half_to_float_kernel(float* out, const __half* in, int n, int iters) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
#pragma unroll 1
  for (int k = 0; k < iters; ++k) out[static_cast<size_t>(k) * n + i] = __half2float(in[static_cast<size_t>(k) * n + i]);
}

// Packed and scalar half FMAs in one kernel, per active thread and iteration: one packed __hfma2
// (4 FLOPs) and one scalar __hfma (2 FLOPs).
template <int Tag>
__global__ void mixed16_kernel(unsigned* out, const __half2* in2, const __half* in, int n, int iters, __half2 m2,
                               __half2 c2, __half m, __half c) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half2 a2 = in2[i];
  __half a = in[i];
#pragma unroll 1
  for (int k = 0; k < iters; ++k) {
    a2 = __hfma2(a2, m2, c2);
    a = __hfma(a, m, c);
  }
  out[i] = bitsOf(a2) ^ bitsOf(a);
}

// mma.sync.aligned.m16n8k16 fp16 -> fp32: C[M][N] = A[M][K] (row-major) * B (Bt[N][K], i.e. B
// column-major). One warp per 16x8 tile of C, K/16 mma instructions each: 2*M*N*K FLOPs.
__global__ void mma_sync_kernel(float* c, const __half* a, const __half* bt, int m, int n, int k) {
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int tiles_n = n / 8;
  if (warp >= (m / 16) * tiles_n) return;
  const int row0 = (warp / tiles_n) * 16, col0 = (warp % tiles_n) * 8;
  const int g = lane / 4, t = lane % 4;
  float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
  for (int k0 = 0; k0 < k; k0 += 16) {
    auto word = [](const __half* p) { return *reinterpret_cast<const unsigned*>(p); };
    const unsigned a0 = word(a + static_cast<size_t>(row0 + g) * k + k0 + 2 * t);
    const unsigned a1 = word(a + static_cast<size_t>(row0 + g + 8) * k + k0 + 2 * t);
    const unsigned a2 = word(a + static_cast<size_t>(row0 + g) * k + k0 + 2 * t + 8);
    const unsigned a3 = word(a + static_cast<size_t>(row0 + g + 8) * k + k0 + 2 * t + 8);
    const unsigned b0 = word(bt + static_cast<size_t>(col0 + g) * k + k0 + 2 * t);
    const unsigned b1 = word(bt + static_cast<size_t>(col0 + g) * k + k0 + 2 * t + 8);
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  c[static_cast<size_t>(row0 + g) * n + col0 + 2 * t] = d0;
  c[static_cast<size_t>(row0 + g) * n + col0 + 2 * t + 1] = d1;
  c[static_cast<size_t>(row0 + g + 8) * n + col0 + 2 * t] = d2;
  c[static_cast<size_t>(row0 + g + 8) * n + col0 + 2 * t + 1] = d3;
}

// wgmma (sm_90a): one warpgroup per block computes a 64x32 tile of C = A * B^T with K = 64, as
// four wgmma.mma_async.m64n32k16 instructions reading both operands from shared memory through
// descriptors (no swizzle, K-major). Block b uses rows 64b..64b+63 of A; Bt is shared. FLOPs per
// block: 2 * 64 * 32 * 64.
constexpr int kWgmmaM = 64, kWgmmaN = 32, kWgmmaK = 64;

// Byte offset of element (row, k) of a K-major no-swizzle operand tile made of 8x8 core matrices
// (8 rows of 16 bytes each): the two core matrices of one 16-wide K step are 128 bytes apart
// (leading byte offset), consecutive groups of 8 rows 256 bytes apart (stride byte offset); each
// K step of 16 occupies rows * 32 bytes.
__host__ __device__ constexpr int wgmmaTileOffsetBytes(int row, int k, int rows) {
  return (k / 16) * rows * 32 + (row / 8) * 256 + ((k % 16) / 8) * 128 + (row % 8) * 16 + (k % 8) * 2;
}

__device__ __forceinline__ uint64_t wgmmaDescriptor(const void* smem, uint32_t leading_bytes, uint32_t stride_bytes) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  uint64_t desc = (addr & 0x3FFFFu) >> 4;
  desc |= static_cast<uint64_t>((leading_bytes & 0x3FFFFu) >> 4) << 16;
  desc |= static_cast<uint64_t>((stride_bytes & 0x3FFFFu) >> 4) << 32;
  return desc;  // base offset 0, layout type 0 (no swizzle)
}

template <bool Bf16>
__device__ __forceinline__ void wgmmaM64N32K16(float (&d)[16], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (Bf16) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, 1, 1, 1, 0, 0;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "l"(desc_a), "l"(desc_b));
  } else {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, 1, 1, 1, 0, 0;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "l"(desc_a), "l"(desc_b));
  }
#else
  (void)d;
  (void)desc_a;
  (void)desc_b;
  __trap();  // built without sm_90a: wgmma does not exist
#endif
}

template <class T, bool Bf16>
__global__ void __launch_bounds__(128) wgmma_kernel(float* c, const T* a, const T* bt) {
  __shared__ __align__(128) unsigned char smem_a[kWgmmaM * kWgmmaK * 2];
  __shared__ __align__(128) unsigned char smem_b[kWgmmaN * kWgmmaK * 2];
  const int tid = static_cast<int>(threadIdx.x);
  const T* a_block = a + static_cast<size_t>(blockIdx.x) * kWgmmaM * kWgmmaK;
  for (int e = tid; e < kWgmmaM * kWgmmaK; e += 128) {
    const int row = e / kWgmmaK, k = e % kWgmmaK;
    *reinterpret_cast<T*>(smem_a + wgmmaTileOffsetBytes(row, k, kWgmmaM)) = a_block[e];
  }
  for (int e = tid; e < kWgmmaN * kWgmmaK; e += 128) {
    const int row = e / kWgmmaK, k = e % kWgmmaK;
    *reinterpret_cast<T*>(smem_b + wgmmaTileOffsetBytes(row, k, kWgmmaN)) = bt[e];
  }
  // Generic-proxy stores must be visible to the async proxy that wgmma reads through.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  float d[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) d[j] = 0.f;
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
  for (int ks = 0; ks < kWgmmaK / 16; ++ks) {
    const uint64_t desc_a = wgmmaDescriptor(smem_a + ks * kWgmmaM * 32, 128, 256);
    const uint64_t desc_b = wgmmaDescriptor(smem_b + ks * kWgmmaN * 32, 128, 256);
    wgmmaM64N32K16<Bf16>(d, desc_a, desc_b);
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  // Accumulator fragment: warp w owns rows 16w..16w+15; per 8-column chunk j a thread holds
  // (row g, cols 8j+2t, +1) and (row g+8, same cols).
  const int warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  float* c_block = c + static_cast<size_t>(blockIdx.x) * kWgmmaM * kWgmmaN;
#pragma unroll
  for (int j = 0; j < kWgmmaN / 8; ++j) {
    const int row = warp * 16 + g, col = 8 * j + 2 * t;
    c_block[row * kWgmmaN + col] = d[4 * j + 0];
    c_block[row * kWgmmaN + col + 1] = d[4 * j + 1];
    c_block[(row + 8) * kWgmmaN + col] = d[4 * j + 2];
    c_block[(row + 8) * kWgmmaN + col + 1] = d[4 * j + 3];
  }
}

// 48 live accumulators under a 32-register cap: ptxas spills. Per active thread: 384 FFMA and 384
// FADD (8 rounds over 48 values). n is a power of two. ptxas zeroes registers here with
// `HFMA2.MMA R, -RZ, RZ, 0, 0` (a move, no arithmetic): 0 fp16 FLOPs all the same.
__global__ void __maxnreg__(32) spill_kernel(unsigned* out, const float* in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc[48];
#pragma unroll
  for (int j = 0; j < 48; ++j) acc[j] = in[(i + j * 977) & (n - 1)];
  float s = 0.f;
#pragma unroll
  for (int r = 0; r < 8; ++r) {
#pragma unroll
    for (int j = 0; j < 48; ++j) {
      acc[j] = __fmaf_rn(acc[j], acc[(j + r + 1) % 48], s);
      s = __fadd_rn(s, acc[j]);
    }
  }
  out[i] = bitsOf(s);
}

// A dynamically indexed array lives in local memory (a 256-byte stack frame). n is a power of two.
// No FLOPs.
__global__ void local_array_kernel(float* out, const int* idx, const float* src, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float buf[64];
#pragma unroll
  for (int j = 0; j < 64; ++j) buf[j] = src[(i + j * 977) & (n - 1)];
  out[i] = buf[idx[i] & 63];
}

// A copy of n float4 (16 n bytes read, 16 n bytes written). No FLOPs.
__global__ void stream_copy_kernel(float4* out, const float4* in, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

// Argument roles, by index: 0 read, 1 write (an interior pointer), 2 read, 3 an 8-byte
// integer that is no address, 4 read and written, 5 a double, 6 never touched, 7 written at one
// element only (the last of its buffer). Per active thread: 1 FADD, 1 FFMA (3 FLOPs).
__global__ void roles_kernel(const float* in_a, float* out, const float* in_b, long long sparse_index, float* inout,
                             double scale, const float* unused, float* sparse_out, int n) {
  (void)unused;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = __fadd_rn(in_a[i], in_b[i]);
  inout[i] = __fmaf_rn(inout[i], static_cast<float>(scale), 1.f);
  if (i == 0) sparse_out[sparse_index] = 42.f;
}

// Launched with cuLaunchKernel's `extra` buffer (CU_LAUNCH_PARAM_BUFFER_POINTER): 0 written,
// 1 read. 1 FFMA per active thread. Parameters fill 24 bytes with no padding.
__global__ void extra_args_kernel(float* out, const float* in, int n, float m) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __fmaf_rn(in[i], m, m);
}

// Cluster launch (2 blocks per cluster): each block reads its peer's shared memory (distributed
// shared memory). 1 FADD per active thread.
__global__ void cluster_kernel(float* out, const float* in, int n) {
  namespace cg = cooperative_groups;
  __shared__ float tile[256];
  cg::cluster_group cluster = cg::this_cluster();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.f;
  cluster.sync();
  const float* peer = cluster.map_shared_rank(tile, cluster.block_rank() ^ 1u);
  const float v = peer[threadIdx.x];
  cluster.sync();  // the peer's shared memory stays alive until every block has read it
  if (i < n) out[i] = __fadd_rn(tile[threadIdx.x], v);
}

// Cooperative launch with a grid-wide barrier; a grid-stride loop over n elements on each side.
// n FADD in total.
__global__ void cooperative_kernel(float* out, float* scratch, int n) {
  namespace cg = cooperative_groups;
  cg::grid_group grid = cg::this_grid();
  const int first = static_cast<int>(grid.thread_rank()), stride = static_cast<int>(grid.size());
  for (int j = first; j < n; j += stride) scratch[j] = static_cast<float>(j & 1023);
  grid.sync();
  for (int j = first; j < n; j += stride) out[j] = __fadd_rn(scratch[j + 1 < n ? j + 1 : 0], 1.f);
}

// Programmatic dependent launch (sm_90): the primary lets the next kernel of its stream launch at
// once (griddepcontrol.launch_dependents), then spins for spin_ns; the secondary, launched with
// programmatic stream serialization, waits for the primary's completion (griddepcontrol.wait) and
// then spins for its own spin_ns. No floating-point work; each block writes one word.
__device__ __forceinline__ unsigned long long globalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned spinNs(long long spin_ns) {
  const unsigned long long until = globalTimerNs() + static_cast<unsigned long long>(spin_ns);
  unsigned laps = 0;
  while (globalTimerNs() < until) ++laps;
  return laps;
}
__global__ void pdl_primary_kernel(unsigned* out, long long spin_ns) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const unsigned laps = spinNs(spin_ns);
  if (threadIdx.x == 0) out[blockIdx.x] = laps;
}
__global__ void pdl_secondary_kernel(unsigned* out, long long spin_ns) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const unsigned laps = spinNs(spin_ns);
  if (threadIdx.x == 0) out[blockIdx.x] = laps;
}

// Writes through an address no allocation holds: an illegal address that kills the context.
__global__ void illegal_address_kernel(float* bad) { bad[threadIdx.x] = 1.f; }

}  // namespace validation
