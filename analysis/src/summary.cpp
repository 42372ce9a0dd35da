// Trace-only summaries (see summary.h).
#include "fprof/analysis/summary.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

namespace fprof::analysis {

RunSummary summarize(const core::Profile& profile) {
  RunSummary s;
  s.kernel_count = static_cast<int64_t>(profile.kernels.size());
  using Key = std::tuple<uint32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t>;
  std::map<Key, size_t> index;
  // Busy time is per GPU: the device UUID where recorded (device 0 of two ranks on two hosts is two
  // GPUs; two processes sharing a GPU share its busy time), else the (process, ordinal) pair.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> intervals_by_device;
  std::unordered_map<uint64_t, size_t> gpu_of;
  std::map<std::string, size_t> gpu_of_uuid;
  // Consecutive kernels mostly run on one GPU: the last answer is kept. try_emplace allocates a
  // node only for a new key (emplace would allocate one per kernel).
  uint64_t last_key = ~uint64_t{0};
  size_t last_gpu = 0;
  auto gpuIndex = [&](const core::KernelRow& k) {
    const uint64_t key = (uint64_t{k.process_id} << 32) | k.device_id;
    if (key == last_key) return last_gpu;
    last_key = key;
    auto [it, inserted] = gpu_of.try_emplace(key, intervals_by_device.size());
    last_gpu = it->second;
    if (!inserted) return it->second;
    if (const core::DeviceInfo* d = profile.device(k.process_id, k.device_id); d && !d->uuid.empty()) {
      auto [u, fresh] = gpu_of_uuid.emplace(d->uuid, intervals_by_device.size());
      it->second = u->second;
      last_gpu = it->second;
      if (!fresh) return it->second;
    }
    intervals_by_device.emplace_back();
    return it->second;
  };
  int64_t first = 0, last = 0;
  for (size_t i = 0; i < profile.kernels.size(); ++i) {
    const core::KernelRow& k = profile.kernels[i];
    const int64_t d = k.durationNs();
    s.total_kernel_ns += d;
    s.programmatic_launches += k.programmatic_launch ? 1 : 0;
    s.dependency_wait_ns += k.dependency_wait_ns;
    first = i == 0 ? k.start_ns : std::min(first, k.start_ns);
    last = i == 0 ? k.end_ns : std::max(last, k.end_ns);
    intervals_by_device[gpuIndex(k)].emplace_back(k.start_ns, k.end_ns);
    Key key{k.demangled_id, k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z};
    auto [it, inserted] = index.try_emplace(key, s.groups.size());
    if (inserted) {
      KernelGroup g;
      g.demangled_id = k.demangled_id;
      g.grid_x = k.grid_x;
      g.grid_y = k.grid_y;
      g.grid_z = k.grid_z;
      g.block_x = k.block_x;
      g.block_y = k.block_y;
      g.block_z = k.block_z;
      g.min_ns = d;
      g.max_ns = d;
      g.theoretical_occupancy = k.theoretical_occupancy;
      s.groups.push_back(g);
    }
    KernelGroup& g = s.groups[it->second];
    ++g.calls;
    g.total_ns += d;
    g.min_ns = std::min(g.min_ns, d);
    g.max_ns = std::max(g.max_ns, d);
    g.registers_per_thread = std::max(g.registers_per_thread, k.registers_per_thread);
    g.shared_bytes = std::max(g.shared_bytes, k.static_shared_bytes + k.dynamic_shared_bytes);
    g.local_bytes_per_thread = std::max(g.local_bytes_per_thread, k.local_bytes_per_thread);
    if (k.theoretical_occupancy && (!g.theoretical_occupancy || *k.theoretical_occupancy < *g.theoretical_occupancy)) {
      g.theoretical_occupancy = k.theoretical_occupancy;
    }
    g.kernel_indices.push_back(i);
  }
  s.span_ns = last - first;
  // Kernels replayed under the range profiler carry no trace timestamps (start 0): with one such
  // kernel among timed ones (metrics mode copies identical launches, which run natively), span and
  // busy time would mix clocks, so the timeline is unknown.
  s.timeline_known = std::none_of(profile.kernels.begin(), profile.kernels.end(),
                                  [](const core::KernelRow& k) { return k.start_ns == 0; }) ||
                     profile.kernels.size() < 2;
  for (auto& iv : intervals_by_device) {
    // Kernels come ordered by start, so this is usually sorted already.
    if (!std::is_sorted(iv.begin(), iv.end())) std::sort(iv.begin(), iv.end());
    int64_t cur_start = iv.front().first, cur_end = iv.front().second;
    for (const auto& [a, b] : iv) {
      if (a > cur_end) {
        s.gpu_busy_ns += cur_end - cur_start;
        cur_start = a;
        cur_end = b;
      } else {
        cur_end = std::max(cur_end, b);
      }
    }
    s.gpu_busy_ns += cur_end - cur_start;
  }
  for (const core::MemcpyRecord& m : profile.memcpys) {
    ++s.memcpy_count;
    s.memcpy_bytes += m.bytes;
    s.memcpy_ns += m.end_ns - m.start_ns;
  }
  s.memset_count = static_cast<int64_t>(profile.memsets.size());
  s.nvtx_range_count = static_cast<int64_t>(profile.nvtx_ranges.size());
  std::stable_sort(s.groups.begin(), s.groups.end(),
                   [](const KernelGroup& a, const KernelGroup& b) { return a.total_ns > b.total_ns; });
  return s;
}

}  // namespace fprof::analysis
