// The viewer's model without ImGui: items per mode with the analyzer's placement, tooltip text,
// table filter/sort/CSV, fusion candidates resolved to kernels, the diff, and bad input.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <filesystem>
#include <limits>

#include "fprof/analysis/framework_ops.h"
#include "fprof/gui/document.h"
#include "fprof/gui/table.h"
#include "synthetic.h"
#include "test_util.h"

namespace fprof::gui {
namespace {

using testing::SyntheticOptions;
using testing::tempPath;
using testing::writeSynthetic;

const char* kSaxpy = "saxpy(int, float, const float*, float*)";

std::shared_ptr<Document> open(const std::string& name, const SyntheticOptions& o = {}) {
  const std::string path = tempPath(name);
  const std::string err = writeSynthetic(path, o);
  EXPECT_EQ(err, "");
  auto d = Document::open(path);
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.error());
  return d.ok() ? *d : nullptr;
}

size_t find(const std::vector<Item>& items, const std::string& name) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].name == name) return i;
  }
  ADD_FAILURE() << "no item " << name;
  return 0;
}

TEST(Document, ItemsPerModeWithPlacement) {
  auto d = open("doc_items.fprof");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->items(PointMode::kKernels).size(), 13u);  // saxpy + 4 x (gemm, relu, fused)
  EXPECT_EQ(d->items(PointMode::kKernelGroups).size(), 4u);
  // Ops as every front end names them: the unfused op (its gemm and relu stages) and the fused one.
  ASSERT_EQ(d->items(PointMode::kOps).size(), 2u);
  EXPECT_EQ(d->opNames().size(), 2u);
  for (const Item& op : d->items(PointMode::kOps)) {
    EXPECT_TRUE(op.name == "mlp (unfused)" || op.name == "mlp (fused)") << op.name;
  }
  EXPECT_EQ(d->kernelsWithCounters(), 13);
  EXPECT_EQ(d->plotNote(), "");

  const Item& s = d->items(PointMode::kKernels)[find(d->items(PointMode::kKernels), kSaxpy)];
  const auto p = itemPoint(s, MemLevel::kDram);
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->x, 2e9 / 1.2e10);
  EXPECT_DOUBLE_EQ(p->y, 4e11);
  EXPECT_DOUBLE_EQ(*s.placement.roof_fraction, 0.8);  // 1.2e10 B / 3e12 B/s = 4 ms of 5 ms
  EXPECT_EQ(s.placement.binding, "dram");
  EXPECT_EQ(s.placement.bound, analysis::Bound::kMemory);
  EXPECT_EQ(s.op, -1);
  EXPECT_DOUBLE_EQ(*s.achieved_occupancy, 0.5);

  const Item& g = d->items(PointMode::kKernelGroups)[find(d->items(PointMode::kKernelGroups), "gemm_f16_tensorop")];
  EXPECT_EQ(g.calls, 4);
  EXPECT_EQ(g.duration_ns, 800'000);
  EXPECT_DOUBLE_EQ(*g.work.flops[static_cast<size_t>(Precision::kTensorFp16)], 4 * 6.872e10);
  const auto gl2 = itemPoint(g, MemLevel::kL2);
  ASSERT_TRUE(gl2);
  EXPECT_NEAR(gl2->x, 6.872e10 / 4.0e8, 1e-12 * gl2->x);  // same per call as in sum
  EXPECT_NEAR(gl2->y, 6.872e10 / 200e-6, 1e-12 * gl2->y);
  EXPECT_EQ(g.registers_per_thread, 168);
  EXPECT_GE(g.op, 0);
  EXPECT_TRUE(itemHasPrecision(g, 1u << static_cast<size_t>(Precision::kTensorFp16)));
  EXPECT_FALSE(itemHasPrecision(g, 1u << static_cast<size_t>(Precision::kFp32)));

  // Roofs: measured from the ceiling table, datasheet from the device attributes.
  EXPECT_EQ(d->roofs().device_name, testing::kDeviceName);
  EXPECT_DOUBLE_EQ(d->roofs().measured.bw(MemLevel::kDram)->value, testing::kDramBytesPerS);
  EXPECT_DOUBLE_EQ(d->roofs().measured.peak(Precision::kTensorFp16)->value, testing::kTensorFp16FlopsPerS);
  EXPECT_FALSE(d->roofs().measured.peak(Precision::kFp64));
  ASSERT_TRUE(d->roofs().datasheet.bw(MemLevel::kDram));
  EXPECT_EQ(d->roofs().datasheet.bw(MemLevel::kDram)->source, analysis::CeilingSource::kDatasheet);
}

