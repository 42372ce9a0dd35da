// Allocations, their timeline, pointer-argument resolution and producer -> consumer edges
// (see dataflow.h for the read/write heuristic).
#include "fprof/analysis/dataflow.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>

namespace fprof::analysis {

namespace {

uint64_t pkey(uint32_t a, uint32_t b) { return (uint64_t{a} << 32) | b; }

struct WriteState {
  std::optional<size_t> writer;  // kernel index of the latest writer
  uint64_t stream = 0;           // its stream key
  uint64_t epoch = 0;            // the stream's unknown-kernel epoch at the write
  int32_t value = -1;            // index of the written value (for its reader count)
};

// What a kernel's demangled signature says about each parameter (by index).
enum class ParamKind : uint8_t { kOther, kConstPointer, kMutablePointer };

// Parameter kinds from a demangled name such as "void tagged<1>(float*, float const*, int)".
// Empty when the name carries no parameter list (extern "C" kernels, Triton) or no pointer.
std::vector<ParamKind> parseSignature(std::string_view name) {
  std::vector<ParamKind> kinds;
  if (name.empty() || name.back() != ')') return kinds;
  // The parameter list is the last top-level parenthesis group.
  int depth = 0;
  size_t open = std::string_view::npos;
  for (size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') ++depth;
    if (name[i] == '(' && --depth == 0) {
      open = i;
      break;
    }
  }
  if (open == std::string_view::npos) return kinds;
  const std::string_view params = name.substr(open + 1, name.size() - open - 2);
  bool any_pointer = false;
  auto classify = [&](std::string_view p) {
    while (!p.empty() && p.front() == ' ') p.remove_prefix(1);
    while (!p.empty() && p.back() == ' ') p.remove_suffix(1);
    for (std::string_view suffix : {std::string_view("__restrict__"), std::string_view("__restrict")}) {
      if (p.size() >= suffix.size() && p.substr(p.size() - suffix.size()) == suffix) p.remove_suffix(suffix.size());
    }
    while (!p.empty() && p.back() == ' ') p.remove_suffix(1);
    if (p.empty() || p.back() != '*') {
      kinds.push_back(ParamKind::kOther);
      return;
    }
    any_pointer = true;
    // "float const*" and "const float*" point to const data; "float* const" does not.
    const std::string_view pointee = p.substr(0, p.size() - 1);
    const size_t c = pointee.rfind("const");
    const bool const_pointee = c != std::string_view::npos && pointee.find('*', c) == std::string_view::npos;
    kinds.push_back(const_pointee ? ParamKind::kConstPointer : ParamKind::kMutablePointer);
  };
  size_t start = 0;
  depth = 0;
  for (size_t i = 0; i <= params.size(); ++i) {
    const char ch = i < params.size() ? params[i] : ',';
    if (ch == '<' || ch == '(' || ch == '[') ++depth;
    if (ch == '>' || ch == ')' || ch == ']') --depth;
    if (ch == ',' && depth == 0) {
      if (i > start || !params.empty()) classify(params.substr(start, i - start));
      start = i + 1;
    }
  }
  if (!any_pointer) kinds.clear();
  return kinds;
}

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

  // Launch arguments: kernel_args is sorted by (process, correlation id), so each launch's
  // arguments are one run, found by binary search. Kernels sharing a launch (graph nodes) are
  // found by sorting the launch keys once.
  std::vector<std::pair<uint64_t, uint32_t>> arg_runs;  // (launch key, first argument index)
  for (size_t i = 0; i < p.kernel_args.size(); ++i) {
    const uint64_t key = pkey(p.kernel_args[i].process_id, p.kernel_args[i].correlation_id);
    if (arg_runs.empty() || arg_runs.back().first != key) arg_runs.emplace_back(key, static_cast<uint32_t>(i));
  }
  std::vector<uint64_t> shared_keys;  // launches that produced several kernels (usually few)
  if (df.have_args) {
    std::vector<uint64_t> launch_keys;
    launch_keys.reserve(p.kernels.size());
    for (const core::KernelRow& k : p.kernels) launch_keys.push_back(pkey(k.process_id, k.correlation_id));
    std::sort(launch_keys.begin(), launch_keys.end());
    for (size_t i = 1; i < launch_keys.size(); ++i) {
      if (launch_keys[i] == launch_keys[i - 1] && (shared_keys.empty() || shared_keys.back() != launch_keys[i])) {
        shared_keys.push_back(launch_keys[i]);
      }
    }
  }
  auto sharedLaunch = [&](uint64_t key) { return std::binary_search(shared_keys.begin(), shared_keys.end(), key); };
  size_t run_cursor = 0;  // kernels come mostly in correlation order: try the next run first
  auto findRun = [&](uint64_t key) -> const std::pair<uint64_t, uint32_t>* {
    for (size_t c = run_cursor; c < run_cursor + 2 && c < arg_runs.size(); ++c) {
      if (arg_runs[c].first == key) {
        run_cursor = c + 1;
        return &arg_runs[c];
      }
    }
    auto it = std::lower_bound(arg_runs.begin(), arg_runs.end(), std::make_pair(key, uint32_t{0}));
    if (it == arg_runs.end() || it->first != key) return nullptr;
    run_cursor = static_cast<size_t>(it - arg_runs.begin()) + 1;
    return &*it;
  };

