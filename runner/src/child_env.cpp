// The environment of a run of the profiled program (see child_env.h).
#include "fprof/runner/child_env.h"

#include <filesystem>
#include <set>

namespace fprof::runner {
namespace {

namespace fs = std::filesystem;
using core::env::Var;

std::string commaJoined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

// `first` before the parent's value of `name`, joined by ':'.
std::string prepended(const std::string& first, const char* name, const core::env::Lookup& parent) {
  const char* existing = parent(name);
  return existing != nullptr && *existing != '\0' ? first + ":" + existing : first;
}

void addInjection(const Injection& in, const core::env::Lookup& parent, core::env::Assignments& out) {
  if (!in.preload.empty()) {
    const std::string value = prepended(in.preload, "LD_PRELOAD", parent);
    // A chosen libcupti goes first: its soname then satisfies the collector's and the preload's.
    out.emplace_back("LD_PRELOAD", in.cupti.empty() ? value : in.cupti + ":" + value);
  }
  if (!in.cupti.empty()) {
    // libnvperf_host/target of the same CUPTI release sit beside it.
    const std::string dir = fs::path(in.cupti).parent_path().string();
    out.emplace_back("LD_LIBRARY_PATH", prepended(dir, "LD_LIBRARY_PATH", parent));
  }
  out.emplace_back("CUDA_INJECTION64_PATH", in.collector);
  out.emplace_back("NVTX_INJECTION64_PATH", in.collector);
}

// The settings of metrics mode the user's options make (what is profiled).
void addSelection(const RunOptions& opt, core::env::Assignments& out) {
  using core::env::assign;
  if (!opt.kernel_regex.empty()) assign(out, Var::kKernelRegex, opt.kernel_regex);
  if (!opt.nvtx_include.empty()) assign(out, Var::kNvtxInclude, commaJoined(opt.nvtx_include));
  if (!opt.nvtx_scope.empty()) assign(out, Var::kNvtxScope, opt.nvtx_scope);
  if (!opt.ops.empty()) assign(out, Var::kOps, commaJoined(opt.ops));
  if (opt.launch_skip > 0) assign(out, Var::kLaunchSkip, std::to_string(opt.launch_skip));
  if (opt.launch_count > 0) assign(out, Var::kLaunchCount, std::to_string(opt.launch_count));
}

}  // namespace

core::env::Assignments childEnvironment(const RunOptions& opt, const PlannedRun& run, const RunFiles& files,
                                        const Injection& injection, const core::env::Lookup& parent) {
  using core::env::assign;
  core::env::Assignments out;
  addInjection(injection, parent, out);
  assign(out, Var::kOutput, fs::absolute(files.output).string());
  assign(out, Var::kForce, opt.force ? "1" : "0");
  assign(out, Var::kMode, opt.metrics.empty() ? "trace" : "metrics");
  if (!files.cubin_dir.empty()) assign(out, Var::kCubinDir, files.cubin_dir);
  if (!run.cache_control.empty()) assign(out, Var::kCacheControl, run.cache_control);
  if (!run.replay.empty()) assign(out, Var::kReplay, run.replay);
  if (run.second) assign(out, Var::kSecondRun, "1");
  if (!files.pc_file.empty()) assign(out, Var::kSassPcFile, files.pc_file);
  if (run.sass_duplicate && !files.cubin_dir.empty()) assign(out, Var::kSassDuplicate, "1");
  if (opt.gpu_fault_safe) assign(out, Var::kCuptiHostPinned, "1");
  if (opt.every_launch) {
    assign(out, Var::kSamplesPerLaunchKind, "0");
  } else if (opt.samples_per_launch_kind > 0) {
    assign(out, Var::kSamplesPerLaunchKind, std::to_string(opt.samples_per_launch_kind));
  }
  if (!opt.metrics.empty()) {
    assign(out, Var::kMetrics, run.metrics);
    addSelection(opt, out);
  }
  return out;
}

std::vector<std::string> mergedEnvironment(const std::vector<std::string>& inherited,
                                           const core::env::Assignments& assigned) {
  std::set<std::string> dropped;
  for (const core::env::Spec& s : core::env::variables()) {
    if (s.audience == core::env::Audience::kContract) dropped.insert(s.name);
  }
  for (const auto& [name, value] : assigned) dropped.insert(name);
  std::vector<std::string> out;
  for (const std::string& entry : inherited) {
    if (dropped.count(entry.substr(0, entry.find('='))) == 0) out.push_back(entry);
  }
  for (const auto& [name, value] : assigned) out.push_back(name + "=" + value);
  return out;
}

}  // namespace fprof::runner
