// Issue 15's one-run route, asked of the GPU before it is built (bench/RESULTS.md, session 17):
// can a profiled launch get its SASS counts in the program's own run, from a duplicate of the
// launch counted by SASS patching whose memory effects the CUPTI Checkpoint API undoes, and then
// its hardware counters from the program's own launch? Per profiled launch:
//   save a checkpoint -> the duplicate, patched (SASS Metrics API enabled around it) -> restore ->
//   the L2 swept (read twice its size) -> the program's launch, counted by the range profiler
//   (auto range, application replay).
// Two kernels of known work over 64 MiB arrays: saxpy in place (y = 2x + y: a second application
// shows), and a copy. Answers, per kernel and round: the steps' times; the duplicate's SASS
// counts (every warp the same straight-line code: whole warps, the same each round); whether y holds
// exactly one application after the program's launch; and the hardware counters against the same
// launch counted without the checkpoint and the duplicate (phase A).
// Phase C asks the other half of the route: the range profiler started once (auto range) while
// unprofiled launches and the sweep run between profiled ones, each kernel its own range, instead
// of a start (17.8 ms on an H100) and a stop (6.4 ms) around each profiled launch: the ranges'
// count and names, the profiled kernel's counters against phase A, the cost a launch while started.
//   HELD_MB=N         device memory the program holds besides the three arrays (memset once)
//   PINNED_MB=N       pinned host memory it holds (cudaMallocHost), which a checkpoint saves too
//   ROUNDS=N          rounds of the two kernels in each phase (default 3)
// Prints one line a step; exit 0 when every checked value held.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti_checkpoint.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>
#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cuda_check.h"
#include "fprof/core/metric_sets.h"
#include "metrics_kernels.cuh"
#include "range_profiler.h"
#include "sass_metrics_probe.h"

using namespace fprof;
using namespace fprof::gpu_test;
using NV::Cupti::Checkpoint::CUpti_Checkpoint;

namespace {

constexpr int kN = 1 << 24;
constexpr int kBlocks = (kN + 255) / 256;
float *x, *y, *z, *sweep_buffer;
size_t sweep_floats = 0;
CUcontext ctx;
collector::RangeProfiler profiler;
std::vector<std::string> metrics;
SassMetricNames sass_metric_name;
int failures = 0;

// libcheckpoint.so is loaded at run time, so a machine without it says so in one line.
using CheckpointCall = CUptiResult (*)(CUpti_Checkpoint*);
CheckpointCall checkpoint_save = nullptr, checkpoint_restore = nullptr, checkpoint_free = nullptr;

bool loadCheckpointApi() {
  void* lib = dlopen("libcheckpoint.so", RTLD_NOW);
  if (lib == nullptr) lib = dlopen(FPROF_CHECKPOINT_LIBRARY, RTLD_NOW);
  if (lib == nullptr) {
    std::printf("checkpoint: libcheckpoint.so not loaded (%s)\n", dlerror());
    return false;
  }
  checkpoint_save = reinterpret_cast<CheckpointCall>(dlsym(lib, "cuptiCheckpointSave"));
  checkpoint_restore = reinterpret_cast<CheckpointCall>(dlsym(lib, "cuptiCheckpointRestore"));
  checkpoint_free = reinterpret_cast<CheckpointCall>(dlsym(lib, "cuptiCheckpointFree"));
  return checkpoint_save && checkpoint_restore && checkpoint_free;
}

double msSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

__global__ void readSweep(const float4* __restrict__ p, size_t n, float* sink) {
  float acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float4 v = __ldcg(p + i);
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 1.2345f) *sink = acc;
}

// Reads twice the L2's size, so the lines a restore left dirty are written back before the count.
void sweepL2() {
  readSweep<<<1024, 256>>>(reinterpret_cast<const float4*>(sweep_buffer), sweep_floats / 4, sweep_buffer);
  CK(cudaDeviceSynchronize());
}