TEST(Document, TooltipAndDetailsText) {
  auto d = open("doc_tooltip.fprof");
  ASSERT_TRUE(d);
  const Item& s = d->items(PointMode::kKernels)[find(d->items(PointMode::kKernels), kSaxpy)];
  EXPECT_EQ(tooltipText(s, MemLevel::kDram),
            "saxpy\n"
            "saxpy(int, float, const float*, float*)\n"
            "time 5 ms (1 call)\n"
            "intensity (DRAM) 0.167 FLOP/byte\n"
            "achieved 400 GFLOP/s\n"
            "80.0% of roof (dram, measured)\n"
            "bound: memory");
  const size_t si = find(d->items(PointMode::kKernels), kSaxpy);
  const std::string details = d->details(PointMode::kKernels, si);
  EXPECT_EQ(details, detailsText(s, d->analysis().kernelPlacement(s.index)));
  EXPECT_NE(details.find("grid: 264x1x1   block: 256x1x1"), std::string::npos) << details;
  EXPECT_NE(details.find("registers/thread: 40   shared: 1024 B static + 0 B dynamic"), std::string::npos) << details;
  EXPECT_NE(details.find("occupancy: theoretical 75.0%   achieved 50.0%"), std::string::npos) << details;
  EXPECT_NE(details.find("DRAM 12.0 GB"), std::string::npos) << details;
  EXPECT_NE(details.find("fp32 2.00 G"), std::string::npos) << details;
  EXPECT_NE(details.find("NVTX path: (none)"), std::string::npos) << details;
  EXPECT_EQ(details.rfind("saxpy\nfull name: saxpy(int, float, const float*, float*)\n", 0), 0u) << details;
  // The bound's reason is the analyzer's, though the item holds only what the plot draws.
  const std::string reason = d->analysis().kernelPlacement(s.index).reason;
  ASSERT_FALSE(reason.empty());
  EXPECT_NE(details.find("bound: memory (" + reason + ")\n"), std::string::npos) << details;
}

// A compact optional reads back every value it was given, NaNs and infinities included, and tells
// none from all of them.
TEST(CompactOptional, KeepsEveryValueAndNone) {
  const double quiet_nan = std::numeric_limits<double>::quiet_NaN();
  const CompactOptional signalling(std::numeric_limits<double>::signaling_NaN());
  const double computed_nan = std::sqrt(-1.0) + *signalling;  // arithmetic on NaNs
  for (double v : {0.0, -0.0, 1.5, -3e300, 5e-324, std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity(), quiet_nan, computed_nan, *signalling}) {
    const CompactOptional c(v);
    ASSERT_TRUE(c.has_value()) << v;
    EXPECT_EQ(std::bit_cast<uint64_t>(*c), std::bit_cast<uint64_t>(v));
    const std::optional<double> back = c;
    ASSERT_TRUE(back);
    EXPECT_EQ(std::bit_cast<uint64_t>(*back), std::bit_cast<uint64_t>(v));
  }
  CompactOptional none;
  EXPECT_FALSE(none);
  EXPECT_EQ(none.value_or(7), 7);
  EXPECT_EQ(none, std::optional<double>());
  EXPECT_FALSE(CompactOptional(std::optional<double>()));
  EXPECT_EQ(CompactOptional(2.0), std::optional<double>(2.0));
  CompactOptional some(4.0);
  some.reset();
  EXPECT_FALSE(some);
  EXPECT_EQ(sizeof(CompactOptional), sizeof(double));
}

