// A CUDA program with known kernels for the collector's GPU test: every launch path, NVTX in two
// domains (push/pop and start/end), a graph, two streams, a stack frame, spills, shared memory,
// memcpy/memset and alloc/free. It writes what the collector should record to an expectations
// file; tests/gpu/trace_check.cpp compares that with the .fprof.
//
//   trace_test_program full EXPECTATIONS   all of the above
//   trace_test_program quick               50 small kernels
//   trace_test_program sleep READY_FILE    50 kernels, then writes READY_FILE and sleeps (signal tests)
//   trace_test_program foreign-subscriber  subscribes to CUPTI itself before CUDA starts, then quick
// Exit 77 when there is no usable GPU (CTest: skipped).
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CUDA_CHECK(call)                                                                             \
  do {                                                                                               \
    cudaError_t e_ = (call);                                                                         \
    if (e_ != cudaSuccess) {                                                                         \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                                  \
    }                                                                                                \
  } while (0)
#define CU_CHECK(call)                                                                               \
  do {                                                                                               \
    CUresult r_ = (call);                                                                            \
    if (r_ != CUDA_SUCCESS) {                                                                        \
      const char* s_ = nullptr;                                                                      \
      cuGetErrorString(r_, &s_);                                                                     \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, s_ ? s_ : "?");     \
      std::exit(1);                                                                                  \
    }                                                                                                \
  } while (0)

// One instantiation per launch path, so every path has its own kernel name to find.
template <int Tag>
__global__ void tagged(float* out, const float* in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * static_cast<float>(Tag) + 1.0f;
}

// A dynamically indexed array lives in local memory: ptxas reports a 256-byte stack frame.
__global__ void stack_kernel(const int* idx, const float* src, float* out, int n) {
  float buf[64];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
#pragma unroll
  for (int j = 0; j < 64; ++j) buf[j] = src[(i + j * 977) & (n - 1)];
  out[i] = buf[idx[i] & 63];
}

// 48 live accumulators under a 32-register cap: ptxas spills.
__global__ void __maxnreg__(32) spill_kernel(const float* in, float* out, int n) {
  float acc[48];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int j = 0; j < 48; ++j) acc[j] = in[(i * 48 + j) % n];
  float s = 0;
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int j = 0; j < 48; ++j) acc[j] = acc[j] * acc[(j + r + 1) % 48] + s, s += acc[j];
  out[i % n] = s;
}

// 22 registers (ptxas): not a multiple of 8, to see how CUPTI rounds the register count.
__global__ void regs22_kernel(const float4* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float4 a = in[i], b = in[i + n], c = in[i + 2 * n], d = in[i + 3 * n];
  out[i] = a.x * b.y + c.z * d.w + a.y * c.x + b.z * d.y + a.w * b.x * c.y * d.z;
}

// 4 KiB static + dynamic shared memory.
__global__ void smem_kernel(const float* in, float* out, int n) {
  __shared__ float tile[1024];
  extern __shared__ float dyn[];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.f;
  dyn[threadIdx.x] = tile[threadIdx.x] * 2.f;
  __syncthreads();
  if (i < n) out[i] = dyn[(threadIdx.x + 1) % blockDim.x] + tile[threadIdx.x];
}

namespace {

FILE* g_expect = nullptr;
std::vector<void*> g_frees;

template <class Kernel>
void expectKernel(const char* label, Kernel kernel, const char* api, dim3 grid, dim3 block, dim3 cluster,
                  size_t dyn_smem, const char* stream, const char* nvtx_path, int launches, bool graph,
                  const std::vector<const void*>& args) {
  cudaFuncAttributes attr{};
  CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  int blocks_per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel,
                                                           static_cast<int>(block.x * block.y * block.z), dyn_smem));
  cudaFunction_t f = nullptr;
  CUDA_CHECK(cudaGetFuncBySymbol(&f, reinterpret_cast<const void*>(kernel)));
  const char* name = nullptr;
  CU_CHECK(cuFuncGetName(&name, reinterpret_cast<CUfunction>(f)));
  std::fprintf(g_expect,
               "kernel\tlabel=%s\tname=%s\tapi=%s\tgrid=%u,%u,%u\tblock=%u,%u,%u\tcluster=%u,%u,%u\tdyn_smem=%zu\t"
               "static_smem=%zu\tregs=%d\tlocal=%zu\tblocks_per_sm=%d\tstream=%s\tnvtx=%s\tlaunches=%d\tgraph=%d\targs=",
               label, name, api, grid.x, grid.y, grid.z, block.x, block.y, block.z, cluster.x, cluster.y, cluster.z,
               dyn_smem, attr.sharedSizeBytes, attr.numRegs, attr.localSizeBytes, blocks_per_sm, stream, nvtx_path,
               launches, graph ? 1 : 0);
  for (size_t i = 0; i < args.size(); ++i) {
    std::fprintf(g_expect, "%s%llu", i ? "," : "", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(args[i])));
  }
  std::fprintf(g_expect, "\n");
}

