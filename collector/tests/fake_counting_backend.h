// A counting backend without CUPTI or a GPU, for the metrics collector's CPU tests: it writes
// every call the strategies make into one log, in order, and counts what the test says ran. A
// kernel "runs" when the test calls kernelRan between a launch's beforeLaunch and afterLaunch: a
// started auto-range profiler makes a range of it named after the kernel, an open user range adds
// its values up; decode hands the ranges back as CUPTI would (rows in order, with their names).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "metrics/counting_backend.h"
#include "metrics/counting_strategy.h"

namespace fprof::collector::testing {

class FakeCountingBackend;

// What the next objects the backend makes will do: set by a test before the collector needs them.
struct FakeScript {
  // Range profiler
  bool setup_ok = true;
  std::string setup_error = "the profiler could not be set up";
  size_t passes = 1;
  bool cache_control_applied = false;
  bool start_ok = true;
  bool user_ranges_ok = true;
  bool ready_ok = true;
  std::vector<std::string> range_names_dropped;  // ranges decode leaves out (CUPTI lost them)
  bool unnamed_ranges = false;                   // decode gives no range names
  // SASS patching: what each end() reads, in turn (empty: a count of 100 warp instructions)
  bool patching_setup_ok = true;
  bool patching_begin_ok = true;
  std::vector<std::vector<core::SassPcFunction>> patched_counts;
  // Cache sweep
  bool sweep_setup_ok = true;
  // Duplicate
  bool duplicate_setup_ok = true;
  bool duplicate_count_ok = true;
  DuplicateCounting::Seconds duplicate_seconds;  // what last() says after a count
  uint64_t duplicate_warp_inst = 50;
  // Driver
  bool context_ok = true;
  CUcontext context = reinterpret_cast<CUcontext>(0x10);
  size_t free_bytes = size_t{70} << 30, total_bytes = size_t{80} << 30;
  uint32_t cupti_version = 130001;
  int driver_version = 13000;
};

class FakeCountingBackend final : public CountingBackend {
 public:
  FakeScript script;
  std::vector<std::string> calls;  // "setup", "start", "sync", "sweep", ... in the order made

  // A kernel of the launch in the window ran, with one value per configured metric.
  void kernelRan(const std::string& name, std::vector<double> values);

  std::unique_ptr<RangeCounter> rangeCounter() override;
  std::unique_ptr<SassCounter> sassCounter() override;
  std::unique_ptr<CacheSweep> cacheSweep() override;
  std::unique_ptr<DuplicateCounting> duplicateCounter() override;
  bool versions(uint32_t& cupti, int& driver) override {
    cupti = script.cupti_version;
    driver = script.driver_version;
    return true;
  }
  bool currentContextAndDevice(CUcontext& ctx, CUdevice& device) override {
    ctx = script.context;
    device = 0;
    return script.context_ok;
  }
  CUcontext currentContext() override { return current_; }
  void pushContext(CUcontext ctx) override;
  void popContext() override;
  CUresult synchronize() override;
  bool synchronizeLogged() override;
  bool memoryInfo(size_t& free_bytes, size_t& total_bytes) override;
  bool contextId(CUcontext ctx, uint32_t& id, std::string& error) override;
  void holdFlushes() override { calls.push_back("hold flushes"); }
  void releaseFlushes() override { calls.push_back("release flushes"); }
  bool pauseConcurrentKernelRecords() override;
  void resumeConcurrentKernelRecords() override { calls.push_back("resume kernel records"); }
  int64_t timestampNs() override { return clock_ns_ += 100; }

  // The counting state the fakes share.
  struct Range {
    std::string name;
    std::vector<double> values;
  };
  bool started = false;
  bool user_ranges = false;
  std::optional<Range> open_user_range;
  std::vector<Range> ranges;  // counted, not decoded yet
  bool patching = false;
  std::vector<std::vector<core::SassPcFunction>> patched;  // what each patched launch counted
  std::vector<std::string> launched_while_patching;

 private:
  CUcontext current_ = nullptr;
  int64_t clock_ns_ = 1000;
};

// A launch request as the collector's callback makes it.
LaunchRequest launchOf(const char* mangled_name, uint32_t correlation_id, std::optional<uint64_t> signature);

// One SASS-patched function whose PCs executed `warp_inst` warp instructions in all.
std::vector<core::SassPcFunction> countedFunctions(const std::string& name, uint64_t warp_inst);

}  // namespace fprof::collector::testing