// Each item's whole placement is the analyzer's for what the item is: the launch, the kernel
// group or the op; the plotted part of it is the same.
TEST(Document, ItemPlacementIsTheAnalyzers) {
  auto d = open("doc_placement.fprof");
  ASSERT_TRUE(d);
  const analysis::RunAnalysis& a = d->analysis();
  for (PointMode m : {PointMode::kKernels, PointMode::kKernelGroups, PointMode::kOps}) {
    const std::vector<Item>& items = d->items(m);
    ASSERT_FALSE(items.empty()) << pointModeName(m);
    for (size_t i = 0; i < items.size(); ++i) {
      const analysis::Placement want = m == PointMode::kKernels        ? a.kernelPlacement(items[i].index)
                                       : m == PointMode::kKernelGroups ? a.roofline().kernel_groups.at(items[i].index).placement
                                                                       : a.opPlacements().at(items[i].index).placement;
      const analysis::Placement got = d->placement(m, i);
      EXPECT_EQ(got.reason, want.reason);
      EXPECT_EQ(got.missing, want.missing);
      EXPECT_EQ(items[i].placement.bound, want.bound);
      EXPECT_EQ(items[i].placement.binding, want.binding);
      EXPECT_EQ(items[i].placement.roof_fraction, want.roof_fraction);
      EXPECT_EQ(items[i].placement.achieved_flops_per_s, want.achieved_flops_per_s);
      for (size_t l = 0; l < kMemLevelCount; ++l) {
        EXPECT_EQ(items[i].placement.intensity_flop_per_byte[l], want.intensity_flop_per_byte[l]);
      }
      EXPECT_EQ(d->details(m, i), detailsText(items[i], want));
    }
  }
  EXPECT_EQ(d->items(PointMode::kKernels).size(), d->profile().kernels.size());
  for (size_t i = 0; i < d->profile().kernels.size(); ++i) EXPECT_EQ(d->items(PointMode::kKernels)[i].index, i);
}

TEST(Document, TraceOnlyProfileSaysWhyThereAreNoPoints) {
  SyntheticOptions o;
  o.counters = false;
  auto d = open("doc_trace.fprof", o);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kernelsWithCounters(), 0);
  EXPECT_EQ(d->plotNote().rfind("Trace-only profile: no hardware counters", 0), 0u) << d->plotNote();
  for (const Item& it : d->items(PointMode::kKernels)) EXPECT_FALSE(itemPoint(it, MemLevel::kDram));
  const Item& s = d->items(PointMode::kKernels)[find(d->items(PointMode::kKernels), kSaxpy)];
  EXPECT_NE(tooltipText(s, MemLevel::kDram).find("intensity (DRAM) n/a"), std::string::npos);
  EXPECT_NE(d->details(PointMode::kKernels, find(d->items(PointMode::kKernels), kSaxpy)).find("FLOPs: n/a (no counters)"),
            std::string::npos);
}

TEST(Document, BadFilesGiveAReason) {
  auto missing = Document::open(tempPath("does_not_exist.fprof"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("does_not_exist.fprof"), std::string::npos) << missing.error();
  const std::string junk = tempPath("junk.fprof");
  {
    std::FILE* f = std::fopen(junk.c_str(), "wb");
    ASSERT_TRUE(f);
    std::fputs("this is not a database", f);
    std::fclose(f);
  }
  auto bad = Document::open(junk);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("junk.fprof"), std::string::npos) << bad.error();
}

