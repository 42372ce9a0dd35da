// Trace-mode collector: callback handling, the writer thread and the shutdown paths (periodic,
// context teardown, atexit, SIGINT/SIGTERM). See collector.h and collector/README.md.
#include "injection/collector.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cupti_pcsampling.h>
#include <generated_nvtx_meta.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <memory>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "arg_roles/arg_role_probe.h"
#include "cupti/checks.h"
#include "cupti/cupti_activity_api.h"
#include "cupti/cupti_counting_backend.h"
#include "cupti/l2_sweep.h"
#include "cupti/own_checkpoint.h"
#include "fprof/core/output.h"
#include "fprof/core/store.h"
#include "injection/config.h"
#include "injection/log.h"
#include "injection/self_timing.h"
#include "metrics/metrics_collector.h"
#include "metrics/metrics_config.h"
#include "trace/device_query.h"
#include "trace/function_cache.h"
#include "trace/nvtx_decode.h"
#include "trace/nvtx_injection.h"
#include "trace/param_buffer.h"
#include "trace/trace_recorder.h"
#include "trace/translate.h"

namespace fprof::collector {
namespace {

// The driver copies whose parameters start with (dst, src, ByteCount): what a device-to-device copy
// (PyTorch's clone of a contiguous tensor, cudaMemcpyAsync DtoD) goes through. The activity record
// has no addresses; data flow needs them to pass a copied value on.
std::array<uint32_t, 8> copyAddressCallbackIds() {
  return {CUPTI_DRIVER_TRACE_CBID_cuMemcpy,           CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds,
          CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,      CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2,    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds,
          CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz};
}

struct CopyParams {  // the common prefix of those calls' parameter structs
  CUdeviceptr dst;
  CUdeviceptr src;
  size_t bytes;
};
static_assert(offsetof(cuMemcpyAsync_params, ByteCount) == offsetof(CopyParams, bytes));
static_assert(offsetof(cuMemcpyDtoDAsync_v2_params, ByteCount) == offsetof(CopyParams, bytes));
static_assert(offsetof(cuMemcpy_ptds_params, ByteCount) == offsetof(CopyParams, bytes));


struct RawBuffer {
  uint8_t* data = nullptr;
  size_t valid_bytes = 0;
};

// Wake-up codes for the writer thread (a pipe, so a signal handler may send them).
constexpr char kWakeFlush = 'f';
constexpr char kWakeSignalFlush = 's';
constexpr char kWakeSignalFinal = 'S';
constexpr char kWakeQuit = 'q';

struct DriverLaunch;

class Collector {
 public:
  bool initialize();
  void onCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);
  void onExit();
  void onSignal(int sig, siginfo_t* info, void* context);
  void onForkChild();
  void yieldCupti(const char* client);
  bool active() const { return active_.load(std::memory_order_relaxed); }
  bool nvtxDirect() const { return config_.nvtx_direct; }

  static Collector& instance() {
    static auto* c = new Collector();  // leaked: callbacks may arrive during static destruction
    return *c;
  }

