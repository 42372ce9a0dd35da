// Metrics-mode settings and launch selection (see metrics_config.h).
#include "metrics/metrics_config.h"

#include <algorithm>

#include "fprof/core/metric_sets.h"
#include "fprof/core/sass_pc.h"

namespace fprof::collector {
std::string sassPcFileOfRank(const std::string& file, std::optional<int> rank) {
  return rank ? file + ".rank" + std::to_string(*rank) : file;
}

namespace {

std::optional<ReplayMode> replayNamed(const std::string& name) {
  if (name == "kernel") return ReplayMode::kKernel;
  if (name == "application") return ReplayMode::kApplication;
  if (name == "auto") return ReplayMode::kAuto;
  if (name == "sass_patching") return ReplayMode::kSassPatching;
  return std::nullopt;
}

// What the user's options select (fprof run's filters and sampling).
void readSelection(core::env::Parser& env, MetricsConfig& c) {
  using core::env::Var;
  c.selection = env.text(Var::kMetrics);
  if (auto expanded = core::expandMetricSelection(c.selection)) {
    c.metrics = *expanded;
  } else {
    c.errors.push_back(expanded.error());
  }
  c.kernel_regex = env.text(Var::kKernelRegex);
  if (!c.kernel_regex.empty()) {
    try {
      std::regex test(c.kernel_regex);
    } catch (const std::regex_error& e) {
      c.errors.push_back("FPROF_KERNEL_REGEX '" + c.kernel_regex + "' is not a valid regular expression: " + e.what());
    }
  }
  c.nvtx_include = env.list(Var::kNvtxInclude);
  c.nvtx_process_scope = env.choice(Var::kNvtxScope) == "process";
  c.ops = env.list(Var::kOps);
  c.launch_skip = static_cast<uint64_t>(*env.integer(Var::kLaunchSkip));
  if (auto count = env.integer(Var::kLaunchCount)) c.launch_count = static_cast<uint64_t>(*count);
  c.samples_per_signature = static_cast<uint64_t>(*env.integer(Var::kSamplesPerLaunchKind));
}

// How the selected launches are counted, and what `fprof run` asked of this run.
void readCounting(core::env::Parser& env, const EnvLookup& lookup, MetricsConfig& c) {
  using core::env::Var;
  if (const std::string cc = env.choice(Var::kCacheControl); !cc.empty()) {
    c.cache_control = cc == "all" ? CacheControl::kAll : CacheControl::kNone;
  }
  c.replay = *replayNamed(env.choice(Var::kReplay));
  c.sass_pc_file = env.text(Var::kSassPcFile);
  if (!c.sass_pc_file.empty()) c.sass_pc_file = sassPcFileOfRank(c.sass_pc_file, readRanks(lookup).rank);
  if (c.replay == ReplayMode::kSassPatching) {
    if (c.sass_pc_file.empty()) c.errors.push_back("FPROF_REPLAY=sass_patching needs FPROF_SASS_PC_FILE");
    const auto other = std::find_if(c.metrics.begin(), c.metrics.end(),
                                    [](const std::string& m) { return !core::countedFromPcCounts(m); });
    if (other != c.metrics.end()) c.errors.push_back("FPROF_REPLAY=sass_patching cannot count " + *other);
  }
  c.second_run = env.flag(Var::kSecondRun);
  c.sass_duplicate = env.flag(Var::kSassDuplicate);
  c.own_checkpoint = env.flag(Var::kOwnCheckpoint);
  c.toggled_session = env.choice(Var::kProfilerSession) == "toggled";
  c.debug_ranges = env.flag(Var::kDebugRanges);
  c.cubin_dir = env.text(Var::kCubinDir);
}

}  // namespace

MetricsConfig readMetricsConfig(const EnvLookup& lookup) {
  MetricsConfig c;
  // A bad FPROF_MODE is said by readConfig; here it only leaves metrics mode off.
  c.enabled = core::env::Parser(lookup).choice(core::env::Var::kMode) == "metrics";
  if (!c.enabled) return c;
  core::env::Parser env(lookup, core::env::OnBadValue::kRefuse);
  readSelection(env, c);
  readCounting(env, lookup, c);
  c.errors.insert(c.errors.end(), env.problems().begin(), env.problems().end());
  return c;
}

std::optional<ReplayMode> chooseReplay(ReplayMode requested, const std::vector<std::string>& metrics, size_t passes,
                                       std::string& error) {
  if (requested == ReplayMode::kKernel) return ReplayMode::kKernel;
  const auto sass = std::find_if(metrics.begin(), metrics.end(), core::isSassInstrumented);
  if (passes == 1 && sass == metrics.end()) return ReplayMode::kApplication;
  if (requested == ReplayMode::kAuto) return ReplayMode::kKernel;
  if (sass != metrics.end()) {
    error = "--replay application cannot count " + *sass +
            ": CUPTI counts SASS-instrumented metrics only under kernel replay (use --replay kernel, or a set "
            "without them such as --metrics memory)";
  } else {
    error = "--replay application counts one pass, the program's own run, and these metrics take " +
            std::to_string(passes) + " (use --replay kernel, or fewer metrics)";
  }
  return std::nullopt;
}

bool nvtxPathIncluded(const MetricsConfig& config, const std::string& path) {
  if (config.nvtx_include.empty()) return true;
  for (const std::string& s : config.nvtx_include) {
    if (path.find(s) != std::string::npos) return true;
  }
  return false;
}

LaunchSelector::LaunchSelector(const MetricsConfig& config) : config_(config) {
  if (!config_.kernel_regex.empty()) {
    try {
      regex_.emplace(config_.kernel_regex);
    } catch (const std::regex_error&) {
      // readMetricsConfig already reported it and kept metrics mode off.
    }
  }
}

std::string LaunchSelector::filterMiss(const LaunchFacts& f) const {
  if (regex_ && !std::regex_search(f.demangled_name, *regex_)) return "not selected (--kernel-regex)";
  return rangeFilterMiss(f);
}

std::string LaunchSelector::rangeFilterMiss(const LaunchFacts& f) const {
  const std::string empty;
  const std::string& path = f.nvtx_path ? *f.nvtx_path : empty;
  if (!nvtxPathIncluded(config_, path) && !(config_.nvtx_process_scope && f.selected_elsewhere)) {
    return "not selected (--nvtx-include)";
  }
  if (!config_.ops.empty()) {
    // An op name matches a whole token "op=<name>" in any range of the path.
    bool any = false;
    for (const std::string& op : config_.ops) {
      const std::string token = "op=" + op;
      for (size_t at = path.find(token); at != std::string::npos && !any; at = path.find(token, at + 1)) {
        const size_t end = at + token.size();
        const bool starts = at == 0 || path[at - 1] == ' ' || path[at - 1] == '/' || path[at - 1] == ':';
        const bool ends = end == path.size() || path[end] == ' ' || path[end] == '/';
        any = starts && ends;
      }
    }
    if (!any) return "not selected (--ops)";
  }
  return {};
}

Decision LaunchSelector::decideGraphLaunch(const LaunchFacts& f) const {
  Decision d;
  d.kind = LaunchDecision::kGraph;
  d.reason = kGraphKernelReason;
  if (std::string miss = rangeFilterMiss(f); !miss.empty()) {
    d.kind = LaunchDecision::kSkipFiltered;
    d.reason = std::move(miss);
  }
  return d;
}

bool LaunchSelector::copyByLooseSignature(const LaunchFacts& f, Decision& d) {
  if (!f.loose_signature || *f.loose_signature == *f.signature) return false;
  auto [it, fresh] = loose_.try_emplace(*f.loose_signature);
  Loose& l = it->second;
  if (fresh) {
    l.first_index = d.launch_index;
    l.first_signature = *f.signature;
    return false;
  }
  if (l.state == Loose::State::kSame) {
    d.kind = LaunchDecision::kCopy;
    d.source_index = l.first_index;
    ++copied_;
    return true;
  }
  if (l.state == Loose::State::kUnchecked && *f.signature != l.first_signature &&
      samples_.count(*f.signature) == 0) {
    l.state = Loose::State::kChecking;
    d.loose_check = *f.loose_signature;
    d.loose_first_signature = l.first_signature;
  }
  return false;
}

void LaunchSelector::looseChecked(uint64_t loose_signature, bool same) {
  auto it = loose_.find(loose_signature);
  if (it != loose_.end()) it->second.state = same ? Loose::State::kSame : Loose::State::kDiffer;
}

Decision LaunchSelector::decide(const LaunchFacts& f) {
  Decision d;
  if (std::string miss = filterMiss(f); !miss.empty()) {
    d.kind = LaunchDecision::kSkipFiltered;
    d.reason = std::move(miss);
    return d;
  }
  // Replay re-runs a kernel with memory restored: kernels that wait on other kernels or other
  // processes would hang or deadlock, and graph nodes are not separate launches.
  const char* why = nullptr;
  if (f.demangled_name.find("nccl") != std::string::npos) why = "NCCL kernel: not replayed (it waits on other ranks)";
  if (f.graph_launch) why = kGraphKernelReason;
  if (why != nullptr) {
    d.kind = LaunchDecision::kSkipUnsafe;
    d.reason = why;
    return d;
  }
  d.launch_index = selected_++;
  if (d.launch_index < config_.launch_skip) {
    d.kind = LaunchDecision::kSkipFiltered;
    d.reason = "not selected (--launch-skip)";
    return d;
  }
  if (exhausted()) {
    d.kind = LaunchDecision::kSkipFiltered;
    d.reason = "not selected (--launch-count reached)";
    return d;
  }
  ++given_;
  if (f.signature && config_.samples_per_signature > 0) {
    if (copyByLooseSignature(f, d)) return d;
    auto [it, first] = samples_.try_emplace(*f.signature, Samples{d.launch_index, 0});
    if (!first && it->second.profiled >= config_.samples_per_signature) {
      d.kind = LaunchDecision::kCopy;
      d.source_index = it->second.first_index;
      ++copied_;
      return d;
    }
    ++it->second.profiled;
  }
  ++profiled_;
  d.kind = LaunchDecision::kProfile;
  return d;
}

}  // namespace fprof::collector
