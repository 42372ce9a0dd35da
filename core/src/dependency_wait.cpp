#include "fprof/core/dependency_wait.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>

namespace fprof::core {
namespace {

using StreamKey = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>;

StreamKey streamOf(const KernelRow& k) { return {k.process_id, k.device_id, k.context_id, k.stream_id}; }

// The part of k's span before its predecessor ended, where k waited for it.
int64_t waitBehind(const KernelRow& k, int64_t predecessor_end_ns) {
  if (predecessor_end_ns <= k.start_ns || k.end_ns <= predecessor_end_ns) return 0;
  return predecessor_end_ns - k.start_ns;
}

}  // namespace

void settleDependencyWaits(std::vector<KernelRow>& kernels) {
  // Most programs launch nothing this way: one pass over the flags, no stream map.
  if (std::none_of(kernels.begin(), kernels.end(), [](const KernelRow& k) { return k.programmatic_launch; })) {
    for (KernelRow& k : kernels) k.dependency_wait_ns = 0;
    return;
  }
  DependencyWaits waits;
  for (KernelRow& k : kernels) waits.settle(k);
}

void DependencyWaits::settle(KernelRow& k) {
  k.dependency_wait_ns = 0;
  // Graph kernels share their launch stream's id though branches run concurrently: an overlap
  // there is no programmatic wait. Kernels replayed under the range profiler have no trace
  // timestamps (start 0, end their duration): no timeline to place them on.
  if (k.graph_id != 0 || k.start_ns == 0) return;
  auto [it, first] = previous_end_ns_.try_emplace(streamOf(k), k.end_ns);
  if (first) return;
  if (k.programmatic_launch) k.dependency_wait_ns = waitBehind(k, it->second);
  it->second = k.end_ns;
}

}  // namespace fprof::core
