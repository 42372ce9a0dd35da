// The viewer's ImGui front end: roofline panel, kernel table, details, fusion and diff panels.
// It issues ImGui calls only (no window, no GL), so tests run it headless between
// ImGui::NewFrame() and ImGui::Render() and inspect what it holds.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fprof/analysis/ranks.h"
#include "fprof/core/merge.h"
#include "fprof/core/output.h"
#include "fprof/gui/document.h"
#include "fprof/gui/plot_math.h"
#include "fprof/gui/table.h"

struct ImDrawList;  // imgui.h stays out of this header: tests and main include it themselves

namespace fprof::gui {

enum class ColourBy { kOp = 0, kBound = 1 };
// The tabs under the plot.
enum class Tab { kKernels = 0, kFusion = 1, kDiff = 2, kRanks = 3 };

// The findings of a run as the viewer's first screen shows them (fprof report's, in its words):
// the top kernel, the kernel groups that could gain most (time x (1 - fraction of roof)), those
// below 50% of their roof by name, the best fusion with its suggestion.
std::vector<std::string> runFindings(const Document& doc);

// A roof as drawn in the last frame, in screen pixels (what the screenshot test looks for).
struct DrawnRoof {
  std::string label;  // "dram", "l2", "fp32", ...
  bool datasheet = false;
  uint32_t colour = 0;  // ImGui packed ABGR (IM_COL32)
  Segment screen;
};

class Viewer {
 public:
  // Either document may fail to load: the viewer then shows the reason (load errors are also
  // returned by errors() for main to print on stderr).
  Viewer(core::Expected<std::shared_ptr<Document>> run,
         std::optional<core::Expected<std::shared_ptr<Document>>> baseline = std::nullopt);

  // One frame of ImGui calls covering the whole display.
  void frame();

  // --- what the UI holds (for tests and for main) ---
  const std::vector<std::string>& errors() const { return errors_; }
  const Document* document() const { return run_.get(); }
  const Document* baseline() const { return base_.get(); }
  PointMode mode() const { return mode_; }
  void setMode(PointMode m);
  MemLevel level() const { return level_; }
  void setLevel(MemLevel l);
  ColourBy colourBy() const { return colour_by_; }
  void setColourBy(ColourBy c) {
    if (c != colour_by_) points_dirty_ = true;
    colour_by_ = c;
  }
  // What the details panel shows first when nothing is selected (runFindings of the shown run).
  std::vector<std::string> findings() const;
  // Colour of an item's point (IM_COL32), by its NVTX op or its bound.
  uint32_t itemColour(const Item& it) const;
  uint32_t precisionMask() const { return precision_mask_; }
  void setPrecisionMask(uint32_t mask);
  void setShowRoofs(bool measured, bool datasheet) {
    show_measured_ = measured;
    show_datasheet_ = datasheet;
  }
  void setNameFilter(const std::string& regex);
  void setNvtxFilter(const std::string& substring);
  const std::string& filterError() const { return filter_error_; }
  void sortBy(Column c, bool ascending);
  const std::vector<uint32_t>& tableRows() const { return rows_; }  // filtered, sorted items
  std::optional<size_t> selected() const { return selected_; }
  void select(std::optional<size_t> item);
  std::optional<size_t> hovered() const { return hovered_; }
  const std::string& tooltip() const { return tooltip_; }  // shown in the last frame ("" if none)
  std::optional<size_t> selectedFusion() const { return selected_fusion_; }
  void selectFusion(std::optional<size_t> index) { selected_fusion_ = index; }
  const std::vector<DiffRow>& diff() const { return diff_.kernels; }
  // All the diff view shows against the baseline: kernel rows, applied fusions, recording differences.
  const DocumentDiff& comparison() const { return diff_; }
  // Brings a tab to the front in the next frame (fprof-view --tab); the tab shown last frame.
  void openTab(Tab t) { pending_tab_ = t; }
  std::optional<Tab> shownTab() const { return shown_tab_; }
  size_t appliedFusionsDrawn() const { return applied_fusions_drawn_; }  // rows of the last frame

  // Databases of several processes (fprof merge): the ranks, and which one the plot, table, fusion
  // and diff show (none = all ranks together). The document of a rank is the profile cut to that
  // rank (core::selectRank), analysed as the file that rank wrote; a baseline of several processes
  // is cut to the same rank. An error (no such rank) leaves the view as it was.
  const std::vector<core::RankGroup>& rankGroups() const { return rank_groups_; }
  const std::vector<analysis::RankRow>& rankRows() const { return rank_rows_; }
  std::optional<int> rank() const { return rank_; }
  core::Status setRank(std::optional<int> rank);

