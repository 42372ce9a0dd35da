// Producer -> consumer edges from argument roles and buffer versions (see dataflow.h). Read top
// down: the launch arguments, the accesses of every kernel (steps 1 and 2), their extents, then
// the walk that links readers to writers (step 3, ProducerLinker).
#include "fprof/analysis/dataflow.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace fprof::analysis {

namespace {

uint64_t pairKey(uint32_t a, uint32_t b) { return (uint64_t{a} << 32) | b; }

// The launch arguments and memory events data flow reads: a profile's own, or tables kept apart
// from it (OwnedLaunchTables).
struct LaunchTables {
  const std::vector<core::KernelArgRecord>& kernel_args;      // by (process, correlation id)
  const std::vector<core::MemoryEventRecord>& memory_events;  // by timestamp
};

// The recorded 8-byte arguments of each launch. kernel_args is sorted by (process, correlation
// id), so each launch's arguments are one run, found by binary search (kernels come mostly in
// correlation order: the next run is tried first). Kernels sharing a launch (graph nodes) are
// found by sorting the launch keys once.
class LaunchArgs {
 public:
  LaunchArgs(const std::vector<core::KernelRow>& kernels, const std::vector<core::KernelArgRecord>& args) : args_(args) {
    for (size_t i = 0; i < args.size(); ++i) {
      const uint64_t key = pairKey(args[i].process_id, args[i].correlation_id);
      if (runs_.empty() || runs_.back().first != key) runs_.emplace_back(key, static_cast<uint32_t>(i));
    }
    if (args.empty()) return;
    std::vector<uint64_t> keys;
    keys.reserve(kernels.size());
    for (const core::KernelRow& k : kernels) keys.push_back(pairKey(k.process_id, k.correlation_id));
    std::sort(keys.begin(), keys.end());
    for (size_t i = 1; i < keys.size(); ++i) {
      if (keys[i] == keys[i - 1] && (shared_.empty() || shared_.back() != keys[i])) shared_.push_back(keys[i]);
    }
  }

  // Several kernels came from this kernel's launch: their arguments cannot be told apart.
  bool shared(const core::KernelRow& k) const {
    return std::binary_search(shared_.begin(), shared_.end(), pairKey(k.process_id, k.correlation_id));
  }

  // [first, first + count) of the arguments.
  std::pair<size_t, size_t> of(const core::KernelRow& k) {
    const uint64_t key = pairKey(k.process_id, k.correlation_id);
    const auto* run = findRun(key);
    if (!run) return {0, 0};
    size_t end = run->second;
    while (end < args_.size() && pairKey(args_[end].process_id, args_[end].correlation_id) == key) {
      ++end;
    }
    return {run->second, end - run->second};
  }

 private:
  const std::pair<uint64_t, uint32_t>* findRun(uint64_t key) {
    for (size_t c = cursor_; c < cursor_ + 2 && c < runs_.size(); ++c) {
      if (runs_[c].first == key) {
        cursor_ = c + 1;
        return &runs_[c];
      }
    }
    auto it = std::lower_bound(runs_.begin(), runs_.end(), std::make_pair(key, uint32_t{0}));
    if (it == runs_.end() || it->first != key) return nullptr;
    cursor_ = static_cast<size_t>(it - runs_.begin()) + 1;
    return &*it;
  }

  const std::vector<core::KernelArgRecord>& args_;
  std::vector<std::pair<uint64_t, uint32_t>> runs_;  // (launch key, first argument index)
  std::vector<uint64_t> shared_;                     // launches that produced several kernels
  size_t cursor_ = 0;
};

// Values appended in blocks and joined once into a vector of exactly their number: grown one value
// at a time, a vector of a million accesses passes through 1.5 times its final size as it moves
// and ends with up to twice it.
template <class T>
class BlockAppender {
 public:
  void append(const std::vector<T>& values) {
    for (const T& v : values) {
      if (blocks_.empty() || blocks_.back().size() == kBlock) {
        blocks_.emplace_back();
        blocks_.back().reserve(kBlock);
      }
      blocks_.back().push_back(v);
    }
    size_ += values.size();
  }
  size_t size() const { return size_; }
  // Each block is let go as soon as it is copied.
  std::vector<T> join() {
    std::vector<T> out;
    out.reserve(size_);
    for (std::vector<T>& block : blocks_) {
      out.insert(out.end(), block.begin(), block.end());
      std::vector<T>().swap(block);
    }
    blocks_.clear();
    size_ = 0;
    return out;
  }

