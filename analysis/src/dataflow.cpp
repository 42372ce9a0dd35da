// Allocations, their timeline, pointer-argument resolution and producer -> consumer edges
// (see dataflow.h for the read/write heuristic).
#include "fprof/analysis/dataflow.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace fprof::analysis {

namespace {

uint64_t pkey(uint32_t a, uint32_t b) { return (uint64_t{a} << 32) | b; }

struct WriteState {
  std::optional<size_t> writer;  // kernel index of the latest writer
  uint64_t stream = 0;           // its stream key
  uint64_t epoch = 0;            // the stream's unknown-kernel epoch at the write
};

uint64_t streamKey(const core::KernelRow& k) {
  return (uint64_t{k.process_id} << 48) ^ (uint64_t{k.device_id} << 40) ^ k.stream_id;
}

}  // namespace

DataFlow analyzeDataFlow(const core::Profile& p) {
  DataFlow df;
  df.have_args = !p.kernel_args.empty();
  df.have_allocations = !p.memory_events.empty();

  // Allocations and timelines, in event (timestamp) order.
  std::unordered_map<uint64_t, std::map<uint64_t, uint32_t>> live_by_process;  // process -> addr -> alloc
  std::vector<std::pair<int64_t, int>> event_alloc;  // per memory event: allocation index or -1
  {
    std::unordered_map<uint64_t, size_t> timeline_of;
    std::unordered_map<uint64_t, uint32_t> open;  // (process<<?) address -> allocation, for frees
    for (const core::MemoryEventRecord& e : p.memory_events) {
      const uint64_t tkey = pkey(e.process_id, e.device_id);
      auto [tit, inserted] = timeline_of.emplace(tkey, df.timelines.size());
      if (inserted) df.timelines.push_back({e.process_id, e.device_id, {}, 0, 0});
      MemoryTimeline& tl = df.timelines[tit->second];
      const int64_t current = tl.points.empty() ? 0 : tl.points.back().second;
      const uint64_t akey = (uint64_t{e.process_id} << 56) ^ e.address;
      if (e.is_alloc) {
        Allocation a;
        a.process_id = e.process_id;
        a.device_id = e.device_id;
        a.address = e.address;
        a.bytes = e.bytes;
        a.alloc_ns = e.timestamp_ns;
        a.memory_kind = e.memory_kind;
        open[akey] = static_cast<uint32_t>(df.allocations.size());
        df.allocations.push_back(std::move(a));
        tl.points.emplace_back(e.timestamp_ns, current + e.bytes);
        if (current + e.bytes > tl.peak_allocated_bytes) {
          tl.peak_allocated_bytes = current + e.bytes;
          tl.peak_ns = e.timestamp_ns;
        }
      } else {
        auto it = open.find(akey);
        if (it == open.end()) {
          ++df.unmatched_frees;
          continue;
        }
        Allocation& a = df.allocations[it->second];
        a.free_ns = e.timestamp_ns;
        open.erase(it);
        tl.points.emplace_back(e.timestamp_ns, current - a.bytes);
      }
    }
  }

  // Launch arguments per (process, correlation id); kernels per (process, correlation id).
  std::unordered_map<uint64_t, std::pair<size_t, size_t>> args_of;  // -> [begin, end) in kernel_args
  for (size_t i = 0; i < p.kernel_args.size();) {
    const uint64_t key = pkey(p.kernel_args[i].process_id, p.kernel_args[i].correlation_id);
    size_t j = i;
    while (j < p.kernel_args.size() && pkey(p.kernel_args[j].process_id, p.kernel_args[j].correlation_id) == key) ++j;
    args_of.emplace(key, std::make_pair(i, j));
    i = j;
  }
  std::unordered_map<uint64_t, int32_t> kernels_per_launch;
  if (df.have_args) {
    for (const core::KernelRow& k : p.kernels) ++kernels_per_launch[pkey(k.process_id, k.correlation_id)];
  }

  df.access_begin.assign(p.kernels.size() + 1, 0);
  df.args_known.assign(p.kernels.size(), 0);
  std::vector<WriteState> state(df.allocations.size());
  std::unordered_map<uint64_t, uint64_t> stream_epoch;

  // Walk kernels and allocation events together in time order, so a pointer resolves to the
  // allocation live at the kernel's start (addresses are reused after a free).
  size_t ev = 0;
  uint32_t next_alloc = 0;
  std::vector<std::pair<int32_t, uint32_t>> resolved;  // (arg index, allocation)
  for (size_t ki = 0; ki < p.kernels.size(); ++ki) {
    const core::KernelRow& k = p.kernels[ki];
    while (ev < p.memory_events.size() && p.memory_events[ev].timestamp_ns <= k.start_ns) {
      const core::MemoryEventRecord& e = p.memory_events[ev++];
      auto& live = live_by_process[e.process_id];
      if (e.is_alloc) {
        live[e.address] = next_alloc++;
      } else {
        auto it = live.find(e.address);
        if (it != live.end()) {
          state[it->second] = WriteState{};  // a freed value has no consumers left
          live.erase(it);
        }
      }
    }
    df.access_begin[ki] = static_cast<uint32_t>(df.accesses.size());
    if (!df.have_args) continue;
    const uint64_t lkey = pkey(k.process_id, k.correlation_id);
    const uint64_t skey = streamKey(k);
    if (k.graph_id != 0 || kernels_per_launch[lkey] != 1) {
      ++stream_epoch[skey];  // anything may have been written here
      continue;
    }
    df.args_known[ki] = 1;
    auto ait = args_of.find(lkey);
    if (ait == args_of.end()) continue;  // no 8-byte arguments: touches no buffer we can see
    resolved.clear();
    const auto& live = live_by_process[k.process_id];
    for (size_t a = ait->second.first; a < ait->second.second; ++a) {
      const core::KernelArgRecord& arg = p.kernel_args[a];
      if (arg.size_bytes != 8 || arg.value == 0) continue;
      auto it = live.upper_bound(arg.value);
      if (it == live.begin()) continue;
      --it;
      const Allocation& al = df.allocations[it->second];
      if (arg.value >= al.address + static_cast<uint64_t>(al.bytes)) continue;
      resolved.emplace_back(arg.index, it->second);
    }
    if (resolved.empty()) continue;
    std::sort(resolved.begin(), resolved.end());
    const uint32_t written = resolved.back().second;
    const size_t begin = df.accesses.size();
    for (const auto& [index, alloc] : resolved) {
      const bool is_last = alloc == written;
      KernelAccess* existing = nullptr;
      for (size_t x = begin; x < df.accesses.size(); ++x) {
        if (df.accesses[x].allocation == alloc) existing = &df.accesses[x];
      }
      if (!existing) {
        df.accesses.push_back({alloc, false, false});
        existing = &df.accesses.back();
      }
      if (is_last && index == resolved.back().first) {
        existing->write = true;
      } else {
        existing->read = true;
      }
    }
    const uint64_t epoch = stream_epoch[skey];
    for (size_t x = begin; x < df.accesses.size(); ++x) {
      const KernelAccess acc = df.accesses[x];
      Allocation& al = df.allocations[acc.allocation];
      WriteState& ws = state[acc.allocation];
      if (acc.read) {
        ++al.reader_launches;
        if (!al.first_reader) al.first_reader = ki;
        if (ws.writer && ws.stream == skey && ws.epoch == epoch && *ws.writer != ki) {
          df.edges.push_back({*ws.writer, ki, acc.allocation, 0});
        }
      }
    }
    for (size_t x = begin; x < df.accesses.size(); ++x) {
      const KernelAccess acc = df.accesses[x];
      if (!acc.write) continue;
      Allocation& al = df.allocations[acc.allocation];
      ++al.writer_launches;
      if (!al.first_writer) al.first_writer = ki;
      state[acc.allocation] = WriteState{ki, skey, epoch};
    }
  }
  df.access_begin[p.kernels.size()] = static_cast<uint32_t>(df.accesses.size());
  // How many kernels read each written value (any stream, not only those that became edges).
  {
    std::unordered_map<uint64_t, int32_t> readers;
    auto vkey = [](size_t producer, uint32_t alloc) { return (uint64_t{static_cast<uint32_t>(producer)} << 32) | alloc; };
    std::vector<std::optional<size_t>> last_writer(df.allocations.size());
    // Per allocation: values written, and of those the ones read by exactly one kernel.
    std::vector<int32_t> values(df.allocations.size(), 0), read_once(df.allocations.size(), 0);
    std::vector<int32_t> current_readers(df.allocations.size(), 0);
    auto closeValue = [&](uint32_t alloc) {
      if (!last_writer[alloc]) return;
      ++values[alloc];
      if (current_readers[alloc] == 1) ++read_once[alloc];
      current_readers[alloc] = 0;
    };
    size_t ev2 = 0;
    std::unordered_map<uint64_t, std::map<uint64_t, uint32_t>> live2;
    uint32_t next2 = 0;
    for (size_t ki = 0; ki < p.kernels.size(); ++ki) {
      while (ev2 < p.memory_events.size() && p.memory_events[ev2].timestamp_ns <= p.kernels[ki].start_ns) {
        const core::MemoryEventRecord& e = p.memory_events[ev2++];
        auto& live = live2[e.process_id];
        if (e.is_alloc) {
          live[e.address] = next2++;
        } else if (auto it = live.find(e.address); it != live.end()) {
          closeValue(it->second);
          last_writer[it->second].reset();
          live.erase(it);
        }
      }
      for (uint32_t x = df.access_begin[ki]; x < df.access_begin[ki + 1]; ++x) {
        const KernelAccess& acc = df.accesses[x];
        if (acc.read && last_writer[acc.allocation]) {
          ++readers[vkey(*last_writer[acc.allocation], acc.allocation)];
          ++current_readers[acc.allocation];
        }
      }
      for (uint32_t x = df.access_begin[ki]; x < df.access_begin[ki + 1]; ++x) {
        if (!df.accesses[x].write) continue;
        closeValue(df.accesses[x].allocation);
        last_writer[df.accesses[x].allocation] = ki;
      }
    }
    for (uint32_t a = 0; a < df.allocations.size(); ++a) {
      closeValue(a);
      df.allocations[a].values_written = values[a];
      df.allocations[a].values_read_once = read_once[a];
    }
    for (DataEdge& e : df.edges) e.readers_of_value = readers[vkey(e.producer, e.allocation)];
  }
  for (uint32_t a = 0; a < df.allocations.size(); ++a) {
    const Allocation& al = df.allocations[a];
    if (al.values_written > 0 && al.values_read_once == al.values_written) {
      df.written_once_read_once.push_back(a);
    }
  }
  return df;
}

}  // namespace fprof::analysis