TEST(Table, FilterSortAndCsv) {
  auto d = open("doc_table.fprof");
  ASSERT_TRUE(d);
  const auto& items = d->items(PointMode::kKernelGroups);
  auto all = filterItems(items, {});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 4u);
  auto gemm = filterItems(items, {"GEMM", ""});  // case-insensitive
  ASSERT_TRUE(gemm.ok());
  EXPECT_EQ(gemm->size(), 2u);
  auto relu_nvtx = filterItems(items, {"", "op=relu"});
  ASSERT_TRUE(relu_nvtx.ok());
  ASSERT_EQ(relu_nvtx->size(), 1u);
  EXPECT_EQ(items[(*relu_nvtx)[0]].name, "relu_f16");
  auto anchored = filterItems(items, {"^relu", ""});
  ASSERT_TRUE(anchored.ok());
  EXPECT_EQ(anchored->size(), 1u);
  auto bad = filterItems(items, {"(unclosed", ""});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().rfind("bad name regex '(unclosed'", 0), 0u) << bad.error();

  std::vector<uint32_t> rows = *all;
  sortRows(rows, items, Column::kTime, false, MemLevel::kDram);
  std::vector<std::string> names;
  for (uint32_t r : rows) names.emplace_back(items[r].name);
  EXPECT_EQ(names, (std::vector<std::string>{kSaxpy, "gemm_relu_fused_f16", "gemm_f16_tensorop", "relu_f16"}));
  sortRows(rows, items, Column::kName, true, MemLevel::kDram);
  EXPECT_EQ(items[rows.front()].name, "gemm_f16_tensorop");
  sortRows(rows, items, Column::kIntensity, true, MemLevel::kDram);
  EXPECT_EQ(items[rows.front()].name, kSaxpy);  // 1/6 FLOP/byte, the lowest

  const std::string csv = tableCsv(items, *gemm, MemLevel::kDram, d->totalKernelNs());
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "kernel,calls,duration_ns,share,intensity_flop_per_byte,memory_level,achieved_flops_per_s,roof_fraction,"
            "binding_roof,bound,registers_per_thread,local_bytes_per_thread,shared_bytes,theoretical_occupancy,"
            "achieved_occupancy,dram_bytes,l2_bytes,l1_bytes,total_flops,nvtx_path,short_name");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  auto saxpy_only = filterItems(items, {"saxpy", ""});
  const std::string s_csv = tableCsv(items, *saxpy_only, MemLevel::kDram, d->totalKernelNs());
  EXPECT_NE(s_csv.find("\n\"saxpy(int, float, const float*, float*)\",1,5000000,"), std::string::npos) << s_csv;
  EXPECT_EQ(cellText(items[(*saxpy_only)[0]], Column::kRoof, MemLevel::kDram, 0), "80.0%");
  // The table shows the short name; the CSV keeps the full one first and the short one last.
  EXPECT_EQ(cellText(items[(*saxpy_only)[0]], Column::kName, MemLevel::kDram, 0), "saxpy");
  EXPECT_EQ(s_csv.substr(s_csv.size() - 7), ",saxpy\n") << s_csv;
}