  df.access_begin.assign(p.kernels.size() + 1, 0);
  df.args_known.assign(p.kernels.size(), 0);
  std::vector<WriteState> state(df.allocations.size());
  std::unordered_map<uint64_t, uint64_t> stream_epoch;
  // Every write starts a value; its readers are counted on any stream (edges only on the same one).
  std::vector<int32_t> value_readers;
  std::vector<int32_t> edge_value;
  std::vector<int32_t> values(df.allocations.size(), 0), read_once(df.allocations.size(), 0);
  auto closeValue = [&](uint32_t alloc) {
    const WriteState& ws = state[alloc];
    if (!ws.writer) return;
    ++values[alloc];
    if (value_readers[static_cast<size_t>(ws.value)] == 1) ++read_once[alloc];
  };

  // Walk kernels and allocation events together in time order, so a pointer resolves to the
  // allocation live at the kernel's start (addresses are reused after a free).
  size_t ev = 0;
  uint32_t next_alloc = 0;
  std::vector<std::pair<int32_t, uint32_t>> resolved;  // (arg index, allocation)
  std::unordered_map<uint32_t, std::vector<ParamKind>> signatures;  // by demangled name id
  uint64_t last_skey = ~uint64_t{0};
  uint64_t* epoch_slot = nullptr;
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
          closeValue(it->second);
          state[it->second] = WriteState{};  // a freed value has no consumers left
          live.erase(it);
        }
      }
    }
    df.access_begin[ki] = static_cast<uint32_t>(df.accesses.size());
    if (!df.have_args) continue;
    const uint64_t lkey = pkey(k.process_id, k.correlation_id);
    const uint64_t skey = streamKey(k);
    if (skey != last_skey) {
      epoch_slot = &stream_epoch[skey];
      last_skey = skey;
    }
    if (k.graph_id != 0 || sharedLaunch(lkey)) {
      ++*epoch_slot;  // anything may have been written here
      continue;
    }
    df.args_known[ki] = 1;
    const auto* run = findRun(lkey);
    if (!run) continue;  // no 8-byte arguments: touches nothing we see
    resolved.clear();
    const auto& live = live_by_process[k.process_id];
    for (size_t a = run->second; a < p.kernel_args.size() && pkey(p.kernel_args[a].process_id,
                                                                   p.kernel_args[a].correlation_id) == lkey;
         ++a) {
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
    auto sig = signatures.find(k.demangled_id);
    if (sig == signatures.end()) sig = signatures.emplace(k.demangled_id, parseSignature(p.str(k.demangled_id))).first;
    const std::vector<ParamKind>& kinds = sig->second;
    // The signature decides where it covers every resolved argument; else the last-argument rule.
    const bool by_signature =
        !kinds.empty() && static_cast<size_t>(resolved.back().first) < kinds.size() && resolved.front().first >= 0;
    const auto [last_index, written] = resolved.back();
    const size_t begin = df.accesses.size();
    for (const auto& [index, alloc] : resolved) {
      bool is_write = false, is_read = false;
      if (by_signature) {
        const ParamKind kind = kinds[static_cast<size_t>(index)];
        if (kind == ParamKind::kOther) continue;  // an 8-byte value that happens to look like an address
        is_write = kind == ParamKind::kMutablePointer;
        is_read = kind == ParamKind::kConstPointer;
      } else {
        is_write = alloc == written && index == last_index;
        is_read = !is_write;
      }
      KernelAccess* existing = nullptr;
      for (size_t x = begin; x < df.accesses.size(); ++x) {
        if (df.accesses[x].allocation == alloc) existing = &df.accesses[x];
      }
      if (!existing) {
        df.accesses.push_back({alloc, false, false});
        existing = &df.accesses.back();
      }
      existing->write = existing->write || is_write;
      existing->read = existing->read || is_read;
    }
    const uint64_t epoch = *epoch_slot;
    for (size_t x = begin; x < df.accesses.size(); ++x) {
      const KernelAccess acc = df.accesses[x];
      if (!acc.read) continue;
      Allocation& al = df.allocations[acc.allocation];
      const WriteState& ws = state[acc.allocation];
      ++al.reader_launches;
      if (!al.first_reader) al.first_reader = ki;
      if (!ws.writer) continue;
      ++value_readers[static_cast<size_t>(ws.value)];
      if (ws.stream == skey && ws.epoch == epoch && *ws.writer != ki) {
        df.edges.push_back({*ws.writer, ki, acc.allocation, 0});
        edge_value.push_back(ws.value);
      }
    }
    for (size_t x = begin; x < df.accesses.size(); ++x) {
      const KernelAccess acc = df.accesses[x];
      if (!acc.write) continue;
      Allocation& al = df.allocations[acc.allocation];
      ++al.writer_launches;
      if (!al.first_writer) al.first_writer = ki;
      closeValue(acc.allocation);
      state[acc.allocation] = WriteState{ki, skey, epoch, static_cast<int32_t>(value_readers.size())};
      value_readers.push_back(0);
    }
  }
  df.access_begin[p.kernels.size()] = static_cast<uint32_t>(df.accesses.size());
  for (size_t e = 0; e < df.edges.size(); ++e) {
    df.edges[e].readers_of_value = value_readers[static_cast<size_t>(edge_value[e])];
  }
  for (uint32_t a = 0; a < df.allocations.size(); ++a) {
    closeValue(a);
    Allocation& al = df.allocations[a];
    al.values_written = values[a];
    al.values_read_once = read_once[a];
    if (al.values_written > 0 && al.values_read_once == al.values_written) df.written_once_read_once.push_back(a);
  }
  return df;
}

}  // namespace fprof::analysis
