// Planning, reading and comparing the before/after samples of a launch's pointer arguments; see
// arg_roles.h.
#include "arg_roles/arg_roles.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace fprof::collector {

std::string_view argRoleName(ArgRole role) {
  switch (role) {
    case ArgRole::kWrite: return "write";
    case ArgRole::kRead: return "read";
    case ArgRole::kNotPointer: return "not_pointer";
  }
  return "not_pointer";
}

void readParamWords(const std::vector<ParamLayout>& layout, void* const* kernel_params, const uint8_t* buffer,
                    size_t buffer_bytes, size_t max_words, LaunchArgs& out) {
  if (kernel_params == nullptr && buffer == nullptr) return;
  size_t words = 0;
  for (const ParamLayout& p : layout) {
    if (p.size_bytes < 8 || p.offset_bytes < 0) continue;
    // Pointers are 8-aligned in the buffer; the first such offset inside this parameter.
    const int32_t first = (p.offset_bytes + 7) / 8 * 8;
    for (int32_t at = first; at + 8 <= p.offset_bytes + p.size_bytes; at += 8) {
      if (words == max_words) return;
      uint64_t value = 0;
      if (kernel_params != nullptr) {
        if (kernel_params[p.index] == nullptr) break;
        std::memcpy(&value, static_cast<const uint8_t*>(kernel_params[p.index]) + (at - p.offset_bytes), 8);
      } else {
        if (static_cast<size_t>(at) + 8 > buffer_bytes) return;
        std::memcpy(&value, buffer + at, 8);
      }
      out.push_back(LaunchArg{p.index, at, p.size_bytes, value});
      ++words;
    }
  }
}

std::vector<ByteWindow> planWindows(uint64_t pointer, uint64_t span_end, const SamplePolicy& policy) {
  if (span_end <= pointer) return {};
  const uint64_t span_bytes = span_end - pointer;
  const uint64_t chunks_bytes = static_cast<uint64_t>(policy.strided_chunks) * policy.chunk_bytes;
  if (policy.strided_chunks == 0 || policy.chunk_bytes == 0) return {{pointer, std::min(span_bytes, policy.head_bytes)}};
  if (span_bytes <= policy.head_bytes + chunks_bytes) return {{pointer, span_bytes}};
  std::vector<ByteWindow> windows;
  if (policy.head_bytes > 0) windows.push_back({pointer, policy.head_bytes});
  // The rest is longer than all chunks together, so chunk i, ending at the i-th n-th of the rest,
  // starts after chunk i-1 ends: ascending and disjoint, the last one ending at span_end.
  const uint64_t rest_start = pointer + policy.head_bytes;
  const uint64_t rest_bytes = span_end - rest_start;
  const uint64_t n = policy.strided_chunks;
  for (uint64_t i = 1; i <= n; ++i) {
    // floor(rest_bytes * i / n) without overflow: n is small.
    const uint64_t end = rest_start + rest_bytes / n * i + rest_bytes % n * i / n;
    windows.push_back({end - policy.chunk_bytes, policy.chunk_bytes});
  }
  return windows;
}

std::vector<uint64_t> spanEnds(const std::vector<uint64_t>& pointers,
                               const std::vector<std::optional<DeviceRange>>& allocations) {
  std::vector<uint64_t> ends(pointers.size(), 0);
  // Distinct addresses per allocation (keyed by its start), ascending.
  std::map<uint64_t, std::vector<uint64_t>> addresses;
  for (size_t i = 0; i < pointers.size(); ++i) {
    if (allocations[i]) addresses[allocations[i]->start].push_back(pointers[i]);
  }
  for (auto& [start, list] : addresses) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  for (size_t i = 0; i < pointers.size(); ++i) {
    if (!allocations[i]) continue;
    const std::vector<uint64_t>& list = addresses[allocations[i]->start];
    const auto next = std::upper_bound(list.begin(), list.end(), pointers[i]);
    ends[i] = next != list.end() ? std::min(*next, allocations[i]->end()) : allocations[i]->end();
  }
  return ends;
}

