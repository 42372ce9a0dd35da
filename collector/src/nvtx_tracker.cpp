// NVTX range bookkeeping; see nvtx_tracker.h.
#include "nvtx_tracker.h"

#include <algorithm>

namespace fprof::collector {

void NvtxTracker::registerDomain(const void* handle, const std::string& name) {
  std::lock_guard lock(mu_);
  domains_[handle] = name;
}

void NvtxTracker::registerString(const void* handle, const std::string& text) {
  std::lock_guard lock(mu_);
  strings_[handle] = text;
}

std::string NvtxTracker::domainName(const void* handle) const {
  if (handle == nullptr) return {};
  std::lock_guard lock(mu_);
  auto it = domains_.find(handle);
  return it == domains_.end() ? std::string("<unknown domain>") : it->second;
}

std::string NvtxTracker::registeredString(const void* handle) const {
  std::lock_guard lock(mu_);
  auto it = strings_.find(handle);
  return it == strings_.end() ? std::string("<unregistered string>") : it->second;
}

std::string NvtxTracker::segment(const void* domain, const std::string& message) const {
  if (domain == nullptr) return message;
  auto it = domains_.find(domain);
  const std::string& name = it == domains_.end() ? std::string("<unknown domain>") : it->second;
  return name + "::" + message;
}

const std::string* NvtxTracker::intern(std::string text) { return &*interned_.insert(std::move(text)).first; }

void NvtxTracker::push(NvtxThreadStack& stack, const void* domain, const std::string& message,
                       std::optional<uint64_t> payload, uint32_t thread_id, int64_t timestamp_ns) {
  NvtxThreadStack::Entry entry;
  entry.key = next_key_.fetch_add(1, std::memory_order_relaxed);
  entry.domain = domain;
  entry.record.key = entry.key;
  entry.record.message = message;
  entry.record.payload = payload;
  entry.record.thread_id = thread_id;
  entry.record.depth = static_cast<int32_t>(stack.entries.size());
  entry.record.start_ns = timestamp_ns;
  entry.record.push_pop = true;
  if (!stack.entries.empty()) entry.record.parent_key = stack.entries.back().key;
  {
    std::lock_guard lock(mu_);
    entry.segment = segment(domain, message);
    entry.record.domain = domain == nullptr ? std::string() : domains_.count(domain) ? domains_[domain] : "<unknown domain>";
    entry.path = stack.entries.empty() ? intern(entry.segment) : intern(*stack.entries.back().path + "/" + entry.segment);
    records_.push_back(entry.record);
  }
  stack.entries.push_back(std::move(entry));
}

bool NvtxTracker::pop(NvtxThreadStack& stack, const void* domain, int64_t timestamp_ns) {
  auto it = std::find_if(stack.entries.rbegin(), stack.entries.rend(),
                         [domain](const NvtxThreadStack::Entry& e) { return e.domain == domain; });
  if (it == stack.entries.rend()) {
    unmatched_pops_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const size_t index = static_cast<size_t>(std::distance(it, stack.entries.rend())) - 1;
  std::lock_guard lock(mu_);
  stack.entries[index].record.end_ns = timestamp_ns;
  records_.push_back(stack.entries[index].record);
  const bool was_top = index + 1 == stack.entries.size();
  stack.entries.erase(stack.entries.begin() + static_cast<std::ptrdiff_t>(index));
  if (!was_top) stack.cached_top_key = ~uint64_t{0};  // the top stayed, its path did not
  // Popping another domain's range from under the top (legal: each domain has its own stack)
  // changes the paths above it.
  for (size_t i = index; i < stack.entries.size(); ++i) {
    auto& e = stack.entries[i];
    e.path = i == 0 ? intern(e.segment) : intern(*stack.entries[i - 1].path + "/" + e.segment);
  }
  return true;
}

void NvtxTracker::start(uint64_t range_id, const void* domain, const std::string& message,
                        std::optional<uint64_t> payload, uint32_t thread_id, int64_t timestamp_ns) {
  OpenStartEnd open;
  open.key = next_key_.fetch_add(1, std::memory_order_relaxed);
  open.record.key = open.key;
  open.record.message = message;
  open.record.payload = payload;
  open.record.thread_id = thread_id;
  open.record.start_ns = timestamp_ns;
  open.record.push_pop = false;
  std::lock_guard lock(mu_);
  open.order = ++start_order_;
  open.segment = segment(domain, message);
  open.record.domain = domain == nullptr ? std::string() : domains_.count(domain) ? domains_[domain] : "<unknown domain>";
  records_.push_back(open.record);
  const bool replaced = open_start_end_.count(range_id) != 0;
  open_start_end_[range_id] = std::move(open);
  if (!replaced) open_start_end_count_.fetch_add(1, std::memory_order_relaxed);
  start_end_generation_.fetch_add(1, std::memory_order_release);
}

bool NvtxTracker::end(uint64_t range_id, int64_t timestamp_ns) {
  std::lock_guard lock(mu_);
  auto it = open_start_end_.find(range_id);
  if (it == open_start_end_.end()) return false;
  it->second.record.end_ns = timestamp_ns;
  records_.push_back(it->second.record);
  open_start_end_.erase(it);
  open_start_end_count_.fetch_sub(1, std::memory_order_relaxed);
  start_end_generation_.fetch_add(1, std::memory_order_release);
  return true;
}

NvtxSnapshot NvtxTracker::snapshot(NvtxThreadStack& stack) {
  const uint64_t top_key = stack.entries.empty() ? 0 : stack.entries.back().key;
  const uint64_t generation = start_end_generation_.load(std::memory_order_acquire);
  if (stack.cached_top_key == top_key && stack.cached_start_end_generation == generation) return stack.cached;
  NvtxSnapshot snap;
  const std::string* top_path = stack.entries.empty() ? nullptr : stack.entries.back().path;
  if (open_start_end_count_.load(std::memory_order_relaxed) == 0) {
    snap = {top_key, top_path};
  } else {
    // Start/end ranges are process-wide and not nested, so they form the outer part of the path,
    // oldest first; the thread's push/pop stack follows.
    std::lock_guard lock(mu_);
    std::vector<const OpenStartEnd*> open;
    for (const auto& [id, range] : open_start_end_) open.push_back(&range);
    std::sort(open.begin(), open.end(), [](auto* a, auto* b) { return a->order < b->order; });
    std::string path;
    for (const auto* range : open) {
      if (!path.empty()) path += '/';
      path += range->segment;
    }
    if (top_path != nullptr) {
      if (!path.empty()) path += '/';
      path += *top_path;
    }
    snap.innermost_key = top_key != 0 ? top_key : (open.empty() ? 0 : open.back()->key);
    snap.path = path.empty() ? nullptr : intern(std::move(path));
  }
  stack.cached_top_key = top_key;
  stack.cached_start_end_generation = generation;
  stack.cached = snap;
  return snap;
}

std::vector<core::NvtxRangeRecord> NvtxTracker::takeRecords() {
  std::lock_guard lock(mu_);
  std::vector<core::NvtxRangeRecord> out;
  out.swap(records_);
  return out;
}

}  // namespace fprof::collector
