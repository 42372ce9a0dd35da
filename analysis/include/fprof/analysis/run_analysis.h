// The analysis pipeline: everything fprof derives from one recorded run, built once from the loaded
// profile (and, optionally, a baseline run) and read by every front end -- fprof info, report,
// export and diff, the viewer, the Python package. No front end calls the analysis steps itself.
//
// `RunAnalysis` holds the run's profile (borrowed with `of`, owned with `owning`) and gives each
// result of the pipeline by a const accessor, each computed on first use and kept: the kernel
// summary (summary.h: totals and kernel groups by name and launch shape), the roofline (roofline.h:
// a placement per kernel group and per NVTX path, `kernelPlacement(i)` per launch, the ceilings per
// process and device), the ops (nvtx_ops.h: fprof's op= convention; framework_ops.h: PyTorch
// emit_nvtx, record_function and XLA ranges; `kernelOps()`: the op name each kernel is reported
// under), the data flow (dataflow.h: allocations, producer->consumer edges), the fusion candidates
// (fusion.h), the counter coverage (coverage.h), the time by origin library (origin.h, and
// `origin(i)` per kernel), the per-rank breakdown of a merged job (ranks.h) and the short kernel
// names of the run and its baseline (kernel_names.h). Data flow and fusion are the expensive steps:
// they start on a second thread when the analysis is built (AnalysisOptions::fusion_in_background),
// so a front end builds its own rows meanwhile and waits only when it asks for them. Given a
// baseline, `baseline()` is the baseline run's own RunAnalysis and `comparison()` the comparison
// of the two (RunComparison: the kernel and op diff, diff.h; the baseline's fusion candidates the
// run runs fused, with the predicted saving next to the measured one, fusion_outcomes.h). Every accessor may be called from any
// thread; the profiles must outlive a borrowing analysis.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fprof/analysis/ceilings.h"
#include "fprof/analysis/coverage.h"
#include "fprof/analysis/dataflow.h"
#include "fprof/analysis/diff.h"
#include "fprof/analysis/framework_ops.h"
#include "fprof/analysis/fusion.h"
#include "fprof/analysis/fusion_outcomes.h"
#include "fprof/analysis/kernel_names.h"
#include "fprof/analysis/nvtx_ops.h"
#include "fprof/analysis/origin.h"
#include "fprof/analysis/ranks.h"
#include "fprof/analysis/roofline.h"
#include "fprof/analysis/summary.h"
#include "fprof/core/store.h"

