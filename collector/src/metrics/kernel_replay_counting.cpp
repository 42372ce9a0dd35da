// Kernel replay (see kernel_replay_counting.h).
#include "metrics/kernel_replay_counting.h"

#include <cstdio>

#include "metrics/metrics_run.h"

namespace fprof::collector {

void KernelReplayCounting::beforeStart(const LaunchRequest& launch) {
  (void)launch;
  warnIfReplayGoesThroughHost();
  beginSteps();
}

// Kernel replay saves and restores the device memory a kernel may write; once the program holds
// more than half of the device that goes through host memory, seconds a profiled kernel (12 s
// with 48 of 80 GiB held, bench/RESULTS.md; JAX preallocates 75% by default). Said once a
// context, at the first profiled launch that finds it so.
void KernelReplayCounting::warnIfReplayGoesThroughHost() {
  if (warned_footprint_) return;
  size_t free_bytes = 0, total_bytes = 0;
  if (!run_.backend.memoryInfo(free_bytes, total_bytes) || total_bytes == 0) return;
  const size_t held = total_bytes - free_bytes;
  if (held <= total_bytes / 2) return;
  warned_footprint_ = true;
  char text[512];
  std::snprintf(text, sizeof text,
                "the program holds %.1f of the device's %.1f GiB: kernel replay saves and restores the memory a "
                "kernel may write through host memory past about half of the device, seconds a profiled kernel; "
                "--replay application counts the program's own run without replay (JAX: or "
                "XLA_PYTHON_CLIENT_PREALLOCATE=false)",
                double(held) / double(1ull << 30), double(total_bytes) / double(1ull << 30));
  run_.log.note("warning", text);
}

}  // namespace fprof::collector