 private:
  // The steps of initialize, in order.
  bool configureMetrics(const MetricsConfig& metrics_config);
  void createRecorder(bool metrics, const MetricsConfig& metrics_config);
  bool openDatabase();
  bool subscribe();
  void enableTraceCallbacks(bool metrics);
  void enableMetricsCallbacks(const MetricsConfig& metrics_config);
  void enableLaunchAndNvtxCallbacks();
  void enableActivityRecords();
  void startWriterThread();
  void installProcessHooks();
  void handleLaunch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
  void handleNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* data);
  void handleContextCreated(const CUpti_ResourceData* data);
  void handleTeardown();
  void saveCubin(const CUpti_ResourceData* data);
  void markDeviceSm(const core::DeviceInfo& device);
  struct RecordsOfKind {
    uint64_t count = 0;
    int64_t ns = 0;
  };
  std::map<int, RecordsOfKind> records_by_kind_;  // FPROF_SELF_TIMING: the writer's records by CUPTI kind
  void nameCubinsByCrc();
  std::vector<std::string> cubins_without_crc_;  // under pending_mu_: saved under SASS patching
  void handleGraphNodeCreated(const CUpti_ResourceData* data);
  void handleGraphNodeChanged(const CUpti_ResourceData* data);
  void recordCopyAddresses(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
  void addEvent(const char* severity, const std::string& message);
  void recordCuptiLibraries();
  void recordCollectorSettings();
  const FunctionInfo& functionInfo(CUfunction f);

  void writerLoop();
  void flushCupti(bool forced);
  void drain();
  // The steps of drain.
  void takePending(std::vector<RawBuffer>& buffers, std::vector<core::CollectorEventRecord>& events);
  void writeProbeAndCopyRecords();
  TranslatedBatch translateBuffers(const std::vector<RawBuffer>& buffers);
  void writeMetricsResults();
  void reportDroppedRecords();
  void finish(int64_t last_start_ns = 0);
  // The steps of finish before the database closes.
  void printRecordsByKind() const;
  void recordFatalSignal();
  void recordRunEvents();
  void wake(char code);

  CollectorConfig config_;
  std::atomic<bool> active_{false};
  std::unique_ptr<core::Writer> writer_;  // owned by the writer thread once it runs
  uint32_t process_id_ = 0;
  std::string path_;
  std::string cubin_dir_;  // metrics mode: where module cubins go (FPROF_CUBIN_DIR)

  std::unique_ptr<TraceRecorder> recorder_;  // launch and NVTX bookkeeping (created by initialize)
  FunctionCache functions_;
  MetricsCollector metrics_{cuptiCountingBackend()};  // off unless FPROF_MODE=metrics
  // Trace mode: which pointer arguments each function writes, measured once per function; its
  // own copies are left out of the trace.
  ArgRoleProbe arg_probe_;
  bool arg_roles_ = false;
  std::vector<core::FunctionArgRecord> arg_roles_found_;  // under pending_mu_
  std::vector<uint32_t> own_copies_;                      // under pending_mu_
  OwnKernelWindows own_windows_;  // profiled launches' duplicates (metrics mode)
  AllocationMap allocations_;         // what fprof's own checkpoint around a duplicate saves
  ModuleWritesIndex module_writes_;
  // Source and destination of the copies whose driver call names them (copyAddressCallbackIds).
  std::vector<core::MemcpyAddressRecord> copy_addresses_;  // under pending_mu_
  void probeBefore(const CUpti_CallbackData* cb, CUpti_CallbackId cbid, const DriverLaunch& launch,
                   const FunctionInfo& info, uint32_t correlation_id);
  void probeAfter(CUresult result);
  Translator translator_;  // writer thread only
  SelfTimingTotals self_timing_;  // writer thread only

  std::mutex pending_mu_;
  std::vector<RawBuffer> buffers_;
  std::vector<core::DeviceInfo> devices_;
  std::vector<core::CollectorEventRecord> events_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  std::set<uint32_t> seen_devices_;
  bool driver_version_recorded_ = false;

  std::thread writer_thread_;
  int wake_pipe_[2] = {-1, -1};
  int done_pipe_[2] = {-1, -1};
  std::atomic<bool> finished_{false};
  std::atomic<bool> exiting_{false};
  uint64_t dropped_reported_ = 0;
};

// Signals after which the program's records are written before it goes on or dies: the polite
// ones (INT, TERM) and the fatal ones a crash raises (abort(), a failed assert, a null pointer).
constexpr int kHandledSignals[] = {SIGINT, SIGTERM, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
struct sigaction g_previous[NSIG] {};
std::atomic<int> g_fatal_signal{0};  // the signal that ends the program, for the writer to record
pthread_t g_writer_thread{};

void signalTrampoline(int sig, siginfo_t* info, void* context) { Collector::instance().onSignal(sig, info, context); }
void forkChildTrampoline() { Collector::instance().onForkChild(); }
void exitTrampoline() { Collector::instance().onExit(); }
void yieldTrampoline(const char* client) { Collector::instance().yieldCupti(client); }
bool activeTrampoline() { return Collector::instance().active(); }
void CUPTIAPI callbackTrampoline(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  Collector::instance().onCallback(domain, cbid, data);
}

void installSignalHandlers();

bool claimPath(const std::string& path) {
  const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

std::string prefixLines(const std::string& text, const char* prefix) {
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    out += prefix;
    out += text.substr(at, end == std::string::npos ? std::string::npos : end + 1 - at);
    if (end == std::string::npos) out += '\n';
    at = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

int64_t unixNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool Collector::openDatabase() {
  const std::string ranked = rankedOutputPath(config_.output, config_.ranks.rank);
  // O_EXCL claims the name atomically, so two processes of one run never share a file, also
  // with --force (a compile worker of torch.compile must not overwrite its parent's file):
  // `fprof run --force` has the collector write into a fresh folder and moves the new files over
  // the old ones once the program has ended. FPROF_FORCE only lets
  // an existing file of an earlier run be replaced when nothing else claimed it in this run.
  path_ = ranked;
  if (!claimPath(path_)) {
    if (errno != EEXIST) {
      logWarning("cannot create %s: %s; collection is off", path_.c_str(), core::systemCause(errno).c_str());
      return false;
    }
    path_ = pidOutputPath(ranked, getpid());
    if (!claimPath(path_) && !(config_.force && errno == EEXIST)) {
      logWarning("cannot create %s: %s; collection is off", path_.c_str(), core::systemCause(errno).c_str());
      return false;
    }
  }
  auto created = core::Writer::create(path_, /*overwrite=*/true);
  if (!created) {
    logWarning("%s; collection is off", created.error().c_str());
    ::unlink(path_.c_str());
    return false;
  }
  writer_ = std::move(created.value());
  const int64_t start_unix_ns = unixNowNs();
  auto process = writer_->addProcess(currentProcess(config_.ranks, start_unix_ns));
  if (!process) {
    logWarning("%s; collection is off", process.error().c_str());
    return false;
  }
  process_id_ = *process;
  translator_.setProcessId(process_id_);
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"fprof_version", FPROF_VERSION_STRING},
                                   {"mode", "trace"},
                                   {"cupti_version", std::to_string(CuptiActivityApi::instance().version())},
                                   {"dropped_records", "0"},
                                   {"start_unix_ns", std::to_string(start_unix_ns)},
                                   {"start_cupti_ns", std::to_string(CuptiActivityApi::timestampNs())}}) {
    if (core::Status s = writer_->setMetadata(key, value); !s) logWarning("%s", s.error().c_str());
  }
  return true;
}

bool Collector::initialize() {
  config_ = readConfig(core::env::processEnvironment());
  setQuiet(config_.quiet);
  setSelfTimingEnabled(config_.self_timing);
  for (const std::string& w : config_.warnings) logWarning("%s", w.c_str());
  if (!config_.enabled) return false;
  const MetricsConfig metrics_config = readMetricsConfig(core::env::processEnvironment());
  const bool metrics = configureMetrics(metrics_config);
  createRecorder(metrics, metrics_config);
  if (!openDatabase()) {
    writer_.reset();
    return false;
  }
  metrics_.setDatabasePath(path_);
  if (metrics) {
    writer_->expectCountersForEveryKernel(
        "no profiling decision was recorded for this launch (a launch path the collector does not see, or the "
        "program ended before its counters were decoded)");
  }
  if (!subscribe()) return false;
  enableTraceCallbacks(metrics);
  if (metrics) enableMetricsCallbacks(metrics_config);
  enableLaunchAndNvtxCallbacks();
  enableActivityRecords();
  startWriterThread();
  installProcessHooks();
  if (metrics) {
    logInfo("profiling hardware counters to %s: selected kernels run serialized (and replayed where the metrics need "
            "it), so they run slower",
            path_.c_str());
  } else {
    logInfo("tracing to %s", path_.c_str());
  }
  return true;
}

// Metrics mode, where the configuration asks for it and can be used: the translator leaves out the
// profiler's own kernels and waits longer for replayed launches' records.
bool Collector::configureMetrics(const MetricsConfig& metrics_config) {
  const bool metrics = metrics_.configure(metrics_config);
  if (!metrics) return false;
  translator_.setUnmatchedLaunchGenerations(Translator::kUnmatchedLaunchGenerationsReplay);
  translator_.ignoreKernelsNamed(kL2SweepKernelName);
  translator_.ignoreKernelsNamed(kCodeSweepKernelName);
  translator_.ignoreKernelsNamed(kCuptiWaitKernelName);
  translator_.ignoreOwnWindows(&own_windows_);
  metrics_.recordOwnWindowsIn(&own_windows_);
  if (metrics_.duplicatesLaunches() && metrics_config.own_checkpoint) {
    metrics_.useOwnCheckpointMaps(&allocations_, &module_writes_);
  }
  return true;
}

void Collector::createRecorder(bool metrics, const MetricsConfig& metrics_config) {
  TraceRecorder::Options recorder_options;
  recorder_options.paths_on_threads = metrics;  // launches are selected by NVTX path as they are made
  if (metrics && metrics_config.nvtx_process_scope && !metrics_config.nvtx_include.empty()) {
    recorder_options.selects_path = [metrics_config](const std::string& path) {
      return nvtxPathIncluded(metrics_config, path);
    };
  }
  recorder_ = std::make_unique<TraceRecorder>(recorder_options);
  if (config_.nvtx_direct) setNvtxTarget(NvtxTarget{recorder_.get(), &CuptiActivityApi::timestampNs, &activeTrampoline});
}

// CUPTI's one subscription. Another client holding it leaves collection off, said in the database.
bool Collector::subscribe() {
  std::string error;
  if (CuptiActivityApi::instance().subscribe(callbackTrampoline, nullptr, error)) return true;
  logWarning("%s; collection is off, the program runs unprofiled", error.c_str());
  core::CollectorEventRecord e{process_id_, unixNowNs(), "error", error + "; nothing was collected"};
  writer_->add(e);
  (void)writer_->flush();
  (void)writer_->close();
  writer_.reset();
  return false;
}

// The argument-role probe's copies (trace mode), kernel nodes of graphs and the copies whose
// addresses data flow follows.
void Collector::enableTraceCallbacks(bool metrics) {
  CuptiActivityApi& api = CuptiActivityApi::instance();
  if (!metrics) {
    const auto ids = ArgRoleProbe::copyCallbackIds();
    arg_roles_ = api.enableDriverCallbacks(ids.data(), ids.size());
    if (!arg_roles_) addEvent("warning", "argument roles are not measured: copy callbacks could not be enabled");
  }
  if (!api.enableGraphNodeCallbacks()) {
    addEvent("warning", "graph-node callbacks could not be enabled: functions launched only from hand-built CUDA "
                        "graphs have no function row");
  }
  const auto ids = copyAddressCallbackIds();
  if (!api.enableDriverCallbacks(ids.data(), ids.size())) {
    addEvent("warning", "copy callbacks could not be enabled: device-to-device copies have no addresses, so data "
                        "flow cannot follow a value through them");
  }
}

// Graph nodes whose parameters change, memsets and copies (they hold a context's window), the
// allocations and modules fprof's own checkpoint reads, and the modules whose SASS `fprof run` reads.
void Collector::enableMetricsCallbacks(const MetricsConfig& metrics_config) {
  CuptiActivityApi& api = CuptiActivityApi::instance();
  if (!api.enableGraphNodeChangeCallbacks()) {
    addEvent("warning",
             "graph-node update callbacks could not be enabled: kernels of CUDA graphs get no copied counters");
    metrics_.noteGraphNodesUntrusted();
  }
  if (!api.enableMemoryOperationCallbacks()) {
    addEvent("warning", "memset/memcpy callbacks could not be enabled; counters of kernels next to them may be discarded");
  }
  if (metrics_.duplicatesLaunches() && metrics_config.own_checkpoint) {
    const std::vector<CUpti_CallbackId>& ids = allocationCallbackIds();
    const std::vector<uint32_t> ids32(ids.begin(), ids.end());
    if (!api.enableDriverCallbacks(ids32.data(), ids32.size())) {
      allocations_.refuse("allocation callbacks could not be enabled");
    }
    if (!api.enableModuleLoadCallbacks()) allocations_.refuse("module-load callbacks could not be enabled");
  }
  if (!metrics_config.cubin_dir.empty()) {
    cubin_dir_ = metrics_config.cubin_dir;
    if (!api.enableModuleLoadCallbacks()) {
      addEvent("warning", "module-load callbacks could not be enabled: half-precision FLOPs stay unknown");
    }
  }
}

void Collector::enableLaunchAndNvtxCallbacks() {
  CuptiActivityApi& api = CuptiActivityApi::instance();
  // NVTX reaches fprof's own handlers directly unless FPROF_NVTX_INJECTION=cupti.
  CuptiActivityApi::Callbacks callbacks;
  callbacks.nvtx = config_.cupti.nvtx_callbacks && !config_.nvtx_direct;
  if (!api.enableCallbacks(callbacks)) {
    addEvent("warning", "some CUPTI callbacks could not be enabled; launch API, NVTX or arguments may be missing");
  }
  if (config_.cupti.host_pinned && !api.setHostPinnedProfilingBuffers()) {
    addEvent("warning", "CUPTI refused to keep timestamps in pinned host memory");
  }
}

// The activity kinds, their completed buffers queued for the writer, and CUPTI's flush period.
void Collector::enableActivityRecords() {
  CuptiActivityApi& api = CuptiActivityApi::instance();
  CuptiActivityApi::Kinds kinds;
  kinds.kernel = config_.cupti.kernel;
  kinds.memcpy = config_.cupti.memcpy;
  kinds.memset = config_.cupti.memset;
  kinds.memory = config_.cupti.memory;
  // A second run by SASS patching traces the serialized kind (its counts need it); duplicates in
  // the first run pause the concurrent kind around each instead.
  kinds.serialized_kernels = metrics_.countsBySassPatching();
  recordCollectorSettings();
  for (const std::string& w : api.enableActivities([this](uint8_t* data, size_t valid) {
         size_t queued = 0;
         {
           std::lock_guard lock(pending_mu_);
           buffers_.push_back({data, valid});
           queued = buffers_.size();
         }
         // Full buffers are 8 MiB each: do not let many wait for the next period.
         if (queued >= 4) wake(kWakeFlush);
       }, kinds)) {
    logWarning("%s", w.c_str());
    addEvent("warning", w);
  }
  api.setFlushPeriod(config_.flush_interval_ms);
}

void Collector::startWriterThread() {
  if (pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0 || pipe2(done_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    logWarning("pipe2 failed: %s; records are written only at exit", core::systemCause(errno).c_str());
  }
  // The writer never runs the handler of an asynchronous signal: the handler waits for it.
  sigset_t blocked, previous;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGINT);
  sigaddset(&blocked, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  writer_thread_ = std::thread([this] { writerLoop(); });
  g_writer_thread = writer_thread_.native_handle();
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

// Collection on, and what ends it or takes CUPTI over: exit, fork, signals, another CUPTI client.
void Collector::installProcessHooks() {
  active_.store(true);
  std::atexit(exitTrampoline);
  pthread_atfork(nullptr, nullptr, forkChildTrampoline);
  installSignalHandlers();
  recordCuptiLibraries();
  // libfprof_preload.so (LD_PRELOADed by `fprof run`) calls yieldCupti when another client
  // (torch.profiler) subscribes to CUPTI later. Registered after our own subscription on purpose.
  using SetHook = void (*)(void (*)(const char*));
  if (auto set_hook = reinterpret_cast<SetHook>(dlsym(RTLD_DEFAULT, "fprof_cupti_guard_set_hook"))) {
    set_hook(&yieldTrampoline);
  }
}

void Collector::recordCuptiLibraries() {
  const std::string in_use = CuptiActivityApi::libraryPath();
  const std::vector<std::string> loaded = CuptiActivityApi::loadedLibraries();
  std::string all;
  for (const std::string& l : loaded) all += (all.empty() ? "" : ":") + l;
  // Where a library without its own binding (Kineto in libtorch_cuda.so) lands when it calls CUPTI.
  const std::string bound = CuptiActivityApi::globalBindingPath();
  {
    std::lock_guard lock(pending_mu_);
    metadata_.emplace_back("cupti_library", in_use);
    metadata_.emplace_back("cupti_libraries_loaded", all);
    metadata_.emplace_back("cupti_global_binding", bound);
  }
  if (!bound.empty() && bound != in_use) {
    const std::string w = "two CUPTI libraries are in use: fprof's " + in_use + " and " + bound +
                          ", which the program's CUPTI calls reach; run the program through `fprof run`, which "
                          "preloads one CUPTI for the whole process";
    logWarning("%s", w.c_str());
    addEvent("warning", w);
  } else if (loaded.size() > 1) {
    addEvent("info", "several libcupti files are mapped (" + all + "); every CUPTI call binds to " + in_use +
                         ", the others are unused");
  }
}

// The switches that change what CUPTI does (docs/environment.md; measurement runs and
// --gpu-fault-safe), kept with the data they shaped. Nothing is written when all are at their defaults.
void Collector::recordCollectorSettings() {
  const CuptiSettings& c = config_.cupti;
  const CuptiSettings d;
  std::string s;
  auto add = [&s](const std::string& item) { s += (s.empty() ? "" : " ") + item; };
  if (c.kernel != d.kernel || c.memcpy != d.memcpy || c.memset != d.memset || c.memory != d.memory) {
    std::string kinds;
    for (auto [on, name] : {std::pair{c.kernel, "kernel"}, {c.memcpy, "memcpy"}, {c.memset, "memset"}, {c.memory, "memory"}}) {
      if (on) kinds += (kinds.empty() ? "" : ",") + std::string(name);
    }
    add("activity=" + (kinds.empty() ? std::string("none") : kinds));
  }
  if (!config_.nvtx_direct) add("nvtx_injection=cupti");
  if (!c.nvtx_callbacks) add("nvtx_callbacks=0");
  if (!c.periodic_flush_all) add("cupti_flush_all=0");
  if (c.host_pinned) add("cupti_host_pinned=1");
  if (config_.self_timing) add("self_timing=1");
  if (s.empty()) return;
  std::lock_guard lock(pending_mu_);
  metadata_.emplace_back("collector_settings", s);
}

// On the thread of the new client's cuptiSubscribe call, before it runs (see
// collector/preload/cupti_guard.cpp). What was collected so far is kept; later work is not seen.
void Collector::yieldCupti(const char* client) {
  if (!active_.exchange(false)) return;
  std::string who = client != nullptr ? client : "?";
  if (const size_t slash = who.rfind('/'); slash != std::string::npos) who = who.substr(slash + 1);
  const bool torch = who.find("torch") != std::string::npos || who.find("kineto") != std::string::npos;
  const std::string message =
      std::string(torch ? "torch.profiler (Kineto, in " + who + ")" : "another CUPTI client (in " + who + ")") +
      " started: CUPTI takes one client, so fprof stopped collecting and handed it over; kernels launched from "
      "here on are not in this database";
  (void)cuCtxSynchronize();  // kernels in flight finish, so their records are in the final flush
  metrics_.finishAll();
  CuptiActivityApi::instance().release();
  logWarning("%s", message.c_str());
  addEvent("warning", message);
  {
    std::lock_guard lock(pending_mu_);
    metadata_.emplace_back("cupti_handed_over_to", who);
  }
  wake(kWakeFlush);
}

void Collector::addEvent(const char* severity, const std::string& message) {
  std::lock_guard lock(pending_mu_);
  events_.push_back(core::CollectorEventRecord{process_id_, unixNowNs(), severity, message});
}

void Collector::onCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (!active_.load(std::memory_order_relaxed)) return;
  // The L2 sweep's module load and launches, and a profiled launch's duplicate (inside a launch
  // callback of the program's), are ours: recorded, they would take the place of the program's
  // launch (its arguments, local size).
  if (insideOwnLaunch()) return;
  switch (domain) {
    case CUPTI_CB_DOMAIN_NVTX:
      handleNvtx(cbid, static_cast<const CUpti_NvtxData*>(data));
      return;
    case CUPTI_CB_DOMAIN_RESOURCE:
      if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) handleContextCreated(static_cast<const CUpti_ResourceData*>(data));
      if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) saveCubin(static_cast<const CUpti_ResourceData*>(data));
      if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
        handleGraphNodeCreated(static_cast<const CUpti_ResourceData*>(data));
      }
      if (cbid == CUPTI_CBID_RESOURCE_GRAPH_NODE_UPDATED || cbid == CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS) {
        handleGraphNodeChanged(static_cast<const CUpti_ResourceData*>(data));
      }
      return;
    case CUPTI_CB_DOMAIN_RUNTIME_API:
    case CUPTI_CB_DOMAIN_DRIVER_API: {
      const auto* cb = static_cast<const CUpti_CallbackData*>(data);
      if (ArgRoleProbe::activeOnThisThread()) {
        // The probe's own copies: their activity records are not the program's.
        if (cb->callbackSite == CUPTI_API_ENTER) {
          std::lock_guard lock(pending_mu_);
          own_copies_.push_back(cb->correlationId);
        }
        return;
      }
      if (domain == CUPTI_CB_DOMAIN_DRIVER_API && isAllocationCall(cbid)) {
        trackAllocationCall(allocations_, cbid, *cb);
        return;
      }
      if (CuptiActivityApi::isContextTeardown(domain, cbid)) {
        if (cb->callbackSite == CUPTI_API_ENTER) handleTeardown();
        return;
      }
      if (CuptiActivityApi::isMemoryOperation(domain, cbid)) {
        if (cb->callbackSite == CUPTI_API_EXIT) recordCopyAddresses(cbid, cb);
        if (cb->callbackSite == CUPTI_API_ENTER) {
          metrics_.beforeMemoryOperation(cb->context);
        } else {
          metrics_.afterMemoryOperation();
        }
        return;
      }
      handleLaunch(domain, cbid, cb);
      return;
    }
    default:
      return;
  }
}

