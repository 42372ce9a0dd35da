// CUPTI activity record -> core record; see translate.h.
#include "trace/translate.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>

#include "fprof/core/occupancy.h"

namespace fprof::collector {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  // splitmix64 finaliser over a running value: cheap and well spread for a 64-bit set key.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

}  // namespace

const char* memcpyKindName(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "unknown";
  }
}

const char* memoryKindName(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return "device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return "array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return "managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return "device_static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return "managed_static";
    default: return "unknown";
  }
}

void addToStore(core::Writer& writer, const TranslatedBatch& batch) {
  for (const core::KernelRecord& r : batch.kernels) writer.add(r);
  for (const core::KernelArgRecord& r : batch.kernel_args) writer.add(r);
  for (const core::MemcpyRecord& r : batch.memcpys) writer.add(r);
  for (const core::MemsetRecord& r : batch.memsets) writer.add(r);
  for (const core::MemoryEventRecord& r : batch.memory_events) writer.add(r);
}

void Translator::addLaunch(LaunchInfo launch) {
  const uint32_t id = launch.correlation_id;
  if (launch.nested_correlation_id != 0) nested_to_outer_[launch.nested_correlation_id] = id;
  launches_[id] = PendingLaunch{std::move(launch), generation_, 0};
  unmatched_expiry_.push_back(Expiry{generation_, id});
  while (launches_.size() > max_pending_ && !unmatched_expiry_.empty()) {
    const Expiry oldest = unmatched_expiry_.front();
    unmatched_expiry_.pop_front();
    auto it = launches_.find(oldest.correlation_id);
    if (it == launches_.end() || it->second.added_generation != oldest.generation) continue;  // gone already
    forget(it);
    ++stats_.dropped_launches;
  }
}

void Translator::forget(std::unordered_map<uint32_t, PendingLaunch>::iterator it) {
  if (it->second.info.nested_correlation_id != 0) nested_to_outer_.erase(it->second.info.nested_correlation_id);
  launches_.erase(it);
}

bool Translator::seenBefore(uint64_t key) {
  if (seen_previous_.count(key) != 0 || !seen_current_.insert(key).second) {
    ++stats_.duplicates;
    return true;
  }
  return false;
}

void Translator::endGeneration() {
  // Duplicates arrive within the same or the next buffer; two periods of keys bound the memory.
  seen_previous_.swap(seen_current_);
  seen_current_.clear();
  ++generation_;
  // Matched graph launches, this many periods after their first kernel node.
  while (!graph_expiry_.empty() && generation_ - graph_expiry_.front().generation >= kGraphLaunchGenerations) {
    const Expiry e = graph_expiry_.front();
    graph_expiry_.pop_front();
    auto it = launches_.find(e.correlation_id);
    if (it != launches_.end() && it->second.first_match_generation == e.generation) forget(it);
  }
  // Launches whose kernel never came. An entry whose launch was matched (or replaced) is skipped.
  while (!unmatched_expiry_.empty()) {
    const Expiry e = unmatched_expiry_.front();
    auto it = launches_.find(e.correlation_id);
    if (it == launches_.end() || it->second.added_generation != e.generation || it->second.first_match_generation != 0) {
      unmatched_expiry_.pop_front();  // matched: gone, or a graph launch now in graph_expiry_
      continue;
    }
    if (generation_ - e.generation < static_cast<uint64_t>(unmatched_generations_)) break;  // the rest are newer
    unmatched_expiry_.pop_front();
    forget(it);
  }
  // A launch that never matches holds the front for many periods; drop the matched entries
  // behind it once they are most of the queue (amortized O(1) per launch).
  if (unmatched_expiry_.size() > 2 * launches_.size() + 1024) {
    std::erase_if(unmatched_expiry_, [this](const Expiry& e) {
      auto it = launches_.find(e.correlation_id);
      return it == launches_.end() || it->second.added_generation != e.generation ||
             it->second.first_match_generation != 0;
    });
  }
}

Translator::NameInfo& Translator::nameInfo(const char* mangled) {
  auto [it, inserted] = names_.try_emplace(mangled);
  if (inserted) {
    int status = 0;
    char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    it->second.demangled = status == 0 && d != nullptr ? std::string(d) : std::string(mangled);
    std::free(d);
  }
  return it->second;
}

void Translator::translate(const CUpti_Activity& record, TranslatedBatch& out) {
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      translateKernel(reinterpret_cast<const CUpti_ActivityKernel10&>(record), out);
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      translateMemcpy(reinterpret_cast<const CUpti_ActivityMemcpy6&>(record), out);
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      translateMemset(reinterpret_cast<const CUpti_ActivityMemset4&>(record), out);
      break;
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      translateMemory(reinterpret_cast<const CUpti_ActivityMemory4&>(record), out);
      break;
    default:
      ++stats_.ignored_records;
      break;
  }
}

