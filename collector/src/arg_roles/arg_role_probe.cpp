// The driver side of the argument-role probe: pointer validation, bounded stream drains and the
// copies, with the thread's stream-capture mode relaxed around them; see arg_role_probe.h.
#include "arg_roles/arg_role_probe.h"

#include <cupti.h>

#include <cstring>
#include <thread>
#include <unordered_set>
#include <utility>

namespace fprof::collector {
namespace {

thread_local bool t_active = false;

std::string resultText(CUresult r) {
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  return name != nullptr ? name : "CUDA error " + std::to_string(static_cast<int>(r));
}

// Marks the thread as running the probe's own calls, and lets them run whatever captures other
// threads have open in global mode (none of them touches a capturing stream: checked first).
class OwnCalls {
 public:
  OwnCalls() {
    t_active = true;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    exchanged_ = cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS;
    previous_ = mode;
  }
  ~OwnCalls() {
    if (exchanged_) {
      CUstreamCaptureMode mode = previous_;
      (void)cuThreadExchangeStreamCaptureMode(&mode);
    }
    t_active = false;
  }
  OwnCalls(const OwnCalls&) = delete;
  OwnCalls& operator=(const OwnCalls&) = delete;
  bool ok() const { return exchanged_; }

 private:
  bool exchanged_ = false;
  CUstreamCaptureMode previous_ = CU_STREAM_CAPTURE_MODE_GLOBAL;
};

enum class Drain { kIdle, kTimeout, kError };

// cuStreamSynchronize, bounded: a kernel that waits for something this thread does after the
// launch (a later launch, a host flag) would otherwise never let the program go on.
Drain drainStream(CUstream stream, std::chrono::milliseconds limit, std::string& error) {
  const auto start = std::chrono::steady_clock::now();
  auto pause = std::chrono::microseconds(5);
  for (;;) {
    const CUresult r = cuStreamQuery(stream);
    if (r == CUDA_SUCCESS) return Drain::kIdle;
    if (r != CUDA_ERROR_NOT_READY) {
      error = resultText(r);
      return Drain::kError;
    }
    if (std::chrono::steady_clock::now() - start > limit) return Drain::kTimeout;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

// Device memory as the driver sees it, copied through the launch stream (drained first, so each
// copy runs at once and sees exactly the stream's completed work).
class DriverMemory : public ProbeMemory {
 public:
  explicit DriverMemory(CUstream stream) : stream_(stream) {}

  AddressInfo describe(uint64_t address) override {
    AddressInfo info;
    unsigned int memory_type = 0;
    unsigned int is_managed = 0;  // the driver writes a bool-sized flag: keep the whole word zeroed
    unsigned int mapped = 0;
    CUdeviceptr range_start = 0;
    size_t range_bytes = 0;
    CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                        CU_POINTER_ATTRIBUTE_MAPPED, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                        CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void* data[] = {&memory_type, &is_managed, &mapped, &range_start, &range_bytes};
    // Not an error for a value that is no pointer: the attributes come back zero.
    const CUresult r = cuPointerGetAttributes(5, attributes, data, static_cast<CUdeviceptr>(address));
    if (r != CUDA_SUCCESS) {
      info.note = "the driver does not know the address (" + resultText(r) + ")";
      return info;
    }
    if (memory_type == 0) {
      info.note = "no device allocation at this address";
      return info;
    }
    if (is_managed != 0) {
      info.kind = AddressInfo::Kind::kUnreadable;
      info.note = "managed memory, not sampled (a copy could migrate its pages)";
      return info;
    }
    if (memory_type != CU_MEMORYTYPE_DEVICE) {
      info.kind = AddressInfo::Kind::kUnreadable;
      info.note = memory_type == CU_MEMORYTYPE_HOST ? "host memory, not sampled" : "not plain device memory, not sampled";
      return info;
    }
    if (mapped == 0) {
      info.kind = AddressInfo::Kind::kUnreadable;
      info.note = "reserved address range without memory mapped at the address";
      return info;
    }
    // RANGE_* is the reserved range (cuMemAddressReserve); the mapped allocation may be smaller.
    CUdeviceptr base = 0;
    size_t bytes = 0;
    if (cuMemGetAddressRange(&base, &bytes, static_cast<CUdeviceptr>(address)) != CUDA_SUCCESS) {
      info.kind = AddressInfo::Kind::kUnreadable;
      info.note = "the driver gave no mapped range for the address";
      return info;
    }
    const uint64_t start = std::max<uint64_t>(base, range_start);
    const uint64_t end = std::min<uint64_t>(base + bytes, range_start + range_bytes);
    if (end <= start) {
      info.kind = AddressInfo::Kind::kUnreadable;
      info.note = "the driver's allocation ranges disagree";
      return info;
    }
    info.kind = AddressInfo::Kind::kDevice;
    info.range = {start, end - start};
    return info;
  }

  bool read(uint64_t address, uint64_t bytes, uint8_t* out, std::string& error) override {
    // Pageable destination: the call returns once the copy is done.
    const CUresult r = cuMemcpyDtoHAsync(out, static_cast<CUdeviceptr>(address), bytes, stream_);
    if (r != CUDA_SUCCESS) {
      error = "cuMemcpyDtoHAsync: " + resultText(r);
      return false;
    }
    copied_bytes_ += bytes;
    return true;
  }

  uint64_t copiedBytes() const { return copied_bytes_; }

 private:
  CUstream stream_;
  uint64_t copied_bytes_ = 0;
};

bool streamCapturing(CUstream stream, std::string& why) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult r = cuStreamIsCapturing(stream, &status);
  if (r != CUDA_SUCCESS) {
    why = "cuStreamIsCapturing: " + resultText(r);
    return true;
  }
  if (status != CU_STREAM_CAPTURE_STATUS_NONE) {
    why = "the launch stream is being captured into a graph";
    return true;
  }
  return false;
}

int64_t nsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

ArgRoleProbe::ArgRoleProbe(SamplePolicy policy, ProbeLimits limits) : policy_(policy), limits_(limits) {}

bool ArgRoleProbe::activeOnThisThread() { return t_active; }

std::array<uint32_t, 2> ArgRoleProbe::copyCallbackIds() {
  return {CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz};
}

bool ArgRoleProbe::wanted(const void* function_key, bool* settled_for_good) {
  if (disabled_.load(std::memory_order_relaxed) || function_key == nullptr) {
    if (settled_for_good != nullptr) *settled_for_good = function_key != nullptr;
    return false;
  }
  // Nearly every launch is of a function already settled: answer those from a per-thread set.
  thread_local std::unordered_set<const void*> settled;
  if (settled.count(function_key) != 0) {
    if (settled_for_good != nullptr) *settled_for_good = true;
    return false;
  }
  std::lock_guard lock(mu_);
  auto it = functions_.find(function_key);
  if (it == functions_.end()) return functions_.size() < limits_.max_functions;
  if (it->second.state == FunctionState::kDone || it->second.state == FunctionState::kGivenUp) {
    settled.insert(function_key);
    if (settled_for_good != nullptr) *settled_for_good = true;
    return false;
  }
  return it->second.state == FunctionState::kOpen;
}

bool ArgRoleProbe::claim(const void* key) {
  std::lock_guard lock(mu_);
  auto it = functions_.find(key);
  if (it == functions_.end()) {
    if (functions_.size() >= limits_.max_functions) return false;
    it = functions_.emplace(key, FunctionEntry{}).first;
  }
  if (it->second.state != FunctionState::kOpen) return false;
  it->second.state = FunctionState::kInProgress;
  ++it->second.attempts;
  return true;
}

void ArgRoleProbe::settle(const void* key, FunctionState state) {
  std::lock_guard lock(mu_);
  functions_[key].state = state;
}

bool ArgRoleProbe::retryLater(const void* key) {
  std::lock_guard lock(mu_);
  FunctionEntry& e = functions_[key];
  e.state = e.attempts >= limits_.max_attempts_per_function ? FunctionState::kGivenUp : FunctionState::kOpen;
  if (e.state != FunctionState::kGivenUp) return false;
  given_up_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

ProbeOutcome ArgRoleProbe::giveUp(const void* key, uint32_t correlation_id, std::string reason) {
  settle(key, FunctionState::kGivenUp);
  given_up_.fetch_add(1, std::memory_order_relaxed);
  ProbeOutcome o;
  o.function_key = key;
  o.correlation_id = correlation_id;
  o.reason = std::move(reason);
  o.final_for_function = true;
  return o;
}

std::optional<ProbeState> ArgRoleProbe::before(const ProbeLaunch& launch, ProbeOutcome* gave_up) {
  if (disabled_.load(std::memory_order_relaxed) || launch.args == nullptr || !claim(launch.function_key)) {
    return std::nullopt;
  }
  auto stop = [&](std::string reason) {
    ProbeOutcome o = giveUp(launch.function_key, launch.correlation_id, std::move(reason));
    if (gave_up != nullptr) *gave_up = std::move(o);
    return std::nullopt;
  };
  // Kernels that wait for other kernels or other processes: draining their stream could hang.
  if (launch.symbol_name != nullptr && std::strstr(launch.symbol_name, "nccl") != nullptr) {
    return stop("NCCL kernels wait on other ranks: their stream is never drained");
  }
  if (launch.cooperative) return stop("cooperative launches may spin on grid-wide barriers: not drained");
  const auto start = std::chrono::steady_clock::now();
  OwnCalls own;
  std::string why;
  // Not now, perhaps on a later launch; after the last attempt the function is given up.
  auto later = [&](const std::string& reason) {
    if (retryLater(launch.function_key) && gave_up != nullptr) {
      gave_up->function_key = launch.function_key;
      gave_up->correlation_id = launch.correlation_id;
      gave_up->reason = "not measured in " + std::to_string(limits_.max_attempts_per_function) +
                        " launches; the last: " + reason;
      gave_up->final_for_function = true;
    }
    return std::nullopt;
  };
  if (!own.ok()) return later("the stream capture mode could not be exchanged");
  if (streamCapturing(launch.stream, why)) return later(why);
  DriverMemory memory(launch.stream);
  std::optional<ArgSample> sample = ArgSample::plan(memory, *launch.args, policy_, why);
  if (!sample) return later(why);  // no device pointer in this launch: perhaps in a later one
  std::string error;
  switch (drainStream(launch.stream, limits_.stream_wait, error)) {
    case Drain::kIdle:
      break;
    case Drain::kTimeout:
      if (timeouts_.fetch_add(1) + 1 >= limits_.max_timeouts) disabled_.store(true);
      wait_ns_.fetch_add(nsSince(start), std::memory_order_relaxed);
      return stop("the launch stream did not drain within " + std::to_string(limits_.stream_wait.count()) +
                  " ms before the launch; not measured");
    case Drain::kError:
      // A sticky error: every later call fails too. Stop touching the context.
      disabled_.store(true);
      return stop("the launch stream reported " + error + " before the launch; the probe stopped for this process");
  }
  const bool read = sample->readBefore(memory, why);
  bytes_sampled_.fetch_add(memory.copiedBytes(), std::memory_order_relaxed);
  wait_ns_.fetch_add(nsSince(start), std::memory_order_relaxed);
  if (!read) return stop(why);
  return ProbeState{launch.function_key, launch.stream, launch.correlation_id, std::move(*sample)};
}

ProbeOutcome ArgRoleProbe::after(ProbeState&& state, CUresult launch_result) {
  if (launch_result != CUDA_SUCCESS) {
    ProbeOutcome o;
    o.final_for_function = retryLater(state.function_key);
    o.function_key = state.function_key;
    o.correlation_id = state.correlation_id;
    o.reason = "the launch failed (" + resultText(launch_result) + "), so nothing ran to measure";
    return o;
  }
  const auto start = std::chrono::steady_clock::now();
  OwnCalls own;
  std::string why;
  if (!own.ok() || streamCapturing(state.stream, why)) {
    return giveUp(state.function_key, state.correlation_id, "before the kernel's end could be awaited, " + why);
  }
  std::string error;
  const Drain drained = drainStream(state.stream, limits_.stream_wait, error);
  if (drained != Drain::kIdle) {
    wait_ns_.fetch_add(nsSince(start), std::memory_order_relaxed);
    if (drained == Drain::kError) {
      disabled_.store(true);
      return giveUp(state.function_key, state.correlation_id,
                    "the launch stream reported " + error + " after the kernel; the probe stopped for this process");
    }
    if (timeouts_.fetch_add(1) + 1 >= limits_.max_timeouts) disabled_.store(true);
    return giveUp(state.function_key, state.correlation_id,
                  "the kernel did not finish within " + std::to_string(limits_.stream_wait.count()) +
                      " ms (it may wait for later work); not measured");
  }
  DriverMemory memory(state.stream);
  std::optional<std::vector<ArgRoleResult>> roles = state.sample.after(memory, why);
  bytes_sampled_.fetch_add(memory.copiedBytes(), std::memory_order_relaxed);
  wait_ns_.fetch_add(nsSince(start), std::memory_order_relaxed);
  if (!roles) return giveUp(state.function_key, state.correlation_id, why);
  settle(state.function_key, FunctionState::kDone);
  measured_.fetch_add(1, std::memory_order_relaxed);
  ProbeOutcome o;
  o.function_key = state.function_key;
  o.correlation_id = state.correlation_id;
  o.measured = true;
  o.final_for_function = true;
  o.roles = std::move(*roles);
  o.notes = state.sample.notes();
  return o;
}

ProbeStats ArgRoleProbe::stats() const {
  ProbeStats s;
  s.functions_measured = measured_.load();
  s.functions_given_up = given_up_.load();
  s.bytes_sampled = bytes_sampled_.load();
  s.wait_ns = wait_ns_.load();
  s.disabled = disabled_.load();
  return s;
}

}  // namespace fprof::collector