namespace {

std::string argName(const LaunchArg& a) {
  return "argument " + std::to_string(a.index) + " (offset " + std::to_string(a.offset_bytes) + ")";
}

}  // namespace

std::optional<ArgSample> ArgSample::plan(ProbeMemory& memory, const LaunchArgs& args, const SamplePolicy& policy,
                                         std::string& why_not) {
  ArgSample s;
  std::vector<uint64_t> pointers(args.size(), 0);
  std::vector<std::optional<DeviceRange>> allocations(args.size());
  s.entries_.resize(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    s.entries_[i].arg = args[i];
    pointers[i] = args[i].value;
    s.classify(memory, s.entries_[i], allocations[i]);
  }
  uint64_t planned_bytes = 0;
  const size_t sampled = s.planWindowsOfEntries(spanEnds(pointers, allocations), allocations, policy, planned_bytes);
  s.unmeasureAliasesOfUnsampled();
  if (sampled == 0) {
    why_not = "no argument is a readable device pointer";
    return std::nullopt;
  }
  s.before_bytes_.assign(planned_bytes, 0);
  return s;
}

// What the argument's value is: no pointer, memory the probe does not read, or a device allocation
// to sample (`allocation`).
void ArgSample::classify(ProbeMemory& memory, Entry& e, std::optional<DeviceRange>& allocation) {
  if (e.arg.value == 0) {
    e.kind = EntryKind::kNotPointer;
    e.note = "null";
    return;
  }
  const AddressInfo info = memory.describe(e.arg.value);
  switch (info.kind) {
    case AddressInfo::Kind::kNotDevice:
      e.kind = EntryKind::kNotPointer;
      e.note = info.note.empty() ? "no device allocation at this address" : info.note;
      break;
    case AddressInfo::Kind::kUnreadable:
      e.kind = EntryKind::kUnmeasured;
      notes_.push_back(argName(e.arg) + ": " + (info.note.empty() ? "memory the probe does not read" : info.note));
      break;
    case AddressInfo::Kind::kDevice:
      if (info.range.bytes == 0 || e.arg.value < info.range.start || e.arg.value >= info.range.end()) {
        e.kind = EntryKind::kUnmeasured;
        notes_.push_back(argName(e.arg) + ": the driver's allocation range does not hold the address");
        break;
      }
      e.kind = EntryKind::kSampled;
      e.allocation = info.range;
      allocation = info.range;
      break;
  }
}

// Each sampled entry's windows up to its span's end, in argument order, within the budget per
// launch; an entry with an earlier entry's address becomes its alias. Returns the entries sampled.
size_t ArgSample::planWindowsOfEntries(const std::vector<uint64_t>& ends,
                                       const std::vector<std::optional<DeviceRange>>& allocations,
                                       const SamplePolicy& policy, uint64_t& planned_bytes) {
  size_t sampled = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    Entry& e = entries_[i];
    if (e.kind != EntryKind::kSampled) continue;
    e.span_end = ends[i];
    // The same address as an earlier argument: one sample, one role for both.
    for (size_t j = 0; j < i; ++j) {
      const Entry& other = entries_[j];
      if (allocations[j] && other.kind != EntryKind::kAlias && other.arg.value == e.arg.value) {
        e.kind = EntryKind::kAlias;
        e.alias_of = j;
        break;
      }
    }
    if (e.kind == EntryKind::kAlias) continue;
    std::vector<ByteWindow> windows = planWindows(e.arg.value, e.span_end, policy);
    uint64_t bytes = 0;
    for (const ByteWindow& w : windows) bytes += w.bytes;
    if (planned_bytes + bytes > policy.max_bytes_per_launch) {
      e.kind = EntryKind::kUnmeasured;
      notes_.push_back(argName(e.arg) + ": over the sample budget of " + std::to_string(policy.max_bytes_per_launch) +
                       " bytes per launch");
      continue;
    }
    e.windows = std::move(windows);
    e.first_byte = planned_bytes;
    planned_bytes += bytes;
    ++sampled;
  }
  return sampled;
}

