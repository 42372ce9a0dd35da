// Issue 15's open route, answered on the GPU (bench/RESULTS.md): can one execution of the program
// give both the range profiler's hardware counters (application replay: the program's own run,
// one pass) and the SASS Metrics API's per-PC instruction counts (binary patching, no replay)? And
// do the patched kernels move the hardware counters? Two kernels of known work over 64 MiB arrays
// (saxpy, a copy), each counted twice in each phase:
//  A. hardware counters alone;
//  B. hardware counters with the SASS Metrics API enabled (lazy patching), its records flushed
//     after every kernel: records for every function? instruction sums as analytic?
//  C. hardware counters again after the SASS Metrics API is disabled.
// Kernel activity records are enabled throughout (fprof traces them; the SASS probe of
// bench/probes needed them for records beyond the first function under CUPTI 13.0).
// NO_WARM=1: no kernel runs before the SASS Metrics API is enabled, activity enabled first.
// EAGER=1: patching at enable time instead of at each function's first launch.
// SUBSCRIBE=1: a CUPTI callback subscriber (driver API, module loads) first.
// SASS_ONLY=1: no range profiler at all (the profiler initialized, the SASS Metrics API enabled,
// each kernel launched twice and flushed): do the counts come without it?
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti_activity.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "fprof/core/metric_sets.h"
#include "cuda_check.h"
#include "metrics_kernels.cuh"
#include "range_profiler.h"
#include "sass_metrics_probe.h"

using namespace fprof;
using namespace fprof::gpu_test;

namespace {

constexpr int kN = 1 << 24;
constexpr int kBlocks = (kN + 255) / 256;
float *x, *y, *z;
CUcontext ctx;
collector::RangeProfiler profiler;
std::vector<std::string> metrics;
SassMetricNames sass_metric_name;

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}
void CUPTIAPI bufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t) { std::free(buffer); }

void CUPTIAPI onCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

void launch(int which) {
  if (which == 0) saxpy<<<kBlocks, 256>>>(kN, 2.f, x, y);
  if (which == 1) copyKernel<<<kBlocks, 256>>>(kN, x, z);
}

double metric(const std::vector<double>& row, const char* name) {
  for (size_t m = 0; m < metrics.size(); ++m)
    if (metrics[m] == name) return row[m];
  return -1;
}

// The kernel counted alone by the range profiler (auto range, the program's own run).
void counted(const char* phase, int which) {
  const std::vector<std::vector<double>> rows = rangesOfOneLaunch(profiler, [which] { launch(which); });
  for (const auto& row : rows) {
    std::printf("  %s %-5s dram read %11.0f write %11.0f  l2 %11.0f  l1 %11.0f  time %8.0f ns\n", phase,
                which == 0 ? "saxpy" : "copy", metric(row, "dram__bytes_read.sum"), metric(row, "dram__bytes_write.sum"),
                metric(row, "lts__t_bytes.sum"), metric(row, "l1tex__t_bytes.sum"), metric(row, "gpu__time_duration.sum"));
  }
  if (rows.size() != 1) std::printf("  %s: %zu ranges\n", phase, rows.size());
}

// The SASS Metrics API's records since the last flush: instruction sums per function.
void flushSass() {
  const SassFlush f = flushSassRecords(ctx, sass_metric_name);
  if (f.records.empty()) {
    std::printf("  sass: no records (%s, %zu records x %zu instances)\n", cuptiText(f.result), f.patched_records,
                f.instances);
    return;
  }
  if (std::getenv("SASS_DEBUG") != nullptr) {
    std::printf("  sass: %zu instances; first record pc %u:", f.instances, f.records[0].pc);
    for (size_t k = 0; k < f.instances; ++k) {
      std::printf(" [%s value %llu]", f.records[k].metric.c_str(), static_cast<unsigned long long>(f.records[k].value));
    }
    std::printf("\n");
  }
  std::map<std::string, std::pair<unsigned long long, unsigned long long>> sums;  // inst, thread inst
  for (const SassRecord& r : f.records) {
    if (r.function.empty()) continue;
    if (r.metric == "smsp__sass_inst_executed") sums[r.function].first += r.value;
    if (r.metric == "smsp__sass_thread_inst_executed") sums[r.function].second += r.value;
  }
  std::printf("  sass: flush %s, %zu records\n", cuptiText(f.result), f.patched_records);
  for (const auto& [name, s] : sums) {
    std::printf("    %-50s warp inst %12llu  thread inst %14llu\n", name.c_str(), s.first, s.second);
  }
}

