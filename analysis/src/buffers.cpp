// Allocations, pointer extents and byte versions (see buffers.h).
#include "fprof/analysis/buffers.h"

#include <algorithm>
#include <limits>

namespace fprof::analysis {

namespace {
uint64_t pairKey(uint32_t a, uint32_t b) { return (uint64_t{a} << 32) | b; }
}  // namespace

AllocationTable buildAllocations(const std::vector<core::MemoryEventRecord>& memory_events) {
  AllocationTable t;
  // Sized first: grown one allocation at a time, the table of a long run keeps up to twice its size.
  t.allocations.reserve(static_cast<size_t>(
      std::count_if(memory_events.begin(), memory_events.end(), [](const core::MemoryEventRecord& e) { return e.is_alloc; })));
  std::unordered_map<uint64_t, size_t> timeline_of;
  std::unordered_map<uint64_t, uint32_t> open;  // (process, address) -> allocation
  for (const core::MemoryEventRecord& e : memory_events) {
    auto [tit, inserted] = timeline_of.emplace(pairKey(e.process_id, e.device_id), t.timelines.size());
    if (inserted) t.timelines.push_back({e.process_id, e.device_id, {}, 0, 0});
    MemoryTimeline& tl = t.timelines[tit->second];
    const int64_t current = tl.points.empty() ? 0 : tl.points.back().second;
    const uint64_t akey = (uint64_t{e.process_id} << 56) ^ e.address;
    if (e.is_alloc) {
      Allocation a;
      a.process_id = e.process_id;
      a.device_id = e.device_id;
      a.address = e.address;
      a.bytes = e.bytes;
      a.alloc_ns = e.timestamp_ns;
      open[akey] = static_cast<uint32_t>(t.allocations.size());
      t.allocations.push_back(std::move(a));
      tl.points.emplace_back(e.timestamp_ns, current + e.bytes);
      if (current + e.bytes > tl.peak_allocated_bytes) {
        tl.peak_allocated_bytes = current + e.bytes;
        tl.peak_ns = e.timestamp_ns;
      }
      continue;
    }
    auto it = open.find(akey);
    if (it == open.end()) {
      ++t.unmatched_frees;
      continue;
    }
    Allocation& a = t.allocations[it->second];
    a.free_ns = e.timestamp_ns;
    open.erase(it);
    tl.points.emplace_back(e.timestamp_ns, current - a.bytes);
  }
  return t;
}

void LiveAllocations::apply(const core::MemoryEventRecord& e, std::optional<uint32_t>* freed) {
  auto& live = live_[e.process_id];
  if (e.is_alloc) {
    live[e.address] = next_allocation_++;
    return;
  }
  auto it = live.find(e.address);
  if (it == live.end()) return;
  *freed = it->second;
  live.erase(it);
}

std::optional<uint32_t> LiveAllocations::find(uint32_t process_id, uint64_t address) const {
  if (process_id != last_process_ || !last_live_) {
    const auto pit = live_.find(process_id);
    if (pit == live_.end()) return std::nullopt;
    last_process_ = process_id;
    last_live_ = &pit->second;  // unordered_map nodes stay put
  }
  const auto& live = *last_live_;
  auto it = live.upper_bound(address);
  if (it == live.begin()) return std::nullopt;
  --it;
  const Allocation& a = table_.allocations[it->second];
  if (address >= a.address + static_cast<uint64_t>(a.bytes)) return std::nullopt;
  return it->second;
}

void Extents::finish() {
  for (auto& s : starts_) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }
}

ByteRange Extents::of(uint32_t allocation, uint64_t address) const {
  const Allocation& a = table_.allocations[allocation];
  const std::vector<uint64_t>& s = starts_[allocation];
  const auto next = std::upper_bound(s.begin(), s.end(), address);
  return {address, next == s.end() ? a.address + static_cast<uint64_t>(a.bytes) : *next};
}

void NearExtents::finish() {
  for (auto& s : starts_) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }
}

std::optional<uint64_t> NearExtents::nextPassed(uint32_t allocation, uint64_t address, int64_t first,
                                                int64_t last) const {
  const auto& s = starts_[allocation];
  // The addresses above this one, each with the kernels that passed it in ascending order: the
  // first address passed within [first, last] ends the tensor. At most kMaxSteps addresses are
  // tried; past them the last one tried ends it (a bound, if a loose one).
  constexpr int kMaxSteps = 256;
  auto it = std::upper_bound(s.begin(), s.end(), std::make_pair(address, std::numeric_limits<int64_t>::max()));
  for (int steps = 0; it != s.end(); ++steps) {
    const uint64_t next = it->first;
    const auto stop = std::upper_bound(it, s.end(), std::make_pair(next, std::numeric_limits<int64_t>::max()));
    const auto near = std::lower_bound(it, stop, std::make_pair(next, first));
    if ((near != stop && near->second <= last) || steps + 1 == kMaxSteps) return next;
    it = stop;
  }
  return std::nullopt;
}

uint64_t NearExtents::end(uint32_t allocation) const {
  const Allocation& a = table_.allocations[allocation];
  return a.address + static_cast<uint64_t>(a.bytes);
}

