// The ImGui front end run headless (as Dear ImGui's example_null): a context with a display size,
// NewFrame/Render, no window and no GL. Mouse input is fed through ImGuiIO; the test checks what
// the viewer holds: points, hover and tooltip, selection, filters, zoom, fusion and diff overlays.
#include <gtest/gtest.h>
#include <imgui.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fprof/gui/viewer.h"
#include "synthetic.h"
#include "test_util.h"

namespace fprof::gui {
namespace {

using testing::SyntheticOptions;
using testing::tempPath;
using testing::writeSynthetic;

const char* kSaxpy = "saxpy(int, float, const float*, float*)";

class Headless : public ::testing::Test {
 protected:
  void SetUp() override {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = {1600, 1000};
    io.DeltaTime = 1.0f / 60.0f;
    io.IniFilename = nullptr;
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);  // builds the font atlas, as a renderer would
  }
  void TearDown() override { ImGui::DestroyContext(); }

  static void frame(Viewer& v, int n = 1) {
    for (int i = 0; i < n; ++i) {
      ImGui::NewFrame();
      v.frame();
      ImGui::Render();
    }
  }
  static void mouseAt(Vec2 p) { ImGui::GetIO().MousePos = {static_cast<float>(p.x), static_cast<float>(p.y)}; }
  static void click(Viewer& v) {
    ImGui::GetIO().MouseDown[0] = true;
    frame(v);
    ImGui::GetIO().MouseDown[0] = false;
    frame(v);
  }

  static std::shared_ptr<Document> synthetic(const std::string& name, const SyntheticOptions& o = {}) {
    const std::string path = tempPath(name);
    EXPECT_EQ(writeSynthetic(path, o), "");
    auto d = Document::open(path);
    EXPECT_TRUE(d.ok());
    return d.ok() ? *d : nullptr;
  }
  static size_t find(const Viewer& v, const std::string& name) {
    const auto& items = v.document()->items(v.mode());
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].name == name) return i;
    }
    ADD_FAILURE() << "no item " << name;
    return 0;
  }
};

TEST_F(Headless, PointsRoofsHoverTooltipAndClick) {
  Viewer v(synthetic("headless.fprof"));
  frame(v, 2);
  EXPECT_TRUE(v.errors().empty());
  EXPECT_EQ(v.mode(), PointMode::kKernels);
  EXPECT_EQ(v.pointsPlotted(), 13u);
  EXPECT_EQ(v.pointsDrawn(), 13u);  // the fitted view holds every point
  EXPECT_EQ(v.tableRows().size(), 13u);

  // The measured DRAM roof is drawn, a diagonal (down-right to up-left on screen), inside the plot.
  const DrawnRoof* dram = nullptr;
  for (const DrawnRoof& r : v.drawnRoofs()) {
    if (r.label == "dram" && !r.datasheet) dram = &r;
  }
  ASSERT_NE(dram, nullptr);
  EXPECT_LT(dram->screen.a.x, dram->screen.b.x);
  EXPECT_GT(dram->screen.a.y, dram->screen.b.y);
  EXPECT_TRUE(v.plotRect().contains(dram->screen.a));
  bool tensor_roof = false;
  for (const DrawnRoof& r : v.drawnRoofs()) tensor_roof |= r.label == "tensor_fp16" && !r.datasheet;
  EXPECT_TRUE(tensor_roof);

  const size_t saxpy = find(v, kSaxpy);
  const auto pos = v.screenPosition(saxpy);
  ASSERT_TRUE(pos);
  EXPECT_TRUE(v.plotRect().contains(*pos));
  mouseAt(*pos);
  frame(v, 2);  // ImGui decides the hovered window from the previous frame
  ASSERT_TRUE(v.hovered());
  EXPECT_EQ(*v.hovered(), saxpy);
  EXPECT_EQ(v.tooltip(),
            "saxpy\nsaxpy(int, float, const float*, float*)\ntime 5 ms (1 call)\nintensity (DRAM) 0.167 FLOP/byte\n"
            "achieved 400 GFLOP/s\n80.0% of roof (dram, measured)\nbound: memory");
  click(v);
  ASSERT_TRUE(v.selected());
  EXPECT_EQ(*v.selected(), saxpy);

  // A click on empty plot space clears the selection.
  mouseAt({v.plotRect().x0 + 3, v.plotRect().y0 + 3});
  frame(v);
  EXPECT_FALSE(v.hovered());
  click(v);
  EXPECT_FALSE(v.selected());
}