// At the EXIT of a successful copy call: its addresses, for the writer thread.
void Collector::recordCopyAddresses(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  const auto ids = copyAddressCallbackIds();
  if (std::find(ids.begin(), ids.end(), cbid) == ids.end() || cb->functionParams == nullptr) return;
  if (cb->functionReturnValue != nullptr && *static_cast<const CUresult*>(cb->functionReturnValue) != CUDA_SUCCESS) {
    return;
  }
  const auto* p = static_cast<const CopyParams*>(cb->functionParams);
  core::MemcpyAddressRecord r{process_id_, cb->correlationId, p->src, p->dst, static_cast<int64_t>(p->bytes)};
  std::lock_guard lock(pending_mu_);
  copy_addresses_.push_back(r);
}

uint64_t graphNodeId(CUgraphNode node) {
  uint64_t id = 0;
  return cuptiGetGraphNodeId(node, &id) == CUPTI_SUCCESS ? id : 0;
}

// A kernel node's graph key (LaunchSignatures), as a launch with its shape and parameters has.
std::optional<uint64_t> graphNodeSignature(CUfunction f, const FunctionInfo& info, const CUDA_KERNEL_NODE_PARAMS& params) {
  LaunchShape shape;
  shape.grid[0] = params.gridDimX, shape.grid[1] = params.gridDimY, shape.grid[2] = params.gridDimZ;
  shape.block[0] = params.blockDimX, shape.block[1] = params.blockDimY, shape.block[2] = params.blockDimZ;
  shape.dynamic_shared_bytes = params.sharedMemBytes;
  return FunctionCache::signatures(f, info, shape, params.kernelParams, params.extra).graph_key;
}

