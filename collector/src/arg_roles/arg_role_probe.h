// Measures, once per kernel function, which of its pointer arguments the kernel writes: at the
// driver launch callback's ENTER (the launch not yet submitted) a sample of the memory behind each
// argument is copied from the device; at its EXIT the same bytes are copied again after the
// kernel finished, and compared (arg_roles.h). Runs inside the user's program, so it gives up
// rather than risk anything: collector/README.md, "Argument roles", has the rules.
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "arg_roles/arg_roles.h"
#include "trace/launch_info.h"

namespace fprof::collector {

struct ProbeLaunch {
  const void* function_key = nullptr;  // the launch's CUfunction (or CUkernel) handle as passed
  CUstream stream = nullptr;           // the launch's stream; for the _ptsz launch variants pass
                                       // CU_STREAM_PER_THREAD where they name stream 0
  const char* symbol_name = nullptr;   // mangled; NCCL kernels are never probed
  bool cooperative = false;            // cooperative launches are never probed
  uint32_t correlation_id = 0;
  const LaunchArgs* args = nullptr;    // the 8-byte values to classify (arg index + offset each)
};

// What before() hands to after(); the caller keeps it (per thread) between ENTER and EXIT.
struct ProbeState {
  const void* function_key = nullptr;
  CUstream stream = nullptr;
  uint32_t correlation_id = 0;
  ArgSample sample;
};

struct ProbeOutcome {
  const void* function_key = nullptr;
  uint32_t correlation_id = 0;  // the launch measured (its kernel ran alone on a drained stream)
  bool measured = false;
  // When not measured: why, in one sentence. `final_for_function`: the function will not be
  // probed again (otherwise a later launch may be).
  std::string reason;
  bool final_for_function = false;
  std::vector<ArgRoleResult> roles;  // in argument order; arguments without a role are left out
  std::vector<std::string> notes;    // why some arguments got no role
};

struct ProbeLimits {
  size_t max_functions = 4096;        // functions measured per process, then the probe stops
  int max_attempts_per_function = 4;  // launches tried (no pointer yet, capture, failed launch)
  std::chrono::milliseconds stream_wait{5000};  // longest wait for the launch stream to drain
  int max_timeouts = 3;               // stream waits that ran out before the probe turns itself off
};

struct ProbeStats {
  uint64_t functions_measured = 0;
  uint64_t functions_given_up = 0;
  uint64_t bytes_sampled = 0;   // before and after copies together
  int64_t wait_ns = 0;          // host time spent draining streams and copying
  bool disabled = false;        // the probe turned itself off (sticky error, repeated timeouts)
};

class ArgRoleProbe {
 public:
  explicit ArgRoleProbe(SamplePolicy policy = {}, ProbeLimits limits = {});

  // Cheap, every launch: is this function still to be measured? (Answers are cached per thread,
  // for the one probe a process has.)
  // `settled` (optional) is set when the answer is no for good (measured, given up, probe off).
  bool wanted(const void* function_key, bool* settled = nullptr);

  // At the driver launch API's ENTER. nullopt: nothing was done to the stream or memory, or what
  // was done is complete; the launch goes on unchanged. Where that gave the function up for good,
  // `gave_up` (if given) says why. Otherwise keep the state for after().
  std::optional<ProbeState> before(const ProbeLaunch& launch, ProbeOutcome* gave_up = nullptr);

  // At the same driver launch API's EXIT, with its return value (a launch that failed measures
  // nothing and lets a later launch try).
  ProbeOutcome after(ProbeState&& state, CUresult launch_result);

  // True while the probe's own driver calls run on this thread: their callbacks, and the memcpy
  // activity records of the copies (joined through the callback's correlation id), are fprof's
  // own and must not be recorded as the program's.
  static bool activeOnThisThread();
  // Driver API callback ids of the probe's calls that produce activity records (the copies).
  static std::array<uint32_t, 2> copyCallbackIds();

  ProbeStats stats() const;

 private:
  enum class FunctionState : uint8_t { kOpen, kInProgress, kDone, kGivenUp };
  struct FunctionEntry {
    FunctionState state = FunctionState::kOpen;
    int attempts = 0;
  };
  bool claim(const void* key);
  void settle(const void* key, FunctionState state);
  bool retryLater(const void* key);  // true: that was the last attempt, the function is given up
  ProbeOutcome giveUp(const void* key, uint32_t correlation_id, std::string reason);

  SamplePolicy policy_;
  ProbeLimits limits_;
  mutable std::mutex mu_;
  std::unordered_map<const void*, FunctionEntry> functions_;
  std::atomic<bool> disabled_{false};
  std::atomic<int> timeouts_{0};
  std::atomic<uint64_t> measured_{0};
  std::atomic<uint64_t> given_up_{0};
  std::atomic<uint64_t> bytes_sampled_{0};
  std::atomic<int64_t> wait_ns_{0};
};

}  // namespace fprof::collector