TEST_F(Headless, LevelPrecisionAndNameFilters) {
  Viewer v(synthetic("headless_filters.fprof"));
  frame(v, 2);
  const size_t gemm = find(v, "gemm_f16_tensorop");
  const Vec2 at_dram = *v.screenPosition(gemm);
  v.setLevel(MemLevel::kL2);
  frame(v);
  const Vec2 at_l2 = *v.screenPosition(gemm);
  EXPECT_LT(at_l2.x, at_dram.x);  // 4e8 L2 bytes vs 8.4e7 DRAM bytes: lower intensity, further left
  EXPECT_DOUBLE_EQ(at_l2.y, at_dram.y);

  v.setPrecisionMask(1u << static_cast<size_t>(Precision::kTensorFp16));
  frame(v);
  EXPECT_EQ(v.pointsPlotted(), 8u);  // 4 gemm + 4 fused
  EXPECT_FALSE(v.screenPosition(find(v, kSaxpy)));

  // Colour by bound: saxpy is memory bound, the gemm launches latency bound (12% occupancy).
  v.setPrecisionMask(~0u);
  const Item& saxpy_item = v.document()->items(v.mode())[find(v, kSaxpy)];
  const Item& gemm_item = v.document()->items(v.mode())[gemm];
  const uint32_t by_op = v.itemColour(gemm_item);
  v.setColourBy(ColourBy::kBound);
  frame(v);
  EXPECT_NE(v.itemColour(saxpy_item), v.itemColour(gemm_item));
  EXPECT_NE(v.itemColour(gemm_item), by_op);
  v.setColourBy(ColourBy::kOp);

  v.setNameFilter("saxpy");
  frame(v);
  EXPECT_EQ(v.tableRows().size(), 1u);
  EXPECT_EQ(v.pointsPlotted(), 1u);
  v.setNameFilter("([");
  frame(v);
  EXPECT_NE(v.filterError().find("bad name regex"), std::string::npos);
  EXPECT_EQ(v.tableRows().size(), 1u);  // the last good filter stays
  v.setNameFilter("");
  v.setNvtxFilter("variant=fused");
  frame(v);
  EXPECT_EQ(v.tableRows().size(), 4u);

  v.setNvtxFilter("");
  v.setMode(PointMode::kKernelGroups);
  v.sortBy(Column::kTime, true);
  frame(v);
  ASSERT_EQ(v.tableRows().size(), 4u);
  EXPECT_EQ(v.document()->items(PointMode::kKernelGroups)[v.tableRows().front()].name, "relu_f16");
}

