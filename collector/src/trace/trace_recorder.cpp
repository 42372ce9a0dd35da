// The collector's launch and NVTX bookkeeping; see trace_recorder.h.
//
// Application threads write raw, fixed-layout events (trace_events.h) into their own
// EventBuffer: no lock, no string built, nothing that grows with the run. The writer thread
// replays each thread's events in order: it pairs pops with pushes, builds range records,
// resolves each launch's NVTX path from its replica of the thread's stack and hands the launch
// to the translator, which matches it to its kernel record by correlation id.
#include "trace/trace_recorder.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <mutex>
#include <new>

#include "trace/event_buffer.h"
#include "trace/launch_info.h"
#include "trace/nvtx_tracker.h"
#include "trace/param_buffer.h"
#include "trace/trace_events.h"

namespace fprof::collector {
namespace {

uint32_t gettidNow() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

std::atomic<uint64_t> g_next_serial{1};

// The longest NVTX message kept (longer ones are cut): keeps an event's size in 32 bits.
constexpr size_t kMaxMessageBytes = size_t{1} << 24;

// Reads a launch's 8-byte arguments from kernelParams or a CU_LAUNCH_PARAM_BUFFER_POINTER
// buffer into `out` (room for every word of eight_byte_params and `probed`): the function's 8-byte
// parameters and words, then the words the argument-role probe found pointers in (FunctionInfo::
// probed, read once by the caller); returns how many.
uint32_t readArgs(const FunctionInfo& info, const std::vector<FunctionInfo::Param>* probed, void** kernel_params,
                  void** extra, LaunchArg* out) {
  if (info.eight_byte_params.empty() && probed == nullptr) return 0;
  const uint8_t* buffer = nullptr;
  size_t buffer_bytes = 0;
  if (kernel_params == nullptr && extra != nullptr) {
    const ParamBuffer b = paramBufferOf(extra);
    buffer = b.bytes;
    buffer_bytes = b.size;
    if (buffer == nullptr) return 0;
  } else if (kernel_params == nullptr) {
    return 0;
  }
  uint32_t n = 0;
  auto read = [&](const FunctionInfo::Param& p) {
    uint64_t value = 0;
    if (buffer != nullptr) {
      if (static_cast<size_t>(p.offset_bytes) + 8 > buffer_bytes) return;
      std::memcpy(&value, buffer + p.offset_bytes, 8);
    } else {
      std::memcpy(&value, static_cast<const uint8_t*>(kernel_params[p.index]) + p.within_bytes, 8);
    }
    // A word inside a larger parameter below 4 GiB is a size or a flag, not a device address.
    if (p.param_bytes > 8 && value < (uint64_t{1} << 32)) return;
    out[n++] = LaunchArg{p.index, p.offset_bytes, p.param_bytes, value};
  };
  for (const FunctionInfo::Param& p : info.eight_byte_params) read(p);
  if (probed != nullptr) {
    for (const FunctionInfo::Param& p : *probed) read(p);
  }
  return n;
}

using StatePtr = std::shared_ptr<const StartEndState>;

// Metrics mode: the thread's own NVTX stack, so a launch's path is known where it is made.
struct ThreadPaths {
  NvtxPathStack stack;
  NvtxPathTable table;
  StatePtr start_end;
  const std::string* open_path = nullptr;
  // With Options::selects_path: whether the thread's path selects launches now, counted in
  // *selecting (Impl::threads_selecting) while it does.
  bool selects = false;
  std::atomic<int>* selecting = nullptr;
};

// What the writer keeps per application thread while replaying its events.
struct Replay {
  NvtxPathStack stack;
  StatePtr start_end;
  bool has_begin = false;
  LaunchInfo begin;
};

struct ThreadState {
  EventBuffer events;
  uint32_t tid = 0;
  std::atomic<bool> retired{false};
  pthread_key_t exit_key{};  // Impl::key, whose destructor retires this state
  int exit_rounds = 0;       // destructor rounds seen at thread exit
  // The application thread's side.
  int depth = 0;
  bool submitted = true;  // no launch open
  OpenLaunch open;
  uint64_t start_end_generation = 0;  // of the last state this thread's events refer to
  AppTimes times;
  std::unique_ptr<ThreadPaths> paths;
  // The writer's side.
  Replay replay;
};

struct ThreadCache {
  uint64_t serial = 0;
  ThreadState* state = nullptr;
};
thread_local ThreadCache t_cache;

// pthread key destructor: the thread is exiting. Other keys' destructors run after this one in
// the same round, or in later rounds, and may still pop a range or launch on this thread: the
// state, and the writer's replica of its NVTX stack, must outlive them, or such a pop would land
// in a fresh state with an empty stack, be counted unmatched and leave its range open in the
// database. So the state re-arms its key and retires in the last round but one of the rounds
// POSIX guarantees: the last belongs to runtimes that tear the thread down with the same trick
// (the sanitizers' thread_finalize), after which even our atomic store would be too late. The
// writer frees the state once it has read everything. A callback after that (a destructor that
// re-armed itself that often) registers anew.
void onThreadExit(void* p) {
  auto* t = static_cast<ThreadState*>(p);
  if (++t->exit_rounds < PTHREAD_DESTRUCTOR_ITERATIONS - 1 && pthread_setspecific(t->exit_key, t) == 0) return;
  if (t->paths && t->paths->selects) {  // a thread that exits inside a selecting range selects no more
    t->paths->selects = false;
    t->paths->selecting->fetch_sub(1, std::memory_order_acq_rel);
  }
  t->retired.store(true, std::memory_order_release);
  t_cache = ThreadCache{};
}

AppTimes* timesIf(ThreadState& t) { return selfTimingEnabled() ? &t.times : nullptr; }

}  // namespace

struct TraceRecorder::Impl {
  Options options;
  uint64_t serial = g_next_serial.fetch_add(1);
  pthread_key_t key{};
  bool key_ok = false;
  NvtxNames names;
  StartEndRanges start_end;
  std::atomic<uint64_t> next_key{1};
  std::atomic<int> threads_selecting{0};  // threads whose own path selects launches (selects_path)
  std::atomic<uint64_t> start_end_events{0};

