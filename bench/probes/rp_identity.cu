// Range-profiler identity probe (issue 13, questions 1 and 4 of bench/probes/README.md): with
// CUPTI_AutoRange + CUPTI_KernelReplay, how many ranges, with which names, does each kind of launch
// produce while the profiler is started, what does each CUPTI call return, and what start/stop and
// decode cost per kernel.
//
//   rp_identity GROUP [one|roofline] [N]
//   GROUP: basic | coop | cluster | graph | threads | cost   (one process per group, so a hang or a
//   crash in one kind of launch loses only that group)
//
// Output: prose plus "@json {...}" lines (table "q1" per scenario, "q1cost" per cost mode).
#include <cooperative_groups.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <thread>

#include "probe_common.h"

namespace cg = cooperative_groups;
using probe::Json;

__device__ void scaleBody(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] * 1.0001f + 1.f;
}

__global__ void k_plain(float* p, int n) { scaleBody(p, n); }

namespace ns1 {
template <typename T, int U>
__global__ void k_templ(T* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] * static_cast<T>(U);
}
}  // namespace ns1

__global__ void k_coop(float* p, int n) {
  cg::grid_group grid = cg::this_grid();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1.f;
  grid.sync();
  if (i < n) p[i] += p[(i + 1) % n];
}

__global__ void k_cluster(float* p, int n) {
  cg::cluster_group cluster = cg::this_cluster();
  __shared__ float s;
  if (threadIdx.x == 0) s = static_cast<float>(blockIdx.x);
  cluster.sync();
  float* other = cluster.map_shared_rank(&s, (cluster.block_rank() + 1) % cluster.num_blocks());
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += *other;
  cluster.sync();
}

__global__ void k_graph_a(float* p, int n) { scaleBody(p, n); }
__global__ void k_graph_b(float* p, int n) { scaleBody(p, n); }
__global__ void k_graph_c(float* p, int n) { scaleBody(p, n); }
__global__ void k_graph_d(float* p, int n) { scaleBody(p, n); }
__global__ void k_t0a(float* p, int n) { scaleBody(p, n); }
__global__ void k_t0b(float* p, int n) { scaleBody(p, n); }
__global__ void k_t1a(float* p, int n) { scaleBody(p, n); }
__global__ void k_t1b(float* p, int n) { scaleBody(p, n); }
__global__ void k_cost(float* p, int n) { scaleBody(p, n); }

// A module loaded from PTX at run time (JIT), launched with cuLaunchKernel.
static const char* kJitPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry jit_scale(.param .u64 jit_scale_p, .param .u32 jit_scale_n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [jit_scale_p];
  ld.param.u32 %r1, [jit_scale_n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.s32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  mul.f32 %f2, %f1, 0f3F800347;
  st.global.f32 [%rd4], %f2;
DONE:
  ret;
}
)";

