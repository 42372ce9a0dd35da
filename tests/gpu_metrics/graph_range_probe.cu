// Can the range profiler count a CUDA graph launch? Answered on the GPU (bench/RESULTS.md,
// issue 13). Application replay (CUPTI user replay: the program's own execution, one pass) of the
// roofline set's hardware counters, on a graph of three kernels of known work (saxpy, addmul, a
// copy; 64 MiB arrays, more than the L2), user ranges from setup on:
//  1. each kernel launched eagerly, alone in a user range: the per-kernel reference;
//  2. the three kernels launched eagerly inside one user range: their sum, without a graph?
//  3. the graph launched inside one user range: one range holding the three kernels' sum?
//  4. the graph launched under auto range (session 12: no range at all).
// Prints each metric of 2-4 next to the sum of 1.
#include <cuda.h>
#include <cuda_runtime.h>

#include <execinfo.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fprof/core/metric_sets.h"
#include "cuda_check.h"
#include "metrics_kernels.cuh"
#include "range_profiler.h"

using namespace fprof;
using namespace fprof::gpu_test;

namespace {

constexpr int kN = 1 << 24;
constexpr int kBlocks = (kN + 255) / 256;
float *x, *y, *z, *w;
collector::RangeProfiler profiler;

void launchKernel(int which, cudaStream_t s) {
  if (which == 0) saxpy<<<kBlocks, 256, 0, s>>>(kN, 2.f, x, y);
  if (which == 1) addmul<<<kBlocks, 256, 0, s>>>(kN, x, y, z);
  if (which == 2) copyKernel<<<kBlocks, 256, 0, s>>>(kN, z, w);
}

// Where a crash inside CUPTI happened (no debugger: CUPTI refuses to profile under cuda-gdb).
void printBacktrace(int sig) {
  void* frames[32];
  const int n = backtrace(frames, 32);
  backtrace_symbols_fd(frames, n, STDOUT_FILENO);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void check(bool ok, const std::string& what, const std::string& error) {
  if (ok) return;
  std::fprintf(stderr, "%s: %s\n", what.c_str(), error.c_str());
  std::exit(1);
}

// Runs body with the profiler started (around a user range when `user`), the device idle before
// and after, and returns the decoded ranges.
template <class Body>
std::vector<std::vector<double>> counted(bool user, const Body& body) {
  std::string error;
  CK(cudaDeviceSynchronize());
  const auto before = std::chrono::steady_clock::now();
  const bool switching = user != profiler.userRanges();
  check(profiler.useUserRanges(user, error), "user ranges", error);
  if (switching) {
    std::printf("  switched to %s ranges in %.2f ms\n", user ? "user" : "auto",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - before).count());
  }
  check(profiler.start(error), "start", error);
  if (user) check(profiler.pushRange("graph", error), "push", error);
  body();
  if (user) check(profiler.popRange(error), "pop", error);
  CK(cudaDeviceSynchronize());
  std::vector<std::vector<double>> rows;
  std::vector<std::string> names;
  if (!profiler.stopAndDecode(rows, error, &names)) std::printf("  decode: %s\n", error.c_str());
  std::printf("  %zu range(s):", rows.size());
  for (const std::string& n : names) std::printf(" '%s'", n.c_str());
  std::printf("\n");
  return rows;
}

void compare(const char* what, const std::vector<std::vector<double>>& rows, const std::vector<double>& sum,
             const std::vector<std::string>& metrics) {
  std::printf("[%s]\n", what);
  if (rows.empty()) return;
  for (size_t m = 0; m < metrics.size(); ++m) {
    const double v = rows[0][m], ref = sum[m];
    std::printf("  %-72s %16.0f  sum of eager %16.0f  %+.2f%%\n", metrics[m].c_str(), v, ref,
                ref != 0 ? 100.0 * (v - ref) / ref : 0.0);
  }
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // every line survives a crash of the probe
  std::signal(SIGSEGV, printBacktrace);
  CK(cudaSetDevice(0));
  CK(cudaFree(0));
  CUcontext ctx;
  cuCtxGetCurrent(&ctx);
  for (float** p : {&x, &y, &z, &w}) CK(cudaMalloc(p, size_t(kN) * 4));
  for (float* p : {x, y, z, w}) CK(cudaMemset(p, 0, size_t(kN) * 4));
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int k = 0; k < 3; ++k) launchKernel(k, stream);
  CK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaGraphLaunch(exec, stream));  // modules loaded, graph uploaded before anything is counted
  for (int k = 0; k < 3; ++k) launchKernel(k, stream);
  CK(cudaDeviceSynchronize());

  std::vector<std::string> metrics;
  const auto roofline = core::expandMetricSelection("roofline");
  for (const std::string& m : *roofline) {
    if (!core::isSassInstrumented(m)) metrics.push_back(m);
  }
  // User ranges from the start; switching the range mode (the profiler disabled and enabled
  // again) is tried last. (SetConfig alone on an enabled profiler: the next push failed with
  // CUPTI_ERROR_INVALID_PARAMETER, the next start after a switch back with CUPTI_ERROR_UNKNOWN.)
  std::string error;
  check(profiler.useUserRanges(true, error), "user ranges", error);
  check(profiler.setup(ctx, 0, metrics, 16, collector::CacheControl::kNone, collector::ReplayMode::kApplication, error),
        "setup", error);
  std::printf("chip %s, %zu hardware metrics, %zu pass(es), application replay, user ranges\n", profiler.chip().c_str(),
              metrics.size(), profiler.passes());

  std::vector<double> sum(metrics.size(), 0.0);
  for (int k = 0; k < 3; ++k) {
    std::printf("eager kernel %d alone in a user range\n", k);
    const auto rows = counted(true, [&] { launchKernel(k, stream); });
    if (rows.size() == 1) {
      for (size_t m = 0; m < metrics.size(); ++m) sum[m] += rows[0][m];
    }
  }
  for (int round = 0; round < 2; ++round) {
    std::printf("three eager launches, one user range (round %d)\n", round);
    compare("eager, user range", counted(true, [&] { for (int k = 0; k < 3; ++k) launchKernel(k, stream); }), sum,
            metrics);
    std::printf("graph launch, one user range (round %d)\n", round);
    compare("graph, user range", counted(true, [&] { CK(cudaGraphLaunch(exec, stream)); }), sum, metrics);
  }
  std::printf("switched to auto range: eager kernel 0\n");
  compare("eager kernel 0, auto range", counted(false, [&] { launchKernel(0, stream); }), sum, metrics);
  std::printf("graph launch, auto range\n");
  compare("graph, auto range", counted(false, [&] { CK(cudaGraphLaunch(exec, stream)); }), sum, metrics);
  std::printf("switched back to user ranges: graph launch\n");
  compare("graph, user range again", counted(true, [&] { CK(cudaGraphLaunch(exec, stream)); }), sum, metrics);
  std::printf("and auto range again: eager kernel 2\n");
  compare("eager kernel 2, auto range", counted(false, [&] { launchKernel(2, stream); }), sum, metrics);
  profiler.teardown();
  std::printf("done\n");
  return 0;
}