TEST(Document, FusionCandidatesResolveToKernels) {
  auto d = open("doc_fusion.fprof");
  ASSERT_TRUE(d);
  ASSERT_FALSE(d->fusionViews().empty());
  const FusionView& v = d->fusionViews().front();
  EXPECT_EQ(v.candidate.id, "p1");
  EXPECT_EQ(v.candidate.stages, (std::vector<std::string>{"gemm", "relu"}));
  ASSERT_EQ(v.stage_kernels.size(), 2u);
  EXPECT_EQ(v.stage_kernels[0].size(), 4u);
  EXPECT_EQ(v.stage_kernels[1].size(), 4u);
  EXPECT_EQ(v.fused_kernels.size(), 4u);
  for (size_t k : v.stage_kernels[1]) EXPECT_EQ(d->profile().str(d->profile().kernels[k].demangled_id), "relu_f16");
  const Document::Aggregate a = d->aggregate(v.fused_kernels);
  EXPECT_EQ(a.duration_ns, 4 * 205'000);
  ASSERT_TRUE(a.placement.achieved_flops_per_s);
  EXPECT_DOUBLE_EQ(*a.placement.achieved_flops_per_s, (6.872e10 + 1.6777216e7) / 205e-6);
}

// Under emit_nvtx every range carries its op_id and shapes; the legend lists ops by name, as the
// report's time by op does, and a fusion candidate by its pattern and ops.
TEST(Document, EmitNvtxOpsAreOpsByName) {
  auto d = Document::open(std::string(FPROF_SOURCE_DIR) + "/tests/data/torch_proof_gpt_bf16_emitnvtx_h100.fprof");
  ASSERT_TRUE(d.ok()) << d.error();
  const auto& ops = (*d)->opNames();
  ASSERT_FALSE(ops.empty());
  EXPECT_LT(ops.size(), 40u);  // 574 distinct ranges
  for (const std::string& op : ops) EXPECT_EQ(op.find("op_id"), std::string::npos) << op;
  EXPECT_NE(std::find(ops.begin(), ops.end(), "aten::linear"), ops.end());
  ASSERT_FALSE((*d)->fusionViews().empty());
  const analysis::FusionCandidate& top = (*d)->fusionViews().front().candidate;
  EXPECT_EQ(top.pattern, analysis::FusionPattern::kAttention);
  EXPECT_EQ(top.name.rfind("attention, 9 kernels (aten::matmul -> mul -> masked_fill -> softmax -> matmul", 0), 0u)
      << top.name;
  EXPECT_EQ(top.suggestion.rfind("use torch.nn.functional.scaled_dot_product_attention", 0), 0u) << top.suggestion;
}

// Every recording in tests/data: the op legend (colour by op) lists ops by name, never one entry
// per emit_nvtx range with its ids and shapes, and no NVTX path the table shows carries them.
TEST(Document, EveryRecordingsLegendShowsOpNames) {
  size_t recordings = 0, with_ops = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(FPROF_SOURCE_DIR) + "/tests/data")) {
    if (entry.path().extension() != ".fprof") continue;
    const std::string file = entry.path().filename().string();
    auto d = Document::open(entry.path().string());
    ASSERT_TRUE(d.ok()) << d.error();
    ++recordings;
    const std::vector<std::string>& ops = (*d)->opNames();
    with_ops += !ops.empty();
    for (const std::string& op : ops) {
      EXPECT_FALSE(op.empty()) << file;
      for (const char* suffix : {"op_id = ", ", seq = ", "sizes = [", "input_op_ids"}) {
        EXPECT_EQ(op.find(suffix), std::string::npos) << file << ": " << op;
      }
      EXPECT_LE(op.size(), 200u) << file << ": " << op;
    }
    for (const Item& it : (*d)->items(PointMode::kKernelGroups)) {
      EXPECT_EQ(it.nvtx_ops.find("op_id = "), std::string::npos) << file << ": " << it.nvtx_ops;
    }
  }
  EXPECT_GE(recordings, 20u);
  EXPECT_GE(with_ops, 15u);
}

// The table's NVTX path column names emit_nvtx's ranges by their ops; the filter finds a row by
// the path as shown and as recorded, and the CSV keeps the recorded path.
TEST(Document, EmitNvtxPathsShowOpNames) {
  auto d = Document::open(std::string(FPROF_SOURCE_DIR) + "/tests/data/torch_proof_gpt_bf16_emitnvtx_h100.fprof");
  ASSERT_TRUE(d.ok()) << d.error();
  const std::vector<Item>& kernels = (*d)->items(PointMode::kKernels);
  size_t with_path = 0;
  for (const Item& it : kernels) {
    if (it.nvtx_path.empty()) {
      EXPECT_TRUE(it.nvtx_ops.empty());
      continue;
    }
    ++with_path;
    EXPECT_EQ(it.nvtx_ops, analysis::nvtxPathOpNames(it.nvtx_path));
    EXPECT_EQ(it.nvtx_ops.find("op_id"), std::string::npos) << it.nvtx_ops;
    EXPECT_EQ(it.nvtx_ops.find("sizes"), std::string::npos) << it.nvtx_ops;
    EXPECT_EQ(cellText(it, Column::kNvtx, MemLevel::kDram, 0), it.nvtx_ops);
  }
  ASSERT_GT(with_path, kernels.size() / 2);
  const auto it = std::find_if(kernels.begin(), kernels.end(),
                               [](const Item& i) { return i.nvtx_ops.rfind("aten::linear/aten::addmm", 0) == 0; });
  ASSERT_NE(it, kernels.end());
  EXPECT_NE(it->nvtx_path.find("op_id = "), std::string::npos) << it->nvtx_path;
  const std::string details = (*d)->details(PointMode::kKernels, it->index);
  EXPECT_NE(details.find("NVTX path: " + std::string(it->nvtx_ops) + "\n"), std::string::npos) << details;
  auto shown_rows = filterItems(kernels, TableFilter{"", "aten::linear/aten::addmm"});
  auto recorded_rows = filterItems(kernels, TableFilter{"", "aten::linear, op_id ="});
  ASSERT_TRUE(shown_rows && recorded_rows);
  EXPECT_FALSE(shown_rows->empty());
  EXPECT_FALSE(recorded_rows->empty());
  const size_t row = static_cast<size_t>(it - kernels.begin());
  const std::string csv = tableCsv(kernels, {static_cast<uint32_t>(row)}, MemLevel::kDram, 0);
  EXPECT_NE(csv.find("op_id = "), std::string::npos);
}

