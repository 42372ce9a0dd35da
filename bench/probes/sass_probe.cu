// CUPTI SASS Metrics API probe (issue 15 route 3, issue 13's FLOPs per lane; question 3 of
// bench/probes/README.md). shared/reference/sass_metrics_probe got per-PC records only for the first
// function launched after cuptiSassMetricsEnable. This probe runs one variant of the call sequence
// per process over five straight-line kernels in three modules (two compiled in, one PTX loaded at
// run time) and checks every function's per-PC counts against the analytic value (warps launched).
//
//   sass_probe VARIANT        (sass_probe list: the variants)
//   DUMP_PCS=1                also print "@pc" lines (function, pc offset, counts) for joining with
//                             cuobjdump -sass (FLOPs per lane)
//   LIST_METRICS=1            print the chip's SASS metrics
//   SASS_JIT_PTX=path         the PTX module (default: sass_jit.ptx beside the executable)
// Output: "@json" rows of table "q3" (one per flush) and "q3run" (one per process).
#include <cupti_activity.h>
#include <cupti_pcsampling.h>
#include <cupti_sass_metrics.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "probe_common.h"
#include "sass_kernels.h"

using probe::Json;

namespace {

enum Kid { kFfma, kHfma2, kDfma, kHfma, kJit, kNumKernels };
const char* kKernelNames[] = {"k_ffma64", "k_hfma2x64", "k_dfma32", "k_hfma64", "jit_fadd16"};

struct Variant {
  std::string name, what;
  bool ownCtx = false;           // the CUPTI sample's order: profiler init, then cuCtxCreate
  int lazy = 1;                  // enableLazyPatching
  bool flushEach = true;         // flush after every kernel (else once at the end)
  bool cycle = false;            // disable + enable after each flush
  bool fullReset = false;        // disable + unset + set config + enable after each flush
  bool callbackEnable = false;   // enable at each launch's ENTER, sync + flush + disable at its EXIT
  bool modloadConfig = false;    // unset + set config (+ re-enable) inside the module-loaded callback
  bool modloadDeferred = false;  // the same at the next launch ENTER after a module load
  int dataStructSize = 48;       // CUpti_SassMetrics_Data.structSize: 48 sizeof, 40 FlushData STRUCT_SIZE, 0
  bool oversize = false;         // flush buffers far larger than GetDataProperties reports
  bool noProps = false;          // flush without asking GetDataProperties first
  std::string metrics = "smsp__sass_inst_executed,smsp__sass_thread_inst_executed";
  uint8_t granularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU;
  bool activity = false;    // kernel activity records enabled as fprof's trace would
  bool activitySerial = false;  // CUPTI_ACTIVITY_KIND_KERNEL (serialized) instead of CONCURRENT_KERNEL
  bool warmFirst = false;   // every kernel launched once before enable
  bool warmBeforeInit = false;  // every kernel launched once before cuptiProfilerInitialize (reference WARM=1)
  bool touchFirst = false;  // every module loaded (cudaFuncGetAttributes, JIT load) before enable
  bool sampleIo = false;    // each kernel inside cudaMalloc/cudaMemcpyAsync/cudaMemcpy/cudaFree as the sample
  bool reverse = false;     // another launch order (module B first)
  bool repeatFirst = false; // the first kernel three times before the others
  bool noSubscribe = false; // no CUPTI callback subscriber at all (as the reference probe and the sample)
};

std::vector<Variant> allVariants() {
  std::vector<Variant> v;
  auto add = [&](const char* name, const char* what, const std::function<void(Variant&)>& f) {
    Variant x;
    x.name = name;
    x.what = what;
    f(x);
    v.push_back(x);
  };
  add("primary", "reference probe's order: primary context, lazy patching, flush per kernel", [](Variant&) {});
  add("sample_ctx", "CUPTI sample's order: profiler init, then cuCtxCreate, one metric, malloc/copy/free per kernel",
      [](Variant& x) {
        x.ownCtx = true;
        x.metrics = "smsp__sass_inst_executed";
        x.sampleIo = true;
      });
  add("sample_ctx_two_metrics", "as sample_ctx with two metrics", [](Variant& x) {
    x.ownCtx = true;
    x.sampleIo = true;
  });
  add("primary_nosub", "primary without any callback subscriber (exactly the reference probe's calls)",
      [](Variant& x) { x.noSubscribe = true; });
  add("sample_ctx_nosub", "sample_ctx without any callback subscriber (exactly the sample's calls)", [](Variant& x) {
    x.ownCtx = true;
    x.metrics = "smsp__sass_inst_executed";
    x.sampleIo = true;
    x.noSubscribe = true;
  });
  add("one_metric", "primary with only smsp__sass_inst_executed", [](Variant& x) { x.metrics = "smsp__sass_inst_executed"; });
  add("flush_end", "primary, one flush at the end", [](Variant& x) { x.flushEach = false; });
  add("eager_patch", "primary, enableLazyPatching=0", [](Variant& x) { x.lazy = 0; });
  add("touch_first_eager_patch", "all modules loaded before enable, enableLazyPatching=0", [](Variant& x) {
    x.touchFirst = true;
    x.lazy = 0;
  });
  add("warm_before_init", "every kernel run once before cuptiProfilerInitialize (the reference probe's WARM=1)",
      [](Variant& x) { x.warmBeforeInit = true; });
  add("warm_first", "every kernel run once before enable (modules loaded, functions resolved)",
      [](Variant& x) { x.warmFirst = true; });
  add("cycle", "disable + enable after each flush", [](Variant& x) { x.cycle = true; });
  add("full_reset", "disable + unset + set config + enable after each flush", [](Variant& x) { x.fullReset = true; });
  add("callback_enable_lazy1", "enable at launch ENTER, sync/flush/disable at EXIT, lazy patching",
      [](Variant& x) { x.callbackEnable = true; });
  add("callback_enable_lazy0", "as callback_enable_lazy1 with enableLazyPatching=0", [](Variant& x) {
    x.callbackEnable = true;
    x.lazy = 0;
  });
  add("modload_setconfig", "unset + set config inside each module-loaded callback", [](Variant& x) { x.modloadConfig = true; });
  add("modload_deferred", "unset + set config at the launch after each module load",
      [](Variant& x) { x.modloadDeferred = true; });
  add("data_struct_size_40", "CUpti_SassMetrics_Data.structSize = FlushData STRUCT_SIZE (40)",
      [](Variant& x) { x.dataStructSize = 40; });
  add("data_struct_size_0", "CUpti_SassMetrics_Data zeroed (structSize 0)", [](Variant& x) { x.dataStructSize = 0; });
  add("oversize_flush", "flush buffers of 65536 records whatever GetDataProperties says", [](Variant& x) { x.oversize = true; });
  add("no_props_flush", "flush 65536 records without GetDataProperties", [](Variant& x) { x.noProps = true; });
  add("six_metrics", "six SASS metrics", [](Variant& x) {
    x.metrics =
        "smsp__sass_inst_executed,smsp__sass_thread_inst_executed,smsp__sass_thread_inst_executed_pred_on,"
        "smsp__sass_sectors_mem_global,smsp__sass_inst_executed_op_global_ld,smsp__sass_inst_executed_op_global_st";
  });
  add("granularity_sm", "per-SM instances", [](Variant& x) { x.granularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_SM; });
  add("with_activity", "kernel activity records enabled first (as fprof traces)", [](Variant& x) { x.activity = true; });
  add("with_activity_serial", "CUPTI_ACTIVITY_KIND_KERNEL records enabled first (kernels serialized)", [](Variant& x) {
    x.activity = true;
    x.activitySerial = true;
  });
  add("callback_serial", "callback_enable_lazy1 with CUPTI_ACTIVITY_KIND_KERNEL records enabled first", [](Variant& x) {
    x.callbackEnable = true;
    x.activity = true;
    x.activitySerial = true;
  });
  add("callback_serial_pred_on",
      "callback_serial counting smsp__sass_inst_executed and smsp__sass_thread_inst_executed_pred_on (the FLOP "
      "counters' per-PC form)",
      [](Variant& x) {
        x.callbackEnable = true;
        x.activity = true;
        x.activitySerial = true;
        x.metrics = "smsp__sass_inst_executed,smsp__sass_thread_inst_executed_pred_on";
      });
  add("reverse_order", "module B's kernels first", [](Variant& x) { x.reverse = true; });
  add("repeat_first", "the first kernel three times, then the others", [](Variant& x) { x.repeatFirst = true; });
  return v;
}

Variant g_v;
CUcontext g_ctx = nullptr;
std::vector<CUpti_SassMetrics_Config> g_cfg;
std::map<uint64_t, std::string> g_metricName;
bool g_configured = false, g_enabled = false, g_inWorkload = false, g_modulePending = false;
int g_launches[kNumKernels] = {};
std::vector<std::vector<char>> g_cubins;
std::string g_ptx;
CUmodule g_jitModule = nullptr;
CUfunction g_jit = nullptr;
size_t g_activityRecords = 0;
bool g_dumpPcs = false;
int g_flushes = 0, g_exactFlushes = 0;
std::map<std::string, bool> g_functionExact;  // kernel -> exact in some flush

int kidOf(const std::string& name) {
  for (int k = 0; k < kNumKernels; ++k)
    if (name.find(kKernelNames[k]) != std::string::npos) return k;
  return -1;
}

CUptiResult setConfig() {
  CUpti_SassMetricsSetConfig_Params p{CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE};
  p.numOfMetricConfig = g_cfg.size();
  p.pConfigs = g_cfg.data();
  p.deviceIndex = 0;
  CUptiResult r = CUPTI_REC(cuptiSassMetricsSetConfig(&p));
  if (r == CUPTI_SUCCESS) g_configured = true;
  return r;
}

CUptiResult unsetConfig() {
  CUpti_SassMetricsUnsetConfig_Params p{CUpti_SassMetricsUnsetConfig_Params_STRUCT_SIZE};
  p.deviceIndex = 0;
  CUptiResult r = CUPTI_REC(cuptiSassMetricsUnsetConfig(&p));
  if (r == CUPTI_SUCCESS) g_configured = false;
  return r;
}

CUptiResult enable(CUcontext ctx) {
  CUpti_SassMetricsEnable_Params p{CUpti_SassMetricsEnable_Params_STRUCT_SIZE};
  p.ctx = ctx;
  p.enableLazyPatching = static_cast<uint8_t>(g_v.lazy);
  CUptiResult r = CUPTI_REC(cuptiSassMetricsEnable(&p));
  if (r == CUPTI_SUCCESS) g_enabled = true;
  return r;
}

size_t disable(CUcontext ctx) {
  CUpti_SassMetricsDisable_Params p{CUpti_SassMetricsDisable_Params_STRUCT_SIZE};
  p.ctx = ctx;
  if (CUPTI_REC(cuptiSassMetricsDisable(&p)) == CUPTI_SUCCESS) g_enabled = false;
  return p.numOfDroppedRecords;
}

struct FunctionCounts {
  std::map<uint32_t, unsigned long long> inst, thread;  // pc offset -> value
  uint32_t crc = 0;
  std::string name;
};

// Reads the gathered records; checks each function against warps launched since the last flush.
void flush(CUcontext ctx, const std::string& at) {
  size_t records = 0, instances = 0;
  if (!g_v.noProps) {
    CUpti_SassMetricsGetDataProperties_Params dp{CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE};
    dp.ctx = ctx;
    CUPTI_REC(cuptiSassMetricsGetDataProperties(&dp));
    records = dp.numOfPatchedInstructionRecords;
    instances = dp.numOfInstances;
  }
  size_t askRecords = records, askInstances = instances;
  if (g_v.oversize || g_v.noProps) {
    askRecords = std::max<size_t>(records * 64, 65536);
    if (askInstances == 0) askInstances = 1;
  }
  std::map<std::string, FunctionCounts> funcs;
  std::string flushResult = "skipped (no records)";
  size_t filled = 0;
  if (askRecords && askInstances) {
    std::vector<CUpti_SassMetrics_Data> data(askRecords);
    std::memset(data.data(), 0, data.size() * sizeof(CUpti_SassMetrics_Data));
    std::vector<CUpti_SassMetrics_InstanceValue> values(askRecords * askInstances);
    for (size_t i = 0; i < data.size(); ++i) {
      data[i].structSize = static_cast<size_t>(g_v.dataStructSize);
      data[i].pInstanceValues = &values[i * askInstances];
    }
    CUpti_SassMetricsFlushData_Params fd{CUpti_SassMetricsFlushData_Params_STRUCT_SIZE};
    fd.ctx = ctx;
    fd.numOfPatchedInstructionRecords = askRecords;
    fd.numOfInstances = askInstances;
    fd.pMetricsData = data.data();
    CUptiResult r = CUPTI_REC(cuptiSassMetricsFlushData(&fd));
    flushResult = r == CUPTI_SUCCESS ? "OK" : probe::cuptiText(r);
    for (auto& d : data) {
      if (!d.functionName) continue;
      ++filled;
      FunctionCounts& f = funcs[d.functionName];  // (NVIDIA's sample frees functionName; a probe may leak)
      f.name = d.functionName;
      f.crc = d.cubinCrc;
      for (size_t k = 0; k < askInstances; ++k) {
        const auto& iv = d.pInstanceValues[k];
        const std::string& m = g_metricName[iv.metricId];
        if (m == "smsp__sass_inst_executed") f.inst[d.pcOffset] += iv.value;
        if (m == "smsp__sass_thread_inst_executed" || m == "smsp__sass_thread_inst_executed_pred_on")
          f.thread[d.pcOffset] += iv.value;
      }
    }
  }
  ++g_flushes;
  std::string funcsJson = "[";
  bool allExact = !funcs.empty();
  std::string seen;
  for (auto& [name, f] : funcs) {
    const int kid = kidOf(name);
    const long long launches = kid >= 0 ? g_launches[kid] : 0;
    const unsigned long long expect = static_cast<unsigned long long>(sass_probe::kWarpsPerLaunch * launches);
    unsigned long long sum = 0, tsum = 0, mn = ~0ull, mx = 0;
    size_t zero = 0, mismatched = 0, threadMismatched = 0;
    for (auto& [pc, v] : f.inst) {
      sum += v;
      if (v == 0) {
        ++zero;
        continue;
      }
      mn = std::min(mn, v);
      mx = std::max(mx, v);
      if (v != expect) ++mismatched;
      auto t = f.thread.find(pc);
      if (t != f.thread.end() && t->second != 32 * v) ++threadMismatched;
    }
    for (auto& [pc, v] : f.thread) tsum += v;
    // Every PC of these straight-line kernels runs: a zero is a miss, not an exact count (before
    // 2026-11-27 a function whose every PC read 0 passed as exact).
    const bool exact = !f.inst.empty() && mismatched == 0 && zero == 0 && launches > 0 &&
                       (f.thread.empty() || threadMismatched == 0);
    allExact = allExact && exact;
    if (exact) g_functionExact[kid >= 0 ? kKernelNames[kid] : name] = true;
    seen += (seen.empty() ? "" : " ") + std::string(kid >= 0 ? kKernelNames[kid] : name.c_str());
    std::printf("    %-40s crc %10u pcs %3zu (zero %zu) inst %llu thread %llu per-pc [%llu..%llu] expect %llu -> %s\n",
                name.c_str(), f.crc, f.inst.size(), zero, sum, tsum, mn == ~0ull ? 0 : mn, mx, expect,
                exact ? "EXACT" : "not exact");
    funcsJson += std::string(funcsJson.size() > 1 ? "," : "") +
                 Json()
                     .str("function", name)
                     .str("kernel", kid >= 0 ? kKernelNames[kid] : "?")
                     .integer("crc", f.crc)
                     .integer("pcs", static_cast<long long>(f.inst.size()))
                     .integer("zero_pcs", static_cast<long long>(zero))
                     .num("inst_sum", static_cast<double>(sum))
                     .num("thread_sum", static_cast<double>(tsum))
                     .num("expected_per_pc", static_cast<double>(expect))
                     .integer("pcs_off", static_cast<long long>(mismatched))
                     .boolean("exact", exact)
                     .text();
    if (g_dumpPcs)
      for (auto& [pc, v] : f.inst)
        std::printf("@pc %s %s %u %llu %llu %lld\n", g_v.name.c_str(), name.c_str(), pc, v,
                    f.thread.count(pc) ? f.thread[pc] : 0ull, launches);
  }
  funcsJson += "]";
  if (allExact) ++g_exactFlushes;
  std::string launched;
  for (int k = 0; k < kNumKernels; ++k)
    if (g_launches[k]) launched += (launched.empty() ? "" : " ") + std::string(kKernelNames[k]) + "x" + std::to_string(g_launches[k]);
  std::printf("  [%s] %s: properties %zu records x %zu instances, flush %s, %zu filled; launched {%s} got {%s}\n",
              g_v.name.c_str(), at.c_str(), records, instances, flushResult.c_str(), filled, launched.c_str(),
              seen.c_str());
  Json()
      .str("table", "q3")
      .str("variant", g_v.name)
      .str("at", at)
      .integer("records", static_cast<long long>(records))
      .integer("instances", static_cast<long long>(instances))
      .integer("filled", static_cast<long long>(filled))
      .str("flush", flushResult)
      .str("launched", launched)
      .str("got", seen)
      .raw("functions", funcsJson)
      .emit();
  for (int& l : g_launches) l = 0;
}

void reconfigure(CUcontext ctx, const char* where) {
  const bool wasEnabled = g_enabled;
  if (wasEnabled) disable(ctx);
  if (g_configured) unsetConfig();
  setConfig();
  if (wasEnabled) enable(ctx);
  std::printf("  reconfigured %s: [%s]\n", where, probe::calls().take().c_str());
}

bool isLaunchApi(const char* name) {
  return name && (std::strncmp(name, "cuLaunch", 8) == 0 || std::strncmp(name, "cuGraphLaunch", 13) == 0);
}

void CUPTIAPI onCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
    const auto* rd = static_cast<const CUpti_ResourceData*>(data);
    const auto* md = static_cast<const CUpti_ModuleResourceData*>(rd->resourceDescriptor);
    if (md && md->pCubin && md->cubinSize) g_cubins.emplace_back(md->pCubin, md->pCubin + md->cubinSize);
    std::printf("  module loaded: id %u, %zu bytes\n", md ? md->moduleId : 0, md ? md->cubinSize : 0);
    if (g_v.modloadConfig && g_configured) reconfigure(rd->context, "in the module-loaded callback");
    if (g_v.modloadDeferred && g_configured) g_modulePending = true;
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (!g_inWorkload || !isLaunchApi(cb->functionName)) return;
  if (cb->callbackSite == CUPTI_API_ENTER) {
    if (g_modulePending) {
      g_modulePending = false;
      reconfigure(cb->context, "at the launch after a module load");
    }
    if (g_v.callbackEnable) {
      cuCtxSynchronize();
      enable(cb->context);
    }
  } else if (g_v.callbackEnable) {
    cuCtxSynchronize();
    const int kid = kidOf(cb->symbolName ? cb->symbolName : "");
    if (kid >= 0) ++g_launches[kid];
    flush(cb->context, std::string("in EXIT of ") + (kid >= 0 ? kKernelNames[kid] : "?"));
    disable(cb->context);
  }
}

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* maxRecords) {
  *size = 1 << 20;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *maxRecords = 0;
}

