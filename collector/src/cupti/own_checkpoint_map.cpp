// The own checkpoint's maps: live allocations and the modules' writable variables.
#include "cupti/own_checkpoint_map.h"

#include <algorithm>
#include <functional>
#include <set>

#include "fprof/core/nvdisasm.h"

namespace fprof::collector {

void AllocationMap::addDevice(const void* context, uint64_t base, uint64_t bytes) {
  if (bytes == 0) return;
  std::lock_guard lock(mu_);
  device_[context][base] = bytes;
}

void AllocationMap::addHost(uint64_t base, uint64_t bytes) {
  if (bytes == 0) return;
  std::lock_guard lock(mu_);
  host_[base] = bytes;
}

// Unified addressing gives each allocation its own address in the process: a free made while
// another context is current still ends it.
void AllocationMap::removeDevice(uint64_t base) {
  std::lock_guard lock(mu_);
  for (auto& [context, ranges] : device_) ranges.erase(base);
}

void AllocationMap::removeHost(uint64_t base) {
  std::lock_guard lock(mu_);
  host_.erase(base);
}

void AllocationMap::removeDeviceWithin(uint64_t base, uint64_t bytes) {
  std::lock_guard lock(mu_);
  for (auto& [context, ranges] : device_) {
    for (auto r = ranges.lower_bound(base); r != ranges.end() && r->first < base + bytes;) r = ranges.erase(r);
  }
}

void AllocationMap::refuse(const std::string& why) {
  std::lock_guard lock(mu_);
  if (refused_.empty()) refused_ = why;
}

std::string AllocationMap::refused() const {
  std::lock_guard lock(mu_);
  return refused_;
}

bool AllocationMap::rangesOf(const void* context, std::vector<MemoryRange>& out) const {
  out.clear();
  std::lock_guard lock(mu_);
  if (!refused_.empty()) return false;
  if (auto it = device_.find(context); it != device_.end()) {
    for (const auto& [base, bytes] : it->second) out.push_back({base, bytes, false});
  }
  for (const auto& [base, bytes] : host_) out.push_back({base, bytes, true});
  return true;
}

bool AllocationMap::inside(const std::map<uint64_t, uint64_t>& ranges, uint64_t address) {
  auto it = ranges.upper_bound(address);
  if (it == ranges.begin()) return false;
  --it;
  return address - it->first < it->second;
}

bool AllocationMap::contains(const void* context, uint64_t address) const {
  std::lock_guard lock(mu_);
  if (auto it = device_.find(context); it != device_.end() && inside(it->second, address)) return true;
  return inside(host_, address);
}

namespace {

// String literals nvcc places among the writable variables (printf formats, an assertion's file
// and function names: "$str", "$str$1", "__unnamed_1"): constant data no correct kernel writes.
bool isLiteral(const std::string& name) { return name.rfind("$str", 0) == 0 || name.rfind("__unnamed_", 0) == 0; }

}  // namespace

ModuleWrites moduleWrites(std::string_view cubin) {
  ModuleWrites w;
  std::set<std::string> calls;
  for (const core::CubinSymbol& s : core::cubinSymbols(cubin)) {
    if (s.name.empty()) continue;
    // .nv.global (zero-initialized) and .nv.global.init; not .nv.shared.*, which is writable too.
    const bool global = s.section.rfind(".nv.global", 0) == 0;
    if (s.type == core::CubinSymbol::kObject && s.defined && global && s.section_writable && s.size > 0 &&
        !isLiteral(s.name)) {
      w.variables.push_back(s.name);
    }
    if (s.type == core::CubinSymbol::kFunction && !s.defined && s.name != "__assertfail") calls.insert(s.name);
  }
  w.outside_calls.assign(calls.begin(), calls.end());
  return w;
}

void ModuleWritesIndex::addCubin(std::string_view cubin) {
  std::vector<uint64_t> functions;
  for (const core::CubinSymbol& s : core::cubinSymbols(cubin)) {
    if (s.type == core::CubinSymbol::kFunction && s.defined && !s.name.empty()) {
      functions.push_back(std::hash<std::string_view>{}(s.name));
    }
  }
  if (functions.empty()) return;
  ModuleWrites writes = moduleWrites(cubin);
  std::lock_guard lock(mu_);
  const auto index = static_cast<uint32_t>(modules_.size());
  modules_.push_back(std::move(writes));
  for (uint64_t h : functions) by_function_.emplace(h, index);
}

bool ModuleWritesIndex::lookup(std::string_view function, ModuleWrites& out) const {
  out = {};
  std::set<std::string> variables, calls;
  std::lock_guard lock(mu_);
  auto [first, last] = by_function_.equal_range(std::hash<std::string_view>{}(function));
  if (first == last) return false;
  for (auto it = first; it != last; ++it) {
    const ModuleWrites& m = modules_[it->second];
    variables.insert(m.variables.begin(), m.variables.end());
    calls.insert(m.outside_calls.begin(), m.outside_calls.end());
  }
  out.variables.assign(variables.begin(), variables.end());
  out.outside_calls.assign(calls.begin(), calls.end());
  return true;
}

}  // namespace fprof::collector