  std::mutex threads_mu;
  std::vector<ThreadState*> threads;  // owned

  // Writer thread only.
  NvtxPathTable paths;
  std::atomic<uint64_t> unmatched_pops{0};
  uint64_t launches = 0, nvtx_events = 0, event_bytes = 0, thread_count = 0, chunks_retired = 0;
  AppTimes retired_times;

  Impl() { key_ok = pthread_key_create(&key, &onThreadExit) == 0; }

  ~Impl() {
    if (key_ok) pthread_key_delete(key);
    for (ThreadState* t : threads) {
      // Free the start/end states still referred to by unread events.
      t->events.consume([](const uint8_t* data, size_t bytes) {
        for (size_t at = 0; at < bytes;) {
          const auto* h = reinterpret_cast<const EventHeader*>(data + at);
          if (h->kind == EventKind::kStartEndState) {
            delete static_cast<StatePtr*>(reinterpret_cast<const StartEndStateEvent*>(h)->state);
          }
          at += h->bytes;
        }
      });
      delete t;
    }
  }

  ThreadState* thread() {
    if (t_cache.serial == serial) return t_cache.state;
    return registerThread();
  }

  ThreadState* registerThread() {
    ThreadState* t = nullptr;
    try {
      t = new ThreadState();
      t->tid = options.thread_id != nullptr ? options.thread_id() : gettidNow();
      t->exit_key = key;
      if (options.paths_on_threads) {
        t->paths = std::make_unique<ThreadPaths>();
        t->paths->selecting = &threads_selecting;
      }
      std::lock_guard lock(threads_mu);
      threads.push_back(t);
      ++thread_count;
    } catch (const std::bad_alloc&) {
      delete t;
      return nullptr;  // this thread's launches and ranges go unrecorded; the target runs on
    }
    if (key_ok) pthread_setspecific(key, t);
    t_cache = ThreadCache{serial, t};
    return t;
  }

  template <class E>
  E* reserve(ThreadState& t, uint32_t bytes) {
    return reinterpret_cast<E*>(t.events.reserve(bytes));
  }

  // After a push or pop on t: whether t's own path now selects launches (Options::selects_path).
  void updateSelects(ThreadState& t) {
    if (!options.selects_path) return;
    const std::string* path = t.paths->stack.snapshot(t.paths->start_end, t.paths->table, names).path;
    const bool selects = path != nullptr && options.selects_path(*path);
    if (selects == t.paths->selects) return;
    t.paths->selects = selects;
    threads_selecting.fetch_add(selects ? 1 : -1, std::memory_order_acq_rel);
  }