TEST_F(Headless, CsvExportWritesTheTableAsShown) {
  Viewer v(synthetic("headless_csv.fprof"));
  v.setMode(PointMode::kKernelGroups);
  v.setNameFilter("gemm");
  v.sortBy(Column::kTime, false);
  frame(v);
  const std::string path = tempPath("table.csv");
  std::filesystem::remove(path);
  ASSERT_TRUE(v.exportCsv(path).ok());
  EXPECT_FALSE(v.exportCsv(path).ok()) << "a file that exists is kept";
  core::OutputRules replace;
  replace.replace = true;
  v.setOutputRules(replace);
  EXPECT_TRUE(v.exportCsv(path).ok()) << "fprof-view --force";
  std::ifstream f(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u);  // header + the two gemm groups, fused first (820 us > 800 us)
  EXPECT_EQ(lines[1].rfind("gemm_relu_fused_f16,4,820000,", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("gemm_f16_tensorop,4,800000,", 0), 0u) << lines[2];
  EXPECT_FALSE(v.exportCsv(tempPath("no_such_dir/table.csv")).ok());
}

TEST_F(Headless, WheelZoomsAtTheMouseAndDragPans) {
  Viewer v(synthetic("headless_zoom.fprof"));
  frame(v, 2);
  const Rect r = v.plotRect();
  // Whole pixels: ImGui floors the mouse position.
  const Vec2 centre{std::floor((r.x0 + r.x1) / 2), std::floor((r.y0 + r.y1) / 2)};
  mouseAt(centre);
  frame(v);
  const View before = v.view();
  ImGui::GetIO().MouseWheel = 1;
  frame(v);
  ImGui::GetIO().MouseWheel = 0;
  const View after = v.view();
  EXPECT_NEAR(after.x_hi - after.x_lo, (before.x_hi - before.x_lo) / 1.25, 1e-9);
  const Vec2 l0 = LogMapping(before, r).screenToLog(centre), l1 = LogMapping(after, r).screenToLog(centre);
  EXPECT_NEAR(l0.x, l1.x, 1e-9);
  EXPECT_NEAR(l0.y, l1.y, 1e-9);

  // Drag 100 px right: the data moves right with the mouse.
  ImGui::GetIO().MouseDown[0] = true;
  frame(v);
  for (int i = 1; i <= 10; ++i) {
    mouseAt({centre.x + 10.0 * i, centre.y});
    frame(v);
  }
  ImGui::GetIO().MouseDown[0] = false;
  frame(v);
  const double px_per_decade = r.width() / (after.x_hi - after.x_lo);
  // The first 3 px of the drag are under ImGui's drag threshold and do not pan.
  EXPECT_NEAR(v.view().x_lo, after.x_lo - 100.0 / px_per_decade, 4.0 / px_per_decade);
  v.resetView();
  EXPECT_EQ(v.view(), before);
}

TEST_F(Headless, FusionSelectionAndDiffArrows) {
  SyntheticOptions base_opt;
  base_opt.saxpy_launches = 10;
  auto base = synthetic("headless_base.fprof", base_opt);
  SyntheticOptions slow = base_opt;
  slow.saxpy_slowdown = 1.2;
  Viewer v(synthetic("headless_cur.fprof", slow), core::Expected<std::shared_ptr<Document>>(base));
  EXPECT_EQ(v.mode(), PointMode::kKernelGroups);
  v.selectFusion(0);
  frame(v, 2);
  EXPECT_EQ(v.arrowsDrawn(), 4u);  // every kernel group matched and placed
  // The declared pair p1: both stages, the predicted fused point and the measured fused variant.
  EXPECT_EQ(v.fusionMarks().stages, 2u);
  EXPECT_TRUE(v.fusionMarks().predicted);
  EXPECT_TRUE(v.fusionMarks().measured);
  v.selectFusion(std::nullopt);
  frame(v);
  EXPECT_EQ(v.fusionMarks().stages, 0u);
  ASSERT_FALSE(v.diff().empty());
  EXPECT_EQ(v.diff().front().change, Change::kRegression);
  EXPECT_EQ(v.diff().front().name, kSaxpy);
}

TEST_F(Headless, MissingFileShowsTheReasonAndDoesNotCrash) {
  Viewer v(Document::open(tempPath("no_such_run.fprof")));
  frame(v, 2);
  ASSERT_EQ(v.errors().size(), 1u);
  EXPECT_NE(v.errors()[0].find("no_such_run.fprof"), std::string::npos);
  EXPECT_EQ(v.document(), nullptr);
  EXPECT_EQ(v.pointsPlotted(), 0u);
}

TEST_F(Headless, TraceOnlyProfileShowsTableWithoutPoints) {
  SyntheticOptions o;
  o.counters = false;
  Viewer v(synthetic("headless_trace.fprof", o));
  frame(v, 2);
  EXPECT_EQ(v.mode(), PointMode::kKernelGroups);
  EXPECT_EQ(v.pointsPlotted(), 0u);
  EXPECT_EQ(v.tableRows().size(), 4u);
  v.select(v.tableRows().front());
  frame(v);
  EXPECT_EQ(v.selected(), v.tableRows().front());
}

// The recorded traces committed under tests/data (trace_test_<gpu>.fprof, from real H100/H200
// runs). Trace-only: the viewer must open each, list its kernels and say that points need counters.
TEST_F(Headless, RecordedTraces) {
  const std::filesystem::path dir = std::filesystem::path(FPROF_SOURCE_DIR) / "tests" / "data";
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("trace_test_", 0) == 0 && e.path().extension() == ".fprof") paths.push_back(e.path().string());
  }
  ASSERT_FALSE(paths.empty()) << "tests/data/trace_test_*.fprof is committed; it must be there";
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    auto d = Document::open(path);
    ASSERT_TRUE(d.ok()) << d.error();
    Viewer v(std::move(d));
    frame(v, 3);
    EXPECT_TRUE(v.errors().empty());
    ASSERT_GT(v.tableRows().size(), 0u);
    EXPECT_NE(v.document()->roofs().device_name.find("NVIDIA H"), std::string::npos) << v.document()->roofs().device_name;
    if (v.document()->kernelsWithCounters() == 0) {
      EXPECT_EQ(v.pointsPlotted(), 0u);
      EXPECT_EQ(v.document()->plotNote().rfind("Trace-only profile", 0), 0u);
      EXPECT_FALSE(v.drawnRoofs().empty());  // datasheet roofs from the recorded device attributes
    } else {
      EXPECT_GT(v.pointsPlotted(), 0u);
    }
    // The table's first row (longest total time) selects, and its details come from the trace.
    v.select(v.tableRows().front());
    frame(v);
    const Item& top = v.document()->items(v.mode())[v.tableRows().front()];
    const std::string details = v.document()->details(v.mode(), v.tableRows().front());
    EXPECT_NE(details.find("grid: "), std::string::npos) << details;
    EXPECT_NE(details.find("registers/thread: "), std::string::npos) << details;
    for (uint32_t r : v.tableRows()) EXPECT_GE(top.duration_ns, v.document()->items(v.mode())[r].duration_ns);
  }
}