// A kernel node added to a CUDA graph (by hand, or captured): its function's facts, once, as for a
// launched function (a function launched only from a hand-built graph is never seen by a launch
// callback, and the kernel records of graph launches carry no function handle); in metrics mode
// also its graph key, for the copies its kernels may take.
void Collector::handleGraphNodeCreated(const CUpti_ResourceData* data) {
  const auto* g = data != nullptr ? static_cast<const CUpti_GraphData*>(data->resourceDescriptor) : nullptr;
  if (g == nullptr || g->node == nullptr || g->nodeType != CU_GRAPH_NODE_TYPE_KERNEL) return;
  CUDA_KERNEL_NODE_PARAMS params{};
  if (cuGraphKernelNodeGetParams(g->node, &params) != CUDA_SUCCESS) return;
  // A node made from a library kernel (the runtime's cudaKernel_t) names it by its CUkernel, which
  // needs the current context to resolve; one that cannot be resolved here is left to its launches
  // (quietly: a failed lookup would be cached and reported as a launched function).
  CUfunction f = params.func;
  int registers = 0;
  if (f == nullptr || cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, f) != CUDA_SUCCESS) {
    f = nullptr;
    CUfunction resolved = nullptr;
    if (params.kern != nullptr && cuKernelGetFunction(&resolved, params.kern) == CUDA_SUCCESS) f = resolved;
  }
  if (f == nullptr) return;
  const FunctionInfo& info = functionInfo(f);
  if (metrics_.enabled()) metrics_.noteGraphNode(graphNodeId(g->node), graphNodeSignature(f, info, params));
}

// Its parameters changed after the node was made: the node id the kernel records carry comes as
// the node or as the original node, depending on the call, so both lose their signature.
void Collector::handleGraphNodeChanged(const CUpti_ResourceData* data) {
  const auto* g = data != nullptr ? static_cast<const CUpti_GraphData*>(data->resourceDescriptor) : nullptr;
  if (g == nullptr || !metrics_.enabled()) return;
  for (CUgraphNode node : {g->node, g->originalNode}) {
    if (node != nullptr) metrics_.noteGraphNodeChanged(graphNodeId(node));
  }
}

// A small per-thread cache in front of FunctionCache, whose lookup takes a lock whenever the
// function differs from the thread's last one (every launch of a model that alternates kernels).
// FunctionCache never drops an entry, so the pointers stay valid.
const FunctionInfo& Collector::functionInfo(CUfunction f) {
  struct Slot {
    CUfunction function = nullptr;
    const FunctionInfo* info = nullptr;
  };
  thread_local Slot cache[64];
  // Fibonacci hashing: the driver's function objects are aligned alike, so their low bits collide.
  Slot& slot = cache[(reinterpret_cast<uintptr_t>(f) * 0x9E3779B97F4A7C15ull) >> 58];
  if (slot.function != f || slot.info == nullptr) slot = Slot{f, &functions_.lookup(f)};
  return *slot.info;
}

// What a driver launch call passes: the function, its arguments and its shape. Graph launches
// carry none of these (the kernels' parameters live in the graph's nodes).
struct DriverLaunch {
  CUfunction f = nullptr;
  CUstream stream = nullptr;
  void** params = nullptr;
  void** extra = nullptr;
  bool cooperative = false;
  bool programmatic = false;  // CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
  LaunchShape shape;
  CUgraphExec graph_exec = nullptr;  // cuGraphLaunch
};

// The stream a launch goes to: the _ptsz launches' stream 0 is the per-thread one.
CUstream launchStream(CUstream stream, CUpti_CallbackId cbid) {
  const bool per_thread = cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
                          cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz ||
                          cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz ||
                          cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
  return stream == nullptr && per_thread ? CU_STREAM_PER_THREAD : stream;
}

// Whether a launch's stream is recording a graph.
bool isCapturing(CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE;
}

DriverLaunch driverLaunch(CUpti_CallbackId cbid, const void* function_params) {
  DriverLaunch d;
  auto shapeOf = [](auto* p, uint32_t shared) {
    LaunchShape s;
    s.grid[0] = p->gridDimX, s.grid[1] = p->gridDimY, s.grid[2] = p->gridDimZ;
    s.block[0] = p->blockDimX, s.block[1] = p->blockDimY, s.block[2] = p->blockDimZ;
    s.dynamic_shared_bytes = shared;
    return s;
  };
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      const auto* p = static_cast<const cuLaunchKernel_params*>(function_params);
      d.f = p->f;
      d.stream = p->hStream;
      d.params = p->kernelParams;
      d.extra = p->extra;
      d.shape = shapeOf(p, p->sharedMemBytes);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto* p = static_cast<const cuLaunchKernelEx_params*>(function_params);
      d.f = p->f;
      d.params = p->kernelParams;
      d.extra = p->extra;
      if (p->config == nullptr) break;
      d.stream = p->config->hStream;
      d.shape = shapeOf(p->config, p->config->sharedMemBytes);
      for (unsigned i = 0; i < p->config->numAttrs; ++i) {
        const CUlaunchAttribute& a = p->config->attrs[i];
        d.cooperative = d.cooperative || (a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && a.value.cooperative != 0);
        d.programmatic = d.programmatic || (a.id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION &&
                                            a.value.programmaticStreamSerializationAllowed != 0);
        if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
          d.shape.cluster[0] = a.value.clusterDim.x, d.shape.cluster[1] = a.value.clusterDim.y;
          d.shape.cluster[2] = a.value.clusterDim.z;
        }
      }
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      const auto* p = static_cast<const cuLaunchCooperativeKernel_params*>(function_params);
      d.f = p->f;
      d.stream = p->hStream;
      d.params = p->kernelParams;
      d.cooperative = true;
      d.shape = shapeOf(p, p->sharedMemBytes);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: {
      const auto* p = static_cast<const cuGraphLaunch_params*>(function_params);
      d.graph_exec = p->hGraph;
      d.stream = p->hStream;
      break;
    }
    default:
      break;
  }
  return d;
}

// The argument-role probe's launch in flight on this thread, from the driver ENTER to its EXIT.
struct ProbeInFlight {
  std::optional<ProbeState> state;
  std::string name;  // mangled
  const FunctionInfo* info = nullptr;
};
thread_local ProbeInFlight t_probe;