  const View& view() const { return view_; }
  void setView(const View& v) { view_ = v; }
  void resetView();
  const Rect& plotRect() const { return plot_rect_; }
  // Screen position of an item's point in the last frame's mapping; none if it has none.
  std::optional<Vec2> screenPosition(size_t item) const;
  size_t pointsDrawn() const { return points_drawn_; }    // after overdraw culling
  size_t pointsPlotted() const { return points_plotted_; }  // visible, placeable points
  const std::vector<DrawnRoof>& drawnRoofs() const { return drawn_roofs_; }
  size_t arrowsDrawn() const { return arrows_drawn_; }
  // What the selected fusion candidate put on the plot in the last frame.
  struct FusionMarks {
    size_t stages = 0;  // stage points drawn (A, B, ...)
    bool predicted = false;
    bool measured = false;
  };
  const FusionMarks& fusionMarks() const { return fusion_marks_; }

  // Export requests the GL layer carries out after rendering (it owns the framebuffer).
  struct PngRequest {
    std::string path;
    Rect region;  // the plot, in display pixels
  };
  std::optional<PngRequest> takePngRequest();
  void requestPng(const std::string& path) { png_request_ = PngRequest{path, plot_rect_}; }
  void setStatus(std::string s) { status_ = std::move(s); }
  // Writes the table as it is shown (filter and sort) to a CSV file, by the output rules below.
  core::Status exportCsv(const std::string& path) const;
  // The rules the window's PNG and CSV exports follow (core/output.h): an existing file is kept
  // unless `replace` (fprof-view --force), the databases shown are never written over.
  void setOutputRules(core::OutputRules rules) { output_rules_ = std::move(rules); }
  const core::OutputRules& outputRules() const { return output_rules_; }

 private:
  void drawToolbar();
  void drawPlot(float width, float height);
  void drawRoofs(const LogMapping& map, ImDrawList* dl);
  void drawFusionOverlay(const LogMapping& map, ImDrawList* dl);
  void drawDiffOverlay(const LogMapping& map, ImDrawList* dl);
  void drawTable();
  void drawDetails();
  void drawFusion();
  void drawDiff();
  void drawAppliedFusions();
  bool beginTab(const char* label, Tab t);
  void drawRankFilter();
  void drawRanks();
  void rebuildRows();
  void rebuildPoints();
  const std::vector<Item>& items() const;

  std::shared_ptr<Document> run_;
  std::shared_ptr<Document> base_;
  mutable std::vector<std::string> findings_;
  mutable const Document* findings_of_ = nullptr;
  std::vector<std::string> errors_;
  DocumentDiff diff_;
  std::optional<Tab> pending_tab_;
  std::optional<Tab> shown_tab_;
  size_t applied_fusions_drawn_ = 0;
  // All ranks as loaded, and the per-rank documents built on demand.
  std::shared_ptr<Document> all_run_;
  std::shared_ptr<Document> all_base_;
  std::map<int, std::shared_ptr<Document>> rank_runs_;
  std::map<int, std::shared_ptr<Document>> rank_bases_;
  std::vector<core::RankGroup> rank_groups_;
  std::vector<analysis::RankRow> rank_rows_;
  std::optional<int> rank_;

  PointMode mode_ = PointMode::kKernels;
  MemLevel level_ = MemLevel::kDram;
  ColourBy colour_by_ = ColourBy::kOp;
  uint32_t precision_mask_ = 0;
  bool show_measured_ = true;
  bool show_datasheet_ = true;
  TableFilter filter_;
  std::string filter_error_;
  char name_buf_[256] = {};
  char nvtx_buf_[256] = {};
  Column sort_column_ = Column::kTime;
  bool sort_ascending_ = false;
  std::vector<uint32_t> rows_;
  bool rows_dirty_ = true;
  bool scroll_to_selected_ = false;

  // Points of the shown rows, in draw order (largest first so small ones stay visible on top).
  std::vector<uint32_t> point_items_;
  std::vector<Vec2> point_log_;
  std::vector<float> point_radius_;
  std::vector<uint32_t> point_colour_;
  bool points_dirty_ = true;
  // Per frame: screen positions of the drawn points (after culling) and their items.
  std::vector<Vec2> drawn_centres_;
  std::vector<float> drawn_radii_;
  std::vector<uint32_t> drawn_items_;
  std::vector<Vec2> all_screen_;  // every plotted point's screen position (point order)
  View culled_view_{};
  Rect culled_rect_{};
  bool cull_valid_ = false;

  View view_;
  bool view_fitted_ = false;
  Rect plot_rect_;
  std::optional<size_t> selected_;
  std::optional<size_t> hovered_;
  std::string tooltip_;
  std::optional<size_t> selected_fusion_;
  size_t points_drawn_ = 0;
  size_t points_plotted_ = 0;
  size_t arrows_drawn_ = 0;
  FusionMarks fusion_marks_;
  std::vector<DrawnRoof> drawn_roofs_;

  char png_path_[512] = "fprof-roofline.png";
  char csv_path_[512] = "fprof-table.csv";
  std::optional<PngRequest> png_request_;
  core::OutputRules output_rules_;
  std::string status_;
};

}  // namespace fprof::gui