namespace {

constexpr int kN = 1 << 20;  // 4 MiB of floats per buffer
probe::RangeProfiler g_rp;
float* g_buf = nullptr;
float* g_big = nullptr;  // 64 MiB for memsets and copies
CUfunction g_jit = nullptr;
std::string g_launchResults;  // CUDA results of the launches of the current scenario
std::mutex g_launchResultsMutex;

void noteLaunch(const char* what, cudaError_t e) {
  std::lock_guard<std::mutex> lock(g_launchResultsMutex);
  if (!g_launchResults.empty()) g_launchResults += ",";
  g_launchResults += std::string(what) + ":" + (e == cudaSuccess ? "OK" : cudaGetErrorName(e));
}

// Launch callbacks: every driver launch is logged (which API fired, which symbol, in what order);
// in serialized mode a per-context mutex is held from the launch's ENTER to its EXIT with the
// profiler started just for it (the design issue 13 proposes).
struct LaunchEntry {
  long seq;
  int thread;
  std::string api, symbol;
};
std::mutex g_logMutex;
std::vector<LaunchEntry> g_launchLog;
std::atomic<long> g_seq{0};
std::atomic<bool> g_serialize{false};
std::mutex g_ctxMutex;
thread_local int t_thread = 0;

bool isLaunchApi(const char* name) {
  return name && (std::strncmp(name, "cuLaunch", 8) == 0 || std::strncmp(name, "cuGraphLaunch", 13) == 0);
}

thread_local int t_depth = 0;       // launch APIs nested in a launch API (outermost one counts)
thread_local bool t_holding = false;  // this thread holds g_ctxMutex for its current launch

void CUPTIAPI onApi(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (!isLaunchApi(cb->functionName)) return;
  if (cb->callbackSite == CUPTI_API_ENTER) {
    if (t_depth++ == 0 && g_serialize) {
      g_ctxMutex.lock();
      t_holding = true;
      g_rp.start();
    }
    std::lock_guard<std::mutex> lock(g_logMutex);
    g_launchLog.push_back({g_seq++, t_thread, cb->functionName + std::string(t_depth > 1 ? " (nested)" : ""),
                           cb->symbolName ? cb->symbolName : ""});
  } else if (--t_depth == 0 && t_holding) {
    g_rp.stop();
    t_holding = false;
    g_ctxMutex.unlock();
  }
}

// Which of the four thread kernels a range or symbol names ("" when none).
std::string threadKernel(const std::string& name) {
  for (const char* k : {"k_t0a", "k_t0b", "k_t1a", "k_t1b"})
    if (name.find(k) != std::string::npos) return k;
  return "";
}

void scenario(const char* name, int expectRanges, const std::function<void()>& body, bool startProfiler = true) {
  std::printf("== scenario %s\n", name);
  std::fflush(stdout);
  probe::calls().take();
  {
    std::lock_guard<std::mutex> lock(g_logMutex);
    g_launchLog.clear();
  }
  g_launchResults.clear();
  const double t0 = probe::nowMs();
  if (startProfiler) g_rp.start();
  body();
  cudaError_t syncErr = cudaDeviceSynchronize();
  cudaError_t lastErr = cudaGetLastError();
  if (startProfiler) g_rp.stop();
  std::vector<probe::Range> ranges;
  size_t dropped = 0;
  g_rp.decode(ranges, dropped);
  const double t1 = probe::nowMs();
  std::vector<std::string> names, launches;
  for (const auto& r : ranges) names.push_back(r.name);
  std::vector<LaunchEntry> log;
  {
    std::lock_guard<std::mutex> lock(g_logMutex);
    log = g_launchLog;
  }
  for (const auto& e : log) launches.push_back("t" + std::to_string(e.thread) + " " + e.api + " " + e.symbol);
  // Ranges against launches in ENTER order, compared by which thread kernel each names.
  std::string rangeOrder, enterOrder;
  for (const auto& r : ranges) rangeOrder += threadKernel(r.name) + " ";
  for (const auto& e : log) enterOrder += threadKernel(e.symbol) + " ";
  const int timeIdx = g_rp.index("gpu__time_duration.sum");
  std::string times = "[";
  for (size_t i = 0; i < ranges.size(); ++i)
    times += (i ? "," : "") + std::to_string(timeIdx >= 0 && std::isfinite(ranges[i].values[timeIdx])
                                                 ? ranges[i].values[timeIdx]
                                                 : -1.0);
  times += "]";
  for (const auto& n : names) std::printf("  range: %s\n", n.c_str());
  for (const auto& l : launches) std::printf("  launch: %s\n", l.c_str());
  std::printf("  %zu ranges (expected %d), %zu dropped, launch results [%s], sync %s, cupti [%s]\n", ranges.size(),
              expectRanges, dropped, g_launchResults.c_str(), cudaGetErrorName(syncErr),
              probe::calls().take().c_str());
  Json()
      .str("table", "q1")
      .str("scenario", name)
      .integer("ranges", static_cast<long long>(ranges.size()))
      .integer("expected", expectRanges)
      .integer("dropped", static_cast<long long>(dropped))
      .strList("names", names)
      .strList("launches", launches)
      .str("launch_results", g_launchResults)
      .str("sync", cudaGetErrorName(syncErr))
      .str("last_error", cudaGetErrorName(lastErr))
      .boolean("thread_order_matches", !rangeOrder.empty() && rangeOrder == enterOrder)
      .str("range_order", rangeOrder)
      .str("enter_order", enterOrder)
      .raw("time_ns", times)
      .num("ms", t1 - t0)
      .integer("passes", static_cast<long long>(g_rp.passes()))
      .emit();
}

dim3 blocksFor(int n, int block) { return dim3((n + block - 1) / block); }

void launchPlain() {
  k_plain<<<blocksFor(kN, 256), 256>>>(g_buf, kN);
  noteLaunch("k_plain", cudaGetLastError());
}

void groupBasic() {
  scenario("plain", 1, [] { launchPlain(); });
  scenario("template_in_namespace", 1, [] {
    ns1::k_templ<float, 4><<<blocksFor(kN, 256), 256>>>(g_buf, kN);
    noteLaunch("k_templ", cudaGetLastError());
  });
  scenario("bad_config_2048_threads", 0, [] {
    k_plain<<<1, 2048>>>(g_buf, kN);
    noteLaunch("k_plain<<<1x2048>>>", cudaGetLastError());
  });
  scenario("bad_config_then_plain", 1, [] {
    k_plain<<<1, 2048>>>(g_buf, kN);
    noteLaunch("k_plain<<<1x2048>>>", cudaGetLastError());
    launchPlain();
  });
  scenario("jit_ptx_cuLaunchKernel", 1, [] {
    int n = kN;
    void* args[] = {&g_buf, &n};
    CUresult r = cuLaunchKernel(g_jit, kN / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr);
    noteLaunch("jit_scale", r == CUDA_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure);
  });
  scenario("memset_memcpy_between_kernels", 5, [] {
    static std::vector<char> host(1 << 20, 1);
    launchPlain();
    noteLaunch("cudaMemsetAsync 64MiB", cudaMemsetAsync(g_big, 0, 64u << 20));
    launchPlain();
    noteLaunch("cudaMemsetAsync 1000001 B at +1", cudaMemsetAsync(reinterpret_cast<char*>(g_big) + 1, 3, 1000001));
    launchPlain();
    noteLaunch("cudaMemcpyAsync D2D 16MiB",
               cudaMemcpyAsync(g_big + (32 << 20) / 4, g_big, 16u << 20, cudaMemcpyDeviceToDevice));
    launchPlain();
    noteLaunch("cudaMemcpy H2D 1MiB pageable", cudaMemcpy(g_big, host.data(), host.size(), cudaMemcpyHostToDevice));
    noteLaunch("cudaMemset2DAsync", cudaMemset2DAsync(g_big, 4096, 7, 1000, 100));
    launchPlain();
  });
  // The same with the profiler started only from the launch callbacks (stopped during memsets).
  g_serialize = true;
  scenario(
      "callback_start_stop_memset_memcpy", 5,
      [] {
        static std::vector<char> host(1 << 20, 1);
        launchPlain();
        noteLaunch("cudaMemsetAsync", cudaMemsetAsync(reinterpret_cast<char*>(g_big) + 1, 3, 1000001));
        launchPlain();
        noteLaunch("cudaMemcpyAsync D2D", cudaMemcpyAsync(g_big + (32 << 20) / 4, g_big, 16u << 20,
                                                          cudaMemcpyDeviceToDevice));
        launchPlain();
        noteLaunch("cudaMemcpy H2D", cudaMemcpy(g_big, host.data(), host.size(), cudaMemcpyHostToDevice));
        launchPlain();
        launchPlain();
      },
      false);
  g_serialize = false;
}

void groupCoop() {
  int sms = 0, perSm = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, k_coop, 256, 0);
  std::printf("cooperative grid: %d blocks of 256 (%d SMs, %d co-resident blocks per SM)\n", sms, sms, perSm);
  auto coop = [sms] {
    int n = sms * 256;
    void* args[] = {&g_buf, &n};
    noteLaunch("cudaLaunchCooperativeKernel", cudaLaunchCooperativeKernel(reinterpret_cast<void*>(k_coop),
                                                                          dim3(sms), dim3(256), args, 0, nullptr));
  };
  scenario("cooperative", 1, coop);
  scenario("cooperative_then_plain", 2, [coop] {
    coop();
    launchPlain();
  });
  g_serialize = true;
  scenario("callback_start_stop_cooperative", 1, coop, false);
  g_serialize = false;
}