void launch(int which) {
  if (which == 0) saxpy<<<kBlocks, 256>>>(kN, 2.f, x, y);
  if (which == 1) copyKernel<<<kBlocks, 256>>>(kN, x, z);
}
const char* nameOf(int which) { return which == 0 ? "saxpy" : "copy"; }

double metric(const std::vector<double>& row, const char* name) {
  for (size_t m = 0; m < metrics.size(); ++m)
    if (metrics[m] == name) return row[m];
  return -1;
}

// The program's launch, counted alone (auto range): its hardware counters.
std::vector<double> counted(int which) {
  const std::vector<std::vector<double>> rows = rangesOfOneLaunch(profiler, [which] { launch(which); });
  if (rows.size() != 1) {
    std::printf("  %zu ranges for one launch\n", rows.size());
    ++failures;
    return {};
  }
  return rows[0];
}

bool configureSass() {
  return configureSassMetrics(profiler.chip(), {"smsp__sass_inst_executed", "smsp__sass_thread_inst_executed"},
                              sass_metric_name);
}

struct SassSums {
  unsigned long long warp_inst = 0, thread_inst = 0;
};

// The SASS Metrics API's records since the last flush, summed over the kernel's PCs.
SassSums flushSass() {
  SassSums sums;
  for (const SassRecord& r : flushSassRecords(ctx, sass_metric_name).records) {
    if (r.metric == "smsp__sass_inst_executed") sums.warp_inst += r.value;
    if (r.metric == "smsp__sass_thread_inst_executed") sums.thread_inst += r.value;
  }
  return sums;
}

// The duplicate launch, counted by SASS patching (the API enabled around it only).
SassSums patchedDuplicate(int which) {
  CUpti_SassMetricsEnable_Params en{CUpti_SassMetricsEnable_Params_STRUCT_SIZE};
  en.ctx = ctx;
  en.enableLazyPatching = 1;
  if (CUptiResult r = cuptiSassMetricsEnable(&en); r != CUPTI_SUCCESS) {
    std::printf("  sass enable: %s\n", cuptiText(r));
    ++failures;
    return {};
  }
  launch(which);
  CK(cudaDeviceSynchronize());
  const SassSums sums = flushSass();
  CUpti_SassMetricsDisable_Params dd{CUpti_SassMetricsDisable_Params_STRUCT_SIZE};
  dd.ctx = ctx;
  if (CUptiResult r = cuptiSassMetricsDisable(&dd); r != CUPTI_SUCCESS) std::printf("  sass disable: %s\n", cuptiText(r));
  return sums;
}

std::vector<float> copyOut(const float* p) {
  std::vector<float> h(kN);
  CK(cudaMemcpy(h.data(), p, size_t(kN) * 4, cudaMemcpyDeviceToHost));
  return h;
}

// y after the program's launch against one application of saxpy to y before it (x holds 1).
void checkOneApplication(const std::vector<float>& before) {
  const std::vector<float> after = copyOut(y);
  size_t wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += after[i] != std::fmaf(2.f, 1.f, before[i]);
  std::printf("  y after the program's launch: %s (%zu of %d elements off)\n",
              wrong == 0 ? "one application, exact" : "NOT one application", wrong, kN);
  failures += wrong != 0;
}

void printCounters(const char* phase, int which, const std::vector<double>& row) {
  if (row.empty()) return;
  std::printf("  %s %-5s dram read %11.0f write %11.0f  l2 %11.0f  time %8.0f ns\n", phase, nameOf(which),
              metric(row, "dram__bytes_read.sum"), metric(row, "dram__bytes_write.sum"), metric(row, "lts__t_bytes.sum"),
              metric(row, "gpu__time_duration.sum"));
}