 private:
  static constexpr size_t kBlock = 16384;
  std::vector<std::vector<T>> blocks_;
  size_t size_ = 0;
};

// Steps 1 and 2 for every kernel: its pointer arguments resolved to allocations with their roles
// (accesses, without extents yet), whether it is opaque, and the frees that happened before it.
struct ResolvedLaunches {
  std::vector<uint32_t> access_begin;
  // In blocks as resolved, joined into `accesses` once the launch tables are let go (dataFlowOf):
  // the join holds them twice over for a moment.
  BlockAppender<KernelAccess> access_blocks;
  std::vector<KernelAccess> accesses;
  std::vector<uint8_t> args_known;
  std::vector<uint8_t> opaque;
  std::vector<std::pair<size_t, uint32_t>> frees;  // (kernel index it precedes, allocation)
};

// Merges the roles of arguments passing the same pointer (in place: read and written) into one
// launch's accesses.
void addAccess(std::vector<KernelAccess>& out, uint32_t allocation, uint64_t address, int32_t arg_offset,
               const ArgRoleResult& role) {
  KernelAccess* a = nullptr;
  for (size_t x = 0; x < out.size(); ++x) {
    if (out[x].address == address) a = &out[x];
  }
  if (!a) {
    KernelAccess added;
    added.allocation = allocation;
    added.source = role.source;
    added.address = address;
    added.arg_offset = arg_offset;
    out.push_back(added);
    a = &out.back();
  } else {
    a->source = weaker(a->source, role.source);
  }
  a->read = a->read || role.role == ArgRole::kRead;
  a->write = a->write || role.role == ArgRole::kWrite;
  a->unknown = a->unknown || role.role == ArgRole::kUnknown;
}

// A measured function writes through the arguments measured as written. A launch of it that does
// not show each of them resolved to device memory (the collector recorded a larger parameter's
// first words only, or the value was not a live allocation) writes where fprof cannot see; so does
// one of a function measured to write nothing (its writes went through words the probe did not
// read, or left the sampled bytes as they were).
bool hidesMeasuredWrite(const MeasuredRoles& measured, const core::KernelRow& k, const std::vector<ArgSlot>& seen) {
  const auto writes = measured.empty() ? std::nullopt : measured.writes(k.process_id, k.name_id);
  if (!writes) return false;
  if (writes->empty()) return true;
  return std::any_of(writes->begin(), writes->end(), [&](const ArgSlot& w) {
    return std::none_of(seen.begin(), seen.end(), [&](const ArgSlot& s) { return MeasuredRoles::covers(w, s); });
  });
}

ResolvedLaunches resolveLaunches(const core::Profile& p, const LaunchTables& tables, const AllocationTable& table,
                                 const MeasuredRoles& measured) {
  const std::vector<core::KernelArgRecord>& kernel_args = tables.kernel_args;
  ResolvedLaunches r;
  r.access_begin.assign(p.kernels.size() + 1, 0);
  r.args_known.assign(p.kernels.size(), 0);
  r.opaque.assign(p.kernels.size(), 0);
  LaunchArgs args(p.kernels, kernel_args);
  LiveAllocations live(tables.memory_events, table);
  // Whether the collector recorded the 8-byte words of larger parameters too (arg_roles.h).
  const bool words_recorded = std::any_of(kernel_args.begin(), kernel_args.end(),
                                          [](const core::KernelArgRecord& a) { return a.size_bytes > 8; });
  std::unordered_map<uint32_t, Signature> signatures;  // by demangled name id
  std::vector<ArgSlot> slots;
  struct Resolved {
    uint32_t allocation = 0;
    uint64_t address = 0;
    int32_t offset = 0;  // of the argument in the parameter buffer
  };
  std::vector<Resolved> resolved;  // by argument index
  std::vector<std::optional<ArgRoleResult>> roles;
  BlockAppender<KernelAccess> accesses;
  std::vector<KernelAccess> launch_accesses;  // one launch's, merged
  for (size_t ki = 0; ki < p.kernels.size(); ++ki) {
    const core::KernelRow& k = p.kernels[ki];
    live.advanceTo(k.start_ns, [&](uint32_t freed) { r.frees.emplace_back(ki, freed); });
    r.access_begin[ki] = static_cast<uint32_t>(accesses.size());
    if (kernel_args.empty()) continue;
    if (k.graph_id != 0 || args.shared(k)) {
      r.opaque[ki] = 1;  // anything may have been written
      continue;
    }
    r.args_known[ki] = 1;
    const auto [first, count] = args.of(k);
    slots.clear();
    resolved.clear();
    for (size_t a = first; a < first + count; ++a) {
      const core::KernelArgRecord& arg = kernel_args[a];
      // An 8-byte parameter, or an 8-byte word of a larger one (a struct or array read word by word).
      if (arg.size_bytes < 8 || arg.value == 0) continue;
      if (auto alloc = live.find(k.process_id, arg.value)) {
        slots.push_back({arg.index, arg.size_bytes > 8 ? std::optional<int32_t>(arg.offset_bytes) : std::nullopt});
        resolved.push_back({*alloc, arg.value, arg.offset_bytes});
      }
    }
    auto sig = signatures.find(k.demangled_id);
    if (sig == signatures.end()) sig = signatures.emplace(k.demangled_id, parseSignature(p.str(k.demangled_id))).first;
    const bool hides_writes =
        launchIsOpaque(sig->second, count ? &kernel_args[first] : nullptr, count, resolved.size(), words_recorded) ||
        hidesMeasuredWrite(measured, k, slots);
    r.opaque[ki] = hides_writes ? 1 : 0;
    if (resolved.empty()) continue;
    argumentRoles(measured, sig->second, k.process_id, k.name_id, slots, roles);
    launch_accesses.clear();
    for (size_t i = 0; i < resolved.size(); ++i) {
      if (roles[i]) addAccess(launch_accesses, resolved[i].allocation, resolved[i].address, resolved[i].offset, *roles[i]);
    }
    accesses.append(launch_accesses);
  }
  r.access_begin[p.kernels.size()] = static_cast<uint32_t>(accesses.size());
  r.access_blocks = std::move(accesses);
  return r;
}

// Tensors bounded by the pointers of the launches this close (NearExtents): more than a layer of a
// transformer, whose live tensors are each passed to some kernel within that span.
constexpr int64_t kNearLaunches = 32;

// Launches of one function with one launch shape, and an argument of theirs: tensors of one size.
struct SameWorkKey {
  uint32_t process_id = 0, name_id = 0;
  int32_t grid[3] = {}, block[3] = {};
  int32_t arg_offset = 0;
  bool operator==(const SameWorkKey& o) const {
    return process_id == o.process_id && name_id == o.name_id && std::equal(grid, grid + 3, o.grid) &&
           std::equal(block, block + 3, o.block) && arg_offset == o.arg_offset;
  }
};
struct SameWorkHash {
  size_t operator()(const SameWorkKey& k) const {
    uint64_t h = (uint64_t{k.process_id} << 32) ^ k.name_id;
    for (int32_t v : {k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2], k.arg_offset}) {
      h = h * 1099511628211ull ^ static_cast<uint32_t>(v);
    }
    return static_cast<size_t>(h);
  }
};

