// The analysis pipeline (see run_analysis.h): each result computed once, on first use, in the
// order its inputs need; data flow and fusion started on a second thread as the analysis is built.
#include "fprof/analysis/run_analysis.h"

#include <future>
#include <mutex>
#include <system_error>
#include <unordered_map>
#include <utility>

namespace fprof::analysis {

namespace {

// A value computed by the first caller of get(); later and concurrent callers get the same one.
template <typename T>
class Lazy {
 public:
  template <typename Make>
  const T& get(Make&& make) const {
    std::call_once(once_, [&] { value_.emplace(make()); });
    return *value_;
  }

 private:
  mutable std::once_flag once_;
  mutable std::optional<T> value_;
};

uint64_t deviceKey(uint32_t process_id, uint32_t device_id) { return (uint64_t{process_id} << 32) | device_id; }

}  // namespace

RunComparison compareRuns(const RunAnalysis& base, const RunAnalysis& cur) {
  RunComparison c;
  c.diff = diffProfiles(base.profile(), base.kernelOps(), cur.profile(), cur.kernelOps());
  c.fusions = matchFusionOutcomes(base.profile(), base.fusion(), cur.profile());
  c.names = KernelNames::of({&base.profile(), &cur.profile()});
  return c;
}

struct RunAnalysis::State {
  std::optional<core::Profile> owned_run;  // set by owning()
  const core::Profile* run = nullptr;
  // The tables data flow alone reads, taken out of an owned profile (release_launch_tables) or read
  // from its file once the ops are indexed (owningThenLoadingLaunchTables), and
  // given to data flow, which frees them once read.
  std::optional<OwnedLaunchTables> launch_tables;
  AnalysisOptions options;
  std::vector<std::pair<uint64_t, Ceilings>> ceilings;  // per (process, device) of the run's devices
  Ceilings no_device;                                    // a kernel whose device was not recorded
  std::unique_ptr<RunAnalysis> baseline;
  std::once_flag nvtx_release;  // indexOpsThenReleaseNvtxRanges
  // The messages of owned_run's ranges that framework-op indexing kept, until the ranges go.
  core::TextBlock nvtx_kept_messages;
  // A run loaded without its NVTX messages: its ranges' kinds as they were read from its file
  // (readNvtxMessages), until framework-op indexing takes them, and whether they could be read.
  std::optional<NvtxRangeKinds> nvtx_kinds;
  core::Status nvtx_read;

  Lazy<RunSummary> summary;
  Lazy<RooflineResult> roofline;
  Lazy<OpIndex> nvtx_ops;
  Lazy<FrameworkOps> framework_ops;
  Lazy<KernelOps> kernel_ops;
  Lazy<std::vector<GroupPlacement>> op_placements;
  Lazy<DataFlow> data_flow;
  Lazy<FusionResult> fusion;
  Lazy<CounterCoverage> coverage;
  Lazy<std::unordered_map<uint32_t, Origin>> origin_of_name;  // by demangled name id
  Lazy<OriginTotals> origins;
  Lazy<std::vector<RankRow>> ranks;
  Lazy<KernelNames> names;
  Lazy<RunComparison> comparison;
  // Last, so that it is destroyed first: the background work ends before what it reads goes.
  std::future<void> background;

  const DataFlow& dataFlow() {
    return data_flow.get([&] {
      if (!launch_tables) return analyzeDataFlow(*run);
      OwnedLaunchTables tables = std::move(*launch_tables);
      launch_tables.reset();
      return analyzeDataFlow(*run, std::move(tables), measuredRoles(*run));
    });
  }

  const RunSummary& runSummary() {
    return summary.get([&] { return summarize(*run); });
  }

  const OpIndex& nvtxOps() {
    return nvtx_ops.get([&] { return indexOps(*run); });
  }
  // Where the ranges are let go after indexing, most of their messages go during it, once fprof's
  // op index (the other reader of messages) is done.
  const FrameworkOps& frameworkOps() {
    return framework_ops.get([&] {
      if (!releasesNvtxRanges()) return indexFrameworkOps(*run);
      return indexFrameworkOps(*run, {&*owned_run, &nvtx_kept_messages, [&] { nvtxOps(); },
                                      nvtx_kinds ? &*nvtx_kinds : nullptr});
    });
  }
  bool releasesNvtxRanges() const { return options.release_nvtx_ranges && owned_run && !baseline; }

  // Where the NVTX ranges are let go, the ops come first, so that the ranges are gone before data
  // flow, the largest step, starts. Elsewhere data flow comes first: on the second thread it then
  // runs while the caller indexes the ops and builds what it shows (the viewer), instead of after,
  // beside all of that.
  const FusionResult& fusionResult() {
    return fusion.get([&] {
      indexOpsThenReleaseNvtxRanges();
      const DataFlow& df = dataFlow();
      return analyzeFusion(*run, nvtxOps(), frameworkOps(), df, options.fusion);
    });
  }