// Within 2% of the baseline, or both under 4 KB (the counter's granularity on small counts).
void compareWithBaseline(int which, const std::vector<double>& row, const std::vector<double>& base) {
  if (row.empty() || base.empty()) return;
  for (const char* m : {"dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum"}) {
    const double a = metric(row, m), b = metric(base, m);
    const bool ok = std::fabs(a - b) <= 0.02 * b || std::fabs(a - b) < 4096;
    if (!ok) {
      std::printf("  %s %s: %.0f against the baseline's %.0f\n", nameOf(which), m, a, b);
      ++failures;
    }
  }
}

// Every warp of both kernels runs the same straight-line code on full warps (kN is a multiple of
// the block), so exact counts are a whole number of instructions a warp, 32 threads each, and
// the same in every round.
void checkSass(int which, const SassSums& s) {
  static std::map<int, unsigned long long> first_round;
  constexpr unsigned long long kWarps = kN / 32;
  const bool whole = s.warp_inst > 0 && s.warp_inst % kWarps == 0 && s.thread_inst == 32 * s.warp_inst;
  const bool repeat = first_round.emplace(which, s.warp_inst).first->second == s.warp_inst;
  std::printf("  duplicate %-5s sass: warp inst %llu (%llu a warp), thread inst %llu: %s, %s\n", nameOf(which),
              s.warp_inst, s.warp_inst / kWarps, s.thread_inst, whole ? "whole warps" : "NOT whole warps",
              repeat ? "as the first round" : "NOT as the first round");
  failures += !whole || !repeat;
}

void allocateHeld() {
  const size_t held_mb = std::getenv("HELD_MB") ? std::strtoull(std::getenv("HELD_MB"), nullptr, 10) : 0;
  const size_t pinned_mb = std::getenv("PINNED_MB") ? std::strtoull(std::getenv("PINNED_MB"), nullptr, 10) : 0;
  if (held_mb > 0) {
    void* held = nullptr;
    CK(cudaMalloc(&held, held_mb << 20));
    CK(cudaMemset(held, 1, held_mb << 20));
  }
  if (pinned_mb > 0) {
    void* pinned = nullptr;
    CK(cudaMallocHost(&pinned, pinned_mb << 20));
    std::memset(pinned, 1, pinned_mb << 20);
  }
  std::printf("held: %zu MB device besides 3 x 64 MB, %zu MB pinned host\n", held_mb, pinned_mb);
}

