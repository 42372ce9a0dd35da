// What the viewer shows, with no GUI in it: a loaded profile turned into plottable items (per
// kernel launch, per kernel group, per NVTX op) with the analyzer's roofline placement, the roofs
// (measured and datasheet), fusion candidates, and a diff against a baseline. The ImGui front end
// (viewer.h) only draws this; tests drive it headless.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "fprof/analysis/ceilings.h"
#include "fprof/analysis/diff.h"
#include "fprof/analysis/fusion.h"
#include "fprof/analysis/kernel_names.h"
#include "fprof/analysis/roofline.h"
#include "fprof/analysis/run_analysis.h"
#include "fprof/core/store.h"
#include "fprof/gui/plot_math.h"

namespace fprof::gui {

using analysis::MemLevel;
using analysis::Precision;
using analysis::kMemLevelCount;
using analysis::kPrecisionCount;

enum class PointMode { kKernels = 0, kKernelGroups = 1, kOps = 2 };
inline constexpr size_t kPointModeCount = 3;
const char* pointModeName(PointMode m);  // "kernel launches", "kernel groups", "NVTX ops"

// An optional number in 8 bytes (std::optional<double> takes 16): "none" is one signalling-NaN bit
// pattern that no arithmetic produces (an operation on it yields a quiet NaN), so every value, a
// NaN included, reads back as it was stored. An item of the viewer holds two dozen of them, and a
// run a million items.
class CompactOptional {
 public:
  CompactOptional() = default;
  CompactOptional(std::nullopt_t) {}  // NOLINT: as std::optional
  CompactOptional(double v) : bits_(std::bit_cast<uint64_t>(v)) {}  // NOLINT
  CompactOptional(const std::optional<double>& v) : bits_(v ? std::bit_cast<uint64_t>(*v) : kNone) {}  // NOLINT
  explicit operator bool() const { return has_value(); }
  bool has_value() const { return bits_ != kNone; }
  double operator*() const { return std::bit_cast<double>(bits_); }
  double value_or(double fallback) const { return has_value() ? **this : fallback; }
  void reset() { bits_ = kNone; }
  operator std::optional<double>() const { return has_value() ? std::optional<double>(**this) : std::nullopt; }  // NOLINT
  friend bool operator==(const CompactOptional& a, const std::optional<double>& b) {
    return std::optional<double>(a) == b;
  }