bool Translator::isIgnoredKernel(const char* name) const {
  if (name == nullptr) return false;
  for (const std::string& ignored : ignored_kernel_names_) {
    if (ignored == name) return true;
  }
  return false;
}

bool Translator::insideOwnWindow(uint32_t context_id, uint64_t start_ns, uint64_t end_ns) const {
  return own_windows_ != nullptr && own_windows_->covers(context_id, start_ns, end_ns);
}

namespace {

// The activity record's own facts about the kernel.
core::KernelRecord kernelRecordOf(const CUpti_ActivityKernel10& k, uint32_t process_id) {
  core::KernelRecord r;
  r.process_id = process_id;
  r.device_id = k.deviceId;
  r.context_id = k.contextId;
  r.stream_id = k.streamId;
  r.correlation_id = k.correlationId;
  r.start_ns = static_cast<int64_t>(k.start);
  r.end_ns = static_cast<int64_t>(k.end);
  r.grid_x = k.gridX;
  r.grid_y = k.gridY;
  r.grid_z = k.gridZ;
  r.block_x = k.blockX;
  r.block_y = k.blockY;
  r.block_z = k.blockZ;
  r.cluster_x = static_cast<int32_t>(k.clusterX);
  r.cluster_y = static_cast<int32_t>(k.clusterY);
  r.cluster_z = static_cast<int32_t>(k.clusterZ);
  r.registers_per_thread = k.registersPerThread;
  r.static_shared_bytes = k.staticSharedMemory;
  r.dynamic_shared_bytes = k.dynamicSharedMemory;
  r.local_bytes_per_thread = k.localMemoryPerThread;
  r.local_bytes_total = static_cast<int64_t>(k.localMemoryTotal_v2);
  r.shared_carveout_bytes = k.sharedMemoryExecuted;
  r.graph_id = k.graphId;
  r.graph_node_id = k.graphNodeId;
  r.name = k.name != nullptr ? k.name : "";
  return r;
}

}  // namespace

void Translator::translateKernel(const CUpti_ActivityKernel10& k, TranslatedBatch& out) {
  uint64_t key = mix(mix(mix(mix(1, k.deviceId), k.correlationId), k.graphNodeId), k.start);
  if (seenBefore(mix(key, k.end))) return;
  if (isIgnoredKernel(k.name) || insideOwnWindow(k.contextId, k.start, k.end)) {
    ++stats_.ignored_kernels;
    return;
  }

  core::KernelRecord r = kernelRecordOf(k, process_id_);
  NameInfo* name_info = k.name != nullptr ? &nameInfo(k.name) : nullptr;
  if (name_info != nullptr) r.demangled_name = name_info->demangled;

  const bool have_function_info = joinLaunch(k, r, name_info, out);
  // Graph nodes carry no CUfunction to ask; a direct launch of the same kernel taught us its size.
  if (!have_function_info && name_info != nullptr && name_info->local_bytes_per_thread >= 0) {
    r.local_bytes_per_thread = name_info->local_bytes_per_thread;
  }
  addOccupancy(k, r);
  out.kernels.push_back(std::move(r));
}

// The launch's facts (API, thread, NVTX, arguments, the function's local size) onto its kernel's
// record; true where the launch knew its function's local size.
bool Translator::joinLaunch(const CUpti_ActivityKernel10& k, core::KernelRecord& r, NameInfo* name_info,
                            TranslatedBatch& out) {
  bool have_function_info = false;
  uint32_t outer = k.correlationId;
  if (auto alias = nested_to_outer_.find(outer); alias != nested_to_outer_.end()) outer = alias->second;
  auto it = launches_.find(outer);
  if (it == launches_.end()) {
    ++stats_.unmatched_kernels;
    return false;
  }
  PendingLaunch& p = it->second;
  r.launch_api = p.info.launch_api;
  r.thread_id = p.info.thread_id;
  r.programmatic_launch = p.info.programmatic;
  if (p.info.nvtx_key != 0) r.nvtx_range_key = p.info.nvtx_key;
  if (p.info.nvtx_path != nullptr) r.nvtx_path = *p.info.nvtx_path;
  // The activity record's localMemoryPerThread reads 0 for kernels with a stack frame (seen on
  // H100/H200, CUDA 13.0); the function attribute is the kernel's own per-thread local size.
  if (p.info.local_bytes_per_thread >= 0) {
    have_function_info = true;
    if (p.info.local_bytes_per_thread != r.local_bytes_per_thread) {
      if (stats_.local_memory_mismatches++ == 0) {
        stats_.local_memory_example = r.name + ": record " + std::to_string(r.local_bytes_per_thread) +
                                      " B, attribute " + std::to_string(p.info.local_bytes_per_thread) + " B";
      }
    }
    r.local_bytes_per_thread = p.info.local_bytes_per_thread;
    if (name_info != nullptr) name_info->local_bytes_per_thread = p.info.local_bytes_per_thread;
  }
  for (size_t i = 0; i < p.info.args.size(); ++i) {
    const LaunchArg& a = p.info.args[i];
    out.kernel_args.push_back(core::KernelArgRecord{k.correlationId, process_id_, a.index, a.offset_bytes,
                                                    a.size_bytes, a.value});
  }
  if (p.info.graph_launch) {
    if (p.first_match_generation == 0) {
      p.first_match_generation = generation_;
      graph_expiry_.push_back(Expiry{generation_, outer});
    }
  } else {
    forget(it);
  }
  return have_function_info;
}

