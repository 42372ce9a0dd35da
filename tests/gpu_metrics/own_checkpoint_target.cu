// Writes of every kind a profiled launch's duplicate must leave undone, checked exactly: run by
// metrics_gpu_test under a one-run `fprof run --metrics roofline`, where each launch below is
// profiled and runs twice (fprof's own checkpoint around the duplicate where it holds all the
// launch can write, CUPTI's elsewhere: collector/src/cupti/own_checkpoint.h). Each kernel adds 1 to its
// memory in place, so a duplicate left standing shows as 2. Exits 3 on a wrong value, 77 without
// a GPU.
//   in place on cudaMalloc memory; a __device__ counter and an initialized __device__ table; memory
//   reached through pointers read from device memory; mapped pinned host memory; a stream-ordered
//   pool; cuMemCreate + cuMemMap; four host threads at once; a module loaded from PTX at run time
//   with a variable of its own; a kernel of a module that calls printf (own_checkpoint_printf.cu);
//   last, managed memory, after which no launch may take the own checkpoint.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cuda_check.h"
#include "virtual_memory.h"

void launchPrintingBump(int n, float* p);  // own_checkpoint_printf.cu

namespace {

__device__ unsigned g_counter;
__device__ float g_table[1024] = {5.0f};

__global__ void bumpInPlace(int n, float* p) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1.0f;
}

// An assertion puts string literals among the module's variables (not written; own_checkpoint_map.h).
__global__ void bumpAsserted(int n, float* p) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  assert(n > 0);
  if (i < n) p[i] += 1.0f;
}

__global__ void bumpModuleVariables(int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    atomicAdd(&g_counter, 1u);
    g_table[i] += 1.0f;
  }
}

__global__ void bumpThroughPointers(int n, float* const* buffers, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int b = 0; b < count; ++b) {
    if (i < n) buffers[b][i] += 1.0f;
  }
}

constexpr int kN = 1 << 16;

int failures = 0;

void expectAll(const char* what, const float* host, int n, float want) {
  for (int i = 0; i < n; ++i) {
    if (host[i] != want) {
      std::fprintf(stderr, "own_checkpoint_target: %s is %g at %d, not %g\n", what, host[i], i, want);
      ++failures;
      return;
    }
  }
}

void expectDevice(const char* what, const float* device, int n, float want) {
  std::vector<float> host(n);
  CK(cudaMemcpy(host.data(), device, size_t(n) * 4, cudaMemcpyDeviceToHost));
  expectAll(what, host.data(), n, want);
}

float* zeros(int n) {
  float* p = nullptr;
  CK(cudaMalloc(&p, size_t(n) * 4));
  CK(cudaMemset(p, 0, size_t(n) * 4));
  return p;
}

void inPlaceOnDeviceMemory() {
  float* p = zeros(kN);
  bumpInPlace<<<kN / 256, 256>>>(kN, p);
  expectDevice("cudaMalloc memory", p, kN, 1.0f);
  float* q = zeros(kN);
  bumpAsserted<<<kN / 256, 256>>>(kN, q);
  expectDevice("cudaMalloc memory, asserting kernel", q, kN, 1.0f);
  CK(cudaFree(p));
  CK(cudaFree(q));
}

void moduleVariables() {
  bumpModuleVariables<<<4, 256>>>(1024);
  unsigned counter = 0;
  std::vector<float> table(1024);
  CK(cudaMemcpyFromSymbol(&counter, g_counter, sizeof counter));
  CK(cudaMemcpyFromSymbol(table.data(), g_table, table.size() * 4));
  if (counter != 1024) {
    std::fprintf(stderr, "own_checkpoint_target: __device__ counter is %u, not 1024\n", counter);
    ++failures;
  }
  if (table[0] != 6.0f) {
    std::fprintf(stderr, "own_checkpoint_target: __device__ table[0] is %g, not 6\n", table[0]);
    ++failures;
  }
  expectAll("__device__ table", table.data() + 1, 1023, 1.0f);
}

void throughPointersInMemory() {
  float* buffers[2] = {zeros(kN), zeros(kN)};
  float** list = nullptr;
  CK(cudaMalloc(&list, sizeof buffers));
  CK(cudaMemcpy(list, buffers, sizeof buffers, cudaMemcpyHostToDevice));
  bumpThroughPointers<<<kN / 256, 256>>>(kN, list, 2);
  expectDevice("memory behind pointers in memory (first)", buffers[0], kN, 1.0f);
  expectDevice("memory behind pointers in memory (second)", buffers[1], kN, 1.0f);
  for (float* b : buffers) CK(cudaFree(b));
  CK(cudaFree(list));
}

void mappedHostMemory() {
  constexpr int n = kN / 2;  // each launch below its own element count: each profiled
  float* host = nullptr;
  CK(cudaHostAlloc(&host, n * 4, cudaHostAllocMapped));
  for (int i = 0; i < n; ++i) host[i] = 0.0f;
  float* device = nullptr;
  CK(cudaHostGetDevicePointer(&device, host, 0));
  bumpInPlace<<<(n + 255) / 256, 256>>>(n, device);
  CK(cudaDeviceSynchronize());
  expectAll("mapped pinned host memory", host, n, 1.0f);
  CK(cudaFreeHost(host));
}