 private:
  static constexpr uint64_t kNone = 0x7ff000000000dead;
  uint64_t bits_ = kNone;
};

// An item's counted work (analysis::Work, summed over its kernels) in compact numbers.
struct ItemWork {
  ItemWork() = default;
  explicit ItemWork(const analysis::Work& w);
  std::array<CompactOptional, kPrecisionCount> flops{};
  std::array<CompactOptional, kMemLevelCount> bytes{};
  CompactOptional total_flops;  // none unless some precision was counted (Work::totalFlops)
};

// What the plot, the table and the tooltip show of an item's roofline placement. The whole
// placement, with the reason for its bound and what was missing, is Document::placement(): a run
// of a million launches would hold a million reasons that only the details panel reads, one at a
// time.
struct ItemPlacement {
  std::array<CompactOptional, kMemLevelCount> intensity_flop_per_byte{};
  CompactOptional achieved_flops_per_s;
  CompactOptional roof_fraction;
  CompactOptional attainable_ns;
  std::string_view binding;  // "dram", "tensor_fp16+fp32", "" if none
  std::optional<analysis::CeilingSource> binding_source;
  analysis::Bound bound = analysis::Bound::kUnknown;
};

// One point of the plot and one row of the table. Its texts are views of what the document holds
// (the profile's strings, the names it made once per kernel, path or op): it lives as long as the
// document, and a million launches of a few hundred kernels do not hold a million copies of them.
struct Item {
  std::string_view name;        // demangled kernel name, or the op's name (analysis::KernelOps)
  std::string_view short_name;  // what the table shows: the short kernel name (kernel_names.h), or the op
  std::string_view nvtx_path;  // innermost NVTX path as recorded ("" if none); an op's: its first kernel's
  // The same path as the table shows it: framework ranges by their op names ("aten::linear/
  // aten::addmm", analysis::nvtxPathOpNames), not emit_nvtx's ids and shapes.
  std::string_view nvtx_ops;
  std::string_view origin;  // cuBLAS, CUTLASS, user, ...
  // What the item is: the kernel's index in the profile (launches), the group's in the run
  // summary (kernel groups) or the op's in RunAnalysis::opPlacements() (ops).
  size_t index = 0;
  int64_t calls = 1;
  int64_t duration_ns = 0;
  // Launch shape and resources of the first launch (groups share the shape; ops may mix).
  std::array<int32_t, 3> grid{};
  std::array<int32_t, 3> block{};
  int32_t registers_per_thread = 0;      // max over the members
  int32_t static_shared_bytes = 0;       // max
  int32_t dynamic_shared_bytes = 0;      // max
  int64_t local_bytes_per_thread = 0;    // max: stack frame and spills
  CompactOptional theoretical_occupancy;  // min over the members
  CompactOptional achieved_occupancy;     // time-weighted, only if every member was counted
  CompactOptional local_traffic_bytes;    // counted spill traffic (load + store), summed
  bool mixed_shapes = false;              // an op whose kernels differ in shape
  ItemWork work;                          // summed counters (absent where any member lacks them)
  ItemPlacement placement;
  int32_t op = -1;  // index into Document::opNames() for colouring; -1 = in no op
};

// A fusion candidate from the analyzer, with the kernels it names resolved in this document.
struct FusionView {
  analysis::FusionCandidate candidate;
  std::vector<std::vector<size_t>> stage_kernels;  // per stage, kernel indices (unfused variant)
  std::vector<size_t> fused_kernels;               // the measured fused variant's kernels, if any
};

// The roofs of one device, measured and datasheet side by side (either may be absent).
struct RoofSet {
  std::string device_name;
  analysis::Ceilings measured;
  analysis::Ceilings datasheet;
};

class Document {
 public:
  // Loads and analyses a database. The error is one sentence naming the file.
  static core::Expected<std::shared_ptr<Document>> open(const std::string& path);
  static std::shared_ptr<Document> fromProfile(core::Profile profile);

  // The run as loaded, less its launch arguments and memory events: the analysis' data flow read
  // them and let them go (AnalysisOptions::release_launch_tables). Analyse it through analysis().
  const core::Profile& profile() const;
  // The analysis every view reads (analysis/run_analysis.h).
  const analysis::RunAnalysis& analysis() const { return *analysis_; }
  const std::vector<Item>& items(PointMode m) const { return items_[static_cast<size_t>(m)]; }
  const std::vector<std::string>& opNames() const { return op_names_; }
  const RoofSet& roofs() const { return roofs_; }
  const analysis::FusionResult& fusion() const;
  const std::vector<FusionView>& fusionViews() const { return fusion_views_; }
  // Short names of the profile's kernels, told apart (kernel_names.h).
  const analysis::KernelNames& kernelNames() const;
  int64_t totalKernelNs() const { return total_kernel_ns_; }
  int64_t kernelsWithCounters() const { return kernels_with_counters_; }
  // A line for the window when no point can be drawn (trace-only runs), else "".
  std::string plotNote() const;

  // Placement and work of an arbitrary set of kernels (a fusion stage, a fused variant).
  struct Aggregate {
    analysis::Work work;
    int64_t duration_ns = 0;
    analysis::Placement placement;
  };
  Aggregate aggregate(const std::vector<size_t>& kernel_indices) const;

  // The whole placement of item `item` of items(m), its bound's reason and what was missing
  // included: the analyzer's, computed again for a launch.
  analysis::Placement placement(PointMode m, size_t item) const;
  // The details panel of that item: detailsText with its whole placement.
  std::string details(PointMode m, size_t item) const;

  // Items view the document's texts: it is neither copied nor moved.
  Document(const Document&) = delete;
  Document& operator=(const Document&) = delete;

 private:
  Document() = default;
  void build();
  std::string_view shortName(uint32_t demangled_id);
  std::string_view pathOps(uint32_t nvtx_path_id);
  ItemPlacement itemPlacement(const analysis::Placement& pl);