namespace fprof::analysis {

struct AnalysisOptions {
  RooflineOptions roofline;
  FusionOptions fusion;
  // Start data flow and fusion on a second thread as the analysis is built (else on first use).
  bool fusion_in_background = true;
  // An owning analysis takes the launch arguments and memory events, which data flow alone reads,
  // out of its profiles and frees them once data flow has read them: profile().kernel_args and
  // memory_events are then empty. For front ends that read the run only through this analysis
  // (a long run holds tens of bytes of those tables per kernel).
  bool release_launch_tables = false;
  // An owning analysis without a baseline also lets the NVTX ranges go once they are read: the
  // ops are indexed (nvtxOps, frameworkOps) and the summary has counted them before data flow
  // starts, and profile().nvtx_ranges is empty from then on; while the framework ops are indexed,
  // the messages of PyTorch op ranges nested in another op go first (framework_ops.h). For the
  // same front ends (a PyTorch run under emit_nvtx holds several ranges of about a hundred
  // characters a kernel). A comparison reads both runs' ranges, so with a baseline they are kept.
  bool release_nvtx_ranges = false;
};

// The op each kernel is reported under, as a small id into `names` ("" = none): under fprof's op
// convention the op that carries a variant, "name (variant)"; else the framework op or named
// region it ran in (framework_ops.h: "aten::mm", not "aten::mm, seq = 12, op_id = 724"); else the
// innermost NVTX range's leaf.
struct KernelOps {
  std::vector<std::string> names;
  std::vector<uint32_t> of_kernel;
};
// Named once per op instance, framework op, region or NVTX path, not once per kernel (a million
// launches share a few thousand ranges).
KernelOps nameKernelOps(const core::Profile& p, const OpIndex& ops, const FrameworkOps& framework_ops);

// Two runs compared: kernels and ops matched (diff.h), the baseline's fusion candidates the
// current run runs fused with their predicted and measured savings (fusion_outcomes.h), and the
// short names of both runs' kernels.
struct RunComparison {
  RunDiff diff;
  FusionOutcomes fusions;
  KernelNames names;
};
class RunAnalysis;
RunComparison compareRuns(const RunAnalysis& base, const RunAnalysis& cur);

class RunAnalysis {
 public:
  // Borrows the profiles: they must outlive the analysis.
  static RunAnalysis of(const core::Profile& run, const core::Profile* baseline = nullptr,
                        const AnalysisOptions& options = {});
  // Owns them (see AnalysisOptions::release_launch_tables).
  static RunAnalysis owning(core::Profile run, std::optional<core::Profile> baseline = std::nullopt,
                            const AnalysisOptions& options = {});
  // Owns a run loaded without its launch tables (core::LoadOptions), and maybe without its NVTX
  // messages, for a front end that reads the run only through this analysis (release_launch_tables
  // and release_nvtx_ranges are set): the messages are read from the run's file, keeping only
  // those indexing reads (readNvtxMessages), the ops are indexed and the NVTX ranges let go, and
  // only then are the launch tables read (core::loadLaunchTables), so that none of these stand
  // in memory together; the damage their reading found is added to profile().warnings. An error
  // where the file cannot be read again as it was.
  static core::Expected<RunAnalysis> owningThenLoadingLaunchTables(core::Profile run, const AnalysisOptions& options = {});
  // Owns a run, maybe loaded without its NVTX messages, for a front end that reads its kernels and
  // ops but not its ranges (the gate): as above, the messages read from the file where they were
  // not loaded, the ops indexed at once and the ranges let go (release_nvtx_ranges is set); the
  // launch tables are those the run was loaded with. An error where the messages cannot be read.
  static core::Expected<RunAnalysis> owningIndexed(core::Profile run, const AnalysisOptions& options = {});
  RunAnalysis(RunAnalysis&&) noexcept;
  RunAnalysis& operator=(RunAnalysis&&) noexcept;
  ~RunAnalysis();

  const core::Profile& profile() const;
  const AnalysisOptions& options() const;

  const RunSummary& summary() const;
  const RooflineResult& roofline() const;
  // The roofs of a kernel's (process, device): measured where stored, else datasheet (ceilings.h).
  const Ceilings& ceilings(uint32_t process_id, uint32_t device_id) const;
  // One launch on the roofline (placeKernel's placement).
  Placement kernelPlacement(size_t kernel_index) const;
  const OpIndex& nvtxOps() const;
  const FrameworkOps& frameworkOps() const;
  const KernelOps& kernelOps() const;
  // The ops of kernelOps() on the roofline, by time (one placement per op name; kernels in no op
  // are in none). The ops front ends list: "aten::linear", not one entry per emit_nvtx range.
  const std::vector<GroupPlacement>& opPlacements() const;
  const DataFlow& dataFlow() const;
  const FusionResult& fusion() const;
  const CounterCoverage& coverage() const;
  const OriginTotals& origins() const;
  Origin origin(size_t kernel_index) const;
  // One row per rank (ranks.h) when the run holds several processes; else empty.
  const std::vector<RankRow>& ranks() const;
  // Every kernel of the run and of its baseline, shortened together.
  const KernelNames& kernelNames() const;

  // Given a baseline: its own analysis, and the comparison (baseline first); else null.
  const RunAnalysis* baseline() const;
  const RunComparison* comparison() const;

 private:
  struct State;
  explicit RunAnalysis(std::unique_ptr<State> state);
  // The state of owningIndexed, before the analysis starts (its fusion may start at once).
  static core::Expected<std::unique_ptr<State>> indexedState(core::Profile run, const AnalysisOptions& options);
  std::unique_ptr<State> s_;
};

}  // namespace fprof::analysis