// No written tensor seen (WrittenLifetimes::sizeAt); held in KernelAccess::tensor_bytes between
// the steps of assignExtents.
constexpr int64_t kNoWrittenSize = INT64_MIN;

// Each access's written tensor size, where its lifetimes give one, into tensor_bytes. The
// lifetimes hold every access until they finish, and are let go before the extents are built.
void writtenSizes(std::vector<KernelAccess>& accesses, const std::vector<uint32_t>& access_begin,
                  const AllocationTable& table) {
  WrittenLifetimes lifetimes(table);
  for (size_t k = 0; k + 1 < access_begin.size(); ++k) {
    for (uint32_t x = access_begin[k]; x < access_begin[k + 1]; ++x) {
      lifetimes.add(accesses[x].allocation, accesses[x].address, k, accesses[x].write);
    }
  }
  lifetimes.finish();
  for (size_t k = 0; k + 1 < access_begin.size(); ++k) {
    for (uint32_t x = access_begin[k]; x < access_begin[k + 1]; ++x) {
      KernelAccess& a = accesses[x];
      a.tensor_bytes = lifetimes.sizeAt(a.allocation, a.address, k).value_or(kNoWrittenSize);
    }
  }
}

// The sizes seen by the launches doing one work at one argument: a written tensor's are upper
// bounds (the smallest is the tightest); without one, the launches around them say (the median).
// Those of the launches around are kept only until a written size is seen.
struct SameWorkSizes {
  std::optional<int64_t> smallest_written;
  std::vector<int64_t> near;
  int64_t tensor_bytes = 0;