int quick(int count) {
  const int n = 1 << 12;
  float *a = nullptr, *b = nullptr;
  CUDA_CHECK(cudaMalloc(&a, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&b, n * sizeof(float)));
  CUDA_CHECK(cudaMemset(b, 0, n * sizeof(float)));
  for (int i = 0; i < count; ++i) tagged<10><<<n / 256, 256>>>(a, b, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  return 0;
}

int full(const char* expect_path) {
  g_expect = std::fopen(expect_path, "w");
  if (g_expect == nullptr) {
    std::perror(expect_path);
    return 1;
  }
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::fprintf(g_expect, "device\tname=%s\tsms=%d\tcc=%d.%d\tmax_threads_per_sm=%d\tregs_per_sm=%d\tsmem_per_sm=%zu\n",
               prop.name, prop.multiProcessorCount, prop.major, prop.minor, prop.maxThreadsPerMultiProcessor,
               prop.regsPerMultiprocessor, prop.sharedMemPerMultiprocessor);
  std::fprintf(g_expect, "process\tpid=%d\n", static_cast<int>(getpid()));

  const int n = 1 << 16;
  // A size no library allocation will share, to find this allocation's events.
  const size_t odd_bytes = (3u << 20) + 4096;
  float *x = nullptr, *y = nullptr, *z = nullptr, *odd = nullptr;
  int* idx = nullptr;
  CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&y, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&z, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&idx, n * sizeof(int)));
  CUDA_CHECK(cudaMalloc(&odd, odd_bytes));
  std::fprintf(g_expect, "alloc\taddress=%llu\tbytes=%zu\n",
               static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(odd)), odd_bytes);

  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i % 97) * 0.5f;
  CUDA_CHECK(cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice));
  CUDA_CHECK(cudaMemset(idx, 0x5a, n * sizeof(int)));
  CUDA_CHECK(cudaMemset(odd, 0, odd_bytes));
  std::fprintf(g_expect, "memcpy\tkind=HtoD\tbytes=%zu\tsrc=pageable\tdst=device\n", n * sizeof(float));
  std::fprintf(g_expect, "memcpy\tkind=DtoD\tbytes=%zu\tsrc=device\tdst=device\n", n * sizeof(float));
  std::fprintf(g_expect, "memset\tbytes=%zu\tvalue=%d\n", n * sizeof(int), 0x5a);
  std::fprintf(g_expect, "memset\tbytes=%zu\tvalue=0\n", odd_bytes);

  cudaStream_t s1, s2;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  const dim3 grid(n / 256), block(256), none(0, 0, 0);

  nvtxDomainHandle_t domain = nvtxDomainCreateA("fprof_test");
  nvtxEventAttributes_t attr{};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.message.ascii = "outer";
  attr.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  attr.payload.ullValue = 1234;
  nvtxDomainRangePushEx(domain, &attr);
  nvtxRangePushA("inner");

  // 1. <<<>>>: on CUDA 13.0 the outermost launch callback is cudaLaunchKernel (seen on an H200)
  tagged<1><<<grid, block, 0, s1>>>(z, x, n);
  CUDA_CHECK(cudaGetLastError());
  expectKernel("chevron", tagged<1>, "cudaLaunchKernel", grid, block, none, 0, "s1", "fprof_test::outer/inner", 1,
               false, {z, x});
  nvtxRangePop();

  // 2. cudaLaunchKernel
  {
    int nn = n;
    void* args[] = {&y, &x, &nn};
    CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(tagged<2>), grid, block, args, 0, s2));
    expectKernel("runtime", tagged<2>, "cudaLaunchKernel", grid, block, none, 0, "s2", "fprof_test::outer", 1, false,
                 {y, x});
  }
  nvtxDomainRangePop(domain);

  // 3. cudaLaunchKernelEx with a 2-block cluster
  {
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.stream = s1;
    cudaLaunchAttribute cluster_attr{};
    cluster_attr.id = cudaLaunchAttributeClusterDimension;
    cluster_attr.val.clusterDim.x = 2;
    cluster_attr.val.clusterDim.y = 1;
    cluster_attr.val.clusterDim.z = 1;
    config.attrs = &cluster_attr;
    config.numAttrs = 1;
    CUDA_CHECK(cudaLaunchKernelEx(&config, tagged<3>, z, static_cast<const float*>(y), n));
    expectKernel("runtime_ex_cluster", tagged<3>, "cudaLaunchKernelExC", grid, block, dim3(2, 1, 1), 0, "s1", "", 1,
                 false, {z, y});
  }
  // 4. cooperative
  {
    int nn = n;
    void* args[] = {&z, &x, &nn};
    const dim3 small(4);
    CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(tagged<4>), small, block, args, 0, s1));
    expectKernel("cooperative", tagged<4>, "cudaLaunchCooperativeKernel", small, block, none, 0, "s1", "", 1, false,
                 {z, x});
  }
  // 5-7. driver launches
  {
    int nn = n;
    void* args[] = {&z, &y, &nn};
    cudaFunction_t f5, f6, f7;
    CUDA_CHECK(cudaGetFuncBySymbol(&f5, reinterpret_cast<const void*>(tagged<5>)));
    CUDA_CHECK(cudaGetFuncBySymbol(&f6, reinterpret_cast<const void*>(tagged<6>)));
    CUDA_CHECK(cudaGetFuncBySymbol(&f7, reinterpret_cast<const void*>(tagged<7>)));
    CU_CHECK(cuLaunchKernel(reinterpret_cast<CUfunction>(f5), grid.x, 1, 1, block.x, 1, 1, 0, s2, args, nullptr));
    expectKernel("driver", tagged<5>, "cuLaunchKernel", grid, block, none, 0, "s2", "", 1, false, {z, y});
    CUlaunchConfig config{};
    config.gridDimX = grid.x;
    config.gridDimY = 1;
    config.gridDimZ = 1;
    config.blockDimX = block.x;
    config.blockDimY = 1;
    config.blockDimZ = 1;
    config.hStream = s2;
    CU_CHECK(cuLaunchKernelEx(&config, reinterpret_cast<CUfunction>(f6), args, nullptr));
    expectKernel("driver_ex", tagged<6>, "cuLaunchKernelEx", grid, block, none, 0, "s2", "", 1, false, {z, y});
    CU_CHECK(cuLaunchCooperativeKernel(reinterpret_cast<CUfunction>(f7), 4, 1, 1, block.x, 1, 1, 0, s2, args));
    expectKernel("driver_cooperative", tagged<7>, "cuLaunchCooperativeKernel", dim3(4), block, none, 0, "s2", "", 1,
                 false, {z, y});
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  // 10-12. resource usage: stack frame, spills, shared memory; under a domain start/end range
  {
    nvtxEventAttributes_t se{};
    se.version = NVTX_VERSION;
    se.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    se.messageType = NVTX_MESSAGE_TYPE_ASCII;
    se.message.ascii = "resources";
    nvtxRangeId_t rid = nvtxDomainRangeStartEx(domain, &se);
    nvtxRangePushA("phase2");
    stack_kernel<<<grid, block, 0, s2>>>(idx, x, z, n);
    CUDA_CHECK(cudaGetLastError());
    expectKernel("stack", stack_kernel, "cudaLaunchKernel", grid, block, none, 0, "s2",
                 "fprof_test::resources/phase2", 1, false, {idx, x, z});
    nvtxRangePop();
    spill_kernel<<<grid, block, 0, s2>>>(x, z, n);
    CUDA_CHECK(cudaGetLastError());
    expectKernel("spill", spill_kernel, "cudaLaunchKernel", grid, block, none, 0, "s2", "fprof_test::resources", 1,
                 false, {x, z});
    const size_t dyn = 8192;
    smem_kernel<<<grid, dim3(1024), dyn, s2>>>(x, z, n);
    CUDA_CHECK(cudaGetLastError());
    expectKernel("smem", smem_kernel, "cudaLaunchKernel", grid, dim3(1024), none, dyn, "s2", "fprof_test::resources",
                 1, false, {x, z});
    {
      float4* quads = nullptr;
      CUDA_CHECK(cudaMalloc(&quads, 4 * n * sizeof(float4)));
      CUDA_CHECK(cudaMemset(quads, 0, 4 * n * sizeof(float4)));
      std::fprintf(g_expect, "memset\tbytes=%zu\tvalue=0\n", 4 * n * sizeof(float4));
      regs22_kernel<<<grid, block, 0, s2>>>(quads, z, n);
      CUDA_CHECK(cudaGetLastError());
      expectKernel("regs22", regs22_kernel, "cudaLaunchKernel", grid, block, none, 0, "s2", "fprof_test::resources", 1,
                   false, {quads, z});
      CUDA_CHECK(cudaStreamSynchronize(s2));
      CUDA_CHECK(cudaFree(quads));
    }
    nvtxDomainRangeEnd(domain, rid);
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  // A captured graph of three kernels (one also launched directly before), launched twice inside a start/end range
  {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    tagged<8><<<grid, block, 0, s1>>>(y, z, n);
    tagged<9><<<grid, block, 0, s1>>>(z, y, n);
    stack_kernel<<<grid, block, 0, s1>>>(idx, x, z, n);  // also launched directly above
    CUDA_CHECK(cudaStreamEndCapture(s1, &graph));
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    nvtxRangeId_t phase = nvtxRangeStartA("graph_phase");
    CUDA_CHECK(cudaGraphLaunch(exec, s1));
    CUDA_CHECK(cudaGraphLaunch(exec, s1));
    CUDA_CHECK(cudaStreamSynchronize(s1));
    nvtxRangeEnd(phase);
    expectKernel("graph_a", tagged<8>, "cudaGraphLaunch", grid, block, none, 0, "s1", "graph_phase", 2, true, {});
    expectKernel("graph_b", tagged<9>, "cudaGraphLaunch", grid, block, none, 0, "s1", "graph_phase", 2, true, {});
    expectKernel("graph_stack", stack_kernel, "cudaGraphLaunch", grid, block, none, 0, "s1", "graph_phase", 2, true, {});
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaGraphDestroy(graph));
  }

  CUDA_CHECK(cudaMemcpy(host.data(), z, n * sizeof(float), cudaMemcpyDeviceToHost));
  std::fprintf(g_expect, "memcpy\tkind=DtoH\tbytes=%zu\tsrc=device\tdst=pageable\n", n * sizeof(float));
  std::fprintf(g_expect, "nvtx\tdomain=fprof_test\tmessage=outer\tpayload=1234\tpush_pop=1\n");
  std::fprintf(g_expect, "nvtx\tdomain=\tmessage=inner\tpayload=\tpush_pop=1\n");
  std::fprintf(g_expect, "nvtx\tdomain=\tmessage=graph_phase\tpayload=\tpush_pop=0\n");
  std::fprintf(g_expect, "nvtx\tdomain=fprof_test\tmessage=resources\tpayload=\tpush_pop=0\n");
  std::fprintf(g_expect, "nvtx\tdomain=\tmessage=phase2\tpayload=\tpush_pop=1\n");

  CUDA_CHECK(cudaStreamDestroy(s1));
  CUDA_CHECK(cudaStreamDestroy(s2));
  CUDA_CHECK(cudaFree(odd));
  std::fprintf(g_expect, "free\taddress=%llu\tbytes=%zu\n",
               static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(odd)), odd_bytes);
  for (void* p : {static_cast<void*>(x), static_cast<void*>(y), static_cast<void*>(z), static_cast<void*>(idx)}) {
    CUDA_CHECK(cudaFree(p));
  }
  std::fclose(g_expect);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "foreign-subscriber") {
    // Take the CUPTI subscription before CUDA starts, as nsys or ncu would.
    CUpti_SubscriberHandle sub = nullptr;
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "foreign_tool";
    if (cuptiSubscribe_v2(&sub, [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}, nullptr,
                          &params) != CUPTI_SUCCESS) {
      std::fprintf(stderr, "foreign subscriber could not subscribe\n");
      return 1;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "no CUDA device: skipped\n");
    return 77;
  }
  if (mode == "full" && argc > 2) return full(argv[2]);
  if (mode == "quick" || mode == "foreign-subscriber") return quick(50);
  if (mode == "sleep" && argc > 2) {
    quick(50);
    FILE* ready = std::fopen(argv[2], "w");
    if (ready != nullptr) std::fclose(ready);
    sleep(60);
    return 0;
  }
  std::fprintf(stderr, "usage: %s full EXPECTATIONS | quick | sleep READY_FILE | foreign-subscriber\n", argv[0]);
  return 2;
}
