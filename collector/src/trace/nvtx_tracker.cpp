// NVTX range bookkeeping; see nvtx_tracker.h.
#include "trace/nvtx_tracker.h"

#include <algorithm>
#include <functional>

namespace fprof::collector {
namespace {

const char kUnknownDomain[] = "<unknown domain>";

size_t mixHash(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

// "domain::message", or "message" in the default domain.
std::string segment(const void* domain, std::string_view message, const NvtxNames& names) {
  if (domain == nullptr) return std::string(message);
  std::string s = names.domainName(domain);
  s += "::";
  s += message;
  return s;
}

}  // namespace

void NvtxNames::registerDomain(const void* handle, std::string_view name) {
  std::lock_guard lock(mu_);
  domains_[handle] = std::string(name);
}

void NvtxNames::registerString(const void* handle, std::string_view text) {
  std::lock_guard lock(mu_);
  strings_[handle] = std::string(text);
}

std::string NvtxNames::domainName(const void* handle) const {
  if (handle == nullptr) return {};
  std::lock_guard lock(mu_);
  auto it = domains_.find(handle);
  return it == domains_.end() ? std::string(kUnknownDomain) : it->second;
}

std::string NvtxNames::registeredString(const void* handle) const {
  std::lock_guard lock(mu_);
  auto it = strings_.find(handle);
  return it == strings_.end() ? std::string("<unregistered string>") : it->second;
}

// ---- Start/end ranges ----

void StartEndRanges::start(uint64_t range_id, uint64_t key, std::string domain, std::string segment_text,
                           std::string message, std::optional<uint64_t> payload, uint32_t thread_id,
                           int64_t timestamp_ns) {
  Open open;
  open.segment = std::move(segment_text);
  open.record.key = key;
  open.record.domain = std::move(domain);
  open.record.message = std::move(message);
  open.record.payload = payload;
  open.record.thread_id = thread_id;
  open.record.start_ns = timestamp_ns;
  open.record.push_pop = false;
  std::lock_guard lock(mu_);
  open.order = ++order_;
  records_.push_back(open.record);
  open_[range_id] = std::move(open);
  publish();
}

bool StartEndRanges::end(uint64_t range_id, int64_t timestamp_ns) {
  std::lock_guard lock(mu_);
  auto it = open_.find(range_id);
  if (it == open_.end()) return false;
  it->second.record.end_ns = timestamp_ns;
  records_.push_back(std::move(it->second.record));
  open_.erase(it);
  publish();
  return true;
}

void StartEndRanges::publish() {
  std::vector<const Open*> open;
  open.reserve(open_.size());
  for (const auto& [id, range] : open_) open.push_back(&range);
  std::sort(open.begin(), open.end(), [](const Open* a, const Open* b) { return a->order < b->order; });
  auto state = std::make_shared<StartEndState>();
  for (const Open* range : open) {
    if (!state->path.empty()) state->path += '/';
    state->path += range->segment;
  }
  state->any_open = !open.empty();
  state->innermost_key = open.empty() ? 0 : open.back()->record.key;
  current_ = std::move(state);
  generation_.fetch_add(1, std::memory_order_release);
}

std::pair<std::shared_ptr<const StartEndState>, uint64_t> StartEndRanges::current() const {
  std::lock_guard lock(mu_);
  return {current_, generation_.load(std::memory_order_relaxed)};
}

std::vector<core::NvtxRangeRecord> StartEndRanges::takeRecords() {
  std::lock_guard lock(mu_);
  std::vector<core::NvtxRangeRecord> out;
  out.swap(records_);
  return out;
}

// ---- Paths ----

size_t NvtxPathTable::Hash::operator()(const KeyView& k) const {
  size_t h = std::hash<std::string_view>()(k.message);
  h = mixHash(h, std::hash<const void*>()(k.parent));
  return mixHash(h, std::hash<const void*>()(k.domain));
}

size_t NvtxPathTable::PairHash::operator()(const std::pair<const std::string*, const std::string*>& p) const {
  return mixHash(std::hash<const void*>()(p.first), std::hash<const void*>()(p.second));
}

const std::string* NvtxPathTable::intern(std::string text) {
  if (auto it = by_text_.find(text); it != by_text_.end()) return it->second;
  const std::string* s = &strings_.emplace_back(std::move(text));
  by_text_.emplace(*s, s);
  return s;
}

const std::string* NvtxPathTable::child(const std::string* parent, const void* domain, std::string_view message,
                                        const NvtxNames& names) {
  const KeyView key{parent, domain, message};
  if (auto it = children_.find(key); it != children_.end()) return it->second;
  std::string text = parent != nullptr ? *parent + "/" : std::string();
  text += segment(domain, message, names);
  const std::string* path = intern(std::move(text));
  children_.emplace(Key{parent, domain, std::string(message)}, path);
  return path;
}

const std::string* NvtxPathTable::join(const StartEndState& state, const std::string* path) {
  const std::string* prefix = intern(state.path);
  if (auto it = joined_.find({prefix, path}); it != joined_.end()) return it->second;
  std::string text = *prefix;
  if (path != nullptr) {
    if (!text.empty()) text += '/';
    text += *path;
  }
  const std::string* joined = text.empty() ? nullptr : intern(std::move(text));
  joined_.emplace(std::make_pair(prefix, path), joined);
  return joined;
}

// ---- One thread's push/pop ranges ----

void NvtxPathStack::push(uint64_t key, const void* domain, std::string message, std::optional<uint64_t> payload,
                         uint32_t thread_id, int64_t timestamp_ns) {
  Entry e;
  e.key = key;
  e.domain = domain;
  e.message = std::move(message);
  e.payload = payload;
  if (!entries_.empty()) e.parent_key = entries_.back().key;
  e.start_ns = timestamp_ns;
  e.thread_id = thread_id;
  e.depth = static_cast<int32_t>(entries_.size());
  entries_.push_back(std::move(e));
}

core::NvtxRangeRecord NvtxPathStack::record(const Entry& e, std::string message, const NvtxNames& names) {
  core::NvtxRangeRecord r;
  r.key = e.key;
  r.parent_key = e.parent_key;
  r.domain = names.domainName(e.domain);
  r.message = std::move(message);
  r.payload = e.payload;
  r.thread_id = e.thread_id;
  r.depth = e.depth;
  r.start_ns = e.start_ns;
  r.push_pop = true;
  return r;
}

bool NvtxPathStack::pop(const void* domain, int64_t timestamp_ns, const NvtxNames& names,
                        std::vector<core::NvtxRangeRecord>* records) {
  auto it = std::find_if(entries_.rbegin(), entries_.rend(), [domain](const Entry& e) { return e.domain == domain; });
  if (it == entries_.rend()) return false;
  const size_t index = static_cast<size_t>(std::distance(it, entries_.rend())) - 1;
  Entry& e = entries_[index];
  if (records != nullptr) {
    records->push_back(record(e, std::move(e.message), names));
    records->back().end_ns = timestamp_ns;
  }
  const bool was_top = index + 1 == entries_.size();
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(index));
  if (!was_top) {
    // Another domain's range popped from under the top (legal: each domain has its own stack):
    // the paths above it change.
    for (size_t i = index; i < entries_.size(); ++i) entries_[i].path = nullptr;
    cached_top_key_ = ~uint64_t{0};
  }
  return true;
}

const std::string* NvtxPathStack::pathOf(size_t index, NvtxPathTable& paths, const NvtxNames& names) {
  size_t first = index;
  while (first > 0 && entries_[first].path == nullptr) --first;
  if (entries_[first].path == nullptr) {
    entries_[first].path = paths.child(nullptr, entries_[first].domain, entries_[first].message, names);
  }
  for (size_t i = first + 1; i <= index; ++i) {
    entries_[i].path = paths.child(entries_[i - 1].path, entries_[i].domain, entries_[i].message, names);
  }
  return entries_[index].path;
}

NvtxPathStack::Snapshot NvtxPathStack::snapshot(const std::shared_ptr<const StartEndState>& start_end,
                                                NvtxPathTable& paths, const NvtxNames& names) {
  const uint64_t top_key = entries_.empty() ? 0 : entries_.back().key;
  if (cached_top_key_ == top_key && cached_state_ == start_end) return cached_;
  Snapshot snap;
  const std::string* top_path = entries_.empty() ? nullptr : pathOf(entries_.size() - 1, paths, names);
  if (start_end == nullptr || !start_end->any_open) {
    snap = {top_key, top_path};
  } else {
    // Start/end ranges are process-wide and not nested, so they form the outer part of the path,
    // oldest first; the thread's push/pop stack follows.
    snap.innermost_key = top_key != 0 ? top_key : start_end->innermost_key;
    snap.path = paths.join(*start_end, top_path);
  }
  cached_top_key_ = top_key;
  cached_state_ = start_end;
  cached_ = snap;
  return snap;
}

void NvtxPathStack::endCollection(const NvtxNames& names, std::vector<core::NvtxRangeRecord>& records) {
  for (Entry& e : entries_) {
    if (e.recorded) continue;
    records.push_back(record(e, e.message, names));
    e.recorded = true;
  }
}

}  // namespace fprof::collector