  void addWritten(int64_t bytes) {
    smallest_written = std::min(smallest_written.value_or(bytes), bytes);
    if (!near.empty()) std::vector<int64_t>().swap(near);
  }
  void addNear(int64_t bytes) {
    if (!smallest_written) near.push_back(bytes);
  }
  void settle() {
    if (smallest_written) {
      tensor_bytes = *smallest_written;
      return;
    }
    std::nth_element(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(near.size() / 2), near.end());
    tensor_bytes = near[near.size() / 2];
    std::vector<int64_t>().swap(near);
  }
};

// Step 2: the bytes each access covers, and its tensor's size.
void assignExtents(const core::Profile& p, std::vector<KernelAccess>& accesses, const std::vector<uint32_t>& access_begin,
                   const AllocationTable& table) {
  writtenSizes(accesses, access_begin, table);
  Extents extents(table);
  NearExtents near(table, kNearLaunches);
  for (size_t k = 0; k + 1 < access_begin.size(); ++k) {
    for (uint32_t x = access_begin[k]; x < access_begin[k + 1]; ++x) {
      extents.addPointer(accesses[x].allocation, accesses[x].address);
      near.addPointer(accesses[x].allocation, accesses[x].address, k);
    }
  }
  extents.finish();
  near.finish();
  // Per launches doing the same work, in the order first seen; each access's group by index.
  std::unordered_map<SameWorkKey, uint32_t, SameWorkHash> group_of;
  std::vector<SameWorkSizes> groups;
  std::vector<uint32_t> group(accesses.size());
  for (size_t k = 0; k + 1 < access_begin.size(); ++k) {
    const core::KernelRow& kr = p.kernels[k];
    for (uint32_t x = access_begin[k]; x < access_begin[k + 1]; ++x) {
      KernelAccess& a = accesses[x];
      a.bytes = extents.of(a.allocation, a.address).bytes();
      const SameWorkKey key{kr.process_id, kr.demangled_id, {kr.grid_x, kr.grid_y, kr.grid_z},
                            {kr.block_x, kr.block_y, kr.block_z}, a.arg_offset};
      const auto [at, added] = group_of.emplace(key, static_cast<uint32_t>(groups.size()));
      if (added) groups.emplace_back();
      group[x] = at->second;
      SameWorkSizes& sizes = groups[at->second];
      if (a.tensor_bytes != kNoWrittenSize) {
        sizes.addWritten(std::max(a.bytes, a.tensor_bytes));
      } else {
        const ByteRange t = a.write && !a.read ? near.ofWrite(a.allocation, a.address, k)
                                               : near.ofRead(a.allocation, a.address, k);
        sizes.addNear(std::max(a.bytes, t.bytes()));
      }
    }
  }
  // Once per group, not per access: a group holds every launch of its kernel and shape.
  for (SameWorkSizes& sizes : groups) sizes.settle();
  for (size_t x = 0; x < accesses.size(); ++x) accesses[x].tensor_bytes = groups[group[x]].tensor_bytes;
}

