// What a metrics run shares across its strategies (see metrics_run.h).
#include "metrics/metrics_run.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include "fprof/core/metric_sets.h"

namespace fprof::collector {
namespace {

// A CUPTI newer than the driver (the 13.4 wheel on a 13.0 driver, for its cache control) counted 0
// for every SASS instruction metric on an H100 (bench/RESULTS.md): those metrics are left out
// there rather than recorded as zeros, so FLOPs read unknown, never 0.
bool sassCountersUnreliable(CountingBackend& backend, std::string& why) {
  uint32_t cupti = 0;
  int driver = 0;
  if (!backend.versions(cupti, driver)) return false;
  const int cupti_release = static_cast<int>(cupti / 100);  // 130401 -> 1304
  const int driver_release = driver / 10;                   // 13000 -> 1300
  if (cupti_release <= driver_release) return false;
  why = "CUPTI " + std::to_string(cupti_release / 100) + "." + std::to_string(cupti_release % 100) +
        " is newer than the driver's CUDA " + std::to_string(driver_release / 100) + "." +
        std::to_string(driver_release % 100) +
        ", and counts 0 for SASS instruction metrics there: FLOP and instruction-mix counters are not collected in "
        "this run (a CUPTI as old as the driver collects them, without cache control)";
  return true;
}

std::string commaList(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

}  // namespace

std::string CountingSeconds::launchStepsText() const {
  static constexpr const char* kNames[] = {"drain", "duplicate", "sweep", "start", "launch", "stop", "end"};
  static_assert(std::size(kNames) == static_cast<size_t>(LaunchStep::kCount));
  std::string text;
  for (size_t i = 0; i < steps.size(); ++i) {
    char item[48];
    std::snprintf(item, sizeof item, "%s%s=%.3f", i ? " " : "", kNames[i], steps[i]);
    text += item;
  }
  return text;
}

std::string TeardownSeconds::text() const {
  char out[160];
  std::snprintf(out, sizeof out, "patching=%.3f decode=%.3f duplicates=%.3f profiler=%.3f", patching, decode,
                duplicates, profiler);
  return out;
}

void DuplicateTally::stop(RunLog& log, const std::string& why) {
  if (!stopped_why.empty()) return;
  stopped_why = why + " (after " + std::to_string(counted) + " profiled launches)";
  log.note("info", "SASS counts (FLOPs, instructions) stop being counted in this run: " + stopped_why +
                       "; fprof run counts them in a second run of the program");
}

void DuplicateTally::add(const DuplicateCounting::Seconds& last) {
  seconds.save += last.save;
  seconds.duplicate += last.duplicate;
  seconds.restore += last.restore;
  if (last.own_checkpoint) {
    ++own_checkpoints;
    own_checkpoint_bytes_max = std::max(own_checkpoint_bytes_max, last.own_bytes);
  } else {
    ++cupti_checkpoints[last.why_not_own];
  }
}

std::string DuplicateTally::secondsText() const {
  char text[160];
  std::snprintf(text, sizeof text, "save=%.3f duplicate=%.3f restore=%.3f launches=%llu", seconds.save,
                seconds.duplicate, seconds.restore, static_cast<unsigned long long>(counted));
  return text;
}

std::string DuplicateTally::checkpointsText() const {
  uint64_t cupti = 0;
  std::string reasons;
  for (const auto& [why, n] : cupti_checkpoints) {
    cupti += n;
    reasons += (reasons.empty() ? "" : "; ") + std::to_string(n) + ": " + why;
  }
  std::string text = "own=" + std::to_string(own_checkpoints) + " (at most " +
                     std::to_string(own_checkpoint_bytes_max) + " bytes) cupti=" + std::to_string(cupti);
  return reasons.empty() ? text : text + " (" + reasons + ")";
}

double warpInstructions(const std::vector<core::SassPcFunction>& functions) {
  double warp_inst = 0;
  for (const core::SassPcFunction& f : functions) {
    for (const core::SassPcCount& p : f.pcs) warp_inst += static_cast<double>(p.warp_inst);
  }
  return warp_inst;
}

bool MetricsRun::start() {
  if (std::string why; sassCountersUnreliable(backend, why)) {
    std::erase_if(config.metrics, core::isSassInstrumented);
    log.note("warning", why);
    if (config.metrics.empty()) return false;
  }
  selector = std::make_unique<LaunchSelector>(config);
  ledger.useSelector(selector.get());
  graphs.useSelector(selector.get());
  log.setDebugRanges(config.debug_ranges);
  recordConfiguration();
  return true;
}

void MetricsRun::recordConfiguration() {
  log.meta("metric_set", config.selection);
  log.meta("metrics", commaList(config.metrics));
  if (!config.nvtx_include.empty()) {
    log.meta("nvtx_include", commaList(config.nvtx_include));
    log.meta("nvtx_scope", config.nvtx_process_scope ? "process" : "thread");
  }
  log.meta("samples_per_launch_kind", config.samples_per_signature == 0 ? std::string("every launch")
                                                                         : std::to_string(config.samples_per_signature));
}

void MetricsRun::writePcCounts(const core::SassPcLaunch& launch) {
  if (pc_file_ == nullptr) pc_file_ = std::fopen(config.sass_pc_file.c_str(), config.sass_duplicate ? "we" : "ae");
  if (pc_file_ == nullptr) return;
  const std::string text = core::sassPcLaunchText(launch);
  std::fwrite(text.data(), 1, text.size(), pc_file_);
  std::fflush(pc_file_);  // a crash later keeps what was counted
}

void MetricsRun::closePcFile() {
  if (pc_file_ == nullptr) return;
  std::fclose(pc_file_);
  pc_file_ = nullptr;
}

void MetricsRun::recordRunFacts(const std::string& teardown) {
  log.meta("metrics_teardown_seconds", teardown);
  log.meta("metrics_kernels_profiled", std::to_string(profiled));
  log.meta("metrics_kernels_copied", std::to_string(ledger.copied()));
  if (unmatched_ranges > 0) log.meta("metrics_unmatched_ranges", std::to_string(unmatched_ranges));
  char cost[64];
  std::snprintf(cost, sizeof cost, "%.3f", seconds.replay);
  log.meta("metrics_replay_seconds", cost);
  std::snprintf(cost, sizeof cost, "%.3f", seconds.decode);
  log.meta("metrics_decode_seconds", cost);
  if (profiled > 0 && config.replay != ReplayMode::kSassPatching) {
    log.meta("metrics_launch_steps_seconds", seconds.launchStepsText());
  }
  if (config.sass_duplicate) {
    log.meta("sass_in_first_run",
             duplicates.stopped_why.empty() ? "every profiled launch" : "stopped: " + duplicates.stopped_why);
    log.meta("sass_duplicate_seconds", duplicates.secondsText());
    log.meta("sass_duplicate_device_memory_held_bytes", std::to_string(duplicates.device_memory_held_max));
    log.meta("sass_duplicate_checkpoints", duplicates.checkpointsText());
  }
}

const std::string& MetricsRun::demangled(const char* symbol) {
  static const std::string none;
  if (symbol == nullptr) return none;
  auto it = demangled_.find(symbol);
  if (it != demangled_.end()) return it->second;
  int status = 0;
  char* d = abi::__cxa_demangle(symbol, nullptr, nullptr, &status);
  std::string name = (status == 0 && d != nullptr) ? d : symbol;
  std::free(d);
  return demangled_.emplace(symbol, std::move(name)).first->second;
}

}  // namespace fprof::collector
