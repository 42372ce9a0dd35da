// fprof's NVTX handlers and the filling of NVTX's function tables; see nvtx_injection.h.
#include "trace/nvtx_injection.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "injection/self_timing.h"
#include "trace/nvtx_decode.h"

namespace fprof::collector {
namespace {

std::atomic<const NvtxTarget*> g_target{nullptr};

// Domain and string handles fprof hands out: stable objects, never freed (the program may use a
// handle until it exits). Only ASCII domains and strings are named, as through CUPTI's callbacks.
struct Handles {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<std::string>> domains;  // by name
  std::vector<std::unique_ptr<std::string>> unnamed;            // wide domains and strings
  std::map<std::pair<const void*, std::string>, std::unique_ptr<std::string>> strings;  // by (domain, text)
};
Handles& handles() {
  static auto* h = new Handles();  // leaked: NVTX calls may come during static destruction
  return *h;
}

std::atomic<uint64_t> g_next_range_id{1};
thread_local int t_depth = 0;  // push/pop levels, for NVTX's return values

// The target when collecting; null otherwise (calls are still answered).
const NvtxTarget* collecting() {
  const NvtxTarget* t = g_target.load(std::memory_order_acquire);
  return t != nullptr && t->recorder != nullptr && (t->active == nullptr || t->active()) ? t : nullptr;
}

AppTimes* timesOf(const NvtxTarget* t) {
  return t != nullptr && selfTimingEnabled() ? t->recorder->threadTimes() : nullptr;
}

int push(const void* domain, NvtxText message, std::optional<uint64_t> payload) {
  if (const NvtxTarget* t = collecting()) {
    ScopedAppTimer timer(timesOf(t), AppTimer::kNvtxCallback);
    t->recorder->pushRange(domain, message, payload, t->timestamp_ns());
  }
  return t_depth++;
}

int pop(const void* domain) {
  if (const NvtxTarget* t = collecting()) {
    ScopedAppTimer timer(timesOf(t), AppTimer::kNvtxCallback);
    t->recorder->popRange(domain, t->timestamp_ns());
  }
  return t_depth > 0 ? --t_depth : -1;
}

nvtxRangeId_t start(const void* domain, NvtxText message, std::optional<uint64_t> payload) {
  const nvtxRangeId_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (const NvtxTarget* t = collecting()) {
    ScopedAppTimer timer(timesOf(t), AppTimer::kNvtxCallback);
    t->recorder->startRange(id, domain, message, payload, t->timestamp_ns());
  }
  return id;
}

void end(nvtxRangeId_t id) {
  if (const NvtxTarget* t = collecting()) {
    ScopedAppTimer timer(timesOf(t), AppTimer::kNvtxCallback);
    t->recorder->endRange(id, t->timestamp_ns());
  }
}

int NVTX_API rangePushA(const char* message) { return push(nullptr, asciiText(message), std::nullopt); }

int NVTX_API rangePushW(const wchar_t* message) {
  char text[512];
  return push(nullptr, NvtxText{wideText(message, text)}, std::nullopt);
}

int NVTX_API rangePushEx(const nvtxEventAttributes_t* attributes) {
  char text[512];
  std::optional<uint64_t> payload;
  const NvtxText m = eventText(attributes, payload, text);
  return push(nullptr, m, payload);
}

int NVTX_API rangePop() { return pop(nullptr); }

nvtxRangeId_t NVTX_API rangeStartA(const char* message) { return start(nullptr, asciiText(message), std::nullopt); }

nvtxRangeId_t NVTX_API rangeStartW(const wchar_t* message) {
  char text[512];
  return start(nullptr, NvtxText{wideText(message, text)}, std::nullopt);
}

nvtxRangeId_t NVTX_API rangeStartEx(const nvtxEventAttributes_t* attributes) {
  char text[512];
  std::optional<uint64_t> payload;
  const NvtxText m = eventText(attributes, payload, text);
  return start(nullptr, m, payload);
}

void NVTX_API rangeEnd(nvtxRangeId_t id) { end(id); }

int NVTX_API domainRangePushEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  char text[512];
  std::optional<uint64_t> payload;
  const NvtxText m = eventText(attributes, payload, text);
  return push(domain, m, payload);
}

int NVTX_API domainRangePop(nvtxDomainHandle_t domain) { return pop(domain); }

nvtxRangeId_t NVTX_API domainRangeStartEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  char text[512];
  std::optional<uint64_t> payload;
  const NvtxText m = eventText(attributes, payload, text);
  return start(domain, m, payload);
}

void NVTX_API domainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { end(id); }

nvtxDomainHandle_t NVTX_API domainCreateA(const char* name) {
  const std::string n = name != nullptr ? name : "";
  Handles& h = handles();
  std::lock_guard lock(h.mu);
  auto [it, inserted] = h.domains.try_emplace(n);
  if (inserted) {
    it->second = std::make_unique<std::string>(n);
    const NvtxTarget* t = g_target.load(std::memory_order_acquire);
    if (t != nullptr && t->recorder != nullptr) t->recorder->registerDomain(it->second.get(), n);
  }
  return reinterpret_cast<nvtxDomainHandle_t>(it->second.get());
}