// Device-to-device copies whose driver call named their addresses (memcpy_address, schema 3), both
// inside allocations live when the copy started: they pass the source's value on to the
// destination. In start order.
struct AddressedCopy {
  int64_t start_ns = 0;
  uint32_t process_id = 0, device_id = 0, stream_id = 0;
  uint32_t src_allocation = 0, dst_allocation = 0;
  uint64_t src = 0, dst = 0;
  int64_t bytes = 0;
  uint32_t correlation_id = 0;
};

std::vector<AddressedCopy> addressedCopies(const core::Profile& p, const std::vector<core::MemoryEventRecord>& memory_events,
                                           const AllocationTable& table) {
  std::vector<AddressedCopy> out;
  if (p.memcpy_addresses.empty()) return out;
  std::unordered_map<uint64_t, const core::MemcpyAddressRecord*> by_call;
  for (const core::MemcpyAddressRecord& a : p.memcpy_addresses) by_call[pairKey(a.process_id, a.correlation_id)] = &a;
  LiveAllocations live(memory_events, table);
  for (const core::MemcpyRecord& m : p.memcpys) {  // in start order
    if (m.copy_kind != "DtoD") continue;
    const auto it = by_call.find(pairKey(m.process_id, m.correlation_id));
    if (it == by_call.end()) continue;
    live.advanceTo(m.start_ns, [](uint32_t) {});
    const auto src = live.find(m.process_id, it->second->src_address);
    const auto dst = live.find(m.process_id, it->second->dst_address);
    if (!src || !dst) continue;
    out.push_back({m.start_ns, m.process_id, m.device_id, m.stream_id, *src, *dst, it->second->src_address,
                   it->second->dst_address, m.bytes, m.correlation_id});
  }
  return out;
}

// Copies and memsets that may write device memory: writers fprof sees no address of (the
// addressed copies above are left out). (process, device, start) in start order.
struct DeviceWrite {
  int64_t start_ns = 0;
  uint32_t process_id = 0;
  uint32_t device_id = 0;
};

std::vector<DeviceWrite> deviceWrites(const core::Profile& p, const std::vector<AddressedCopy>& addressed) {
  std::unordered_set<uint64_t> passed;
  for (const AddressedCopy& c : addressed) passed.insert(pairKey(c.process_id, c.correlation_id));
  std::vector<DeviceWrite> w;
  for (const core::MemcpyRecord& m : p.memcpys) {
    if (passed.count(pairKey(m.process_id, m.correlation_id)) != 0) continue;
    const bool to_device = m.dst_kind == "device" || m.dst_kind == "managed" || m.dst_kind == "array" ||
                           m.copy_kind == "HtoD" || m.copy_kind == "DtoD" || m.copy_kind == "PtoP";
    if (to_device) w.push_back({m.start_ns, m.process_id, m.device_id});
  }
  for (const core::MemsetRecord& m : p.memsets) {
    if (m.memory_kind != "pinned" && m.memory_kind != "pageable") w.push_back({m.start_ns, m.process_id, m.device_id});
  }
  std::sort(w.begin(), w.end(), [](const DeviceWrite& a, const DeviceWrite& b) { return a.start_ns < b.start_ns; });
  return w;
}

uint64_t streamKey(uint32_t process_id, uint32_t device_id, uint32_t stream_id) {
  return (uint64_t{process_id} << 48) ^ (uint64_t{device_id} << 40) ^ stream_id;
}

uint64_t streamKey(const core::KernelRow& k) { return streamKey(k.process_id, k.device_id, k.stream_id); }

// One written value: who wrote it, where and when, and how many kernels read it. 64 bytes: the
// walk holds one per write of the run. Kernel indices are 32-bit, as the op index's are.
struct Value {
  static constexpr uint32_t kNone = UINT32_MAX;
  uint64_t stream = 0;
  uint64_t epoch = 0;    // the device's opaque-writer count at the write
  uint64_t address = 0;  // the write's pointer and its tensor's size (KernelAccess)
  int64_t tensor_bytes = 0;
  uint32_t writer = kNone;  // kNone: an access of unknown role ended what was there
  uint32_t allocation = 0;
  int32_t readers = 0;
  int32_t linked = 0;  // readers with an edge from it
  uint32_t last_reader = kNone;
  uint32_t last_linked = kNone;
  RoleSource source = RoleSource::kPosition;