// Aliases of an argument that went over the budget have nothing to share.
void ArgSample::unmeasureAliasesOfUnsampled() {
  for (Entry& e : entries_) {
    if (e.kind == EntryKind::kAlias && entries_[e.alias_of].kind != EntryKind::kSampled) {
      e.kind = EntryKind::kUnmeasured;
      notes_.push_back(argName(e.arg) + ": aliases an argument that was not sampled");
    }
  }
}

bool ArgSample::readBefore(ProbeMemory& memory, std::string& why_not) {
  for (const Entry& e : entries_) {
    if (e.kind != EntryKind::kSampled) continue;
    size_t at = e.first_byte;
    for (const ByteWindow& w : e.windows) {
      std::string error;
      if (!memory.read(w.address, w.bytes, before_bytes_.data() + at, error)) {
        why_not = "reading " + argName(e.arg) + " before the launch failed: " + error;
        return false;
      }
      at += w.bytes;
    }
  }
  return true;
}

std::optional<std::vector<ArgRoleResult>> ArgSample::after(ProbeMemory& memory, std::string& why_not) const {
  struct Measured {
    uint64_t changed_bytes = 0;
    uint64_t sampled_bytes = 0;
  };
  std::vector<Measured> measured(entries_.size());
  std::vector<uint8_t> now;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.kind != EntryKind::kSampled) continue;
    // Freed and allocated again by another thread meanwhile: its bytes are no longer this buffer's.
    const AddressInfo info = memory.describe(e.arg.value);
    if (info.kind != AddressInfo::Kind::kDevice || info.range.start != e.allocation.start ||
        info.range.bytes != e.allocation.bytes) {
      why_not = "the allocation behind " + argName(e.arg) + " changed during the launch";
      return std::nullopt;
    }
    size_t at = e.first_byte;
    for (const ByteWindow& w : e.windows) {
      now.resize(w.bytes);
      std::string error;
      if (!memory.read(w.address, w.bytes, now.data(), error)) {
        why_not = "reading " + argName(e.arg) + " after the launch failed: " + error;
        return std::nullopt;
      }
      for (uint64_t b = 0; b < w.bytes; ++b) measured[i].changed_bytes += now[b] != before_bytes_[at + b];
      measured[i].sampled_bytes += w.bytes;
      at += w.bytes;
    }
  }
  auto sampledPhrase = [](const Entry& e, const Measured& m) {
    const uint64_t span_bytes = e.span_end - e.arg.value;
    return "sampled " + std::to_string(m.sampled_bytes) + " of " + std::to_string(span_bytes) +
           " bytes before and after one launch, " +
           (m.changed_bytes > 0 ? std::to_string(m.changed_bytes) + " changed" : std::string("none changed"));
  };
  std::vector<ArgRoleResult> roles;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    ArgRoleResult r;
    r.arg_index = e.arg.index;
    r.offset_bytes = e.arg.offset_bytes;
    switch (e.kind) {
      case EntryKind::kUnmeasured:
        continue;
      case EntryKind::kNotPointer:
        if (e.arg.size_bytes > 8) continue;  // data inside a struct parameter
        r.role = ArgRole::kNotPointer;
        r.method = e.note;
        break;
      case EntryKind::kSampled:
        r.role = measured[i].changed_bytes > 0 ? ArgRole::kWrite : ArgRole::kRead;
        r.sampled_bytes = static_cast<int64_t>(measured[i].sampled_bytes);
        r.method = sampledPhrase(e, measured[i]);
        break;
      case EntryKind::kAlias: {
        const Entry& of = entries_[e.alias_of];
        const Measured& m = measured[e.alias_of];
        r.role = m.changed_bytes > 0 ? ArgRole::kWrite : ArgRole::kRead;
        r.sampled_bytes = static_cast<int64_t>(m.sampled_bytes);
        r.method = "same address as " + argName(of.arg) + ", " + sampledPhrase(of, m);
        break;
      }
    }
    roles.push_back(std::move(r));
  }
  return roles;
}

}  // namespace fprof::collector