  std::optional<analysis::RunAnalysis> analysis_;  // owns the profile
  std::array<std::vector<Item>, kPointModeCount> items_;
  std::vector<std::string> op_names_;
  RoofSet roofs_;
  std::vector<FusionView> fusion_views_;
  int64_t total_kernel_ns_ = 0;
  int64_t kernels_with_counters_ = 0;
  // The texts items view, made once each (node-based containers: they never move).
  std::unordered_map<uint32_t, std::string> short_names_;  // by demangled name id
  std::unordered_map<uint32_t, std::string> path_ops_;     // by NVTX path id: nvtxPathOpNames
  std::unordered_set<std::string> roof_names_;             // bindings: "dram", "tensor_fp16+fp32"
};

// Position of an item on the plot at a memory level: (intensity FLOP/byte, achieved FLOP/s).
// None when either is unknown (no counters, no FLOPs, no bytes at that level).
std::optional<Vec2> itemPoint(const Item& item, MemLevel level);
// Whether the item counted FLOPs in a precision enabled in `precision_mask` (bit i = Precision i).
bool itemHasPrecision(const Item& item, uint32_t precision_mask);

// Tooltip for an item: short name, full name (where it differs), time, intensity at the level,
// FLOP/s, % of roof, bound.
std::string tooltipText(const Item& item, MemLevel level);
// Details panel text: launch shape, registers, spills, shared memory, occupancy, bytes per
// level, FLOPs per precision, NVTX path, bound and its reason (the item's whole placement,
// Document::placement).
std::string detailsText(const Item& item, const analysis::Placement& placement);

// "1.23 ms", "870 ns".
std::string formatDurationNs(double ns);

// Diff of a current document against a baseline: the analyzer's run diff and the CI gate's
// verdict (same defaults as `fprof gate`), each kernel entry tied to the kernel-group items of
// both documents so the plot can draw an arrow from the baseline point to the current one.
enum class Change { kSame, kRegression, kImprovement, kUntestable, kNew, kVanished };
const char* changeName(Change c);

struct DiffRow {
  std::string name;        // "base -> current" for a renamed kernel
  std::string short_name;  // the same with short kernel names
  std::string shape;      // "grid 128x1x1 block 256x1x1"
  std::string nvtx_path;
  std::optional<size_t> base_item;  // into base items(kKernelGroups)
  std::optional<size_t> cur_item;   // into current items(kKernelGroups)
  std::optional<double> base_median_ns, cur_median_ns;
  std::optional<double> time_change;        // median cur / median base - 1
  std::optional<double> p_value;            // Mann-Whitney, one-sided "current slower"
  std::optional<double> dram_bytes_change;  // cur/base - 1 of DRAM bytes per launch
  Change change = Change::kSame;
  std::string why;  // the gate's findings for this kernel, in words
};

// A baseline's fusion candidate the current run runs fused (analysis/fusion_outcomes.h), as
// fprof diff lists it: the model's prediction for those instances next to the saving measured.
struct AppliedFusion {
  std::string name;     // analysis::fusionOutcomeName
  std::string pattern;  // the best ranked candidate's ("attention")
  analysis::FusionOutcome outcome;
};

// Everything the diff view shows: the kernel rows, the applied fusions and what differs in how
// the two runs were recorded (devices, mode, counters; one sentence each, as fprof gate warns).
struct DocumentDiff {
  std::vector<DiffRow> kernels;
  std::vector<AppliedFusion> fusions;  // by measured saving, largest first
  analysis::FusionOutcomes outcomes;   // how many were looked for, over what, notes
  std::vector<std::string> warnings;
};

DocumentDiff compareDocuments(const Document& base, const Document& cur, const analysis::GateOptions& opt = {});
// The kernel rows alone (compareDocuments(...).kernels).
std::vector<DiffRow> diffDocuments(const Document& base, const Document& cur,
                                   const analysis::GateOptions& opt = {});

// "1 of the baseline's 11 fusion candidates runs fused here (compared over the whole runs); 9 ran
// as before, 1 changed without fewer launches".
std::string appliedFusionsSummary(const DocumentDiff& diff);
// "attention, 7 kernels (...): predicted 2.89 ms, measured 3.14 ms over 27 instances (313 launches
// -> 97) (error -7.9%)": the words of fprof report's finding.
std::string appliedFusionText(const AppliedFusion& f);
// The cells of the diff view's row: found by, instances, launches, predicted, measured, error,
// candidate (baseline).
std::array<std::string, 7> appliedFusionCells(const AppliedFusion& f);

}  // namespace fprof::gui