TEST(Diff, SlowerKernelIsARegressionAsTheGateSaysIt) {
  SyntheticOptions base_opt;
  base_opt.saxpy_launches = 10;
  SyntheticOptions slow = base_opt;
  slow.saxpy_slowdown = 1.2;
  auto base = open("doc_diff_base.fprof", base_opt);
  auto cur = open("doc_diff_cur.fprof", slow);
  ASSERT_TRUE(base && cur);
  const auto rows = diffDocuments(*base, *cur);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].name, kSaxpy);
  EXPECT_EQ(rows[0].change, Change::kRegression);
  EXPECT_NEAR(*rows[0].time_change, 0.2, 1e-12);
  EXPECT_DOUBLE_EQ(*rows[0].base_median_ns, 5e6);
  EXPECT_DOUBLE_EQ(*rows[0].cur_median_ns, 6e6);
  EXPECT_EQ(rows[0].why.rfind("+20.0% median time (5000000 -> 6000000 ns), Mann-Whitney p = ", 0), 0u) << rows[0].why;
  ASSERT_TRUE(rows[0].base_item && rows[0].cur_item);
  EXPECT_EQ(base->items(PointMode::kKernelGroups)[*rows[0].base_item].name, kSaxpy);
  EXPECT_EQ(cur->items(PointMode::kKernelGroups)[*rows[0].cur_item].name, kSaxpy);
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].change, Change::kSame) << rows[i].name;
    EXPECT_TRUE(rows[i].base_item && rows[i].cur_item) << rows[i].name;
  }
  for (const DiffRow& r : diffDocuments(*base, *base)) EXPECT_EQ(r.change, Change::kSame) << r.name;
}

TEST(Diff, OneLaunchCannotBeShownSlower) {
  SyntheticOptions slow;
  slow.saxpy_slowdown = 1.3;
  auto base = open("doc_diff1_base.fprof");
  auto cur = open("doc_diff1_cur.fprof", slow);
  ASSERT_TRUE(base && cur);
  const auto rows = diffDocuments(*base, *cur);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].name, kSaxpy);
  EXPECT_EQ(rows[0].change, Change::kUntestable);
  EXPECT_NE(rows[0].why.find("too few to test alone"), std::string::npos) << rows[0].why;
}