// The first screen: with nothing selected the details panel shows the run's findings, as fprof
// report words them: what the kernel groups could gain at their roofs, those below half of it, the
// best fusion with its suggestion.
TEST_F(Headless, FindingsComeFirstWithNothingSelected) {
  auto doc = Document::open(std::string(FPROF_SOURCE_DIR) + "/tests/data/model_metrics_h200.fprof");
  ASSERT_TRUE(doc.ok());
  Viewer v(*doc);
  frame(v, 2);
  const std::vector<std::string> f = v.findings();
  ASSERT_GE(f.size(), 4u);
  EXPECT_EQ(f[0].rfind("Top kernel: attentionSoftmaxKernel<__half> takes 17.3% of kernel time", 0), 0u) << f[0];
  EXPECT_EQ(f[1].rfind("Most to gain (time x (1 - fraction of roof)): attentionSoftmaxKernel<__half> 1.27 ms (34.5% "
                       "of roof)",
                       0),
            0u)
      << f[1];
  EXPECT_EQ(f[2].rfind("55 kernel groups below 50% of their roof, 68.0% of kernel time: ", 0), 0u) << f[2];
  EXPECT_NE(f[2].find(" and 52 more."), std::string::npos) << f[2];
  EXPECT_EQ(f[3].rfind("Best fusion: attention, 3 kernels", 0), 0u) << f[3];
  EXPECT_NE(f[3].find("Suggestion: "), std::string::npos) << f[3];
  // A trace-only run says why it has no roof findings.
  auto trace = Document::open(std::string(FPROF_SOURCE_DIR) + "/tests/data/trace_test_h200.fprof");
  ASSERT_TRUE(trace.ok());
  const std::vector<std::string> t = runFindings(**trace);
  ASSERT_GE(t.size(), 2u);
  EXPECT_EQ(t[1].rfind("Trace-mode run: no hardware counters", 0), 0u) << t[1];
}

// Against a baseline the diff tab opens on the fusions applied since, predicted next to measured,
// and the findings beside the plot say the first of them.
TEST_F(Headless, DiffTabShowsTheAppliedFusions) {
  const std::string data = std::string(FPROF_SOURCE_DIR) + "/tests/data/";
  Viewer v(Document::open(data + "torch_proof_gpt_bf16_sdpa_h100.fprof"),
           Document::open(data + "torch_proof_gpt_bf16_eager_h100.fprof"));
  ASSERT_TRUE(v.errors().empty());
  frame(v, 2);
  EXPECT_EQ(v.shownTab(), Tab::kKernels);
  EXPECT_EQ(v.appliedFusionsDrawn(), 0u);
  v.openTab(Tab::kDiff);
  frame(v, 2);
  EXPECT_EQ(v.shownTab(), Tab::kDiff);  // and stays there once asked
  ASSERT_EQ(v.comparison().fusions.size(), 1u);
  EXPECT_EQ(v.appliedFusionsDrawn(), 1u);
  const std::vector<std::string> f = v.findings();
  ASSERT_GE(f.size(), 2u);
  EXPECT_EQ(f[1], "Applied fusion: " + appliedFusionText(v.comparison().fusions.front()) + ".");
  EXPECT_EQ(f[1].rfind("Applied fusion: attention, 7 kernels", 0), 0u) << f[1];
  // Without a baseline: no diff, no applied fusion among the findings.
  Viewer alone(Document::open(data + "torch_proof_gpt_bf16_sdpa_h100.fprof"));
  alone.openTab(Tab::kDiff);
  frame(alone, 2);
  EXPECT_EQ(alone.appliedFusionsDrawn(), 0u);
  for (const std::string& line : alone.findings()) EXPECT_EQ(line.rfind("Applied fusion", 0), std::string::npos) << line;
}

}  // namespace
}  // namespace fprof::gui