  bool written() const { return writer != kNone; }
};
static_assert(sizeof(Value) <= 64);

// Step 3: the walk in time order. For each kernel: what happened on its device since the last one
// (frees end versions; copies and memsets advance the device's epoch), its reads (linked to the
// versions they see, if written on its stream in the same epoch), then its writes (new versions).
// An opaque kernel advances its device's epoch between the two.
class ProducerLinker {
 public:
  ProducerLinker(const core::Profile& p, const ResolvedLaunches& r, DataFlow& df, std::vector<AddressedCopy> passes)
      : p_(p),
        r_(r),
        df_(df),
        versions_(df.allocations.size()),
        passes_(std::move(passes)),
        copies_(deviceWrites(p, passes_)) {
    values_.reserve(valuesWritten());
  }

  void run() {
    for (size_t ki = 0; ki < p_.kernels.size(); ++ki) {
      uint64_t& epoch = catchUp(ki);
      linkReads(ki, epoch);
      if (r_.opaque[ki]) ++epoch;  // its unseen writes land while it runs, before its visible ones
      recordWrites(ki, epoch);
    }
    countReaders();
  }

 private:
  // Frees and device writes before kernel ki; its device's epoch.
  uint64_t& catchUp(size_t ki) {
    const core::KernelRow& k = p_.kernels[ki];
    for (; next_free_ < r_.frees.size() && r_.frees[next_free_].first <= ki; ++next_free_) {
      versions_.clear(r_.frees[next_free_].second);
    }
    for (; next_copy_ < copies_.size() && copies_[next_copy_].start_ns < k.start_ns; ++next_copy_) {
      ++device_epoch_[pairKey(copies_[next_copy_].process_id, copies_[next_copy_].device_id)];
    }
    for (; next_pass_ < passes_.size() && passes_[next_pass_].start_ns < k.start_ns; ++next_pass_) {
      passCopy(passes_[next_pass_]);
    }
    const uint64_t dkey = pairKey(k.process_id, k.device_id);
    if (dkey != last_device_) {
      epoch_slot_ = &device_epoch_[dkey];  // unordered_map references stay valid as it grows
      last_device_ = dkey;
    }
    return *epoch_slot_;
  }

  // A device-to-device copy with known addresses: the destination holds the value the source held
  // (the one covering most of the copied bytes), written by the same kernel, now on the copy's
  // stream; with no kernel's value there, what it held before is gone.
  void passCopy(const AddressedCopy& c) {
    const ByteRange from{c.src, c.src + static_cast<uint64_t>(c.bytes)};
    int32_t source = -1;
    int64_t most = 0;
    versions_.forEachOverlap(c.src_allocation, from, [&](int32_t v, int64_t bytes) {
      ++values_[static_cast<size_t>(v)].readers;  // the copy read it
      if (bytes > most) most = bytes, source = v;
    });
    Value val;
    if (source >= 0) {
      const Value& s = values_[static_cast<size_t>(source)];
      val.writer = s.writer;
      val.source = s.source;
    }
    val.stream = streamKey(c.process_id, c.device_id, c.stream_id);
    val.epoch = device_epoch_[pairKey(c.process_id, c.device_id)];
    val.allocation = c.dst_allocation;
    val.address = c.dst;
    val.tensor_bytes = c.bytes;
    versions_.write(c.dst_allocation, {c.dst, c.dst + static_cast<uint64_t>(c.bytes)}, static_cast<int32_t>(values_.size()));
    values_.push_back(val);
  }