void Translator::addOccupancy(const CUpti_ActivityKernel10& k, core::KernelRecord& r) const {
  auto dev = devices_.find(k.deviceId);
  if (dev == devices_.end()) return;
  core::OccupancyInput in;
  in.registers_per_thread = k.registersPerThread;
  in.threads_per_block = k.blockX * k.blockY * k.blockZ;
  in.static_shared_bytes = k.staticSharedMemory;
  in.dynamic_shared_bytes = k.dynamicSharedMemory;
  if (k.isSharedMemoryCarveoutRequested != 0) in.carveout_percent = k.sharedMemoryCarveoutRequested;
  if (auto occ = core::theoreticalOccupancy(dev->second, in)) {
    r.theoretical_occupancy = occ->occupancy;
    r.theoretical_blocks_per_sm = occ->blocks_per_sm;
    r.occupancy_limiter = occ->limiter;
  }
}

void Translator::translateMemcpy(const CUpti_ActivityMemcpy6& m, TranslatedBatch& out) {
  if (ignored_copies_.count(m.correlationId) != 0 || insideOwnWindow(m.contextId, m.start, m.end)) return;
  uint64_t key = mix(mix(mix(mix(2, m.deviceId), m.correlationId), m.graphNodeId), m.start);
  if (seenBefore(mix(mix(key, m.end), m.bytes))) return;
  core::MemcpyRecord r;
  r.process_id = process_id_;
  r.device_id = m.deviceId;
  r.context_id = m.contextId;
  r.stream_id = m.streamId;
  r.correlation_id = m.correlationId;
  r.start_ns = static_cast<int64_t>(m.start);
  r.end_ns = static_cast<int64_t>(m.end);
  r.bytes = static_cast<int64_t>(m.bytes);
  r.copy_kind = memcpyKindName(m.copyKind);
  r.src_kind = memoryKindName(m.srcKind);
  r.dst_kind = memoryKindName(m.dstKind);
  r.graph_id = m.graphId;
  out.memcpys.push_back(std::move(r));
}

void Translator::translateMemset(const CUpti_ActivityMemset4& m, TranslatedBatch& out) {
  if (insideOwnWindow(m.contextId, m.start, m.end)) return;
  uint64_t key = mix(mix(mix(mix(3, m.deviceId), m.correlationId), m.graphNodeId), m.start);
  if (seenBefore(mix(mix(key, m.end), m.bytes))) return;
  core::MemsetRecord r;
  r.process_id = process_id_;
  r.device_id = m.deviceId;
  r.context_id = m.contextId;
  r.stream_id = m.streamId;
  r.correlation_id = m.correlationId;
  r.start_ns = static_cast<int64_t>(m.start);
  r.end_ns = static_cast<int64_t>(m.end);
  r.bytes = static_cast<int64_t>(m.bytes);
  r.value = m.value;
  r.memory_kind = memoryKindName(m.memoryKind);
  r.graph_id = m.graphId;
  out.memsets.push_back(std::move(r));
}

void Translator::translateMemory(const CUpti_ActivityMemory4& m, TranslatedBatch& out) {
  if (m.memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION &&
      m.memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
    ++stats_.ignored_records;
    return;
  }
  // fprof's own checkpoint allocates and frees its copy inside a window.
  if (insideOwnWindow(m.contextId, m.timestamp, m.timestamp)) return;
  uint64_t key = mix(mix(mix(mix(4, m.deviceId), m.correlationId), m.address), m.timestamp);
  if (seenBefore(mix(key, m.memoryOperationType))) return;
  core::MemoryEventRecord r;
  r.process_id = process_id_;
  r.device_id = m.deviceId;
  r.context_id = m.contextId;
  r.stream_id = m.streamId;
  r.correlation_id = m.correlationId;
  r.timestamp_ns = static_cast<int64_t>(m.timestamp);
  r.is_alloc = m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  r.address = m.address;
  r.bytes = static_cast<int64_t>(m.bytes);
  r.memory_kind = memoryKindName(m.memoryKind);
  out.memory_events.push_back(std::move(r));
}

}  // namespace fprof::collector