void Collector::probeBefore(const CUpti_CallbackData* cb, CUpti_CallbackId cbid, const DriverLaunch& launch,
                            const FunctionInfo& info, uint32_t correlation_id) {
  std::vector<ParamLayout> layout;
  layout.reserve(info.params.size());
  for (size_t i = 0; i < info.params.size(); ++i) {
    layout.push_back({static_cast<int32_t>(i), info.params[i].offset_bytes, info.params[i].size_bytes});
  }
  const uint8_t* buffer = nullptr;
  size_t buffer_bytes = 0;
  if (launch.params == nullptr && launch.extra != nullptr) {
    const ParamBuffer b = paramBufferOf(launch.extra);
    buffer = b.bytes;
    buffer_bytes = b.size;
  }
  // The probe's candidates: the first 8-aligned words of the parameters, enough for PyTorch's
  // strided elementwise kernels (their lambda is 648-656 bytes, the operands' pointers at its end:
  // a copy's input at offset 520) and cuBLAS's nvjet struct (pointers at 176-496).
  constexpr size_t kProbeWords = 128;
  LaunchArgs words;
  readParamWords(layout, launch.params, buffer, buffer_bytes, kProbeWords, words);
  ProbeLaunch probe;
  probe.function_key = launch.f;
  probe.stream = launchStream(launch.stream, cbid);
  probe.symbol_name = cb->symbolName;
  probe.cooperative = launch.cooperative;
  probe.correlation_id = correlation_id;
  probe.args = &words;
  ProbeOutcome gave_up;
  {
    // CUPTI gives no callbacks for calls made inside a callback, and files the probe's copies under
    // the launch's correlation id (checked on an H100): no copy of the program's has that id.
    std::lock_guard lock(pending_mu_);
    own_copies_.push_back(correlation_id);
    if (cb->correlationId != correlation_id) own_copies_.push_back(cb->correlationId);
  }
  t_probe.state = arg_probe_.before(probe, &gave_up);
  t_probe.name = cb->symbolName != nullptr ? cb->symbolName : "";
  t_probe.info = &info;
  if (!t_probe.state && gave_up.final_for_function && !gave_up.reason.empty()) {
    addEvent("info", "argument roles of " + t_probe.name + " not measured: " + gave_up.reason);
  }
}

void Collector::probeAfter(CUresult result) {
  if (!t_probe.state) return;
  ProbeOutcome outcome = arg_probe_.after(std::move(*t_probe.state), result);
  t_probe.state.reset();
  if (!outcome.measured) {
    if (outcome.final_for_function && !outcome.reason.empty()) {
      addEvent("info", "argument roles of " + t_probe.name + " not measured: " + outcome.reason);
    }
    return;
  }
  // From the next launch on, every word the probe found a pointer in is recorded with the launch.
  std::vector<std::pair<int32_t, int32_t>> pointer_words;
  for (const ArgRoleResult& r : outcome.roles) {
    if (r.role != ArgRole::kNotPointer) pointer_words.emplace_back(r.arg_index, r.offset_bytes);
  }
  if (t_probe.info != nullptr) functions_.addProbedWords(*t_probe.info, pointer_words);
  t_probe.info = nullptr;
  std::lock_guard lock(pending_mu_);
  for (const ArgRoleResult& r : outcome.roles) {
    core::FunctionArgRecord a;
    a.process_id = process_id_;
    a.name = t_probe.name;
    a.arg_index = r.arg_index;
    a.offset_bytes = r.offset_bytes;
    a.role = std::string(argRoleName(r.role));
    a.method = r.method;
    a.sampled_bytes = r.sampled_bytes;
    a.correlation_id = outcome.correlation_id;
    arg_roles_found_.push_back(std::move(a));
  }
}

void Collector::handleLaunch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  ScopedAppTimer timer(selfTimingEnabled() ? recorder_->threadTimes() : nullptr, AppTimer::kLaunchCallback);
  if (cb->callbackSite != CUPTI_API_ENTER) {
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
      const CUresult result =
          cb->functionReturnValue != nullptr ? *static_cast<const CUresult*>(cb->functionReturnValue) : CUDA_SUCCESS;
      if (metrics_.enabled()) metrics_.afterLaunch(result);
      if (arg_roles_ && t_probe.state) {
        ScopedAppTimer probe_timer(selfTimingEnabled() ? recorder_->threadTimes() : nullptr, AppTimer::kArgumentProbe);
        probeAfter(result);
      }
    }
    recorder_->exitLaunch();
    return;
  }
  LaunchCall call;
  call.correlation_id = cb->correlationId;
  call.launch_api = CuptiActivityApi::launchApiName(domain, cbid);
  call.driver = domain == CUPTI_CB_DOMAIN_DRIVER_API;
  call.graph_launch = CuptiActivityApi::isGraphLaunch(domain, cbid);
  // The driver callback is the last stop before the launch is submitted, so the launch is
  // queued for the writer before its kernel can complete and its record arrive.
  const OpenLaunch* open = recorder_->enterLaunch(call);
  if (open == nullptr) return;
  const DriverLaunch launch = driverLaunch(cbid, cb->functionParams);
  const FunctionInfo* info = nullptr;
  if (launch.f != nullptr) {
    ScopedAppTimer lookup_timer(selfTimingEnabled() ? recorder_->threadTimes() : nullptr, AppTimer::kFunctionLookup);
    info = &functionInfo(launch.f);
  }
  if (metrics_.enabled()) {
    LaunchRequest request;
    request.context = cb->context;
    request.correlation_id = open->correlation_id;
    request.nested_correlation_id = open->nested_correlation_id;
    request.symbol_name = cb->symbolName;
    request.nvtx_path = recorder_->openLaunchNvtxPath();
    request.selected_elsewhere = recorder_->anotherThreadSelects();
    request.graph_launch = open->graph_launch;
    request.graph_exec = reinterpret_cast<uint64_t>(launch.graph_exec);
    request.cooperative = launch.cooperative;
    request.stream = launchStream(launch.stream, cbid);
    request.capturing = isCapturing(request.stream);
    request.cbid = cbid;
    request.driver_params = cb->functionParams;
    if (info != nullptr) {
      request.function = info->function;
      const LaunchSignatures sig = FunctionCache::signatures(launch.f, *info, launch.shape, launch.params, launch.extra);
      request.signature = sig.full;
      request.loose_signature = sig.loose;
      request.graph_key = sig.graph_key;
    }
    metrics_.beforeLaunch(request);
  } else if (arg_roles_ && info != nullptr && !info->probe_settled.on.load(std::memory_order_relaxed)) {
    bool settled = false;
    if (arg_probe_.wanted(launch.f, &settled)) {
      ScopedAppTimer probe_timer(selfTimingEnabled() ? recorder_->threadTimes() : nullptr, AppTimer::kArgumentProbe);
      probeBefore(cb, cbid, launch, *info, open->correlation_id);
    } else if (settled) {
      info->probe_settled.on.store(true, std::memory_order_relaxed);
    }
  }
  recorder_->submitLaunch(info, launch.params, launch.extra, launch.programmatic);
}