void groupCluster() {
  auto cluster = [] {
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(16);
    config.blockDim = dim3(128);
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = 2;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    config.attrs = &attr;
    config.numAttrs = 1;
    int n = 16 * 128;
    void* args[] = {&g_buf, &n};
    noteLaunch("cudaLaunchKernelExC cluster 2",
               cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(k_cluster), args));
  };
  scenario("cluster_dims_2", 1, cluster);
  scenario("cluster_then_plain", 2, [cluster] {
    cluster();
    launchPlain();
  });
  g_serialize = true;
  scenario("callback_start_stop_cluster", 1, cluster, false);
  g_serialize = false;
}

// Captures three kernels; nullptr (with the errors noted) when capture fails.
cudaGraphExec_t captureThree(cudaStream_t s) {
  cudaGraph_t g = nullptr;
  noteLaunch("cudaStreamBeginCapture", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  k_graph_a<<<blocksFor(kN, 256), 256, 0, s>>>(g_buf, kN);
  noteLaunch("k_graph_a (capture)", cudaGetLastError());
  k_graph_b<<<blocksFor(kN, 256), 256, 0, s>>>(g_buf, kN);
  noteLaunch("k_graph_b (capture)", cudaGetLastError());
  k_graph_c<<<blocksFor(kN, 256), 256, 0, s>>>(g_buf, kN);
  noteLaunch("k_graph_c (capture)", cudaGetLastError());
  cudaError_t e = cudaStreamEndCapture(s, &g);
  noteLaunch("cudaStreamEndCapture", e);
  if (e != cudaSuccess || !g) return nullptr;
  cudaGraphExec_t exec = nullptr;
  e = cudaGraphInstantiate(&exec, g, 0);
  noteLaunch("cudaGraphInstantiate", e);
  return e == cudaSuccess ? exec : nullptr;
}

// root a -> (b, c in parallel) -> d, built node by node.
cudaGraphExec_t buildBranches() {
  cudaGraph_t g;
  CUDA_OK(cudaGraphCreate(&g, 0));
  static int n = kN;
  static void* args[] = {&g_buf, &n};
  auto node = [&](void* fn, const cudaGraphNode_t* deps, size_t ndeps) {
    cudaKernelNodeParams p{};
    p.func = fn;
    p.gridDim = blocksFor(kN, 256);
    p.blockDim = dim3(256);
    p.kernelParams = args;
    cudaGraphNode_t out;
    CUDA_OK(cudaGraphAddKernelNode(&out, g, deps, ndeps, &p));
    return out;
  };
  cudaGraphNode_t a = node(reinterpret_cast<void*>(k_graph_a), nullptr, 0);
  cudaGraphNode_t b = node(reinterpret_cast<void*>(k_graph_b), &a, 1);
  cudaGraphNode_t c = node(reinterpret_cast<void*>(k_graph_c), &a, 1);
  cudaGraphNode_t bc[] = {b, c};
  node(reinterpret_cast<void*>(k_graph_d), bc, 2);
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  return exec;
}

void groupGraph() {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  static cudaGraphExec_t three = nullptr;
  scenario("graph_capture_while_started", 0, [s] { three = captureThree(s); });
  if (!three) {  // capture failed under the profiler: capture again without it, on a fresh stream
    cudaGetLastError();
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    three = captureThree(s);
    std::printf("  re-captured without the profiler: %s\n", three ? "ok" : "failed");
    if (!three) return;
  }
  static cudaGraphExec_t branches = buildBranches();
  scenario("graph_3_kernels", 3, [s] { noteLaunch("cudaGraphLaunch", cudaGraphLaunch(three, s)); });
  scenario("graph_3_kernels_twice", 6, [s] {
    noteLaunch("cudaGraphLaunch", cudaGraphLaunch(three, s));
    noteLaunch("cudaGraphLaunch", cudaGraphLaunch(three, s));
  });
  scenario("graph_2_parallel_branches", 4, [s] { noteLaunch("cudaGraphLaunch", cudaGraphLaunch(branches, s)); });
  scenario("graph_then_plain", 4, [s] {
    noteLaunch("cudaGraphLaunch", cudaGraphLaunch(three, s));
    CUDA_OK(cudaStreamSynchronize(s));
    launchPlain();
  });
  g_serialize = true;
  scenario(
      "callback_start_stop_graph_3", 3, [s] { noteLaunch("cudaGraphLaunch", cudaGraphLaunch(three, s)); }, false);
  g_serialize = false;
}

// Two host threads, two streams, 16 launches each of two alternating kernels.
void twoThreads() {
  auto work = [](int t) {
    t_thread = t;
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float* p = g_buf + t * (kN / 2);
    for (int i = 0; i < 16; ++i) {
      auto fn = t == 0 ? (i % 2 ? k_t0b : k_t0a) : (i % 2 ? k_t1b : k_t1a);
      fn<<<blocksFor(kN / 2, 256), 256, 0, s>>>(p, kN / 2);
      noteLaunch(t == 0 ? "t0" : "t1", cudaGetLastError());
    }
    CUDA_OK(cudaStreamSynchronize(s));
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
}

void groupThreads() {
  scenario("two_threads_profiler_started", 32, twoThreads);
  g_serialize = true;
  scenario("two_threads_callback_mutex_start_stop", 32, twoThreads, false);
  g_serialize = false;
}

void costRow(const char* mode, int n, double ms, size_t ranges, double nativeMs) {
  std::printf("  cost %-40s %3d kernels %8.2f ms  %7.3f ms/kernel (native %.3f)  %zu ranges\n", mode, n, ms, ms / n,
              nativeMs / n, ranges);
  Json()
      .str("table", "q1cost")
      .str("mode", mode)
      .integer("kernels", n)
      .num("ms", ms)
      .num("ms_per_kernel", ms / n)
      .num("native_ms_per_kernel", nativeMs / n)
      .integer("ranges", static_cast<long long>(ranges))
      .integer("passes", static_cast<long long>(g_rp.passes()))
      .emit();
}

void groupCost(int n) {
  auto launch = [] { k_cost<<<blocksFor(kN, 256), 256>>>(g_buf, kN); };
  for (int i = 0; i < 3; ++i) launch();
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<probe::Range> ranges;
  size_t dropped = 0;
  double t0 = probe::nowMs();
  for (int i = 0; i < n; ++i) {
    launch();
    cudaDeviceSynchronize();
  }
  const double native = probe::nowMs() - t0;
  costRow("native (launch + sync)", n, native, 0, native);

  t0 = probe::nowMs();
  g_rp.start();
  for (int i = 0; i < n; ++i) launch();
  cudaDeviceSynchronize();
  g_rp.stop();
  g_rp.decode(ranges, dropped);
  costRow("started once, one decode", n, probe::nowMs() - t0, ranges.size(), native);

  ranges.clear();
  t0 = probe::nowMs();
  for (int i = 0; i < n; ++i) {
    g_rp.start();
    launch();
    g_rp.stop();
  }
  cudaDeviceSynchronize();
  g_rp.decode(ranges, dropped);
  costRow("start/stop per kernel, one decode", n, probe::nowMs() - t0, ranges.size(), native);

  ranges.clear();
  t0 = probe::nowMs();
  for (int i = 0; i < n; ++i) {
    g_rp.start();
    launch();
    g_rp.stop();
    g_rp.decode(ranges, dropped);
  }
  costRow("start/stop + decode per kernel", n, probe::nowMs() - t0, ranges.size(), native);

  ranges.clear();
  g_serialize = true;
  t0 = probe::nowMs();
  for (int i = 0; i < n; ++i) launch();
  cudaDeviceSynchronize();
  g_serialize = false;
  g_rp.decode(ranges, dropped);
  costRow("callback mutex start/stop, one decode", n, probe::nowMs() - t0, ranges.size(), native);
  std::printf("  cupti [%s]\n", probe::calls().take().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string group = argc > 1 ? argv[1] : "basic";
  const std::string set = argc > 2 ? argv[2] : "one";
  const int costN = argc > 3 ? std::atoi(argv[3]) : 64;
  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaFree(0));
  CUcontext ctx = nullptr;
  cuCtxGetCurrent(&ctx);
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  CUDA_OK(cudaMalloc(&g_buf, kN * sizeof(float)));
  CUDA_OK(cudaMalloc(&g_big, 64u << 20));
  CUDA_OK(cudaMemset(g_buf, 0, kN * sizeof(float)));
  CUmodule jitModule;
  if (cuModuleLoadData(&jitModule, kJitPtx) != CUDA_SUCCESS ||
      cuModuleGetFunction(&g_jit, jitModule, "jit_scale") != CUDA_SUCCESS) {
    std::printf("FATAL: loading the PTX module failed\n");
    return 1;
  }
  CUpti_SubscriberHandle sub;
  CUPTI_REC(cuptiSubscribe(&sub, reinterpret_cast<CUpti_CallbackFunc>(onApi), nullptr));
  CUPTI_REC(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API));
  const std::vector<std::string> metrics = set == "roofline" ? probe::rooflineMetrics() : probe::memoryOnePassMetrics();
  if (!g_rp.setup(ctx, metrics, 512)) {
    std::printf("FATAL: range profiler setup failed: %s\n", probe::calls().take().c_str());
    Json().str("table", "q1setup").str("group", group).str("set", set).boolean("ok", false).emit();
    return 2;
  }
  size_t freeB = 0, totalB = 0;
  cudaMemGetInfo(&freeB, &totalB);
  std::printf("rp_identity %s/%s on %s, chip %s, CUPTI %u, driver %d, %zu metrics in %zu passes, %.0f MiB used\n",
              group.c_str(), set.c_str(), prop.name, g_rp.chip().c_str(), probe::cuptiVersion(), probe::driverVersion(),
              metrics.size(), g_rp.passes(), (totalB - freeB) / 1048576.0);
  Json()
      .str("table", "q1setup")
      .str("group", group)
      .str("set", set)
      .boolean("ok", true)
      .integer("cupti", probe::cuptiVersion())
      .integer("driver", probe::driverVersion())
      .integer("passes", static_cast<long long>(g_rp.passes()))
      .emit();
  probe::calls().take();
  if (group == "basic") groupBasic();
  if (group == "coop") groupCoop();
  if (group == "cluster") groupCluster();
  if (group == "graph") groupGraph();
  if (group == "threads") groupThreads();
  if (group == "cost") groupCost(costN);
  std::printf("rp_identity %s done\n", group.c_str());
  return 0;
}