  // With release_nvtx_ranges, on an owned run without a baseline (whose comparison reads the
  // ranges of both): every reader of the ranges (the two op indexes and the summary) done with
  // them, they are let go; once. A concurrent caller of those readers, or of this, waits for the
  // one computing them, and gets what it made.
  void indexOpsThenReleaseNvtxRanges() {
    if (!releasesNvtxRanges()) return;
    std::call_once(nvtx_release, [&] {
      if (!readMessagesNotLoaded()) return;
      frameworkOpsAlongside([&] {
        nvtxOps();
        runSummary();
      });
      std::vector<core::NvtxRangeRow>().swap(owned_run->nvtx_ranges);
      owned_run->nvtx_messages.reset();
      nvtx_kept_messages = core::TextBlock();
    });
  }

  // A run loaded without its NVTX messages has them read from its file first (readNvtxMessages):
  // false where they could not be (nvtx_read says why).
  bool readMessagesNotLoaded() {
    if (owned_run->nvtx_messages_loaded) return true;
    core::Expected<NvtxRangeKinds> kinds = readNvtxMessages(*owned_run);
    if (!kinds) {
      nvtx_read = core::Error{kinds.error()};
      return false;
    }
    nvtx_kinds = std::move(*kinds);
    return true;
  }

  // The framework ops on a second thread (they take the longest), `alongside` on this one.
  template <typename Alongside>
  void frameworkOpsAlongside(Alongside&& alongside) {
    std::future<void> framework;
    try {
      framework = std::async(std::launch::async, [this] { frameworkOps(); });
    } catch (const std::system_error&) {
      // No thread to be had: one after the other.
    }
    alongside();
    if (framework.valid()) framework.get();
    frameworkOps();
  }
};

RunAnalysis::RunAnalysis(std::unique_ptr<State> state) : s_(std::move(state)) {
  State& s = *s_;
  for (const core::DeviceInfo& d : s.run->devices) {
    s.ceilings.emplace_back(deviceKey(d.process_id, d.id), ceilingsFor(*s.run, d));
  }
  if (!s.options.fusion_in_background) return;
  try {
    State* st = s_.get();
    s.background = std::async(std::launch::async, [st] { st->fusionResult(); });
  } catch (const std::system_error&) {
    // No thread to be had: fusion is computed when first asked for.
  }
}

RunAnalysis::RunAnalysis(RunAnalysis&&) noexcept = default;
RunAnalysis& RunAnalysis::operator=(RunAnalysis&&) noexcept = default;
RunAnalysis::~RunAnalysis() = default;

RunAnalysis RunAnalysis::of(const core::Profile& run, const core::Profile* baseline, const AnalysisOptions& options) {
  auto s = std::make_unique<State>();
  s->run = &run;
  s->options = options;
  if (baseline) {
    // The comparison needs the baseline's fusion candidates: they start at once.
    AnalysisOptions base_options = options;
    base_options.fusion_in_background = true;
    s->baseline = std::make_unique<RunAnalysis>(of(*baseline, nullptr, base_options));
  }
  return RunAnalysis(std::move(s));
}

RunAnalysis RunAnalysis::owning(core::Profile run, std::optional<core::Profile> baseline,
                                const AnalysisOptions& options) {
  auto s = std::make_unique<State>();
  if (options.release_launch_tables) {
    s->launch_tables = OwnedLaunchTables{std::move(run.kernel_args), std::move(run.memory_events), {}};
    run.kernel_args.clear();
    run.memory_events.clear();
  }
  s->owned_run.emplace(std::move(run));
  s->run = &*s->owned_run;
  s->options = options;
  if (baseline) {
    AnalysisOptions base_options = options;
    base_options.fusion_in_background = true;
    base_options.release_nvtx_ranges = false;  // the comparison reads them
    s->baseline = std::make_unique<RunAnalysis>(owning(std::move(*baseline), std::nullopt, base_options));
  }
  return RunAnalysis(std::move(s));
}

core::Expected<std::unique_ptr<RunAnalysis::State>> RunAnalysis::indexedState(core::Profile run,
                                                                              const AnalysisOptions& options) {
  auto s = std::make_unique<State>();
  s->owned_run.emplace(std::move(run));
  s->run = &*s->owned_run;
  s->options = options;
  s->options.release_nvtx_ranges = true;
  s->indexOpsThenReleaseNvtxRanges();
  if (!s->nvtx_read) return core::Error{s->nvtx_read.error()};
  return s;
}

core::Expected<RunAnalysis> RunAnalysis::owningIndexed(core::Profile run, const AnalysisOptions& options) {
  core::Expected<std::unique_ptr<State>> s = indexedState(std::move(run), options);
  if (!s) return core::Error{s.error()};
  return RunAnalysis(std::move(*s));
}

core::Expected<RunAnalysis> RunAnalysis::owningThenLoadingLaunchTables(core::Profile run, const AnalysisOptions& options) {
  AnalysisOptions later = options;
  later.release_launch_tables = true;
  core::Expected<std::unique_ptr<State>> s = indexedState(std::move(run), later);
  if (!s) return core::Error{s.error()};
  core::Expected<core::LaunchTables> tables = core::loadLaunchTables(*(*s)->owned_run);
  if (!tables) return core::Error{tables.error()};
  std::vector<std::string>& warnings = (*s)->owned_run->warnings;
  warnings.insert(warnings.end(), tables->warnings.begin(), tables->warnings.end());
  tables->warnings.clear();
  (*s)->launch_tables = std::move(*tables);
  return RunAnalysis(std::move(*s));
}

const core::Profile& RunAnalysis::profile() const { return *s_->run; }
const AnalysisOptions& RunAnalysis::options() const { return s_->options; }

const RunSummary& RunAnalysis::summary() const { return s_->runSummary(); }

const RooflineResult& RunAnalysis::roofline() const {
  return s_->roofline.get([&] { return analyzeRoofline(*s_->run, summary(), s_->options.roofline); });
}

const Ceilings& RunAnalysis::ceilings(uint32_t process_id, uint32_t device_id) const {
  const uint64_t key = deviceKey(process_id, device_id);
  for (const auto& [k, c] : s_->ceilings) {
    if (k == key) return c;
  }
  return s_->no_device;
}

Placement RunAnalysis::kernelPlacement(size_t kernel_index) const {
  const core::Profile& p = *s_->run;
  const core::KernelRow& k = p.kernels.at(kernel_index);
  return place(kernelInput(p, k, p.device(k.process_id, k.device_id)), ceilings(k.process_id, k.device_id),
               s_->options.roofline);
}

const OpIndex& RunAnalysis::nvtxOps() const { return s_->nvtxOps(); }

const FrameworkOps& RunAnalysis::frameworkOps() const { return s_->frameworkOps(); }

// Named from the kernels' NVTX paths and the two op indexes, not from the ranges: where those go
// once indexed, they go before the names are made.
const KernelOps& RunAnalysis::kernelOps() const {
  return s_->kernel_ops.get([&] {
    s_->indexOpsThenReleaseNvtxRanges();
    return nameKernelOps(*s_->run, nvtxOps(), frameworkOps());
  });
}

const std::vector<GroupPlacement>& RunAnalysis::opPlacements() const {
  return s_->op_placements.get([&] {
    const KernelOps& ops = kernelOps();
    std::vector<int32_t> group_of(ops.of_kernel.size(), -1);
    for (size_t k = 0; k < ops.of_kernel.size(); ++k) {
      if (!ops.names[ops.of_kernel[k]].empty()) group_of[k] = static_cast<int32_t>(ops.of_kernel[k]);
    }
    return placeKernelGroups(*s_->run, group_of, ops.names, s_->options.roofline);
  });
}

const DataFlow& RunAnalysis::dataFlow() const {
  return s_->dataFlow();
}

const FusionResult& RunAnalysis::fusion() const { return s_->fusionResult(); }

const CounterCoverage& RunAnalysis::coverage() const {
  return s_->coverage.get([&] { return counterCoverage(*s_->run); });
}

Origin RunAnalysis::origin(size_t kernel_index) const {
  const auto& by_name = s_->origin_of_name.get([&] {
    std::unordered_map<uint32_t, Origin> m;
    for (const core::KernelRow& k : s_->run->kernels) {
      if (m.find(k.demangled_id) == m.end()) m.emplace(k.demangled_id, classifyOrigin(s_->run->str(k.demangled_id)));
    }
    return m;
  });
  return by_name.at(s_->run->kernels.at(kernel_index).demangled_id);
}

const OriginTotals& RunAnalysis::origins() const {
  return s_->origins.get([&] {
    OriginTotals t;
    const core::Profile& p = *s_->run;
    for (size_t i = 0; i < p.kernels.size(); ++i) {
      const auto o = static_cast<size_t>(origin(i));
      t.launches[o] += 1;
      t.duration_ns[o] += p.kernels[i].durationNs();
    }
    return t;
  });
}

const std::vector<RankRow>& RunAnalysis::ranks() const {
  return s_->ranks.get([&] {
    return s_->run->processes.size() > 1 ? rankBreakdown(*s_->run) : std::vector<RankRow>{};
  });
}

const KernelNames& RunAnalysis::kernelNames() const {
  return s_->names.get([&] {
    return KernelNames::of({s_->run, s_->baseline ? &s_->baseline->profile() : nullptr});
  });
}

const RunAnalysis* RunAnalysis::baseline() const { return s_->baseline.get(); }

const RunComparison* RunAnalysis::comparison() const {
  if (!s_->baseline) return nullptr;
  return &s_->comparison.get([&] { return compareRuns(*s_->baseline, *this); });
}

}  // namespace fprof::analysis
