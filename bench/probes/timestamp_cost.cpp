// What one timestamp costs on the application's threads (issue 17): cuptiGetTimestamp, which the
// collector reads for every NVTX event, against the clocks a collector could read itself, and
// how far CUPTI's clock is from CLOCK_REALTIME (the smallest difference over many pairs).
//
//   g++ -O2 -std=c++20 -I/usr/local/cuda/include bench/probes/timestamp_cost.cpp
//       -L/usr/local/cuda/lib64 -lcupti -Wl,-rpath,/usr/local/cuda/lib64 -o timestamp_cost
// (one command line). It needs no GPU: CUPTI's timestamp works before any context exists.
#include <cupti.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>

namespace {

int64_t clockNs(clockid_t id) {
  timespec t{};
  clock_gettime(id, &t);
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

int64_t cuptiNs() {
  uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return static_cast<int64_t>(t);
}

template <class F>
double nsPerCall(F f) {
  constexpr int kCalls = 1000000;
  int64_t sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) sink += f();
  const auto t1 = std::chrono::steady_clock::now();
  if (sink == 42) std::puts("");
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / kCalls;
}

}  // namespace

int main() {
  (void)cuptiNs();  // CUPTI's first call loads and initializes it
  std::printf("timestamp_cost: cuptiGetTimestamp %.1f ns, CLOCK_REALTIME %.1f ns, CLOCK_MONOTONIC %.1f ns, "
              "CLOCK_MONOTONIC_RAW %.1f ns per call\n",
              nsPerCall(cuptiNs), nsPerCall([] { return clockNs(CLOCK_REALTIME); }),
              nsPerCall([] { return clockNs(CLOCK_MONOTONIC); }), nsPerCall([] { return clockNs(CLOCK_MONOTONIC_RAW); }));
  int64_t best = INT64_MAX, offset = 0;
  for (int i = 0; i < 100000; ++i) {
    const int64_t a = clockNs(CLOCK_REALTIME), c = cuptiNs(), b = clockNs(CLOCK_REALTIME);
    if (b - a < best) {
      best = b - a;
      offset = c - (a + b) / 2;
    }
  }
  std::printf("timestamp_cost: cupti - CLOCK_REALTIME = %lld ns (pair read within %lld ns)\n",
              static_cast<long long>(offset), static_cast<long long>(best));
  return 0;
}