  void emitStartEndState(ThreadState& t) {
    auto [state, generation] = start_end.current();
    t.start_end_generation = generation;
    if (t.paths) t.paths->start_end = state;
    auto* e = reserve<StartEndStateEvent>(t, sizeof(StartEndStateEvent));
    auto* holder = e != nullptr ? new (std::nothrow) StatePtr(std::move(state)) : nullptr;
    if (holder == nullptr) {
      t.start_end_generation = ~uint64_t{0};  // try again at the next launch
      return;
    }
    e->header = EventHeader{EventKind::kStartEndState, 0, sizeof(StartEndStateEvent)};
    e->state = holder;
    t.events.commit(sizeof(StartEndStateEvent));
  }

  void submit(ThreadState& t, const FunctionInfo* function, void** kernel_params, void** extra, bool programmatic) {
    t.submitted = true;
    const std::vector<FunctionInfo::Param>* probed = function != nullptr ? function->probed.get() : nullptr;
    const uint32_t max_args =
        function != nullptr
            ? static_cast<uint32_t>(function->eight_byte_params.size() + (probed != nullptr ? probed->size() : 0))
            : 0;
    auto* e = reserve<LaunchSubmitEvent>(t, eventBytes(sizeof(LaunchSubmitEvent), max_args * sizeof(LaunchArg)));
    if (e == nullptr) return;
    e->nested_correlation_id = t.open.nested_correlation_id;
    e->local_bytes_per_thread = function != nullptr ? function->local_bytes_per_thread : -1;
    e->arg_count = function != nullptr
                       ? readArgs(*function, probed, kernel_params, extra, reinterpret_cast<LaunchArg*>(e + 1))
                       : 0;
    const uint32_t bytes = eventBytes(sizeof(LaunchSubmitEvent), e->arg_count * sizeof(LaunchArg));
    e->header = EventHeader{EventKind::kLaunchSubmit, programmatic ? LaunchSubmitEvent::kProgrammatic : uint16_t{0}, bytes};
    t.events.commit(bytes);
  }

  std::string text(NvtxText m) const {
    return m.registered != nullptr ? names.registeredString(m.registered) : std::string(m.chars);
  }

  // ---- Writer side ----