  void linkReads(size_t kernel, uint64_t epoch) {
    const auto ki = static_cast<uint32_t>(kernel);
    const uint64_t stream = streamKey(p_.kernels[ki]);
    found_.clear();
    for (uint32_t x = r_.access_begin[ki]; x < r_.access_begin[ki + 1]; ++x) {
      const KernelAccess& acc = r_.accesses[x];
      if (!acc.read && !acc.unknown) continue;
      if (acc.read) {
        Allocation& al = df_.allocations[acc.allocation];
        ++al.reader_launches;
        if (!al.first_reader) al.first_reader = ki;
      }
      versions_.forEachOverlap(acc.allocation, rangeOf(acc), [&](int32_t v, int64_t bytes) {
        Value& val = values_[static_cast<size_t>(v)];
        if (val.last_reader != ki) {
          val.last_reader = ki;
          ++val.readers;  // an access of unknown role may have read it: a reader all the same
        }
        if (acc.read && val.written() && val.writer != ki && val.stream == stream && val.epoch == epoch) {
          if (val.last_linked != ki) {
            val.last_linked = ki;
            ++val.linked;
          }
          addEdge(ki, acc, val, v, bytes);
        }
      });
    }
    flushEdges();
  }

  // One edge per (producer, allocation) of this consumer; the values it passed are remembered.
  void addEdge(size_t ki, const KernelAccess& acc, const Value& val, int32_t v, int64_t bytes) {
    size_t e = 0;
    while (e < found_.size() && (found_[e].producer != val.writer || found_[e].allocation != acc.allocation)) ++e;
    if (e == found_.size()) {
      DataEdge edge;
      edge.producer = val.writer;
      edge.consumer = ki;
      edge.allocation = acc.allocation;
      edge.roles = val.source;
      found_.push_back(edge);
    }
    found_[e].bytes += bytes;
    // The consumer reads the tensor the producer wrote, from its own pointer on: the write's size
    // says how much (a read's own near extent may be cut by views of the block's next tensor).
    const uint64_t lo = std::max(acc.address, val.address);
    const uint64_t hi = val.address + static_cast<uint64_t>(val.tensor_bytes);
    if (hi > lo) found_[e].tensor_bytes = std::max(found_[e].tensor_bytes, static_cast<int64_t>(hi - lo));
    found_[e].roles = weaker(found_[e].roles, weaker(val.source, acc.source));
    found_values_.emplace_back(static_cast<uint32_t>(e), v);
  }

  // This consumer's edges into df, by producer.
  void flushEdges() {
    order_.resize(found_.size());
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
    if (order_.size() > 1) {
      std::sort(order_.begin(), order_.end(), [&](size_t a, size_t b) {
        return found_[a].producer != found_[b].producer ? found_[a].producer < found_[b].producer
                                                        : found_[a].allocation < found_[b].allocation;
      });
    }
    slot_.resize(found_.size());
    for (size_t i = 0; i < order_.size(); ++i) {
      slot_[order_[i]] = static_cast<uint32_t>(df_.edges.size());
      df_.edges.push_back(found_[order_[i]]);
    }
    for (const auto& [e, v] : found_values_) edge_values_.emplace_back(slot_[e], v);
    found_values_.clear();
  }

  void recordWrites(size_t ki, uint64_t epoch) {
    const uint64_t stream = streamKey(p_.kernels[ki]);
    for (uint32_t x = r_.access_begin[ki]; x < r_.access_begin[ki + 1]; ++x) {
      const KernelAccess& acc = r_.accesses[x];
      if (!acc.write && !acc.unknown) continue;
      Value val;
      if (acc.write) {
        val.writer = static_cast<uint32_t>(ki);
        Allocation& al = df_.allocations[acc.allocation];
        ++al.writer_launches;
        if (!al.first_writer) al.first_writer = ki;
      }
      val.stream = stream;
      val.epoch = epoch;
      val.source = acc.source;
      val.allocation = acc.allocation;
      val.address = acc.address;
      val.tensor_bytes = acc.tensor_bytes;
      versions_.write(acc.allocation, rangeOf(acc), static_cast<int32_t>(values_.size()));
      values_.push_back(val);
    }
  }