bool enableSass(const std::string& chip) {
  if (!configureSassMetrics(chip, {"smsp__sass_inst_executed", "smsp__sass_thread_inst_executed"}, sass_metric_name)) {
    return false;
  }
  CUpti_SassMetricsEnable_Params en{CUpti_SassMetricsEnable_Params_STRUCT_SIZE};
  en.ctx = ctx;
  en.enableLazyPatching = std::getenv("EAGER") != nullptr ? 0 : 1;
  if (CUptiResult r = cuptiSassMetricsEnable(&en); r != CUPTI_SUCCESS) {
    std::printf("sass: enable: %s\n", cuptiText(r));
    return false;
  }
  return true;
}

void disableSass() {
  CUpti_SassMetricsDisable_Params dd{CUpti_SassMetricsDisable_Params_STRUCT_SIZE};
  dd.ctx = ctx;
  std::printf("sass: disable %s\n", cuptiText(cuptiSassMetricsDisable(&dd)));
}

int sassOnly() {
  CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  std::printf("sass only: profiler initialize %s\n", cuptiText(cuptiProfilerInitialize(&init)));
  CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = 0;
  cuptiDeviceGetChipName(&chip);
  if (!enableSass(chip.pChipName)) return 1;
  for (int round = 0; round < 2; ++round) {
    for (int k = 0; k < 2; ++k) {
      launch(k);
      CK(cudaDeviceSynchronize());
      std::printf("  %s launched\n", k == 0 ? "saxpy" : "copy");
      flushSass();
    }
  }
  disableSass();
  std::printf("done\n");
  return 0;
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  CK(cudaSetDevice(0));
  CK(cudaFree(0));
  cuCtxGetCurrent(&ctx);
  for (float** p : {&x, &y, &z}) CK(cudaMalloc(p, size_t(kN) * 4));
  for (float* p : {x, y, z}) CK(cudaMemset(p, 0, size_t(kN) * 4));
  // NO_WARM=1: activity enabled first and no kernel run before the SASS Metrics API is enabled
  // (bench/probes' with_activity variant, which got exact counts, ran no kernel first).
  if (std::getenv("SUBSCRIBE") != nullptr) {  // as bench/probes' sass_probe and fprof's collector do
    CUpti_SubscriberHandle sub;
    cuptiSubscribe(&sub, reinterpret_cast<CUpti_CallbackFunc>(onCallback), nullptr);
    cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
    cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
  }
  if (std::getenv("NO_WARM") == nullptr) {
    launch(0);
    launch(1);
    CK(cudaDeviceSynchronize());
  }
  cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);

  if (std::getenv("SASS_ONLY") != nullptr) return sassOnly();
  if (!setUpRooflineHardwareCounters(profiler, ctx, metrics)) return 1;
  std::printf("chip %s, %zu hardware metrics, %zu pass(es); analytic: saxpy %d FFMA threads, each kernel %d warps\n",
              profiler.chip().c_str(), metrics.size(), profiler.passes(), kN, kBlocks * 8);
  for (int round = 0; round < 2; ++round) {
    for (int k = 0; k < 2; ++k) counted("A", k);
  }
  if (!enableSass(profiler.chip())) return 1;
  std::printf("sass: enabled (lazy patching)\n");
  for (int round = 0; round < 2; ++round) {
    for (int k = 0; k < 2; ++k) {
      counted("B", k);
      flushSass();
    }
  }
  disableSass();
  for (int round = 0; round < 2; ++round) {
    for (int k = 0; k < 2; ++k) counted("C", k);
  }
  profiler.teardown();
  cuptiActivityFlushAll(1);
  std::printf("done\n");
  return 0;
}