// Wide names are not recorded through CUPTI's callbacks either: a handle, no name.
nvtxDomainHandle_t NVTX_API domainCreateW(const wchar_t*) {
  Handles& h = handles();
  std::lock_guard lock(h.mu);
  h.unnamed.push_back(std::make_unique<std::string>());
  return reinterpret_cast<nvtxDomainHandle_t>(h.unnamed.back().get());
}

void NVTX_API domainDestroy(nvtxDomainHandle_t) {}  // handles stay valid: records may still name them

nvtxStringHandle_t NVTX_API domainRegisterStringA(nvtxDomainHandle_t domain, const char* string) {
  const std::string s = string != nullptr ? string : "";
  Handles& h = handles();
  std::lock_guard lock(h.mu);
  auto [it, inserted] = h.strings.try_emplace(std::make_pair(static_cast<const void*>(domain), s));
  if (inserted) {
    it->second = std::make_unique<std::string>(s);
    const NvtxTarget* t = g_target.load(std::memory_order_acquire);
    if (t != nullptr && t->recorder != nullptr) t->recorder->registerString(it->second.get(), s);
  }
  return reinterpret_cast<nvtxStringHandle_t>(it->second.get());
}

nvtxStringHandle_t NVTX_API domainRegisterStringW(nvtxDomainHandle_t, const wchar_t*) {
  Handles& h = handles();
  std::lock_guard lock(h.mu);
  h.unnamed.push_back(std::make_unique<std::string>());
  return reinterpret_cast<nvtxStringHandle_t>(h.unnamed.back().get());
}

template <class F>
NvtxFunctionPointer fn(F f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}

bool fill(const NvtxExportTableCallbacks& callbacks, NvtxCallbackModule module,
          std::initializer_list<std::pair<unsigned, NvtxFunctionPointer>> handlers) {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;  // the highest valid id (slot 0 is unused)
  if (callbacks.GetModuleFunctionTable(module, &table, &size) == 0 || table == nullptr) return false;
  for (const auto& [id, handler] : handlers) {
    if (id <= size && table[id] != nullptr) *table[id] = handler;
  }
  return true;
}

}  // namespace

void setNvtxTarget(const NvtxTarget& target) {
  Handles& h = handles();
  std::lock_guard lock(h.mu);
  // Kept for good: a handler may still hold the previous one.
  const NvtxTarget* t = new NvtxTarget(target);
  if (t->recorder != nullptr) {
    for (const auto& [name, handle] : h.domains) t->recorder->registerDomain(handle.get(), name);
    for (const auto& [key, handle] : h.strings) t->recorder->registerString(handle.get(), key.second);
  }
  g_target.store(t, std::memory_order_release);
}

bool installNvtxHandlers(NvtxGetExportTableFunc_t get_export_table) {
  if (get_export_table == nullptr) return false;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr) {
    return false;
  }
  const bool core = fill(*callbacks, NVTX_CB_MODULE_CORE,
                         {{NVTX_CBID_CORE_RangePushA, fn(&rangePushA)},
                          {NVTX_CBID_CORE_RangePushW, fn(&rangePushW)},
                          {NVTX_CBID_CORE_RangePushEx, fn(&rangePushEx)},
                          {NVTX_CBID_CORE_RangePop, fn(&rangePop)},
                          {NVTX_CBID_CORE_RangeStartA, fn(&rangeStartA)},
                          {NVTX_CBID_CORE_RangeStartW, fn(&rangeStartW)},
                          {NVTX_CBID_CORE_RangeStartEx, fn(&rangeStartEx)},
                          {NVTX_CBID_CORE_RangeEnd, fn(&rangeEnd)}});
  const bool core2 = fill(*callbacks, NVTX_CB_MODULE_CORE2,
                          {{NVTX_CBID_CORE2_DomainRangePushEx, fn(&domainRangePushEx)},
                           {NVTX_CBID_CORE2_DomainRangePop, fn(&domainRangePop)},
                           {NVTX_CBID_CORE2_DomainRangeStartEx, fn(&domainRangeStartEx)},
                           {NVTX_CBID_CORE2_DomainRangeEnd, fn(&domainRangeEnd)},
                           {NVTX_CBID_CORE2_DomainCreateA, fn(&domainCreateA)},
                           {NVTX_CBID_CORE2_DomainCreateW, fn(&domainCreateW)},
                           {NVTX_CBID_CORE2_DomainDestroy, fn(&domainDestroy)},
                           {NVTX_CBID_CORE2_DomainRegisterStringA, fn(&domainRegisterStringA)},
                           {NVTX_CBID_CORE2_DomainRegisterStringW, fn(&domainRegisterStringW)}});
  if (const auto* version = static_cast<const NvtxExportTableVersionInfo*>(get_export_table(NVTX_ETID_VERSIONINFO));
      version != nullptr && version->struct_size >= sizeof(NvtxExportTableVersionInfo) &&
      version->SetInjectionNvtxVersion != nullptr) {
    version->SetInjectionNvtxVersion(NVTX_VERSION);
  }
  return core || core2;
}

}  // namespace fprof::collector
