// The counting backend of the CPU tests (see fake_counting_backend.h).
#include "fake_counting_backend.h"

#include <cupti_driver_cbid.h>

#include <algorithm>

namespace fprof::collector::testing {
namespace {

class FakeRangeCounter final : public RangeCounter {
 public:
  explicit FakeRangeCounter(FakeCountingBackend& b) : b_(b) {}
  bool setup(CUcontext, int, const std::vector<std::string>& metrics, size_t, CacheControl, ReplayMode replay,
             std::string& error) override {
    b_.calls.push_back("setup");
    if (!b_.script.setup_ok) {
      error = b_.script.setup_error;
      return false;
    }
    const std::optional<ReplayMode> chosen = chooseReplay(replay, metrics, b_.script.passes, error);
    if (!chosen) return false;
    replay_ = *chosen;
    return true;
  }
  void keepSessionOpen(bool keep) override { keep_ = keep; }
  bool sessionKeptOpen() const override { return keep_ && replay_ == ReplayMode::kApplication; }
  bool cacheControlApplied() const override { return b_.script.cache_control_applied; }
  bool readyToCount(std::string& error) override {
    b_.calls.push_back("ready");
    if (!b_.script.ready_ok) error = "the session could not be opened";
    return b_.script.ready_ok;
  }
  bool start(std::string& error) override {
    b_.calls.push_back("start");
    if (!b_.script.start_ok) {
      error = "start refused";
      return false;
    }
    b_.started = true;
    return true;
  }
  bool stop(std::string&) override {
    b_.calls.push_back("stop");
    b_.started = false;
    return true;
  }
  bool useUserRanges(bool user, std::string& error) override {
    b_.calls.push_back(user ? "user ranges" : "auto range");
    if (!b_.script.user_ranges_ok) {
      error = "enable refused";
      return false;
    }
    b_.user_ranges = user;
    return true;
  }
  bool pushRange(const char* name, std::string&) override {
    b_.calls.push_back(std::string("push ") + name);
    b_.open_user_range = FakeCountingBackend::Range{name, {}};
    return true;
  }
  bool popRange(std::string&) override {
    b_.calls.push_back("pop");
    if (b_.open_user_range) b_.ranges.push_back(std::move(*b_.open_user_range));
    b_.open_user_range.reset();
    return true;
  }
  bool decode(std::vector<std::vector<double>>& rows, std::string&, std::vector<std::string>* names) override {
    b_.calls.push_back("decode");
    for (FakeCountingBackend::Range& r : b_.ranges) {
      const auto& dropped = b_.script.range_names_dropped;
      if (std::find(dropped.begin(), dropped.end(), r.name) != dropped.end()) continue;
      rows.push_back(r.values);
      if (names != nullptr) names->push_back(b_.script.unnamed_ranges ? std::string() : r.name);
    }
    b_.ranges.clear();
    return true;
  }
  bool userRanges() const override { return b_.user_ranges; }
  size_t passes() const override { return b_.script.passes; }
  ReplayMode replay() const override { return replay_; }
  const std::string& chip() const override { return chip_; }
  void teardown() override { b_.calls.push_back("teardown profiler"); }

 private:
  FakeCountingBackend& b_;
  ReplayMode replay_ = ReplayMode::kKernel;
  bool keep_ = false;
  std::string chip_ = "GH100";
};

class FakeSassCounter final : public SassCounter {
 public:
  explicit FakeSassCounter(FakeCountingBackend& b) : b_(b) {}
  bool setup(CUcontext, int, std::string& error) override {
    b_.calls.push_back("setup patching");
    if (!b_.script.patching_setup_ok) error = "the SASS Metrics API is missing";
    return b_.script.patching_setup_ok;
  }
  bool begin(std::string& error) override {
    b_.calls.push_back("patch on");
    if (!b_.script.patching_begin_ok) {
      error = "enable refused";
      return false;
    }
    b_.patching = true;
    return true;
  }
  bool end(std::vector<core::SassPcFunction>& functions, std::string&) override {
    b_.calls.push_back("patch off");
    b_.patching = false;
    if (b_.script.patched_counts.empty()) {
      functions = countedFunctions("patched", 100);
    } else {
      functions = std::move(b_.script.patched_counts.front());
      b_.script.patched_counts.erase(b_.script.patched_counts.begin());
    }
    return true;
  }
  void teardown() override { b_.calls.push_back("teardown patching"); }
  const std::string& chip() const override { return chip_; }
  const Seconds& seconds() const override { return seconds_; }