// Three unprofiled copies, the sweep and a profiled saxpy a round, with the profiler started once.
void startedOnce(int rounds, const std::vector<double>& saxpy_baseline) {
  constexpr int kUnprofiled = 3;
  auto sequence = [&] {
    for (int round = 0; round < rounds; ++round) {
      for (int u = 0; u < kUnprofiled; ++u) launch(1);
      sweepL2();
      launch(0);
      CK(cudaDeviceSynchronize());
    }
  };
  std::printf("C: the profiler started once, every kernel its own range\n");
  CK(cudaDeviceSynchronize());
  auto t = std::chrono::steady_clock::now();
  sequence();
  const double stopped_ms = msSince(t);
  std::string error;
  t = std::chrono::steady_clock::now();
  if (!profiler.start(error)) std::printf("  start: %s\n", error.c_str());
  const double start_ms = msSince(t);
  t = std::chrono::steady_clock::now();
  sequence();
  const double started_ms = msSince(t);
  t = std::chrono::steady_clock::now();
  if (!profiler.stop(error)) std::printf("  stop: %s\n", error.c_str());
  const double stop_ms = msSince(t);
  std::vector<std::vector<double>> rows;
  std::vector<std::string> names;
  if (!profiler.stopAndDecode(rows, error, &names)) std::printf("  decode: %s\n", error.c_str());
  const size_t per_round = kUnprofiled + 2;
  std::printf("  start %.2f ms, stop %.2f ms; the sequence (%d launches) %.2f ms stopped, %.2f ms started; %zu ranges "
              "(expected %zu)\n",
              start_ms, stop_ms, rounds * int(per_round), stopped_ms, started_ms, rows.size(), rounds * per_round);
  for (size_t i = 0; i < names.size() && i < per_round; ++i) std::printf("    range %zu: %s\n", i, names[i].c_str());
  if (rows.size() != rounds * per_round) {
    ++failures;
    return;
  }
  for (int round = 0; round < rounds; ++round) {
    const std::vector<double>& row = rows[round * per_round + per_round - 1];
    printCounters("C", 0, row);
    compareWithBaseline(0, row, saxpy_baseline);
  }
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  CK(cudaSetDevice(0));
  CK(cudaFree(0));
  cuCtxGetCurrent(&ctx);
  if (!loadCheckpointApi()) return 1;
  for (float** p : {&x, &y, &z}) CK(cudaMalloc(p, size_t(kN) * 4));
  const std::vector<float> ones(kN, 1.f);
  CK(cudaMemcpy(x, ones.data(), size_t(kN) * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(y, 0, size_t(kN) * 4));
  CK(cudaMemset(z, 0, size_t(kN) * 4));
  int l2 = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  sweep_floats = size_t(l2) * 2 / 4;
  CK(cudaMalloc(&sweep_buffer, sweep_floats * 4));
  CK(cudaMemset(sweep_buffer, 0, sweep_floats * 4));
  allocateHeld();
  const int rounds = std::getenv("ROUNDS") ? std::atoi(std::getenv("ROUNDS")) : 3;

  if (!setUpRooflineHardwareCounters(profiler, ctx, metrics)) return 1;
  if (!configureSass()) return 1;
  // The range profiler's first range carries writes that are not its kernel's (session 16): one
  // launch counted and dropped first.
  sweepL2();
  (void)counted(1);

  std::vector<double> baseline[2];
  std::printf("A: the program's launch counted alone (L2 swept before)\n");
  for (int round = 0; round < rounds; ++round) {
    for (int k = 0; k < 2; ++k) {
      sweepL2();
      baseline[k] = counted(k);
      printCounters("A", k, baseline[k]);
    }
  }

  std::printf("B: checkpoint, patched duplicate, restore, sweep, the program's launch counted\n");
  CUpti_Checkpoint cp{};
  cp.structSize = CUpti_Checkpoint_STRUCT_SIZE;
  cp.ctx = ctx;
  cp.allowOverwrite = 1;
  for (int round = 0; round < rounds; ++round) {
    for (int k = 0; k < 2; ++k) {
      const std::vector<float> before = k == 0 ? copyOut(y) : std::vector<float>();
      CK(cudaDeviceSynchronize());
      auto t = std::chrono::steady_clock::now();
      const CUptiResult saved = checkpoint_save(&cp);
      const double save_ms = msSince(t);
      t = std::chrono::steady_clock::now();
      const SassSums sums = patchedDuplicate(k);
      const double duplicate_ms = msSince(t);
      t = std::chrono::steady_clock::now();
      const CUptiResult restored = checkpoint_restore(&cp);
      CK(cudaDeviceSynchronize());
      const double restore_ms = msSince(t);
      t = std::chrono::steady_clock::now();
      sweepL2();
      const std::vector<double> row = counted(k);
      const double counted_ms = msSince(t);
      std::printf("  %-5s save %s %.2f ms, patched duplicate %.2f ms, restore %s %.2f ms, sweep + counted launch %.2f ms\n",
                  nameOf(k), cuptiText(saved), save_ms, duplicate_ms, cuptiText(restored), restore_ms, counted_ms);
      failures += saved != CUPTI_SUCCESS || restored != CUPTI_SUCCESS;
      checkSass(k, sums);
      printCounters("B", k, row);
      compareWithBaseline(k, row, baseline[k]);
      if (k == 0) checkOneApplication(before);
    }
  }
  checkpoint_free(&cp);
  startedOnce(rounds, baseline[0]);
  profiler.teardown();
  std::printf("%s: %d failures\n", failures == 0 ? "done" : "FAILED", failures);
  return failures == 0 ? 0 : 1;
}