void Collector::handleNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* data) {
  ScopedAppTimer timer(selfTimingEnabled() ? recorder_->threadTimes() : nullptr, AppTimer::kNvtxCallback);
  const void* params = data->functionParams;
  std::optional<uint64_t> payload;
  char text[512];
  auto rangeId = [data]() -> uint64_t {
    return data->functionReturnValue != nullptr ? *static_cast<const nvtxRangeId_t*>(data->functionReturnValue) : 0;
  };
  TraceRecorder& r = *recorder_;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
      r.pushRange(nullptr, asciiText(static_cast<const nvtxRangePushA_params*>(params)->message), std::nullopt,
                  CuptiActivityApi::timestampNs());
      break;
    case CUPTI_CBID_NVTX_nvtxRangePushW:
      r.pushRange(nullptr, NvtxText{wideText(static_cast<const nvtxRangePushW_params*>(params)->message, text)},
                  std::nullopt, CuptiActivityApi::timestampNs());
      break;
    case CUPTI_CBID_NVTX_nvtxRangePushEx: {
      const NvtxText m = eventText(static_cast<const nvtxRangePushEx_params*>(params)->eventAttrib, payload, text);
      r.pushRange(nullptr, m, payload, CuptiActivityApi::timestampNs());
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
      const auto* p = static_cast<const nvtxDomainRangePushEx_params*>(params);
      const NvtxText m = eventText(p->core.eventAttrib, payload, text);
      r.pushRange(p->domain, m, payload, CuptiActivityApi::timestampNs());
      break;
    }
    case CUPTI_CBID_NVTX_nvtxRangePop:
      r.popRange(nullptr, CuptiActivityApi::timestampNs());
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      r.popRange(static_cast<const nvtxDomainRangePop_params*>(params)->domain, CuptiActivityApi::timestampNs());
      break;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
      r.startRange(rangeId(), nullptr, asciiText(static_cast<const nvtxRangeStartA_params*>(params)->message),
                   std::nullopt, CuptiActivityApi::timestampNs());
      break;
    case CUPTI_CBID_NVTX_nvtxRangeStartW:
      r.startRange(rangeId(), nullptr, NvtxText{wideText(static_cast<const nvtxRangeStartW_params*>(params)->message, text)},
                   std::nullopt, CuptiActivityApi::timestampNs());
      break;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx: {
      const NvtxText m = eventText(static_cast<const nvtxRangeStartEx_params*>(params)->eventAttrib, payload, text);
      r.startRange(rangeId(), nullptr, m, payload, CuptiActivityApi::timestampNs());
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx: {
      const auto* p = static_cast<const nvtxDomainRangeStartEx_params*>(params);
      const NvtxText m = eventText(p->core.eventAttrib, payload, text);
      r.startRange(rangeId(), p->domain, m, payload, CuptiActivityApi::timestampNs());
      break;
    }
    case CUPTI_CBID_NVTX_nvtxRangeEnd:
      r.endRange(static_cast<const nvtxRangeEnd_params*>(params)->id, CuptiActivityApi::timestampNs());
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
      r.endRange(static_cast<const nvtxDomainRangeEnd_params*>(params)->core.id, CuptiActivityApi::timestampNs());
      break;
    case CUPTI_CBID_NVTX_nvtxDomainCreateA:
      if (data->functionReturnValue != nullptr) {
        const char* name = static_cast<const nvtxDomainCreateA_params*>(params)->name;
        r.registerDomain(*static_cast<const nvtxDomainHandle_t*>(data->functionReturnValue),
                         name != nullptr ? name : "");
      }
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA:
      if (data->functionReturnValue != nullptr) {
        const char* s = static_cast<const nvtxDomainRegisterStringA_params*>(params)->string;
        r.registerString(*static_cast<const nvtxStringHandle_t*>(data->functionReturnValue), s != nullptr ? s : "");
      }
      break;
    default:
      break;
  }
}

void Collector::handleContextCreated(const CUpti_ResourceData* data) {
  uint32_t ordinal = 0;
  if (!FPROF_CUPTI_OK(cuptiGetDeviceId(data->context, &ordinal))) return;
  bool record_driver = false;
  {
    std::lock_guard lock(pending_mu_);
    if (!seen_devices_.insert(ordinal).second) return;
    record_driver = !driver_version_recorded_;
    driver_version_recorded_ = true;
  }
  std::optional<core::DeviceInfo> device = queryDevice(ordinal);
  int driver_version = 0;
  const bool have_driver = record_driver && FPROF_CU_OK(cuDriverGetVersion(&driver_version));
  if (device) markDeviceSm(*device);
  std::lock_guard lock(pending_mu_);
  if (have_driver) metadata_.emplace_back("driver_version", std::to_string(driver_version));
  if (device) devices_.push_back(*device);
}

// Metrics mode: an empty file "device.sm<N>" in FPROF_CUBIN_DIR for each device's SM, so that
// `fprof run` can decode the counted functions' SASS while the program still runs (the SM is the
// nvdisasm architecture; the database that also holds it is written at the end).
void Collector::markDeviceSm(const core::DeviceInfo& device) {
  if (cubin_dir_.empty()) return;
  const std::string path = cubin_dir_ + "/device.sm" + std::to_string(device.compute_major * 10 + device.compute_minor);
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  if (fd >= 0) ::close(fd);
}

// Metrics mode: each loaded module's cubin goes to FPROF_CUBIN_DIR, where `fprof run` reads the
// SASS of the functions that ran half-precision instructions once the program has ended.
void Collector::saveCubin(const CUpti_ResourceData* data) {
  if (data == nullptr || data->resourceDescriptor == nullptr) return;
  const auto* module = static_cast<const CUpti_ModuleResourceData*>(data->resourceDescriptor);
  if (module->pCubin == nullptr || module->cubinSize == 0) return;
  if (metrics_.ownCheckpointMapsInUse()) module_writes_.addCubin(std::string_view(module->pCubin, module->cubinSize));
  if (cubin_dir_.empty()) return;
  const std::string path =
      cubin_dir_ + "/pid" + std::to_string(getpid()) + ".module" + std::to_string(module->moduleId) + ".cubin";
  const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return;
  size_t written = 0;
  while (written < module->cubinSize) {
    const ssize_t n = ::write(fd, module->pCubin + written, module->cubinSize - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  ::close(fd);
  if (metrics_.patchesSass()) {
    std::lock_guard lock(pending_mu_);
    cubins_without_crc_.push_back(path);
  }
}

// Counted by SASS patching, each PC count names its module by CUPTI's CRC of the cubin
// (core/sass_pc.h): the saved cubins get it in their names (".crc<N>.cubin") once the program's
// work is done. Not inside the module-load callback: a CUPTI call there, while CUPTI patched the
// launch that loaded the module, is one fewer place to wait on CUPTI's own locks.
void Collector::nameCubinsByCrc() {
  std::vector<std::string> paths;
  {
    std::lock_guard lock(pending_mu_);
    paths.swap(cubins_without_crc_);
  }
  for (const std::string& path : paths) {
    std::FILE* f = std::fopen(path.c_str(), "rbe");
    if (f == nullptr) continue;
    std::string bytes;
    char chunk[1 << 16];
    for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, f)) > 0;) bytes.append(chunk, n);
    std::fclose(f);
    CUpti_GetCubinCrcParams crc{};
    crc.size = CUpti_GetCubinCrcParamsSize;
    crc.cubinSize = bytes.size();
    crc.cubin = bytes.data();
    if (cuptiGetCubinCrc(&crc) != CUPTI_SUCCESS) continue;
    const std::string named = path.substr(0, path.size() - 6) + ".crc" + std::to_string(crc.cubinCrc) + ".cubin";
    (void)std::rename(path.c_str(), named.c_str());
  }
}

void Collector::handleTeardown() {
  // The context's records must leave CUPTI's buffers before the context goes away. No current
  // context (cudaDeviceReset before any work) is not an error worth reporting.
  (void)cuCtxSynchronize();
  metrics_.finishAll();  // the counters must be decoded while the context lives
  nameCubinsByCrc();
  CuptiActivityApi::instance().flushAll(false);
  wake(kWakeFlush);
}

void Collector::wake(char code) {
  if (wake_pipe_[1] >= 0) (void)!::write(wake_pipe_[1], &code, 1);
}

void Collector::writerLoop() {
  CuptiActivityApi& api = CuptiActivityApi::instance();
  api.prepareBuffers(1);  // the first buffer CUPTI asks for, zeroed here rather than on a launching thread
  uint64_t buffers_requested = api.buffersRequested();
  for (;;) {
    pollfd fd{wake_pipe_[0], POLLIN, 0};
    const int ready = wake_pipe_[0] >= 0 ? ::poll(&fd, 1, config_.flush_interval_ms)
                                         : (std::this_thread::sleep_for(std::chrono::milliseconds(config_.flush_interval_ms)), 0);
    char strongest = 0;
    if (ready > 0) {
      char codes[64];
      ssize_t n;
      while ((n = ::read(wake_pipe_[0], codes, sizeof codes)) > 0) {
        for (ssize_t i = 0; i < n; ++i) {
          // quit > final signal flush > signal flush > flush
          auto rank = [](char c) { return c == kWakeQuit ? 4 : c == kWakeSignalFinal ? 3 : c == kWakeSignalFlush ? 2 : 1; };
          if (strongest == 0 || rank(codes[i]) > rank(strongest)) strongest = codes[i];
        }
      }
    }
    const bool last = strongest == kWakeSignalFinal || strongest == kWakeQuit;
    const int64_t last_start_ns = last && selfTimingEnabled() ? selfTimingNowNs() : 0;
    // A dying program's last profiled launches: their counters are decoded now, while the context
    // lives (at a normal exit finishAll does it on the exiting thread).
    if (strongest == kWakeSignalFinal) {
      metrics_.decodeOnFatalSignal();
      nameCubinsByCrc();  // a crashing second run's counts still find their cubins
    }
    if (strongest == kWakeSignalFlush || strongest == kWakeSignalFinal) {
      flushCupti(true);
    } else if (strongest != kWakeQuit && config_.cupti.periodic_flush_all) {
      // CUPTI's own flush period delivers only full buffers; without this a SIGKILL would lose
      // every record of a partly filled buffer, not just the last period.
      flushCupti(false);
    }
    drain();
    // Spares for the next period: two where CUPTI took buffers in this one, else one.
    const uint64_t requested = api.buffersRequested();
    if (!last) api.prepareBuffers(requested != buffers_requested ? 2 : 1);
    buffers_requested = requested;
    if (strongest == kWakeSignalFlush) {
      char done = 'd';
      (void)!::write(done_pipe_[1], &done, 1);
    }
    if (last) {
      finish(last_start_ns);
      if (strongest == kWakeSignalFinal) {
        char done = 'd';
        (void)!::write(done_pipe_[1], &done, 1);
      }
      return;
    }
  }
}

