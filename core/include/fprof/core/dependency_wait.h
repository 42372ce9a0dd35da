// Programmatic dependent launch: a kernel launched with programmatic stream serialization may
// start while the kernel before it in its stream still runs, its blocks waiting in
// griddepcontrol.wait (cudaGridDependencySynchronize). Its trace record then spans that wait.
// This derives, for every such kernel, the part of its span before its predecessor ended, so
// that its own time (KernelLaunch::durationNs) is what it adds to its stream.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "fprof/core/model.h"

namespace fprof::core {

// Sets dependency_wait_ns of every kernel (0 unless it is a programmatic launch that started
// before the previous kernel of its stream ended). A kernel that ended before its predecessor
// did never waited for its completion (it calls no griddepcontrol.wait), so it keeps its whole
// span. Kernels must be ordered by start_ns; a stream is (process, device, context, stream).
// Graph kernels and kernels without trace timestamps (start 0: replayed under the range
// profiler) neither wait nor count as a predecessor.
void settleDependencyWaits(std::vector<KernelRow>& kernels);

// The same for kernels that come one at a time, in start order (a stream of the kernel table):
// settle() gives each what settleDependencyWaits gives it, holding one end time per stream.
class DependencyWaits {
 public:
  void settle(KernelRow& k);

 private:
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>, int64_t> previous_end_ns_;
};

}  // namespace fprof::core