void pooledMemory() {
  constexpr int n = kN / 4;
  float* p = nullptr;
  CK(cudaMallocAsync(&p, n * 4, nullptr));
  CK(cudaMemsetAsync(p, 0, n * 4, nullptr));
  bumpInPlace<<<(n + 255) / 256, 256>>>(n, p);
  expectDevice("stream-ordered pool memory", p, n, 1.0f);
  CK(cudaFreeAsync(p, nullptr));
}

bool mappedVirtualMemory() {
  constexpr int n = kN / 8;
  MappedMemory vmm;
  if (!mapDeviceMemory(size_t(n) * 4, vmm)) return false;
  float* p = reinterpret_cast<float*>(vmm.va);
  CK(cudaMemset(p, 0, size_t(n) * 4));
  bumpInPlace<<<(n + 255) / 256, 256>>>(n, p);
  expectDevice("cuMemCreate + cuMemMap memory", p, n, 1.0f);
  return unmapDeviceMemory(vmm);
}

void fourHostThreads() {
  std::vector<std::thread> threads;
  std::vector<float*> buffers;
  for (int t = 0; t < 4; ++t) buffers.push_back(zeros(kN / 16 + t));
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, p = buffers[t]] {
      cudaStream_t s;
      CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      const int n = kN / 16 + t;
      bumpInPlace<<<(n + 255) / 256, 256, 0, s>>>(n, p);
      CK(cudaStreamSynchronize(s));
      CK(cudaStreamDestroy(s));
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 4; ++t) {
    expectDevice(("memory of host thread " + std::to_string(t)).c_str(), buffers[t], kN / 16 + t, 1.0f);
    CK(cudaFree(buffers[t]));
  }
}

// A module JIT-compiled from PTX at run time, with a variable of its own that its kernel bumps.
const char* kPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .global .align 4 .u32 jit_counter;
.visible .entry jit_bump(.param .u64 out)
{
  .reg .u32 %r<3>;
  .reg .u64 %rd<3>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  atom.global.add.u32 %r1, [jit_counter], 1;
  ld.global.u32 %r2, [%rd2];
  add.u32 %r2, %r2, 1;
  st.global.u32 [%rd2], %r2;
  ret;
}
)";

void moduleLoadedAtRunTime() {
  CUmodule module;
  CUfunction function;
  if (cuModuleLoadData(&module, kPtx) != CUDA_SUCCESS || cuModuleGetFunction(&function, module, "jit_bump") != CUDA_SUCCESS) {
    std::fprintf(stderr, "own_checkpoint_target: the PTX module did not load\n");
    ++failures;
    return;
  }
  unsigned* out = nullptr;
  CK(cudaMalloc(&out, 4));
  CK(cudaMemset(out, 0, 4));
  void* args[] = {&out};
  if (cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr) != CUDA_SUCCESS) ++failures;
  CUdeviceptr counter = 0;
  size_t bytes = 0;
  unsigned got_counter = 0, got_out = 0;
  if (cuModuleGetGlobal(&counter, &bytes, module, "jit_counter") != CUDA_SUCCESS ||
      cuMemcpyDtoH(&got_counter, counter, 4) != CUDA_SUCCESS) {
    ++failures;
  }
  CK(cudaMemcpy(&got_out, out, 4, cudaMemcpyDeviceToHost));
  if (got_counter != 1 || got_out != 1) {
    std::fprintf(stderr, "own_checkpoint_target: JIT module's variable %u and output %u, not 1 and 1\n", got_counter,
                 got_out);
    ++failures;
  }
  CK(cudaFree(out));
  cuModuleUnload(module);
}

void printingModule() {
  constexpr int n = 32;
  float* p = zeros(n);
  launchPrintingBump(n, p);
  expectDevice("memory of a printing kernel", p, n, 1.0f);
  CK(cudaFree(p));
}

void managedMemoryLast() {
  constexpr int n = kN / 32;
  float* p = nullptr;
  CK(cudaMallocManaged(&p, n * 4));
  for (int i = 0; i < n; ++i) p[i] = 0.0f;
  bumpInPlace<<<(n + 255) / 256, 256>>>(n, p);
  CK(cudaDeviceSynchronize());
  expectAll("managed memory", p, n, 1.0f);
  CK(cudaFree(p));
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("own_checkpoint_target: no GPU\n");
    return 77;
  }
  inPlaceOnDeviceMemory();
  moduleVariables();
  throughPointersInMemory();
  mappedHostMemory();
  pooledMemory();
  if (!mappedVirtualMemory()) {
    std::fprintf(stderr, "own_checkpoint_target: virtual memory management failed\n");
    ++failures;
  }
  fourHostThreads();
  moduleLoadedAtRunTime();
  printingModule();
  managedMemoryLast();
  CK(cudaDeviceSynchronize());
  if (failures > 0) return 3;
  std::printf("own_checkpoint_target: every write applied once\n");
  return 0;
}