void Collector::flushCupti(bool forced) {
  const int64_t t0 = selfTimingEnabled() ? selfTimingNowNs() : 0;
  CuptiActivityApi::instance().flushAll(forced);
  if (t0 != 0) self_timing_.addWriter(WriterTimer::kCuptiFlush, selfTimingNowNs() - t0);
}

void Collector::drain() {
  if (!writer_) return;
  const bool timing = selfTimingEnabled();
  auto now = [timing] { return timing ? selfTimingNowNs() : 0; };
  std::vector<RawBuffer> buffers;
  std::vector<core::CollectorEventRecord> events;
  takePending(buffers, events);
  writeProbeAndCopyRecords();
  int64_t t0 = now();
  std::vector<core::NvtxRangeRecord> ranges;
  recorder_->collect(translator_, ranges);
  int64_t t1 = now();
  if (timing) self_timing_.addWriter(WriterTimer::kCollect, t1 - t0);
  TranslatedBatch batch = translateBuffers(buffers);
  if (metrics_.enabled()) metrics_.addGraphKernels(batch.kernels);
  if (timing) {
    self_timing_.max_pending_launches = std::max<uint64_t>(self_timing_.max_pending_launches, translator_.pendingLaunches());
    t0 = now();
    self_timing_.addWriter(WriterTimer::kTranslate, t0 - t1);
  }
  addToStore(*writer_, batch);
  for (core::NvtxRangeRecord& r : ranges) {
    r.process_id = process_id_;
    writer_->add(r);
  }
  for (FunctionFacts& f : functions_.takeNewFunctions()) {
    writer_->add(core::FunctionRecord{process_id_, std::move(f.name), f.registers_per_thread, f.local_bytes_per_thread,
                                      f.static_shared_bytes, f.const_bytes, f.max_threads_per_block, f.binary_version,
                                      f.ptx_version});
  }
  for (core::CollectorEventRecord& e : events) writer_->add(e);
  writeMetricsResults();
  reportDroppedRecords();
  if (core::Status s = writer_->flush(); !s) {
    static std::atomic<int> budget{3};
    if (budget.fetch_sub(1) > 0) logWarning("writing %s failed: %s", path_.c_str(), s.error().c_str());
  }
  if (timing) {
    t1 = now();
    self_timing_.addWriter(WriterTimer::kStore, t1 - t0);
  }
  translator_.endGeneration();
  if (timing) self_timing_.addWriter(WriterTimer::kTranslate, now() - t1);
}

// What the callbacks queued for the writer: the activity buffers and events (handed back), the
// metadata and devices (written now).
void Collector::takePending(std::vector<RawBuffer>& buffers, std::vector<core::CollectorEventRecord>& events) {
  std::vector<core::DeviceInfo> devices;
  std::vector<std::pair<std::string, std::string>> metadata;
  {
    // Buffers first: every launch of a kernel in these buffers was queued before them.
    std::lock_guard lock(pending_mu_);
    buffers.swap(buffers_);
    devices.swap(devices_);
    events.swap(events_);
    metadata.swap(metadata_);
  }
  for (const auto& [key, value] : metadata) {
    if (core::Status s = writer_->setMetadata(key, value); !s) logWarning("%s", s.error().c_str());
  }
  for (core::DeviceInfo& d : devices) {
    d.process_id = process_id_;
    translator_.addDevice(d);
    if (core::Status s = writer_->addDevice(d); !s) logWarning("%s", s.error().c_str());
  }
}

// The argument-role probe's own copies (left out of the trace) and roles, and the copies' addresses.
void Collector::writeProbeAndCopyRecords() {
  std::vector<uint32_t> own_copies;
  std::vector<core::FunctionArgRecord> arg_roles;
  std::vector<core::MemcpyAddressRecord> copy_addresses;
  {
    std::lock_guard lock(pending_mu_);
    own_copies.swap(own_copies_);
    arg_roles.swap(arg_roles_found_);
    copy_addresses.swap(copy_addresses_);
  }
  for (uint32_t c : own_copies) translator_.ignoreCopies(c);
  for (core::FunctionArgRecord& a : arg_roles) writer_->add(a);
  for (const core::MemcpyAddressRecord& c : copy_addresses) writer_->add(c);
}

// Every record of the buffers translated, each buffer given back to CUPTI's pool.
TranslatedBatch Collector::translateBuffers(const std::vector<RawBuffer>& buffers) {
  const bool timing = selfTimingEnabled();
  auto now = [timing] { return timing ? selfTimingNowNs() : 0; };
  TranslatedBatch batch;
  CuptiActivityApi& api = CuptiActivityApi::instance();
  for (const RawBuffer& b : buffers) {
    for (const CUpti_Activity* r = CuptiActivityApi::nextRecord(b.data, b.valid_bytes, nullptr); r != nullptr;
         r = CuptiActivityApi::nextRecord(b.data, b.valid_bytes, r)) {
      const int64_t before = now();  // 0 unless self-timing
      translator_.translate(*r, batch);
      if (timing) {
        RecordsOfKind& k = records_by_kind_[static_cast<int>(r->kind)];
        ++k.count;
        k.ns += now() - before;
      }
    }
    api.releaseBuffer(b.data);
  }
  return batch;
}

// Metrics mode's counters, copies and reasons per launch, graph launches' sums, notes and metadata.
void Collector::writeMetricsResults() {
  for (LaunchCounterResult& r : metrics_.takeResults()) {
    const core::Writer::LaunchRef launch{r.launch.correlation_id, r.launch.nested_correlation_id,
                                         r.launch.graph_node_id};
    if (!r.missing_reason.empty()) {
      writer_->addMissingCountersForLaunch(process_id_, launch, std::move(r.missing_reason));
    } else if (r.source) {
      writer_->addCopiedCountersForLaunch(process_id_, launch,
                                          {r.source->correlation_id, r.source->nested_correlation_id}, r.counters,
                                          std::move(r.raw));
    } else {
      writer_->addCountersForLaunch(process_id_, launch.correlation_id, launch.alt_correlation_id, r.counters,
                                    std::move(r.raw));
    }
  }
  for (core::GraphLaunchCounters& g : metrics_.takeGraphLaunchResults()) {
    g.process_id = process_id_;
    writer_->add(std::move(g));
  }
  for (const auto& [severity, message] : metrics_.takeNotes()) {
    writer_->add(core::CollectorEventRecord{process_id_, unixNowNs(), severity, message});
  }
  for (const auto& [key, value] : metrics_.takeMetadata()) {
    if (core::Status s = writer_->setMetadata(key, value); !s) logWarning("%s", s.error().c_str());
  }
}

void Collector::reportDroppedRecords() {
  const uint64_t dropped = CuptiActivityApi::instance().droppedRecords();
  if (dropped == dropped_reported_) return;
  writer_->add(core::CollectorEventRecord{
      process_id_, unixNowNs(), "warning",
      std::to_string(dropped - dropped_reported_) + " CUPTI activity records were dropped (buffers full); " +
          std::to_string(dropped) + " so far"});
  if (core::Status s = writer_->setMetadata("dropped_records", std::to_string(dropped)); !s) {
    logWarning("%s", s.error().c_str());
  }
  dropped_reported_ = dropped;
}