  // Readers are known once the walk is over: each edge's (the most of any value it passed), and
  // per allocation how many values were read exactly once.
  void countReaders() {
    for (const auto& [e, v] : edge_values_) {
      const Value& val = values_[static_cast<size_t>(v)];
      df_.edges[e].readers_of_value = std::max(df_.edges[e].readers_of_value, val.readers);
      df_.edges[e].linked_readers = std::max(df_.edges[e].linked_readers, val.linked);
    }
    std::vector<int32_t> written(df_.allocations.size(), 0), read_once(df_.allocations.size(), 0);
    for (const Value& v : values_) {
      if (!v.written()) continue;
      ++written[v.allocation];
      if (v.readers == 1) ++read_once[v.allocation];
    }
    for (uint32_t a = 0; a < df_.allocations.size(); ++a) {
      Allocation& al = df_.allocations[a];
      al.values_written = written[a];
      al.values_read_once = read_once[a];
      if (al.values_written > 0 && al.values_read_once == al.values_written) df_.written_once_read_once.push_back(a);
    }
  }

  // A value for each access that may write (a write, or an access of unknown role) and each copy
  // passing one on: known before the walk, so that values_ is sized once.
  size_t valuesWritten() const {
    const auto writes = std::count_if(r_.accesses.begin(), r_.accesses.end(),
                                      [](const KernelAccess& a) { return a.write || a.unknown; });
    return static_cast<size_t>(writes) + passes_.size();
  }

  static ByteRange rangeOf(const KernelAccess& a) { return {a.address, a.address + static_cast<uint64_t>(a.bytes)}; }

  const core::Profile& p_;
  const ResolvedLaunches& r_;
  DataFlow& df_;
  ByteVersions versions_;
  std::vector<Value> values_;
  const std::vector<AddressedCopy> passes_;
  const std::vector<DeviceWrite> copies_;
  std::unordered_map<uint64_t, uint64_t> device_epoch_;
  size_t next_copy_ = 0, next_free_ = 0, next_pass_ = 0;
  uint64_t last_device_ = ~uint64_t{0};
  uint64_t* epoch_slot_ = nullptr;
  std::vector<DataEdge> found_;                           // this consumer's edges
  std::vector<std::pair<uint32_t, int32_t>> found_values_;  // (index in found_, value)
  std::vector<std::pair<uint32_t, int32_t>> edge_values_;   // (edge, value)
  std::vector<size_t> order_;                               // sorting this consumer's edges
  std::vector<uint32_t> slot_;
};

// Data flow's steps; `tables_read` is called once nothing reads the launch tables any more.
template <typename TablesRead>
DataFlow dataFlowOf(const core::Profile& p, const LaunchTables& tables, const MeasuredRoles& measured,
                    TablesRead&& tables_read) {
  DataFlow df;
  df.have_args = !tables.kernel_args.empty();
  df.have_allocations = !tables.memory_events.empty();
  df.have_measured_roles = !measured.empty();
  AllocationTable table = buildAllocations(tables.memory_events);
  ResolvedLaunches launches = resolveLaunches(p, tables, table, measured);
  std::vector<AddressedCopy> passes = addressedCopies(p, tables.memory_events, table);
  tables_read();
  launches.accesses = launches.access_blocks.join();
  assignExtents(p, launches.accesses, launches.access_begin, table);
  df.allocations = std::move(table.allocations);
  df.timelines = std::move(table.timelines);
  df.unmatched_frees = table.unmatched_frees;
  ProducerLinker(p, launches, df, std::move(passes)).run();
  df.access_begin = std::move(launches.access_begin);
  df.accesses = std::move(launches.accesses);
  df.args_known = std::move(launches.args_known);
  df.opaque = std::move(launches.opaque);
  return df;
}

}  // namespace

DataFlow analyzeDataFlow(const core::Profile& p) { return analyzeDataFlow(p, measuredRoles(p)); }

DataFlow analyzeDataFlow(const core::Profile& p, const MeasuredRoles& measured) {
  return dataFlowOf(p, {p.kernel_args, p.memory_events}, measured, [] {});
}

DataFlow analyzeDataFlow(const core::Profile& p, OwnedLaunchTables tables, const MeasuredRoles& measured) {
  return dataFlowOf(p, {tables.kernel_args, tables.memory_events}, measured, [&] {
    std::vector<core::KernelArgRecord>().swap(tables.kernel_args);
    std::vector<core::MemoryEventRecord>().swap(tables.memory_events);
  });
}

}  // namespace fprof::analysis