 private:
  FakeCountingBackend& b_;
  std::string chip_ = "GH100";
  Seconds seconds_;
};

class FakeCacheSweep final : public CacheSweep {
 public:
  explicit FakeCacheSweep(FakeCountingBackend& b) : b_(b) {}
  bool setup(CUdevice, std::string& error) override {
    b_.calls.push_back("setup sweep");
    if (!b_.script.sweep_setup_ok) error = "no room for the sweep's buffer";
    return b_.script.sweep_setup_ok;
  }
  bool run(CUstream, std::string&) override {
    b_.calls.push_back("sweep");
    return true;
  }
  bool launchCodeSweep(CUstream, std::string&) override {
    b_.calls.push_back("code sweep");
    if (b_.started) b_.ranges.push_back({"fprof_code_sweep", {}});
    return true;
  }
  const std::string& loadedFrom() const override { return from_; }

 private:
  FakeCountingBackend& b_;
  std::string from_ = "cubins built for sm_90";
};

class FakeDuplicate final : public DuplicateCounting {
 public:
  explicit FakeDuplicate(FakeCountingBackend& b) : b_(b) {}
  bool setup(CUcontext, int, const AllocationMap*, const ModuleWritesIndex*, std::string& error) override {
    b_.calls.push_back("setup duplicate");
    if (!b_.script.duplicate_setup_ok) error = "libcheckpoint.so could not be loaded";
    return b_.script.duplicate_setup_ok;
  }
  bool count(const DriverLaunchCall& call, std::vector<core::SassPcFunction>& functions, std::string& error) override {
    b_.calls.push_back(std::string("duplicate ") + (call.name != nullptr ? call.name : "?"));
    last_ = b_.script.duplicate_seconds;
    if (!b_.script.duplicate_count_ok) {
      error = "cuptiCheckpointSave failed";
      return false;
    }
    functions = countedFunctions(call.name != nullptr ? call.name : "", b_.script.duplicate_warp_inst);
    return true;
  }
  void teardown() override { b_.calls.push_back("teardown duplicate"); }
  const Seconds& last() const override { return last_; }

 private:
  FakeCountingBackend& b_;
  Seconds last_;
};

}  // namespace

void FakeCountingBackend::kernelRan(const std::string& name, std::vector<double> values) {
  if (patching) launched_while_patching.push_back(name);
  if (!started) return;
  if (user_ranges && open_user_range) {
    std::vector<double>& sums = open_user_range->values;
    sums.resize(std::max(sums.size(), values.size()), 0.0);
    for (size_t i = 0; i < values.size(); ++i) sums[i] += values[i];
    return;
  }
  if (!user_ranges) ranges.push_back({name, std::move(values)});
}

std::unique_ptr<RangeCounter> FakeCountingBackend::rangeCounter() { return std::make_unique<FakeRangeCounter>(*this); }
std::unique_ptr<SassCounter> FakeCountingBackend::sassCounter() { return std::make_unique<FakeSassCounter>(*this); }
std::unique_ptr<CacheSweep> FakeCountingBackend::cacheSweep() { return std::make_unique<FakeCacheSweep>(*this); }
std::unique_ptr<DuplicateCounting> FakeCountingBackend::duplicateCounter() {
  return std::make_unique<FakeDuplicate>(*this);
}

void FakeCountingBackend::pushContext(CUcontext ctx) {
  calls.push_back("push context");
  current_ = ctx;
}

void FakeCountingBackend::popContext() {
  calls.push_back("pop context");
  current_ = nullptr;
}

CUresult FakeCountingBackend::synchronize() {
  calls.push_back("sync");
  return CUDA_SUCCESS;
}

bool FakeCountingBackend::synchronizeLogged() {
  calls.push_back("sync");
  return true;
}

bool FakeCountingBackend::memoryInfo(size_t& free_bytes, size_t& total_bytes) {
  free_bytes = script.free_bytes;
  total_bytes = script.total_bytes;
  return true;
}

bool FakeCountingBackend::contextId(CUcontext, uint32_t& id, std::string&) {
  id = 7;
  return true;
}

bool FakeCountingBackend::pauseConcurrentKernelRecords() {
  calls.push_back("pause kernel records");
  return true;
}

LaunchRequest launchOf(const char* mangled_name, uint32_t correlation_id, std::optional<uint64_t> signature) {
  LaunchRequest r;
  r.context = reinterpret_cast<CUcontext>(0x10);
  r.stream = reinterpret_cast<CUstream>(0x20);
  r.correlation_id = correlation_id;
  r.symbol_name = mangled_name;
  r.signature = signature;
  r.loose_signature = signature;
  r.graph_key = signature;
  r.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
  static const int params = 0;
  r.driver_params = &params;
  return r;
}

std::vector<core::SassPcFunction> countedFunctions(const std::string& name, uint64_t warp_inst) {
  core::SassPcFunction f;
  f.name = name;
  f.cubin_crc = 42;
  f.pcs.push_back({0, warp_inst, warp_inst * 32, 0});
  return {f};
}

}  // namespace fprof::collector::testing
