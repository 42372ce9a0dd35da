// Metrics-mode settings and launch selection (see metrics_config.h).
#include "metrics_config.h"

#include <algorithm>

#include <cstdlib>

#include "fprof/core/metric_sets.h"
#include "fprof/core/sass_pc.h"

namespace fprof::collector {
namespace {

std::vector<std::string> splitList(const char* text) {
  std::vector<std::string> out;
  if (text == nullptr) return out;
  std::string s(text);
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::optional<uint64_t> parseCount(const char* text) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (*end != '\0' || text[0] == '-') return std::nullopt;
  return static_cast<uint64_t>(v);
}

}  // namespace

std::string sassPcFileOfRank(const std::string& file, std::optional<int> rank) {
  return rank ? file + ".rank" + std::to_string(*rank) : file;
}

MetricsConfig readMetricsConfig(const EnvLookup& env) {
  MetricsConfig c;
  const char* mode = env("FPROF_MODE");
  c.enabled = mode != nullptr && std::string(mode) == "metrics";
  if (!c.enabled) return c;
  if (const char* m = env("FPROF_METRICS"); m != nullptr && *m != '\0') c.selection = m;
  auto expanded = core::expandMetricSelection(c.selection);
  if (expanded) {
    c.metrics = *expanded;
  } else {
    c.errors.push_back(expanded.error());
  }
  if (const char* r = env("FPROF_KERNEL_REGEX"); r != nullptr) c.kernel_regex = r;
  c.nvtx_include = splitList(env("FPROF_NVTX_INCLUDE"));
  if (const char* scope = env("FPROF_NVTX_SCOPE"); scope != nullptr && *scope != '\0') {
    const std::string v = scope;
    if (v == "process" || v == "thread") {
      c.nvtx_process_scope = v == "process";
    } else {
      c.errors.push_back("FPROF_NVTX_SCOPE='" + v + "' is neither 'process' nor 'thread'");
    }
  }
  c.ops = splitList(env("FPROF_OPS"));
  if (const char* s = env("FPROF_LAUNCH_SKIP"); s != nullptr) {
    if (auto v = parseCount(s)) {
      c.launch_skip = *v;
    } else {
      c.errors.push_back(std::string("FPROF_LAUNCH_SKIP='") + s + "' is not a count");
    }
  }
  if (const char* s = env("FPROF_LAUNCH_COUNT"); s != nullptr) {
    if (auto v = parseCount(s); v && *v > 0) {
      c.launch_count = *v;
    } else {
      c.errors.push_back(std::string("FPROF_LAUNCH_COUNT='") + s + "' is not a positive count");
    }
  }
  if (const char* b = env("FPROF_METRICS_BATCH"); b != nullptr) {
    if (auto v = parseCount(b); v && *v > 0 && *v <= 100000) {
      c.batch_ranges = static_cast<size_t>(*v);
    } else {
      c.errors.push_back(std::string("FPROF_METRICS_BATCH='") + b + "' must be 1..100000");
    }
  }
  if (const char* cc = env("FPROF_CACHE_CONTROL"); cc != nullptr && *cc != '\0') {
    const std::string v = cc;
    if (v == "all" || v == "none") {
      c.cache_control = v == "all" ? CacheControl::kAll : CacheControl::kNone;
    } else {
      c.errors.push_back("FPROF_CACHE_CONTROL='" + v + "' must be all or none");
    }
  }
  if (const char* r = env("FPROF_REPLAY"); r != nullptr && *r != '\0') {
    const std::string v = r;
    if (v == "kernel") {
      c.replay = ReplayMode::kKernel;
    } else if (v == "application") {
      c.replay = ReplayMode::kApplication;
    } else if (v == "auto") {
      c.replay = ReplayMode::kAuto;
    } else if (v == "sass_patching") {
      c.replay = ReplayMode::kSassPatching;
    } else {
      c.errors.push_back("FPROF_REPLAY='" + v + "' must be kernel, application or auto");
    }
  }
  if (const char* f = env("FPROF_SASS_PC_FILE"); f != nullptr && *f != '\0') c.sass_pc_file = sassPcFileOfRank(f, readRanks(env).rank);
  if (c.replay == ReplayMode::kSassPatching) {
    if (c.sass_pc_file.empty()) c.errors.push_back("FPROF_REPLAY=sass_patching needs FPROF_SASS_PC_FILE");
    const auto other = std::find_if(c.metrics.begin(), c.metrics.end(),
                                    [](const std::string& m) { return !core::countedFromPcCounts(m); });
    if (other != c.metrics.end()) c.errors.push_back("FPROF_REPLAY=sass_patching cannot count " + *other);
  }
  if (const char* s = env("FPROF_SECOND_RUN"); s != nullptr && std::string(s) == "1") c.second_run = true;
  if (const char* s = env("FPROF_SASS_DUPLICATE"); s != nullptr && std::string(s) == "1") c.sass_duplicate = true;
  if (const char* s = env("FPROF_OWN_CHECKPOINT"); s != nullptr && std::string(s) == "0") c.own_checkpoint = false;
  if (const char* s = env("FPROF_PROFILER_SESSION"); s != nullptr && *s != '\0') {
    const std::string v = s;
    if (v == "toggled" || v == "range") {
      c.toggled_session = v == "toggled";
    } else {
      c.errors.push_back("FPROF_PROFILER_SESSION='" + v + "' must be toggled or range");
    }
  }
  if (const char* n = env("FPROF_SAMPLES_PER_LAUNCH_KIND"); n != nullptr) {
    if (auto v = parseCount(n)) {
      c.samples_per_signature = *v;
    } else {
      c.errors.push_back(std::string("FPROF_SAMPLES_PER_LAUNCH_KIND='") + n + "' is not a count (0 = every launch)");
    }
  }
  if (!c.kernel_regex.empty()) {
    try {
      std::regex test(c.kernel_regex);
    } catch (const std::regex_error& e) {
      c.errors.push_back("FPROF_KERNEL_REGEX '" + c.kernel_regex + "' is not a valid regular expression: " + e.what());
    }
  }
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