ByteRange NearExtents::ofWrite(uint32_t allocation, uint64_t address, size_t kernel) const {
  const auto k = static_cast<int64_t>(kernel);
  const auto after = nextPassed(allocation, address, k, k + window_);
  const auto before = after ? after : nextPassed(allocation, address, k - window_, k);
  return {address, before.value_or(end(allocation))};
}

ByteRange NearExtents::ofRead(uint32_t allocation, uint64_t address, size_t kernel) const {
  const auto k = static_cast<int64_t>(kernel);
  return {address, nextPassed(allocation, address, k - window_, k + window_).value_or(end(allocation))};
}

void WrittenLifetimes::add(uint32_t allocation, uint64_t address, size_t kernel, bool write) {
  pointers_[allocation].push_back({address, static_cast<uint32_t>(kernel), write});
}

// One address's accesses in kernel order: each write starts a lifetime, the accesses up to the
// next write extend it; accesses before the first write belong to none.
std::vector<WrittenLifetimes::Lifetime> WrittenLifetimes::lifetimesOf(std::vector<Access>& accesses) const {
  std::stable_sort(accesses.begin(), accesses.end(),
                   [](const Access& a, const Access& b) { return a.address < b.address; });
  std::vector<Lifetime> v;
  for (size_t i = 0; i < accesses.size(); ++i) {
    const Access& a = accesses[i];
    const bool same_address = !v.empty() && v.back().address == a.address;
    if (a.write && !(same_address && v.back().first == a.kernel)) {
      v.push_back({a.address, a.kernel, a.kernel, 0});
    } else if (same_address) {
      v.back().last = std::max(v.back().last, a.kernel);
    }
  }
  return v;
}

// The lowest address above lifetime i's where another lifetime overlaps it in time. At most
// kMaxAddresses addresses are tried; past them the last one tried ends it (a bound, if a loose one).
int64_t WrittenLifetimes::boundedBytes(const std::vector<Lifetime>& v, size_t i, uint64_t allocation_end) const {
  constexpr int kMaxAddresses = 256;
  const Lifetime& t = v[i];
  size_t j = i;
  while (j < v.size() && v[j].address == t.address) ++j;
  for (int tried = 0; j < v.size(); ++tried) {
    const uint64_t next = v[j].address;
    bool overlaps = false;
    for (; j < v.size() && v[j].address == next; ++j) overlaps |= v[j].first <= t.last && v[j].last >= t.first;
    if (overlaps || tried + 1 == kMaxAddresses) return static_cast<int64_t>(next - t.address);
  }
  return allocation_end > t.address ? static_cast<int64_t>(allocation_end - t.address) : 0;
}

void WrittenLifetimes::finish() {
  lifetimes_.resize(pointers_.size());
  for (size_t a = 0; a < pointers_.size(); ++a) {
    std::vector<Lifetime> v = lifetimesOf(pointers_[a]);
    const Allocation& al = table_.allocations[a];
    const uint64_t end = al.address + static_cast<uint64_t>(al.bytes);
    for (size_t i = 0; i < v.size(); ++i) v[i].bytes = boundedBytes(v, i, end);
    lifetimes_[a] = std::move(v);
    pointers_[a] = {};
  }
}

std::optional<int64_t> WrittenLifetimes::sizeAt(uint32_t allocation, uint64_t address, size_t kernel) const {
  const std::vector<Lifetime>& v = lifetimes_[allocation];
  const auto k = static_cast<uint32_t>(kernel);
  // The last lifetime at this address starting at or before the kernel.
  auto it = std::upper_bound(v.begin(), v.end(), std::make_pair(address, k), [](const auto& key, const Lifetime& l) {
    return key.first != l.address ? key.first < l.address : key.second < l.first;
  });
  if (it == v.begin() || std::prev(it)->address != address) return std::nullopt;
  return std::prev(it)->bytes;
}

std::vector<ByteVersions::Piece>::const_iterator ByteVersions::firstOverlap(const std::vector<Piece>& v,
                                                                             uint64_t begin) {
  // Pieces are disjoint and sorted, so their ends are sorted too.
  return std::upper_bound(v.begin(), v.end(), begin, [](uint64_t b, const Piece& p) { return b < p.end; });
}

void ByteVersions::write(uint32_t allocation, ByteRange r, int32_t value) {
  if (r.end <= r.begin) return;
  std::vector<Piece>& v = pieces_[allocation];
  const auto first = firstOverlap(v, r.begin);
  auto last = first;
  while (last != v.end() && last->begin < r.end) ++last;
  Piece replacement[3];
  size_t n = 0;
  if (first != last && first->begin < r.begin) replacement[n++] = {first->begin, r.begin, first->value};
  replacement[n++] = {r.begin, r.end, value};
  if (first != last && std::prev(last)->end > r.end) replacement[n++] = {r.end, std::prev(last)->end, std::prev(last)->value};
  const auto at = v.erase(first, last);
  v.insert(at, replacement, replacement + n);
}

}  // namespace fprof::analysis
