// The collector's launch and NVTX bookkeeping; see trace_recorder.h.
#include "trace_recorder.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "launch_info.h"
#include "nvtx_tracker.h"

namespace fprof::collector {
namespace {

struct ThreadState {
  int depth = 0;
  bool pushed = false;
  LaunchInfo current;
  OpenLaunch open;
  NvtxThreadStack nvtx;
  uint32_t tid = 0;
};

uint32_t gettidNow() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

std::atomic<uint64_t> g_next_serial{1};

void readArgs(const FunctionInfo& info, void** kernel_params, void** extra, LaunchArgs& out) {
  if (info.eight_byte_params.empty()) return;
  const uint8_t* buffer = nullptr;
  size_t buffer_bytes = 0;
  if (kernel_params == nullptr && extra != nullptr) {
    for (void** p = extra; *p != CU_LAUNCH_PARAM_END; p += 2) {
      if (*p == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = static_cast<const uint8_t*>(p[1]);
      if (*p == CU_LAUNCH_PARAM_BUFFER_SIZE && p[1] != nullptr) buffer_bytes = *static_cast<const size_t*>(p[1]);
    }
    if (buffer == nullptr) return;
  } else if (kernel_params == nullptr) {
    return;
  }
  for (const FunctionInfo::Param& p : info.eight_byte_params) {
    uint64_t value = 0;
    if (buffer != nullptr) {
      if (static_cast<size_t>(p.offset_bytes) + 8 > buffer_bytes) continue;
      std::memcpy(&value, buffer + p.offset_bytes, 8);
    } else {
      std::memcpy(&value, kernel_params[p.index], 8);
    }
    out.push_back(LaunchArg{p.index, p.offset_bytes, 8, value});
  }
}

}  // namespace

struct TraceRecorder::Impl {
  Options options;
  uint64_t serial = g_next_serial.fetch_add(1);
  NvtxTracker nvtx;
  std::mutex pending_mu;
  std::vector<LaunchInfo> launches;
  std::mutex threads_mu;
  std::vector<std::unique_ptr<ThreadState>> threads;

  ThreadState& thread() {
    struct Cache {
      uint64_t serial = 0;
      ThreadState* state = nullptr;
    };
    thread_local Cache cache;
    if (cache.serial == serial) return *cache.state;
    auto state = std::make_unique<ThreadState>();
    state->tid = options.thread_id != nullptr ? options.thread_id() : gettidNow();
    cache = {serial, state.get()};
    std::lock_guard lock(threads_mu);
    threads.push_back(std::move(state));
    return *cache.state;
  }

  void push(ThreadState& t) {
    std::lock_guard lock(pending_mu);
    launches.push_back(std::move(t.current));
    t.pushed = true;
  }

  std::string text(NvtxText m) const {
    return m.registered != nullptr ? nvtx.registeredString(m.registered) : std::string(m.chars);
  }
};

TraceRecorder::TraceRecorder() : TraceRecorder(Options{}) {}
TraceRecorder::TraceRecorder(Options options) : impl_(std::make_unique<Impl>()) { impl_->options = options; }
TraceRecorder::~TraceRecorder() = default;

const OpenLaunch* TraceRecorder::enterLaunch(const LaunchCall& call) {
  ThreadState& t = impl_->thread();
  if (t.depth == 0) {
    t.current = LaunchInfo{};
    t.current.correlation_id = call.correlation_id;
    t.current.launch_api = call.launch_api;
    const NvtxSnapshot snap = impl_->nvtx.snapshot(t.nvtx);
    t.current.nvtx_key = snap.innermost_key;
    t.current.nvtx_path = snap.path;
    t.current.thread_id = t.tid;
    t.current.graph_launch = call.graph_launch;
    t.pushed = false;
  } else if (t.current.nested_correlation_id == 0 && call.correlation_id != t.current.correlation_id) {
    t.current.nested_correlation_id = call.correlation_id;
  }
  ++t.depth;
  if (!call.driver || t.pushed) return nullptr;
  t.open = OpenLaunch{t.current.correlation_id, t.current.nested_correlation_id, t.current.graph_launch};
  return &t.open;
}

const std::string* TraceRecorder::openLaunchNvtxPath() { return impl_->thread().current.nvtx_path; }

void TraceRecorder::submitLaunch(const FunctionInfo* function, void** kernel_params, void** extra) {
  ThreadState& t = impl_->thread();
  if (function != nullptr) {
    t.current.local_bytes_per_thread = function->local_bytes_per_thread;
    readArgs(*function, kernel_params, extra, t.current.args);
  }
  impl_->push(t);
}

void TraceRecorder::exitLaunch() {
  ThreadState& t = impl_->thread();
  if (t.depth > 0) --t.depth;
  if (t.depth == 0 && !t.pushed) impl_->push(t);
}

void TraceRecorder::pushRange(const void* domain, NvtxText message, std::optional<uint64_t> payload,
                              int64_t timestamp_ns) {
  ThreadState& t = impl_->thread();
  impl_->nvtx.push(t.nvtx, domain, impl_->text(message), payload, t.tid, timestamp_ns);
}

void TraceRecorder::popRange(const void* domain, int64_t timestamp_ns) {
  impl_->nvtx.pop(impl_->thread().nvtx, domain, timestamp_ns);
}

void TraceRecorder::startRange(uint64_t range_id, const void* domain, NvtxText message, std::optional<uint64_t> payload,
                               int64_t timestamp_ns) {
  impl_->nvtx.start(range_id, domain, impl_->text(message), payload, impl_->thread().tid, timestamp_ns);
}

void TraceRecorder::endRange(uint64_t range_id, int64_t timestamp_ns) { impl_->nvtx.end(range_id, timestamp_ns); }

void TraceRecorder::registerDomain(const void* handle, std::string_view name) {
  impl_->nvtx.registerDomain(handle, std::string(name));
}

void TraceRecorder::registerString(const void* handle, std::string_view text) {
  impl_->nvtx.registerString(handle, std::string(text));
}

void TraceRecorder::collect(Translator& translator, std::vector<core::NvtxRangeRecord>& ranges) {
  std::vector<LaunchInfo> launches;
  {
    std::lock_guard lock(impl_->pending_mu);
    launches.swap(impl_->launches);
    impl_->launches.reserve(launches.size());
  }
  for (LaunchInfo& l : launches) translator.addLaunch(std::move(l));
  for (core::NvtxRangeRecord& r : impl_->nvtx.takeRecords()) ranges.push_back(std::move(r));
}

uint64_t TraceRecorder::unmatchedPops() const { return impl_->nvtx.unmatchedPops(); }

}  // namespace fprof::collector