// Naive attention -> SDPA (tests/data, recorded on an H100): the diff names the fusion applied and
// puts the model's prediction next to the measured saving, as fprof diff does.
TEST(Diff, AppliedFusionsPredictedNextToMeasured) {
  const std::string data = std::string(FPROF_SOURCE_DIR) + "/tests/data/";
  auto eager = Document::open(data + "torch_proof_gpt_bf16_eager_h100.fprof");
  auto sdpa = Document::open(data + "torch_proof_gpt_bf16_sdpa_h100.fprof");
  ASSERT_TRUE(eager.ok() && sdpa.ok());
  const DocumentDiff d = compareDocuments(**eager, **sdpa);
  EXPECT_TRUE(d.warnings.empty());
  ASSERT_EQ(d.fusions.size(), 1u);
  const AppliedFusion& f = d.fusions.front();
  EXPECT_EQ(f.pattern, "attention");
  EXPECT_EQ(f.name.rfind("attention, 7 kernels (matmul -> mul -> masked_fill -> softmax -> copy -> matmul -> copy), with ", 0), 0u)
      << f.name;
  // The analysis' own outcome, unchanged.
  const analysis::RunComparison c = analysis::compareRuns((*eager)->analysis(), (*sdpa)->analysis());
  ASSERT_EQ(c.fusions.applied.size(), 1u);
  const analysis::FusionOutcome& o = c.fusions.applied.front();
  EXPECT_EQ(f.outcome.launches_before, o.launches_before);
  EXPECT_EQ(f.outcome.launches_after, o.launches_after);
  EXPECT_DOUBLE_EQ(f.outcome.measured_saving_ns, o.measured_saving_ns);
  ASSERT_TRUE(f.outcome.predicted_saving_ns && f.outcome.error);
  EXPECT_DOUBLE_EQ(*f.outcome.predicted_saving_ns, *o.predicted_saving_ns);
  const std::array<std::string, 7> cells = appliedFusionCells(f);
  EXPECT_EQ(cells[0], "neighbours");
  EXPECT_EQ(cells[2], fmt::format("{} -> {}", o.launches_before, o.launches_after));
  EXPECT_EQ(cells[3], formatDurationNs(*o.predicted_saving_ns));
  EXPECT_EQ(cells[4], formatDurationNs(o.measured_saving_ns));
  EXPECT_EQ(cells[5], fmt::format("{:+.1f}%", *o.error * 100));
  EXPECT_EQ(cells[6], f.name);
  const std::string text = appliedFusionText(f);
  EXPECT_EQ(text.rfind(f.name + ": predicted " + cells[3] + ", measured " + cells[4] + " over ", 0), 0u) << text;
  EXPECT_NE(text.find("(error " + cells[5] + ")"), std::string::npos) << text;
  const std::string summary = appliedFusionsSummary(d);
  EXPECT_NE(summary.find(fmt::format("of the baseline's {} fusion candidates run", d.outcomes.candidates)),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("compared over the whole runs"), std::string::npos) << summary;
  // A run against itself applies nothing.
  const DocumentDiff self = compareDocuments(**eager, **eager);
  EXPECT_TRUE(self.fusions.empty());
  EXPECT_GT(self.outcomes.candidates, 0);
}

// Runs recorded on different GPUs, or in different modes, are said so, one sentence each.
TEST(Diff, DifferencesInHowTheRunsWereRecordedAreSaid) {
  const std::string data = std::string(FPROF_SOURCE_DIR) + "/tests/data/";
  auto h200 = Document::open(data + "model_trace_h200.fprof");
  auto h100 = Document::open(data + "model_trace_h100.fprof");
  auto metrics = Document::open(data + "model_metrics_sampled_h100.fprof");
  ASSERT_TRUE(h200.ok() && h100.ok() && metrics.ok());
  const DocumentDiff devices = compareDocuments(**h200, **h100);
  ASSERT_EQ(devices.warnings.size(), 1u);
  EXPECT_EQ(devices.warnings[0].rfind("the runs were recorded on different GPUs (base: NVIDIA H200 (sm_90); current: "
                                      "NVIDIA H100 80GB HBM3 (sm_90))",
                                      0),
            0u)
      << devices.warnings[0];
  const DocumentDiff mode = compareDocuments(**h100, **metrics);
  ASSERT_EQ(mode.warnings.size(), 1u);
  EXPECT_EQ(mode.warnings[0].rfind("the runs were recorded in different modes (base: trace; current: metrics)", 0), 0u)
      << mode.warnings[0];
  EXPECT_TRUE(compareDocuments(**h100, **h100).warnings.empty());
}

}  // namespace
}  // namespace fprof::gui