void CUPTIAPI bufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) ++g_activityRecords;
  free(buffer);
}

float* g_f;
__half2* g_h2;
double* g_d;
__half* g_h;

void loadJit() {
  if (g_jit) return;
  CUresult r = cuModuleLoadData(&g_jitModule, g_ptx.c_str());
  if (r == CUDA_SUCCESS) r = cuModuleGetFunction(&g_jit, g_jitModule, "jit_fadd16");
  if (r != CUDA_SUCCESS) std::printf("  JIT module load failed: %d\n", static_cast<int>(r));
}

void launchKernel(int kid) {
  switch (kid) {
    case kFfma: sass_probe::launchFfma64(g_f, nullptr); break;
    case kHfma2: sass_probe::launchHfma2x64(g_h2, nullptr); break;
    case kDfma: sass_probe::launchDfma32(g_d, nullptr); break;
    case kHfma: sass_probe::launchHfma64(g_h, nullptr); break;
    case kJit: {
      loadJit();
      float b = 0.25f;
      void* args[] = {&g_f, &b};
      cuLaunchKernel(g_jit, sass_probe::kGrid, 1, 1, sass_probe::kBlock, 1, 1, 0, nullptr, args, nullptr);
      break;
    }
    default: break;
  }
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string exeDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string want = argc > 1 ? argv[1] : "list";
  bool found = false;
  for (const Variant& v : allVariants()) {
    if (want == "list") std::printf("%-26s %s\n", v.name.c_str(), v.what.c_str());
    if (v.name == want) {
      g_v = v;
      found = true;
    }
  }
  if (!found) return want == "list" ? 0 : 2;
  g_dumpPcs = std::getenv("DUMP_PCS") != nullptr;
  g_ptx = readFile(probe::envOr("SASS_JIT_PTX", (exeDir() + "/sass_jit.ptx").c_str()));
  const std::string loading = probe::envOr("CUDA_MODULE_LOADING", "(default: LAZY)");
  std::printf("== sass_probe %s: %s; CUDA_MODULE_LOADING=%s\n", g_v.name.c_str(), g_v.what.c_str(), loading.c_str());

  if (!g_v.noSubscribe) {
    CUpti_SubscriberHandle sub;
    CUPTI_REC(cuptiSubscribe(&sub, reinterpret_cast<CUpti_CallbackFunc>(onCallback), nullptr));
    CUPTI_REC(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED));
    CUPTI_REC(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API));
  }
  if (g_v.activity) {
    CUPTI_REC(cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted));
    CUPTI_REC(cuptiActivityEnable(g_v.activitySerial ? CUPTI_ACTIVITY_KIND_KERNEL : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  }
  const size_t n = size_t(sass_probe::kGrid) * sass_probe::kBlock;
  auto allocate = [n] {
    CUDA_OK(cudaMalloc(&g_f, n * 4));
    CUDA_OK(cudaMalloc(&g_h2, n * 4));
    CUDA_OK(cudaMalloc(&g_d, n * 8));
    CUDA_OK(cudaMalloc(&g_h, n * 2));
  };
  std::vector<double> warmMs(kNumKernels, -1.0), patchedMs;
  auto warm = [&warmMs] {  // each kernel twice, the second launch timed: unpatched times
    for (int k = 0; k < kNumKernels; ++k) {
      launchKernel(k);
      CUDA_OK(cudaDeviceSynchronize());
      const double t = probe::nowMs();
      launchKernel(k);
      CUDA_OK(cudaDeviceSynchronize());
      warmMs[k] = probe::nowMs() - t;
    }
  };
  CUDA_OK(cudaSetDevice(0));
  if (!g_v.ownCtx) {
    CUDA_OK(cudaFree(0));
    cuCtxGetCurrent(&g_ctx);
    allocate();
    if (g_v.warmBeforeInit) warm();
  }
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  CUPTI_REC(cuptiProfilerInitialize(&init));
  CUpti_Profiler_DeviceSupported_Params sup{CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE};
  sup.cuDevice = 0;
  sup.api = CUPTI_PROFILER_SASS_METRICS;
  CUPTI_REC(cuptiProfilerDeviceSupported(&sup));
  if (g_v.ownCtx) {
    CUdevice dev = 0;
    cuDeviceGet(&dev, 0);
    if (cuCtxCreate(&g_ctx, nullptr, 0, dev) != CUDA_SUCCESS) std::printf("  cuCtxCreate failed\n");
    allocate();
  }
  CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = 0;
  CUPTI_REC(cuptiDeviceGetChipName(&chip));
  if (std::getenv("LIST_METRICS")) {
    CUpti_SassMetrics_GetNumOfMetrics_Params nm{CUpti_SassMetrics_GetNumOfMetrics_Params_STRUCT_SIZE};
    nm.pChipName = chip.pChipName;
    CUPTI_REC(cuptiSassMetricsGetNumOfMetrics(&nm));
    std::vector<CUpti_SassMetrics_MetricDetails> list(nm.numOfMetrics);
    CUpti_SassMetrics_GetMetrics_Params gm{CUpti_SassMetrics_GetMetrics_Params_STRUCT_SIZE};
    gm.pChipName = chip.pChipName;
    gm.numOfMetrics = list.size();
    gm.pMetricsList = list.data();
    CUPTI_REC(cuptiSassMetricsGetMetrics(&gm));
    std::string names;
    for (auto& m : list) names += std::string(names.empty() ? "" : " ") + (m.pMetricName ? m.pMetricName : "?");
    std::printf("  %zu SASS metrics on %s: %s\n", list.size(), chip.pChipName, names.c_str());
  }
  for (size_t p = 0; p <= g_v.metrics.size();) {
    size_t q = g_v.metrics.find(',', p);
    if (q == std::string::npos) q = g_v.metrics.size();
    const std::string m = g_v.metrics.substr(p, q - p);
    p = q + 1;
    CUpti_SassMetrics_GetProperties_Params pp{CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE};
    pp.pChipName = chip.pChipName;
    pp.pMetricName = m.c_str();
    if (CUPTI_REC(cuptiSassMetricsGetProperties(&pp)) != CUPTI_SUCCESS) continue;
    g_cfg.push_back({pp.metric.metricId, g_v.granularity});
    g_metricName[pp.metric.metricId] = m;
  }
  int order[8], count = 0;
  if (g_v.reverse) {
    for (int k : {kHfma, kDfma, kJit, kHfma2, kFfma, kHfma}) order[count++] = k;
  } else if (g_v.repeatFirst) {
    for (int k : {kFfma, kFfma, kFfma, kHfma2, kDfma, kHfma, kJit}) order[count++] = k;
  } else {
    for (int k : {kFfma, kHfma2, kDfma, kHfma, kJit, kFfma}) order[count++] = k;
  }
  if (g_v.warmFirst) warm();
  if (g_v.touchFirst) {
    cudaFuncAttributes a;
    for (const void* f : {sass_probe::ffma64Symbol(), sass_probe::hfma2x64Symbol(), sass_probe::dfma32Symbol(),
                          sass_probe::hfma64Symbol()})
      cudaFuncGetAttributes(&a, f);
    loadJit();
  }
  setConfig();
  if (!g_v.callbackEnable) enable(g_ctx);
  std::printf("  set up: chip %s, CUPTI %u, driver %d, SASS metrics supported %d, %zu metrics: [%s]\n",
              chip.pChipName, probe::cuptiVersion(), probe::driverVersion(), static_cast<int>(sup.isSupported),
              g_cfg.size(), probe::calls().take().c_str());
  g_inWorkload = true;
  for (int i = 0; i < count; ++i) {
    const int k = order[i];
    void* tmp = nullptr;
    std::vector<char> host(1 << 16, 1);
    if (g_v.sampleIo) {
      cudaMalloc(&tmp, host.size());
      cudaMemcpyAsync(tmp, host.data(), host.size(), cudaMemcpyHostToDevice);
    }
    const double t = probe::nowMs();
    launchKernel(k);
    float probeValue[4];
    cudaMemcpy(probeValue, g_f, sizeof probeValue, cudaMemcpyDeviceToHost);
    patchedMs.push_back(probe::nowMs() - t);
    if (g_v.sampleIo) cudaFree(tmp);
    if (!g_v.callbackEnable) {
      ++g_launches[k];
      if (g_v.flushEach) {
        flush(g_ctx, std::string("after ") + kKernelNames[k]);
        if (g_v.cycle) {
          disable(g_ctx);
          enable(g_ctx);
        }
        if (g_v.fullReset) reconfigure(g_ctx, "after the flush");
      }
    }
  }
  g_inWorkload = false;
  size_t dropped = 0;
  if (!g_v.callbackEnable) {
    flush(g_ctx, "end");
    dropped = disable(g_ctx);
  }
  unsetConfig();
  if (g_v.activity) CUPTI_REC(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  const cudaError_t err = cudaGetLastError();
  // CRCs of the modules loaded, outside any callback.
  std::string crcs;
  for (const auto& c : g_cubins) {
    CUpti_GetCubinCrcParams cp{CUpti_GetCubinCrcParamsSize};
    cp.cubinSize = c.size();
    cp.cubin = c.data();
    if (cuptiGetCubinCrc(&cp) == CUPTI_SUCCESS)
      crcs += (crcs.empty() ? "" : " ") + std::to_string(cp.cubinCrc) + ":" + std::to_string(c.size());
  }
  std::string exact;
  for (auto& [k, e] : g_functionExact) exact += (exact.empty() ? "" : " ") + k;
  std::string ms;
  for (double m : patchedMs) ms += (ms.empty() ? "" : ",") + std::to_string(m);
  std::string warmText;
  for (double m : warmMs) warmText += (warmText.empty() ? "" : ",") + std::to_string(m);
  std::printf("  done: %d flushes, %d all-exact; functions exact somewhere: {%s}; dropped %zu; activity records %zu; "
              "CUDA %s; modules (crc:bytes) %s; launch ms [%s] unpatched [%s]; cupti [%s]\n",
              g_flushes, g_exactFlushes, exact.c_str(), dropped, g_activityRecords, cudaGetErrorName(err), crcs.c_str(),
              ms.c_str(), warmText.c_str(), probe::calls().take().c_str());
  Json()
      .str("table", "q3run")
      .str("variant", g_v.name)
      .str("what", g_v.what)
      .str("module_loading", loading)
      .integer("cupti", probe::cuptiVersion())
      .integer("supported", static_cast<long long>(sup.isSupported))
      .integer("flushes", g_flushes)
      .integer("exact_flushes", g_exactFlushes)
      .str("exact_functions", exact)
      .integer("exact_function_count", static_cast<long long>(g_functionExact.size()))
      .integer("dropped", static_cast<long long>(dropped))
      .integer("activity_records", static_cast<long long>(g_activityRecords))
      .str("cuda", cudaGetErrorName(err))
      .str("modules", crcs)
      .raw("launch_ms", "[" + ms + "]")
      .raw("unpatched_ms", "[" + warmText + "]")
      .emit();
  return 0;
}