  void replay(ThreadState& t, const uint8_t* data, size_t bytes, Translator& translator,
              std::vector<core::NvtxRangeRecord>& ranges) {
    Replay& r = t.replay;
    for (size_t at = 0; at < bytes;) {
      const auto* h = reinterpret_cast<const EventHeader*>(data + at);
      at += h->bytes;
      switch (h->kind) {
        case EventKind::kLaunchBegin: {
          const auto* e = reinterpret_cast<const LaunchBeginEvent*>(h);
          r.begin = LaunchInfo{};
          r.begin.correlation_id = e->correlation_id;
          r.begin.launch_api = e->launch_api;
          r.begin.graph_launch = (h->flags & LaunchBeginEvent::kGraphLaunch) != 0;
          r.begin.thread_id = t.tid;
          const NvtxPathStack::Snapshot snap = r.stack.snapshot(r.start_end, paths, names);
          r.begin.nvtx_key = snap.innermost_key;
          r.begin.nvtx_path = snap.path;
          r.has_begin = true;
          break;
        }
        case EventKind::kLaunchSubmit: {
          if (!r.has_begin) break;  // its ENTER came before collection started
          const auto* e = reinterpret_cast<const LaunchSubmitEvent*>(h);
          r.begin.nested_correlation_id = e->nested_correlation_id;
          r.begin.local_bytes_per_thread = e->local_bytes_per_thread;
          r.begin.programmatic = (h->flags & LaunchSubmitEvent::kProgrammatic) != 0;
          const auto* args = reinterpret_cast<const LaunchArg*>(e + 1);
          for (uint32_t i = 0; i < e->arg_count; ++i) r.begin.args.push_back(args[i]);
          translator.addLaunch(std::move(r.begin));
          r.has_begin = false;
          ++launches;
          break;
        }
        case EventKind::kPush: {
          const auto* e = reinterpret_cast<const PushEvent*>(h);
          std::string message = e->registered != nullptr
                                    ? names.registeredString(e->registered)
                                    : std::string(reinterpret_cast<const char*>(e + 1), e->message_bytes);
          r.stack.push(e->key, e->domain, std::move(message),
                       (h->flags & PushEvent::kHasPayload) != 0 ? std::optional<uint64_t>(e->payload) : std::nullopt,
                       t.tid, e->timestamp_ns);
          ++nvtx_events;
          break;
        }
        case EventKind::kPop: {
          const auto* e = reinterpret_cast<const PopEvent*>(h);
          if (!r.stack.pop(e->domain, e->timestamp_ns, names, &ranges)) {
            unmatched_pops.fetch_add(1, std::memory_order_relaxed);
          }
          ++nvtx_events;
          break;
        }
        case EventKind::kStartEndState: {
          std::unique_ptr<StatePtr> holder(static_cast<StatePtr*>(reinterpret_cast<const StartEndStateEvent*>(h)->state));
          r.start_end = std::move(*holder);
          break;
        }
      }
    }
  }
};

TraceRecorder::TraceRecorder() : TraceRecorder(Options{}) {}
TraceRecorder::TraceRecorder(Options options) : impl_(std::make_unique<Impl>()) { impl_->options = options; }
TraceRecorder::~TraceRecorder() = default;

const OpenLaunch* TraceRecorder::enterLaunch(const LaunchCall& call) {
  ThreadState* t = impl_->thread();
  if (t == nullptr) return nullptr;
  if (t->depth == 0) {
    ScopedAppTimer timer(timesIf(*t), AppTimer::kLaunchContext);
    // The NVTX context is the thread's own stack (the writer replays it) and the open start/end
    // ranges, which change rarely: the thread says which state it saw only when it changed.
    if (impl_->start_end.generation() != t->start_end_generation) impl_->emitStartEndState(*t);
    if (auto* e = impl_->reserve<LaunchBeginEvent>(*t, sizeof(LaunchBeginEvent))) {
      e->header = EventHeader{EventKind::kLaunchBegin, call.graph_launch ? LaunchBeginEvent::kGraphLaunch : uint16_t{0},
                              sizeof(LaunchBeginEvent)};
      e->correlation_id = call.correlation_id;
      e->launch_api = call.launch_api;
      t->events.commit(sizeof(LaunchBeginEvent));
    }
    t->open = OpenLaunch{call.correlation_id, 0, call.graph_launch};
    t->submitted = false;
    if (t->paths) {
      t->paths->open_path = t->paths->stack.snapshot(t->paths->start_end, t->paths->table, impl_->names).path;
    }
  } else if (t->open.nested_correlation_id == 0 && call.correlation_id != t->open.correlation_id) {
    t->open.nested_correlation_id = call.correlation_id;
  }
  ++t->depth;
  if (!call.driver || t->submitted) return nullptr;
  return &t->open;
}

const std::string* TraceRecorder::openLaunchNvtxPath() {
  ThreadState* t = impl_->thread();
  return t != nullptr && t->paths ? t->paths->open_path : nullptr;
}

bool TraceRecorder::anotherThreadSelects() {
  ThreadState* t = impl_->thread();
  const int mine = t != nullptr && t->paths && t->paths->selects ? 1 : 0;
  return impl_->threads_selecting.load(std::memory_order_acquire) > mine;
}

void TraceRecorder::submitLaunch(const FunctionInfo* function, void** kernel_params, void** extra, bool programmatic) {
  ThreadState* t = impl_->thread();
  if (t == nullptr || t->submitted) return;
  ScopedAppTimer timer(timesIf(*t), AppTimer::kArgumentCapture);
  impl_->submit(*t, function, kernel_params, extra, programmatic);
}

void TraceRecorder::exitLaunch() {
  ThreadState* t = impl_->thread();
  if (t == nullptr) return;
  if (t->depth > 0) --t->depth;
  if (t->depth == 0 && !t->submitted) impl_->submit(*t, nullptr, nullptr, nullptr, false);
}

void TraceRecorder::pushRange(const void* domain, NvtxText message, std::optional<uint64_t> payload,
                              int64_t timestamp_ns) {
  ThreadState* t = impl_->thread();
  if (t == nullptr) return;
  ScopedAppTimer timer(timesIf(*t), AppTimer::kNvtxQueueing);
  const uint64_t key = impl_->next_key.fetch_add(1, std::memory_order_relaxed);
  const size_t length = message.registered != nullptr ? 0 : std::min(message.chars.size(), kMaxMessageBytes);
  const uint32_t bytes = eventBytes(sizeof(PushEvent), static_cast<uint32_t>(length));
  if (auto* e = impl_->reserve<PushEvent>(*t, bytes)) {
    e->header = EventHeader{EventKind::kPush, payload ? PushEvent::kHasPayload : uint16_t{0}, bytes};
    e->message_bytes = static_cast<uint32_t>(length);
    e->domain = domain;
    e->registered = message.registered;
    e->key = key;
    e->payload = payload.value_or(0);
    e->timestamp_ns = timestamp_ns;
    if (length > 0) std::memcpy(e + 1, message.chars.data(), length);
    t->events.commit(bytes);
  }
  if (t->paths) {
    t->paths->stack.push(key, domain, impl_->text(message), payload, t->tid, timestamp_ns);
    impl_->updateSelects(*t);
  }
}

void TraceRecorder::popRange(const void* domain, int64_t timestamp_ns) {
  ThreadState* t = impl_->thread();
  if (t == nullptr) return;
  ScopedAppTimer timer(timesIf(*t), AppTimer::kNvtxQueueing);
  if (auto* e = impl_->reserve<PopEvent>(*t, sizeof(PopEvent))) {
    e->header = EventHeader{EventKind::kPop, 0, sizeof(PopEvent)};
    e->domain = domain;
    e->timestamp_ns = timestamp_ns;
    t->events.commit(sizeof(PopEvent));
  }
  if (t->paths) {
    t->paths->stack.pop(domain, timestamp_ns, impl_->names, nullptr);
    impl_->updateSelects(*t);
  }
}

void TraceRecorder::startRange(uint64_t range_id, const void* domain, NvtxText message, std::optional<uint64_t> payload,
                               int64_t timestamp_ns) {
  ThreadState* t = impl_->thread();
  const uint64_t key = impl_->next_key.fetch_add(1, std::memory_order_relaxed);
  std::string text = impl_->text(message);
  std::string domain_name = impl_->names.domainName(domain);
  std::string segment = domain == nullptr ? text : domain_name + "::" + text;
  impl_->start_end.start(range_id, key, std::move(domain_name), std::move(segment), std::move(text), payload,
                         t != nullptr ? t->tid : gettidNow(), timestamp_ns);
  impl_->start_end_events.fetch_add(1, std::memory_order_relaxed);
}

void TraceRecorder::endRange(uint64_t range_id, int64_t timestamp_ns) {
  impl_->start_end.end(range_id, timestamp_ns);
  impl_->start_end_events.fetch_add(1, std::memory_order_relaxed);
}

void TraceRecorder::registerDomain(const void* handle, std::string_view name) { impl_->names.registerDomain(handle, name); }

void TraceRecorder::registerString(const void* handle, std::string_view text) { impl_->names.registerString(handle, text); }

AppTimes* TraceRecorder::threadTimes() {
  ThreadState* t = impl_->thread();
  return t != nullptr ? &t->times : nullptr;
}

void TraceRecorder::collect(Translator& translator, std::vector<core::NvtxRangeRecord>& ranges) {
  Impl& m = *impl_;
  std::vector<ThreadState*> threads;
  {
    std::lock_guard lock(m.threads_mu);
    threads = m.threads;
  }
  for (ThreadState* t : threads) {
    // Retired before reading: everything the thread wrote is visible to this read.
    const bool retired = t->retired.load(std::memory_order_acquire);
    m.event_bytes += t->events.consume([&](const uint8_t* data, size_t bytes) {
      m.replay(*t, data, bytes, translator, ranges);
    });
    t->replay.stack.endCollection(m.names, ranges);
    if (!retired && m.options.prefill_chunks) t->events.prefill(EventBuffer::kSpares);
    if (retired) {
      m.retired_times.absorb(t->times);
      m.chunks_retired += t->events.chunksAllocated();
      {
        std::lock_guard lock(m.threads_mu);
        m.threads.erase(std::find(m.threads.begin(), m.threads.end(), t));
      }
      delete t;
    }
  }
  for (core::NvtxRangeRecord& r : m.start_end.takeRecords()) ranges.push_back(std::move(r));
}

uint64_t TraceRecorder::unmatchedPops() const { return impl_->unmatched_pops.load(std::memory_order_relaxed); }

void TraceRecorder::addTotals(SelfTimingTotals& totals) const {
  Impl& m = *impl_;
  std::lock_guard lock(m.threads_mu);
  for (const ThreadState* t : m.threads) {
    totals.add(t->times);
    totals.chunks_allocated += t->events.chunksAllocated();
  }
  totals.add(m.retired_times);
  totals.chunks_allocated += m.chunks_retired;
  totals.launches += m.launches;
  totals.nvtx_events += m.nvtx_events + m.start_end_events.load(std::memory_order_relaxed);
  totals.event_bytes += m.event_bytes;
  totals.threads += m.thread_count;
}

}  // namespace fprof::collector