void Collector::finish(int64_t last_start_ns) {
  if (!writer_) return;
  printRecordsByKind();
  recordFatalSignal();
  recordRunEvents();
  SelfTimingTotals timing;
  if (selfTimingEnabled()) {
    // Stored before closing: the close itself (indexes, WAL checkpoint) is only printed.
    timing = self_timing_;
    recorder_->addTotals(timing);
    if (last_start_ns != 0) timing.addWriter(WriterTimer::kFinalWrite, selfTimingNowNs() - last_start_ns);
    if (core::Status s = writer_->setMetadata("self_timing", selfTimingJson(timing)); !s) {
      logWarning("%s", s.error().c_str());
    }
  }
  const int64_t close_start_ns = selfTimingEnabled() ? selfTimingNowNs() : 0;
  if (core::Status s = writer_->close(); !s) {
    logWarning("closing %s failed: %s", path_.c_str(), s.error().c_str());
  } else {
    logInfo("wrote %s", path_.c_str());
  }
  if (selfTimingEnabled()) {
    // Printed whatever FPROF_QUIET says: it was asked for.
    const std::string text = selfTimingText(timing);
    std::fprintf(stderr, "%s", prefixLines(text, "[fprof] ").c_str());
    std::fprintf(stderr, "[fprof] self-timing: closing the database (indexes, WAL checkpoint): %.1f ms\n",
                 double(selfTimingNowNs() - close_start_ns) * 1e-6);
  }
  writer_.reset();
  finished_.store(true);
}

// FPROF_SELF_TIMING: the writer's records by CUPTI kind, on stderr.
void Collector::printRecordsByKind() const {
  if (!selfTimingEnabled() || records_by_kind_.empty()) return;
  std::string line;
  for (const auto& [kind, k] : records_by_kind_) {
    line += " kind " + std::to_string(kind) + ": " + std::to_string(k.count) + " (" +
            std::to_string(k.ns / 1'000'000) + " ms)";
  }
  std::fprintf(stderr, "[fprof] self-timing: activity records translated:%s\n", line.c_str());
}

void Collector::recordFatalSignal() {
  if (const int sig = g_fatal_signal.load(); sig != 0) {
    const char* abbrev = sigabbrev_np(sig);
    const std::string name = abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
    (void)writer_->setMetadata("exit_signal", name);
    writer_->add(core::CollectorEventRecord{process_id_, unixNowNs(), "warning",
                                            "the program received " + name +
                                                " and died; everything collected until then was written"});
  }
}

// What went missing or was left out over the run, each as one collector event.
void Collector::recordRunEvents() {
  const TranslatorStats& stats = translator_.stats();
  if (stats.unmatched_kernels > 0) {
    writer_->add(core::CollectorEventRecord{
        process_id_, unixNowNs(), "warning",
        std::to_string(stats.unmatched_kernels) +
            " kernels had no launch callback: their launch API, NVTX path, arguments and local memory are unknown"});
  }
  if (stats.dropped_launches > 0) {
    writer_->add(core::CollectorEventRecord{
        process_id_, unixNowNs(), "warning",
        std::to_string(stats.dropped_launches) + " launches waited for their kernel record past the limit of " +
            std::to_string(Translator::kMaxPendingLaunches) + " and were dropped: kernels matching them later lack "
            "their launch API, NVTX path and arguments"});
  }
  if (stats.duplicates > 0) {
    writer_->add(core::CollectorEventRecord{process_id_, unixNowNs(), "info",
                                            std::to_string(stats.duplicates) + " duplicate activity records ignored"});
  }
  if (stats.ignored_kernels > 0) {
    writer_->add(core::CollectorEventRecord{
        process_id_, unixNowNs(), "info",
        std::to_string(stats.ignored_kernels) + " kernels of the profiler's own (" + kCodeSweepKernelName + ", " +
            kL2SweepKernelName + ", CUPTI's " +
            kCuptiWaitKernelName + ") left out of the kernel table"});
  }
  if (stats.local_memory_mismatches > 0) {
    writer_->add(core::CollectorEventRecord{
        process_id_, unixNowNs(), "info",
        std::to_string(stats.local_memory_mismatches) +
            " kernels: CUPTI's localMemoryPerThread differed from CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, which is "
            "stored (e.g. " + stats.local_memory_example + ")"});
  }
  if (const uint64_t resolved = functions_.resolvedKernelHandles(); resolved > 0) {
    writer_->add(core::CollectorEventRecord{
        process_id_, unixNowNs(), "info",
        std::to_string(resolved) + " launched functions were CUkernel handles, resolved with cuKernelGetFunction"});
  }
  if (const uint64_t failed = functions_.failedHandles(); failed > 0) {
    writer_->add(core::CollectorEventRecord{
        process_id_, unixNowNs(), "warning",
        std::to_string(failed) + " launched functions could not be queried: their local memory and arguments are missing"});
  }
  if (const size_t unmatched = writer_->unmatchedCounters(); unmatched > 0) {
    writer_->add(core::CollectorEventRecord{
        process_id_, unixNowNs(), "warning",
        std::to_string(unmatched) + " profiled launches had counters but no kernel record; their counters are lost"});
  }
  if (const uint64_t pops = recorder_->unmatchedPops(); pops > 0) {
    writer_->add(core::CollectorEventRecord{process_id_, unixNowNs(), "warning",
                                            std::to_string(pops) + " NVTX pops had no matching push"});
  }
}

// A forked child shares the parent's database connection but has no writer thread: it must
// neither write, nor close, nor join. It records nothing (CUDA is unusable after fork anyway).
void Collector::onForkChild() {
  active_.store(false);
  exiting_.store(true);
  finished_.store(true);
  (void)writer_.release();  // never closed or freed in the child: the parent owns the file
}

void Collector::onExit() {
  if (exiting_.exchange(true)) return;
  active_.store(false);
  if (!finished_.load()) {
    metrics_.finishAll();
    nameCubinsByCrc();
    CuptiActivityApi::instance().flushAll(true);
  }
  wake(kWakeQuit);
  if (writer_thread_.joinable()) writer_thread_.join();
}

// Our handler goes in front of whatever the program had (the program may install its own later;
// then ours is simply not called). SA_ONSTACK: a stack overflow's SIGSEGV runs on the program's
// alternate stack if it set one up.
void installSignalHandlers() {
  void* warm[1];
  (void)backtrace(warm, 1);  // loads the unwinder now: not from inside a signal handler
  struct sigaction action {};
  action.sa_sigaction = signalTrampoline;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART | SA_SIGINFO | SA_ONSTACK;
  for (int sig : kHandledSignals) sigaction(sig, &action, &g_previous[sig]);
}

// A fault the program does not handle: the faulting thread's stack goes to stderr (whose code
// crashed, the program's or fprof's, is the first thing a report needs). backtrace_symbols_fd
// allocates nothing.
void printFaultStack(int sig) {
  if (sig != SIGSEGV && sig != SIGBUS && sig != SIGILL && sig != SIGFPE) return;
  static constexpr char kHead[] = "[fprof] the program received a fatal signal; the faulting thread's stack:\n";
  (void)!::write(STDERR_FILENO, kHead, sizeof kHead - 1);
  void* frames[48];
  const int n = backtrace(frames, 48);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
}

bool endsProgram(const struct sigaction& previous) {
  return !(previous.sa_flags & SA_SIGINFO) && previous.sa_handler == SIG_DFL;
}

// Hands the signal to what the program had installed before us, or lets it do what it would have
// done: re-raised with the original disposition (a crash still dumps core and exits by signal).
void passOn(int sig, siginfo_t* info, void* context) {
  const struct sigaction& previous = g_previous[sig];
  if (endsProgram(previous)) {
    sigaction(sig, &previous, nullptr);
    // A fault re-executes the faulting instruction on return; raise() covers abort() and kill.
    raise(sig);
  } else if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(sig, info, context);
  } else if (previous.sa_handler != SIG_IGN && previous.sa_handler != nullptr) {
    previous.sa_handler(sig);
  }
}

void Collector::onSignal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const bool dies = endsProgram(g_previous[sig]);
  if (dies) printFaultStack(sig);
  // The writer cannot wait for itself: a fault on the writer thread keeps what earlier flushes wrote.
  const bool on_writer = writer_thread_.joinable() && pthread_equal(pthread_self(), g_writer_thread);
  if (!finished_.load() && !exiting_.load() && !on_writer) {
    // Only async-signal-safe calls here: a byte to the writer, then wait (bounded) for its reply.
    if (dies) g_fatal_signal.store(sig);
    wake(dies ? kWakeSignalFinal : kWakeSignalFlush);
    pollfd fd{done_pipe_[0], POLLIN, 0};
    if (::poll(&fd, 1, 5000) > 0) {
      char c;
      (void)!::read(done_pipe_[0], &c, 1);
    }
  }
  errno = saved_errno;
  passOn(sig, info, context);
}

}  // namespace

bool initializeCollector() {
  static std::once_flag once;
  static bool on = false;
  std::call_once(once, [] { on = Collector::instance().initialize(); });
  return on;
}

bool nvtxInjectionDirect() { return Collector::instance().nvtxDirect(); }

}  // namespace fprof::collector
