// The viewer's ImGui front end (see viewer.h). Geometry comes from plot_math, numbers from the
// document; this file only lays out widgets and draws.
#include "fprof/gui/viewer.h"

#include <imgui.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "fprof/core/text.h"

namespace fprof::gui {
namespace {

// What a cell or a line shows of a text: a 1 MB name is cut, an ellipsis says so.
std::string shown(std::string_view s) { return core::truncateText(s, core::kMaxShownCodePoints); }

// Colours (IM_COL32 is ABGR packed). Roof colours are kept away from the point palettes so a
// roof can be found in a screenshot by colour.
constexpr ImU32 kBackground = IM_COL32(18, 18, 24, 255);
constexpr ImU32 kGrid = IM_COL32(58, 58, 70, 255);
constexpr ImU32 kAxisText = IM_COL32(200, 200, 210, 255);
constexpr ImU32 kSelectedRing = IM_COL32(255, 255, 255, 255);
constexpr ImU32 kRegression = IM_COL32(255, 40, 40, 255);
constexpr ImU32 kImprovement = IM_COL32(60, 220, 110, 255);
constexpr ImU32 kUnchanged = IM_COL32(150, 150, 160, 200);
constexpr ImU32 kUntestable = IM_COL32(255, 170, 60, 255);  // slower, but too few launches to tell
constexpr ImU32 kFusion = IM_COL32(255, 255, 255, 255);
constexpr ImU32 kErrorText = IM_COL32(255, 90, 90, 255);

constexpr std::array<ImU32, kMemLevelCount> kLevelColour = {
    IM_COL32(255, 200, 0, 255),   // DRAM: gold
    IM_COL32(0, 200, 255, 255),   // L2: cyan
    IM_COL32(0, 230, 120, 255),   // L1: green
};
constexpr ImU32 kComputeColour = IM_COL32(255, 80, 200, 255);  // magenta

constexpr std::array<ImU32, 10> kPalette = {
    IM_COL32(78, 121, 167, 210),  IM_COL32(242, 142, 43, 210), IM_COL32(225, 87, 89, 210),
    IM_COL32(118, 183, 178, 210), IM_COL32(89, 161, 79, 210),  IM_COL32(237, 201, 72, 210),
    IM_COL32(176, 122, 161, 210), IM_COL32(255, 157, 167, 210), IM_COL32(156, 117, 95, 210),
    IM_COL32(186, 176, 172, 210)};
constexpr ImU32 kNoOp = IM_COL32(140, 140, 150, 200);

ImU32 boundColour(analysis::Bound b) {
  switch (b) {
    case analysis::Bound::kMemory: return IM_COL32(78, 121, 167, 210);
    case analysis::Bound::kCompute: return IM_COL32(225, 87, 89, 210);
    case analysis::Bound::kLatency: return IM_COL32(242, 142, 43, 210);
    case analysis::Bound::kLaunch: return IM_COL32(176, 122, 161, 210);
    case analysis::Bound::kUnknown: return kNoOp;
  }
  return kNoOp;
}

const char* levelLabel(MemLevel l) {
  switch (l) {
    case MemLevel::kDram: return "DRAM";
    case MemLevel::kL2: return "L2";
    case MemLevel::kL1: return "L1";
  }
  return "?";
}

ImVec2 im(Vec2 v) { return {static_cast<float>(v.x), static_cast<float>(v.y)}; }
Vec2 vec(ImVec2 v) { return {v.x, v.y}; }

void dashedLine(ImDrawList* dl, Vec2 a, Vec2 b, ImU32 col, float thickness) {
  const double len = std::hypot(b.x - a.x, b.y - a.y);
  if (len <= 0) return;
  constexpr double kOn = 7, kOff = 5;
  const double ux = (b.x - a.x) / len, uy = (b.y - a.y) / len;
  for (double t = 0; t < len; t += kOn + kOff) {
    const double e = std::min(t + kOn, len);
    dl->AddLine(im({a.x + ux * t, a.y + uy * t}), im({a.x + ux * e, a.y + uy * e}), col, thickness);
  }
}

void arrow(ImDrawList* dl, Vec2 from, Vec2 to, ImU32 col, float thickness) {
  const double len = std::hypot(to.x - from.x, to.y - from.y);
  if (len < 1) return;
  const double ux = (to.x - from.x) / len, uy = (to.y - from.y) / len;
  const double head = std::min(10.0, len * 0.5);
  const Vec2 base{to.x - ux * head, to.y - uy * head};
  dl->AddLine(im(from), im(base), col, thickness);
  dl->AddTriangleFilled(im(to), im({base.x - uy * head * 0.45, base.y + ux * head * 0.45}),
                        im({base.x + uy * head * 0.45, base.y - ux * head * 0.45}), col);
}

std::optional<Vec2> placementPoint(const analysis::Placement& pl, MemLevel level) {
  const auto& in = pl.intensity_flop_per_byte[static_cast<size_t>(level)];
  if (!in || !pl.achieved_flops_per_s || !(*in > 0) || !(*pl.achieved_flops_per_s > 0)) return std::nullopt;
  return Vec2{*in, *pl.achieved_flops_per_s};
}

std::string percentText(const std::optional<double>& fraction) {
  return fraction ? fmt::format("{:.1f}%", *fraction * 100) : std::string("n/a");
}

// What a kernel group could gain: its time x (1 - fraction of roof); none without a fraction.
std::optional<double> headroomNs(const Item& it) {
  if (!it.placement.roof_fraction) return std::nullopt;
  return static_cast<double>(it.duration_ns) * (1 - std::clamp(*it.placement.roof_fraction, 0.0, 1.0));
}

void roofFindings(const std::vector<Item>& groups, double total_ns, std::vector<std::string>& out) {
  std::vector<size_t> gain, low;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (const auto h = headroomNs(groups[i]); h && *h > 0) gain.push_back(i);
    if (groups[i].placement.roof_fraction && *groups[i].placement.roof_fraction < 0.5) low.push_back(i);
  }
  std::stable_sort(gain.begin(), gain.end(), [&](size_t a, size_t b) { return *headroomNs(groups[a]) > *headroomNs(groups[b]); });
  if (!gain.empty()) {
    std::string list;
    for (size_t n = 0; n < gain.size() && n < 3; ++n) {
      const Item& it = groups[gain[n]];
      list += fmt::format("{}{} {} ({} of roof)", n ? "; " : "", it.short_name, formatDurationNs(*headroomNs(it)),
                          percentText(it.placement.roof_fraction));
    }
    out.push_back("Most to gain (time x (1 - fraction of roof)): " + list + ".");
  }
  if (low.empty()) return;
  double low_ns = 0;
  std::string names;
  for (size_t n = 0; n < low.size(); ++n) {
    low_ns += static_cast<double>(groups[low[n]].duration_ns);
    if (n < 3) names += fmt::format("{}{} ({})", n ? ", " : "", groups[low[n]].short_name, percentText(groups[low[n]].placement.roof_fraction));
  }
  if (low.size() > 3) names += fmt::format(" and {} more", low.size() - 3);
  out.push_back(fmt::format("{} kernel group{} below 50% of their roof, {} of kernel time: {}.", low.size(),
                            low.size() == 1 ? "" : "s", percentText(total_ns > 0 ? low_ns / total_ns : 0), names));
}

}  // namespace

// The viewer's findings, in the words of fprof report's: the top kernel, what the kernel groups
// could gain at their roofs, those far below them, the best fusion with its suggestion.
std::vector<std::string> runFindings(const Document& doc) {
  std::vector<std::string> out;
  const std::vector<Item>& groups = doc.items(PointMode::kKernelGroups);
  const double total_ns = static_cast<double>(doc.totalKernelNs());
  if (groups.empty()) return {"The run holds no kernels."};
  const auto top = std::max_element(groups.begin(), groups.end(),
                                    [](const Item& a, const Item& b) { return a.duration_ns < b.duration_ns; });
  out.push_back(fmt::format("Top kernel: {} takes {} of kernel time ({} over {} calls).", top->short_name,
                            percentText(total_ns > 0 ? static_cast<double>(top->duration_ns) / total_ns : 0),
                            formatDurationNs(static_cast<double>(top->duration_ns)), top->calls));
  if (doc.kernelsWithCounters() == 0) {
    out.push_back("Trace-mode run: no hardware counters, so no intensity or % of roof. Record them with fprof run "
                  "--metrics roofline.");
  } else {
    roofFindings(groups, total_ns, out);
  }
  for (const analysis::FusionCandidate& c : doc.fusion().candidates) {
    if (!c.fuse || !c.total_saving_ns) continue;
    out.push_back(fmt::format("Best fusion: {} would save {} ({} of kernel time) over {} run{}, predicted. Suggestion: {}",
                              c.name.empty() ? c.id : c.name, formatDurationNs(*c.total_saving_ns),
                              percentText(c.program_share), c.instances, c.instances == 1 ? "" : "s", c.suggestion));
    break;
  }
  return out;
}

namespace {
}  // namespace

Viewer::Viewer(core::Expected<std::shared_ptr<Document>> run,
               std::optional<core::Expected<std::shared_ptr<Document>>> baseline) {
  if (run) {
    run_ = *run;
  } else {
    errors_.push_back(run.error());
  }
  if (baseline) {
    if (*baseline) {
      base_ = **baseline;
    } else {
      errors_.push_back("baseline: " + baseline->error());
    }
  }
  if (run_ && base_) diff_ = compareDocuments(*base_, *run_);
  all_run_ = run_;
  all_base_ = base_;
  if (run_) {
    rank_groups_ = core::rankGroups(run_->profile());
    if (rank_groups_.size() > 1) rank_rows_ = analysis::rankBreakdown(run_->profile());
  }
  // Precisions shown by default: those the run counted; with no counters, the common ones.
  if (run_) {
    for (const Item& it : run_->items(PointMode::kKernels)) {
      for (size_t i = 0; i < kPrecisionCount; ++i) {
        if (it.work.flops[i] && *it.work.flops[i] > 0) precision_mask_ |= 1u << i;
      }
    }
  }
  if (precision_mask_ == 0) {
    precision_mask_ = 1u << static_cast<size_t>(Precision::kFp64) | 1u << static_cast<size_t>(Precision::kFp32) |
                      1u << static_cast<size_t>(Precision::kTensorFp16);
  }
  // A run with very many launches opens on kernel groups only if it has no per-launch points.
  if (run_ && run_->kernelsWithCounters() == 0 && !run_->items(PointMode::kKernelGroups).empty()) {
    mode_ = PointMode::kKernelGroups;
  }
  if (base_ && run_) mode_ = PointMode::kKernelGroups;  // diff arrows are per kernel group
}

const std::vector<Item>& Viewer::items() const {
  static const std::vector<Item> kNone;
  return run_ ? run_->items(mode_) : kNone;
}

void Viewer::setMode(PointMode m) {
  if (m == mode_) return;
  mode_ = m;
  selected_.reset();
  hovered_.reset();
  rows_dirty_ = points_dirty_ = true;
}

core::Status Viewer::setRank(std::optional<int> rank) {
  if (!all_run_) return core::makeError("nothing loaded");
  if (rank == rank_) return {};
  std::shared_ptr<Document> run = all_run_, base = all_base_;
  if (rank) {
    auto& cached = rank_runs_[*rank];
    if (!cached) {
      auto one = core::selectRank(all_run_->profile(), *rank);
      if (!one) {
        rank_runs_.erase(*rank);
        return core::makeError(one.error());
      }
      one->path += " (rank " + std::to_string(*rank) + ")";
      cached = Document::fromProfile(std::move(*one));
    }
    run = cached;
    if (all_base_ && all_base_->profile().processes.size() > 1) {
      auto& cached_base = rank_bases_[*rank];
      if (!cached_base) {
        auto one = core::selectRank(all_base_->profile(), *rank);
        if (!one) {
          rank_bases_.erase(*rank);
          return core::makeError("baseline: " + one.error());
        }
        one->path += " (rank " + std::to_string(*rank) + ")";
        cached_base = Document::fromProfile(std::move(*one));
      }
      base = cached_base;
    }
  }
  run_ = run;
  base_ = base;
  rank_ = rank;
  diff_ = run_ && base_ ? compareDocuments(*base_, *run_) : DocumentDiff{};
  findings_of_ = nullptr;  // the applied fusion the findings name is the new pair's
  selected_.reset();
  hovered_.reset();
  selected_fusion_.reset();
  rows_dirty_ = points_dirty_ = true;
  view_fitted_ = false;  // another rank's points: fit them
  return {};
}

void Viewer::setLevel(MemLevel l) {
  if (l == level_) return;
  level_ = l;
  points_dirty_ = true;
  if (sort_column_ == Column::kIntensity) rows_dirty_ = true;
}

void Viewer::setPrecisionMask(uint32_t mask) {
  if (mask == precision_mask_) return;
  precision_mask_ = mask;
  points_dirty_ = true;
}

void Viewer::setNameFilter(const std::string& regex) {
  filter_.name_regex = regex;
  std::snprintf(name_buf_, sizeof name_buf_, "%s", regex.c_str());
  rows_dirty_ = true;
}

void Viewer::setNvtxFilter(const std::string& substring) {
  filter_.nvtx = substring;
  std::snprintf(nvtx_buf_, sizeof nvtx_buf_, "%s", substring.c_str());
  rows_dirty_ = true;
}

void Viewer::sortBy(Column c, bool ascending) {
  sort_column_ = c;
  sort_ascending_ = ascending;
  rows_dirty_ = true;
}

void Viewer::select(std::optional<size_t> item) {
  selected_ = item;
  scroll_to_selected_ = item.has_value();
}

void Viewer::rebuildRows() {
  auto filtered = filterItems(items(), filter_);
  if (!filtered) {
    // Keep the previous rows: a half-typed regex should not empty the table.
    filter_error_ = filtered.error();
  } else {
    filter_error_.clear();
    rows_ = std::move(*filtered);
    sortRows(rows_, items(), sort_column_, sort_ascending_, level_);
  }
  rows_dirty_ = false;
  points_dirty_ = true;
}

uint32_t Viewer::itemColour(const Item& it) const {
  if (colour_by_ == ColourBy::kBound) return boundColour(it.placement.bound);
  if (it.op < 0) return kNoOp;
  return kPalette[static_cast<size_t>(it.op) % kPalette.size()];
}

void Viewer::rebuildPoints() {
  if (rows_dirty_) rebuildRows();
  const auto& its = items();
  point_items_.clear();
  point_log_.clear();
  point_radius_.clear();
  point_colour_.clear();
  int64_t shown_ns = 0;
  for (uint32_t r : rows_) {
    const Item& it = its[r];
    if (!itemPoint(it, level_) || !itemHasPrecision(it, precision_mask_)) continue;
    point_items_.push_back(r);
    shown_ns += it.duration_ns;
  }
  // Largest first: small points are drawn last, on top, and win hit tests.
  std::stable_sort(point_items_.begin(), point_items_.end(),
                   [&](uint32_t a, uint32_t b) { return its[a].duration_ns > its[b].duration_ns; });
  for (uint32_t r : point_items_) {
    const Item& it = its[r];
    const Vec2 p = *itemPoint(it, level_);
    point_log_.push_back({std::log10(p.x), std::log10(p.y)});
    const double share = shown_ns > 0 ? static_cast<double>(it.duration_ns) / static_cast<double>(shown_ns) : 0;
    point_radius_.push_back(pointRadius(share));
    point_colour_.push_back(itemColour(it));
  }
  points_plotted_ = point_items_.size();
  points_dirty_ = false;
  cull_valid_ = false;
  if (!view_fitted_) resetView();
}

void Viewer::resetView() {
  std::vector<Vec2> fit = point_log_;
  // Keep the roofs' knees in view too, so an empty run still shows its machine.
  if (run_) {
    const RoofSet& rs = run_->roofs();
    for (const analysis::Ceilings* c : {&rs.measured, &rs.datasheet}) {
      const auto& bw = c->bw(level_);
      if (!bw) continue;
      for (size_t i = 0; i < kPrecisionCount; ++i) {
        if (!(precision_mask_ >> i & 1u) || !c->compute[i]) continue;
        fit.push_back({std::log10(ridgeIntensity(bw->value, c->compute[i]->value)), std::log10(c->compute[i]->value)});
      }
    }
  }
  view_ = fitView(fit, 0.5);
  view_fitted_ = true;
  cull_valid_ = false;
}

std::optional<Vec2> Viewer::screenPosition(size_t item) const {
  for (size_t i = 0; i < point_items_.size(); ++i) {
    if (point_items_[i] == item && i < all_screen_.size()) return all_screen_[i];
  }
  return std::nullopt;
}

std::optional<Viewer::PngRequest> Viewer::takePngRequest() {
  auto r = png_request_;
  png_request_.reset();
  return r;
}

core::Status Viewer::exportCsv(const std::string& path) const {
  if (!run_) return core::makeError("nothing loaded");
  core::OutputRules rules = output_rules_;
  rules.what = "the table";
  auto out = core::OutputFile::create(path, rules);
  if (!out) return core::Error{out.error()};
  if (core::Status s = (*out)->write(tableCsv(items(), rows_, level_, run_->totalKernelNs())); !s) return s;
  return (*out)->commit();
}

void Viewer::frame() {
  const ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos({0, 0});
  ImGui::SetNextWindowSize(io.DisplaySize);
  ImGui::Begin("fprof-view", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                   ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoScrollWithMouse);
  tooltip_.clear();
  hovered_.reset();
  for (const std::string& e : errors_) ImGui::TextColored(ImColor(kErrorText), "%s", e.c_str());
  if (!run_) {
    ImGui::TextWrapped("Nothing to show. fprof-view opens a .fprof database: fprof view RUN.fprof [BASE.fprof]");
    ImGui::End();
    return;
  }
  if (rows_dirty_) rebuildRows();
  if (points_dirty_) rebuildPoints();
  drawToolbar();
  if (rows_dirty_) rebuildRows();
  if (points_dirty_) rebuildPoints();

  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float top_h = std::max(200.0f, avail.y * 0.62f);
  const float plot_w = std::max(300.0f, avail.x * 0.66f);
  ImGui::BeginChild("plot", {plot_w, top_h}, false, ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  drawPlot(plot_w, top_h);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("details", {0, top_h}, true);
  drawDetails();
  ImGui::EndChild();

  if (ImGui::BeginTabBar("tabs")) {
    if (beginTab("Kernels", Tab::kKernels)) {
      drawTable();
      ImGui::EndTabItem();
    }
    if (beginTab("Fusion", Tab::kFusion)) {
      drawFusion();
      ImGui::EndTabItem();
    }
    if (beginTab("Diff", Tab::kDiff)) {
      drawDiff();
      ImGui::EndTabItem();
    }
    if (rank_rows_.size() > 1 && beginTab("Ranks", Tab::kRanks)) {
      drawRanks();
      ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
  }
  pending_tab_.reset();
  ImGui::End();
  if (!tooltip_.empty()) {
    // Full kernel names run to hundreds of characters: wrap them.
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 45.0f);
    ImGui::TextUnformatted(tooltip_.c_str());
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}

// A tab of the bar under the plot, brought to the front when openTab asked for it.
bool Viewer::beginTab(const char* label, Tab t) {
  const ImGuiTabItemFlags flags = pending_tab_ == t ? ImGuiTabItemFlags_SetSelected : ImGuiTabItemFlags_None;
  if (!ImGui::BeginTabItem(label, nullptr, flags)) return false;
  shown_tab_ = t;
  return true;
}

void Viewer::drawToolbar() {
  const core::Profile& p = run_->profile();
  ImGui::Text("%s  |  %s  |  %zu launches, %lld with counters  |  kernel time %s", p.path.c_str(),
              run_->roofs().device_name.empty() ? "no device recorded" : shown(run_->roofs().device_name).c_str(),
              p.kernels.size(), static_cast<long long>(run_->kernelsWithCounters()),
              formatDurationNs(static_cast<double>(run_->totalKernelNs())).c_str());
  if (base_) {
    ImGui::SameLine();
    ImGui::Text("|  baseline %s", base_->profile().path.c_str());
  }

  drawRankFilter();
  int mode = static_cast<int>(mode_);
  ImGui::SetNextItemWidth(140);
  if (ImGui::Combo("points", &mode, "kernel launches\0kernel groups\0NVTX ops\0")) setMode(static_cast<PointMode>(mode));
  ImGui::SameLine();
  ImGui::TextUnformatted(" level:");
  for (size_t l = 0; l < kMemLevelCount; ++l) {
    ImGui::SameLine();
    if (ImGui::RadioButton(levelLabel(static_cast<MemLevel>(l)), level_ == static_cast<MemLevel>(l))) {
      setLevel(static_cast<MemLevel>(l));
    }
  }
  ImGui::SameLine();
  ImGui::TextUnformatted(" colour:");
  ImGui::SameLine();
  if (ImGui::RadioButton("op", colour_by_ == ColourBy::kOp)) {
    colour_by_ = ColourBy::kOp;
    points_dirty_ = true;
  }
  ImGui::SameLine();
  if (ImGui::RadioButton("bound", colour_by_ == ColourBy::kBound)) {
    colour_by_ = ColourBy::kBound;
    points_dirty_ = true;
  }
  ImGui::SameLine();
  ImGui::Checkbox("measured roofs", &show_measured_);
  ImGui::SameLine();
  ImGui::Checkbox("datasheet roofs", &show_datasheet_);
  ImGui::SameLine();
  if (ImGui::Button("reset view")) resetView();

  ImGui::TextUnformatted("precision:");
  for (size_t i = 0; i < kPrecisionCount; ++i) {
    ImGui::SameLine();
    bool on = precision_mask_ >> i & 1u;
    const std::string label(analysis::precisionName(static_cast<Precision>(i)));
    if (ImGui::Checkbox(label.c_str(), &on)) setPrecisionMask(on ? precision_mask_ | 1u << i : precision_mask_ & ~(1u << i));
  }

  ImGui::SetNextItemWidth(220);
  if (ImGui::InputText("name regex", name_buf_, sizeof name_buf_)) {
    filter_.name_regex = name_buf_;
    rows_dirty_ = true;
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(180);
  if (ImGui::InputText("NVTX range", nvtx_buf_, sizeof nvtx_buf_)) {
    filter_.nvtx = nvtx_buf_;
    rows_dirty_ = true;
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(170);
  ImGui::InputText("##png", png_path_, sizeof png_path_);
  ImGui::SameLine();
  if (ImGui::Button("save plot PNG")) requestPng(png_path_);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(150);
  ImGui::InputText("##csv", csv_path_, sizeof csv_path_);
  ImGui::SameLine();
  if (ImGui::Button("save table CSV")) {
    const core::Status st = exportCsv(csv_path_);
    status_ = st ? fmt::format("wrote {} ({} rows)", csv_path_, rows_.size()) : st.error();
  }
  if (!filter_error_.empty()) ImGui::TextColored(ImColor(kErrorText), "%s", filter_error_.c_str());
  if (!status_.empty()) ImGui::TextUnformatted(status_.c_str());
  const std::string note = run_->plotNote();
  if (!note.empty()) ImGui::TextColored(ImColor(IM_COL32(255, 210, 120, 255)), "%s", note.c_str());
}

void Viewer::drawRoofs(const LogMapping& map, ImDrawList* dl) {
  drawn_roofs_.clear();
  const RoofSet& rs = run_->roofs();
  struct Source {
    const analysis::Ceilings* c;
    bool datasheet;
    bool shown;
  };
  const std::array<Source, 2> sources = {Source{&rs.measured, false, show_measured_},
                                         Source{&rs.datasheet, true, show_datasheet_}};
  // The diagonals stop at the highest compute roof shown (the hierarchical roofline's top).
  double cap = 0;
  for (const Source& s : sources) {
    if (!s.shown) continue;
    for (size_t i = 0; i < kPrecisionCount; ++i) {
      if ((precision_mask_ >> i & 1u) && s.c->compute[i]) cap = std::max(cap, s.c->compute[i]->value);
    }
  }
  const View& v = map.view();
  for (const Source& s : sources) {
    if (!s.shown) continue;
    const char* src = s.datasheet ? "datasheet" : "measured";
    for (size_t l = 0; l < kMemLevelCount; ++l) {
      const auto& bw = s.c->bandwidth[l];
      if (!bw) continue;
      auto seg = bandwidthRoofSegment(bw->value, cap, v);
      if (!seg) continue;
      const bool current = static_cast<MemLevel>(l) == level_;
      const ImU32 col = current ? kLevelColour[l] : (kLevelColour[l] & 0x00FFFFFFu) | 0x90000000u;
      const Vec2 a = map.logToScreen(seg->a), b = map.logToScreen(seg->b);
      const float thick = current ? 3.0f : 1.5f;
      if (s.datasheet) {
        dashedLine(dl, a, b, col, thick);
      } else {
        dl->AddLine(im(a), im(b), col, thick);
      }
      drawn_roofs_.push_back({std::string(analysis::memLevelName(static_cast<MemLevel>(l))), s.datasheet, col, {a, b}});
      const std::string label = fmt::format("{} {} ({})", levelLabel(static_cast<MemLevel>(l)), formatSi(bw->value, "B/s"), src);
      // Labels part of the way along the line (lines entering at the bottom edge would stack at
      // its start); datasheet roofs (higher, to the left) above their line, measured ones below.
      const double f = 0.15 + 0.15 * static_cast<double>(l);  // staggered per level
      const Vec2 at{a.x + (b.x - a.x) * f, a.y + (b.y - a.y) * f};
      dl->AddText({static_cast<float>(at.x) + (s.datasheet ? -10.0f : 8.0f), static_cast<float>(at.y) + (s.datasheet ? -18.0f : 2.0f)},
                  col, label.c_str());
    }
    // Compute roofs start at their ridge with the current level's roof of the same source (or the other).
    const auto& bw_same = s.c->bw(level_);
    const auto& bw_other = (s.datasheet ? rs.measured : rs.datasheet).bw(level_);
    const double bw = bw_same ? bw_same->value : bw_other ? bw_other->value : 0;
    for (size_t i = 0; i < kPrecisionCount; ++i) {
      if (!(precision_mask_ >> i & 1u) || !s.c->compute[i]) continue;
      const double peak = s.c->compute[i]->value;
      auto seg = computeRoofSegment(peak, bw, v);
      if (!seg) continue;
      const Vec2 a = map.logToScreen(seg->a), b = map.logToScreen(seg->b);
      if (s.datasheet) {
        dashedLine(dl, a, b, kComputeColour, 1.5f);
      } else {
        dl->AddLine(im(a), im(b), kComputeColour, 2.5f);
      }
      const std::string name(analysis::precisionName(static_cast<Precision>(i)));
      drawn_roofs_.push_back({name, s.datasheet, kComputeColour, {a, b}});
      const std::string label = fmt::format("{} {} ({})", name, formatSi(peak, "FLOP/s"), src);
      const ImVec2 size = ImGui::CalcTextSize(label.c_str());
      dl->AddText({static_cast<float>(b.x) - size.x - 4, static_cast<float>(b.y) + (s.datasheet ? -size.y - 2 : 3.0f)},
                  kComputeColour, label.c_str());
      // The ridge point: where this compute roof meets the current level's bandwidth roof.
      if (bw > 0) {
        const double ridge = ridgeIntensity(bw, peak);
        const Vec2 r = map.logToScreen({std::log10(ridge), std::log10(peak)});
        if (map.screen().contains(r)) {
          const float d = 5;
          const auto rx = static_cast<float>(r.x), ry = static_cast<float>(r.y);
          dl->AddQuadFilled({rx, ry - d}, {rx + d, ry}, {rx, ry + d}, {rx - d, ry}, kComputeColour);
          const Vec2 m = vec(ImGui::GetIO().MousePos);
          if (tooltip_.empty() && std::hypot(m.x - r.x, m.y - r.y) <= d + 2) {
            tooltip_ = fmt::format("ridge: {} ({}) meets {} at {:.3g} FLOP/byte", name, src, levelLabel(level_), ridge);
          }
        }
      }
    }
  }
}

void Viewer::drawPlot(float width, float height) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  // Margins for tick labels and axis titles.
  constexpr float kLeft = 64, kBottom = 40, kTop = 20, kRight = 12;
  plot_rect_ = {origin.x + kLeft, origin.y + kTop, origin.x + width - kRight, origin.y + height - kBottom};
  if (plot_rect_.width() < 10 || plot_rect_.height() < 10) return;
  ImGui::InvisibleButton("plot_area", {width, height});
  const bool hovered_area = ImGui::IsItemHovered();
  const bool active = ImGui::IsItemActive();
  const ImGuiIO& io = ImGui::GetIO();
  const Vec2 mouse = vec(io.MousePos);

  if (hovered_area && plot_rect_.contains(mouse) && io.MouseWheel != 0) {
    view_ = zoomAt(view_, plot_rect_, mouse, std::pow(1.25, static_cast<double>(io.MouseWheel)));
  }
  if (active && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 3.0f)) {
    view_ = panBy(view_, plot_rect_, io.MouseDelta.x, io.MouseDelta.y);
  }
  if (hovered_area && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) resetView();

  const LogMapping map(view_, plot_rect_);
  dl->AddRectFilled(im({plot_rect_.x0, plot_rect_.y0}), im({plot_rect_.x1, plot_rect_.y1}), kBackground);
  // Decade grid and tick labels with units.
  for (int e : decadeTicks(view_.x_lo, view_.x_hi)) {
    const Vec2 s = map.logToScreen({static_cast<double>(e), view_.y_lo});
    dl->AddLine(im({s.x, plot_rect_.y0}), im({s.x, plot_rect_.y1}), kGrid);
    const std::string t = formatDecadePlain(e);
    const ImVec2 ts = ImGui::CalcTextSize(t.c_str());
    dl->AddText({static_cast<float>(s.x) - ts.x / 2, static_cast<float>(plot_rect_.y1) + 3}, kAxisText, t.c_str());
  }
  for (int e : decadeTicks(view_.y_lo, view_.y_hi)) {
    const Vec2 s = map.logToScreen({view_.x_lo, static_cast<double>(e)});
    dl->AddLine(im({plot_rect_.x0, s.y}), im({plot_rect_.x1, s.y}), kGrid);
    const std::string t = formatDecadeSi(e);
    const ImVec2 ts = ImGui::CalcTextSize(t.c_str());
    dl->AddText({static_cast<float>(plot_rect_.x0) - ts.x - 5, static_cast<float>(s.y) - ts.y / 2}, kAxisText, t.c_str());
  }
  const std::string xtitle = fmt::format("arithmetic intensity (FLOP/byte of {} traffic)", levelLabel(level_));
  const ImVec2 xs = ImGui::CalcTextSize(xtitle.c_str());
  dl->AddText({static_cast<float>((plot_rect_.x0 + plot_rect_.x1) / 2) - xs.x / 2, static_cast<float>(plot_rect_.y1) + 20},
              kAxisText, xtitle.c_str());
  dl->AddText({origin.x + 2, origin.y + 1}, kAxisText, "performance (FLOP/s)");

  dl->PushClipRect(im({plot_rect_.x0, plot_rect_.y0}), im({plot_rect_.x1, plot_rect_.y1}), true);

  // Points: map every plotted point, cull overdraw when the view changed, draw, hit-test.
  all_screen_.resize(point_log_.size());
  for (size_t i = 0; i < point_log_.size(); ++i) all_screen_[i] = map.logToScreen(point_log_[i]);
  if (!cull_valid_ || !(culled_view_ == view_) || culled_rect_.x0 != plot_rect_.x0 || culled_rect_.y0 != plot_rect_.y0 ||
      culled_rect_.x1 != plot_rect_.x1 || culled_rect_.y1 != plot_rect_.y1) {
    // Below a few thousand points every point is drawn; above, one per 2-pixel cell and colour.
    std::vector<uint32_t> keep;
    if (all_screen_.size() > 4000) {
      keep = cullOverlapping(all_screen_, point_colour_, plot_rect_, 2.0);
    } else {
      for (size_t i = 0; i < all_screen_.size(); ++i) {
        if (plot_rect_.contains(all_screen_[i])) keep.push_back(static_cast<uint32_t>(i));
      }
    }
    drawn_items_ = std::move(keep);  // indices into the point arrays
    culled_view_ = view_;
    culled_rect_ = plot_rect_;
    cull_valid_ = true;
  }
  drawn_centres_.resize(drawn_items_.size());
  drawn_radii_.resize(drawn_items_.size());
  const ImDrawListFlags saved_flags = dl->Flags;
  if (drawn_items_.size() > 4000) dl->Flags &= ~ImDrawListFlags_AntiAliasedFill;  // 4x fewer vertices
  for (size_t n = 0; n < drawn_items_.size(); ++n) {
    const uint32_t i = drawn_items_[n];
    drawn_centres_[n] = all_screen_[i];
    drawn_radii_[n] = point_radius_[i];
    const float r = point_radius_[i];
    if (r < 4.0f) {
      // Small points as squares of the same area: 2 triangles instead of a dozen, which is what
      // keeps 100,000 points interactive on a software rasterizer.
      const float h = r * 0.886f;
      const ImVec2 c = im(all_screen_[i]);
      dl->AddRectFilled({c.x - h, c.y - h}, {c.x + h, c.y + h}, point_colour_[i]);
    } else {
      dl->AddCircleFilled(im(all_screen_[i]), r, point_colour_[i], r < 8 ? 10 : 16);
    }
  }
  dl->Flags = saved_flags;
  points_drawn_ = drawn_items_.size();
  // Roofs over the points: kernels crowd right under their roof, and the roof is the reference.
  drawRoofs(map, dl);

  if (base_ && mode_ == PointMode::kKernelGroups) drawDiffOverlay(map, dl);
  if (selected_fusion_) {
    drawFusionOverlay(map, dl);
  } else {
    fusion_marks_ = {};
  }
  if (selected_) {
    if (auto s = screenPosition(*selected_)) {
      float r = 4;
      for (size_t i = 0; i < point_items_.size(); ++i) {
        if (point_items_[i] == *selected_) r = point_radius_[i];
      }
      dl->AddCircle(im(*s), r + 3, kSelectedRing, 24, 2.0f);
    }
  }
  dl->PopClipRect();

  if (hovered_area && plot_rect_.contains(mouse)) {
    if (auto hit = hitTest(drawn_centres_, drawn_radii_, mouse)) {
      hovered_ = point_items_[drawn_items_[*hit]];
      tooltip_ = tooltipText(items()[*hovered_], level_);
    }
  }
  // A click (press and release on the plot without a drag) selects the point under the mouse, or clears.
  if (ImGui::IsItemDeactivated() && plot_rect_.contains(mouse) && io.MouseDragMaxDistanceSqr[ImGuiMouseButton_Left] < 9.0f) {
    select(hovered_);
  }
}

void Viewer::drawDiffOverlay(const LogMapping& map, ImDrawList* dl) {
  arrows_drawn_ = 0;
  const auto& bi = base_->items(PointMode::kKernelGroups);
  const auto& ci = run_->items(PointMode::kKernelGroups);
  for (const DiffRow& r : diff_.kernels) {
    if (!r.base_item || !r.cur_item) continue;
    const auto b = itemPoint(bi[*r.base_item], level_);
    const auto c = itemPoint(ci[*r.cur_item], level_);
    if (!b || !c) continue;
    const auto bs = map.toScreen(b->x, b->y);
    const auto cs = map.toScreen(c->x, c->y);
    if (!bs || !cs) continue;
    const ImU32 col = r.change == Change::kRegression    ? kRegression
                      : r.change == Change::kImprovement ? kImprovement
                      : r.change == Change::kUntestable  ? kUntestable
                                                         : kUnchanged;
    dl->AddCircle(im(*bs), 4, col, 12, 1.5f);
    arrow(dl, *bs, *cs, col, r.change == Change::kRegression ? 2.5f : 1.5f);
    // A regression's current point gets a ring too: its arrow can be a few pixels long.
    if (r.change == Change::kRegression) dl->AddCircle(im(*cs), 9, kRegression, 20, 2.5f);
    ++arrows_drawn_;
  }
}

void Viewer::drawFusionOverlay(const LogMapping& map, ImDrawList* dl) {
  fusion_marks_ = {};
  const auto& views = run_->fusionViews();
  if (*selected_fusion_ >= views.size()) return;
  const FusionView& fv = views[*selected_fusion_];
  const analysis::FusionCandidate& c = fv.candidate;
  analysis::Work total;
  bool first = true;
  std::vector<Vec2> stage_screen;
  for (size_t s = 0; s < fv.stage_kernels.size(); ++s) {
    if (fv.stage_kernels[s].empty()) continue;
    const Document::Aggregate a = run_->aggregate(fv.stage_kernels[s]);
    if (first) {
      total = a.work;
      first = false;
    } else {
      total += a.work;
    }
    const auto pt = placementPoint(a.placement, level_);
    if (!pt) continue;
    const auto sp = map.toScreen(pt->x, pt->y);
    if (!sp) continue;
    stage_screen.push_back(*sp);
    ++fusion_marks_.stages;
    dl->AddCircle(im(*sp), 7, kFusion, 16, 2.0f);
    const std::string label = std::string(1, static_cast<char>('A' + std::min<size_t>(s, 25)));
    dl->AddText({static_cast<float>(sp->x) + 9, static_cast<float>(sp->y) - 16}, kFusion, label.c_str());
  }
  // Predicted fused point: the stages' work with the intermediate's write and read no longer
  // going through DRAM and L2 (it stays on chip), run in the analyzer's predicted fused time.
  if (!first && c.predicted_fused_ns && c.instances > 0) {
    analysis::Work fused = total;
    const double removed = 2.0 * c.intermediate_bytes.value_or(0) * static_cast<double>(c.instances);
    for (MemLevel l : {MemLevel::kDram, MemLevel::kL2}) {
      auto& b = fused.bytes[static_cast<size_t>(l)];
      if (b) b = *b - removed;
    }
    const auto flops = fused.totalFlops();
    const auto& bytes = fused.bytes[static_cast<size_t>(level_)];
    if (flops && bytes && *bytes > 0 && *c.predicted_fused_ns > 0) {
      const double rate = *flops / (*c.predicted_fused_ns * static_cast<double>(c.instances) * 1e-9);
      if (auto fp = map.toScreen(*flops / *bytes, rate)) {
        for (const Vec2& s : stage_screen) arrow(dl, s, *fp, kFusion, 1.5f);
        dl->AddCircle(im(*fp), 8, kFusion, 4, 2.0f);  // a diamond: predicted
        fusion_marks_.predicted = true;
        dl->AddText({static_cast<float>(fp->x) + 10, static_cast<float>(fp->y) - 6}, kFusion, "fused (predicted)");
      }
    }
  }
  if (!fv.fused_kernels.empty()) {
    const Document::Aggregate a = run_->aggregate(fv.fused_kernels);
    if (const auto pt = placementPoint(a.placement, level_)) {
      if (auto sp = map.toScreen(pt->x, pt->y)) {
        dl->AddCircleFilled(im(*sp), 6, kFusion, 16);
        fusion_marks_.measured = true;
        dl->AddText({static_cast<float>(sp->x) + 10, static_cast<float>(sp->y) + 4}, kFusion, "fused (measured)");
      }
    }
  }
}

std::vector<std::string> Viewer::findings() const {
  if (!run_) return {};
  if (findings_of_ != run_.get()) {
    findings_ = runFindings(*run_);
    // Against a baseline, the fusion applied since, predicted next to measured (as fprof report says it).
    if (base_ && !diff_.fusions.empty()) {
      findings_.insert(findings_.begin() + std::min<ptrdiff_t>(1, static_cast<ptrdiff_t>(findings_.size())),
                       "Applied fusion: " + appliedFusionText(diff_.fusions.front()) + ".");
    }
    findings_of_ = run_.get();
  }
  return findings_;
}

// Nothing selected: the findings first (what a first look should tell), then the legend and how
// to use the plot.
void Viewer::drawDetails() {
  if (selected_ && *selected_ < items().size()) {
    ImGui::TextWrapped("%s", run_->details(mode_, *selected_).c_str());
    if (ImGui::Button("clear selection")) select(std::nullopt);
    return;
  }
  ImGui::TextColored(ImColor(kAxisText), "Findings");
  for (const std::string& f : findings()) {
    ImGui::Bullet();
    ImGui::TextWrapped("%s", shown(f).c_str());
  }
  ImGui::Separator();
  ImGui::TextWrapped("Click a point or a table row for its details.");
  ImGui::TextWrapped("Points: %zu plotted (%zu drawn) of %zu %s. Size: share of time; colour: %s.", points_plotted_,
                     points_drawn_, items().size(), pointModeName(mode_), colour_by_ == ColourBy::kOp ? "NVTX op" : "bound");
  ImGui::TextWrapped("Wheel: zoom. Drag: pan. Double-click: reset. Solid roofs are measured, dashed ones datasheet.");
  if (colour_by_ == ColourBy::kBound) {
    for (analysis::Bound b : {analysis::Bound::kMemory, analysis::Bound::kCompute, analysis::Bound::kLatency,
                              analysis::Bound::kLaunch, analysis::Bound::kUnknown}) {
      ImGui::TextColored(ImColor(boundColour(b)), "  %s", std::string(analysis::boundName(b)).c_str());
    }
  } else {
    const auto& ops = run_->opNames();
    for (size_t o = 0; o < ops.size() && o < 12; ++o) {
      ImGui::TextColored(ImColor(kPalette[o % kPalette.size()]), "  %s", shown(ops[o]).c_str());
    }
    if (ops.size() > 12) ImGui::Text("  ... %zu ops", ops.size());
  }
}

void Viewer::drawTable() {
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY |
                                     ImGuiTableFlags_ScrollX | ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersV |
                                     ImGuiTableFlags_SizingFixedFit;
  ImGui::Text("%zu of %zu rows", rows_.size(), items().size());
  if (!ImGui::BeginTable("kernels", static_cast<int>(kColumnCount), kFlags)) return;
  ImGui::TableSetupScrollFreeze(1, 1);
  for (size_t c = 0; c < kColumnCount; ++c) {
    ImGuiTableColumnFlags f = ImGuiTableColumnFlags_PreferSortDescending;
    if (static_cast<Column>(c) == Column::kTime) f |= ImGuiTableColumnFlags_DefaultSort;
    if (static_cast<Column>(c) == Column::kName) f = ImGuiTableColumnFlags_WidthFixed;
    ImGui::TableSetupColumn(columnName(static_cast<Column>(c)), f, static_cast<Column>(c) == Column::kName ? 380.0f : 0.0f,
                            static_cast<ImGuiID>(c));
  }
  ImGui::TableHeadersRow();
  if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs()) {
    if (specs->SpecsDirty && specs->SpecsCount > 0) {
      const auto col = static_cast<Column>(specs->Specs[0].ColumnUserID);
      const bool asc = specs->Specs[0].SortDirection == ImGuiSortDirection_Ascending;
      if (col != sort_column_ || asc != sort_ascending_) sortBy(col, asc);
      specs->SpecsDirty = false;
    }
  }
  if (rows_dirty_) rebuildRows();
  const int64_t total = run_->totalKernelNs();
  const float row_h = ImGui::GetTextLineHeightWithSpacing();
  if (scroll_to_selected_ && selected_) {
    for (size_t r = 0; r < rows_.size(); ++r) {
      if (rows_[r] == *selected_) {
        ImGui::SetScrollY(static_cast<float>(r) * row_h);
        break;
      }
    }
    scroll_to_selected_ = false;
  }
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(rows_.size()));
  while (clipper.Step()) {
    for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
      const uint32_t i = rows_[static_cast<size_t>(r)];
      const Item& it = items()[i];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::PushID(static_cast<int>(i));
      const std::string shown_name = cellText(it, Column::kName, level_, total);
      if (ImGui::Selectable(shown_name.c_str(), selected_ == i, ImGuiSelectableFlags_SpanAllColumns)) {
        selected_ = i;  // no scroll: the row is already in view
      }
      if (ImGui::IsItemHovered()) {
        hovered_ = i;
        if (shown_name != it.name) tooltip_ = shown(it.name);
      }
      ImGui::PopID();
      for (size_t c = 1; c < kColumnCount; ++c) {
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(cellText(it, static_cast<Column>(c), level_, total).c_str());
      }
    }
  }
  ImGui::EndTable();
}

void Viewer::drawFusion() {
  const analysis::FusionResult& f = run_->fusion();
  for (const std::string& n : f.notes) ImGui::TextWrapped("note: %s", shown(n).c_str());
  if (f.median_abs_error) {
    ImGui::Text("model error (median |predicted - measured| / measured over %lld measured pairs): %.1f%%",
                static_cast<long long>(f.measured_pairs), *f.median_abs_error * 100);
  }
  const auto& views = run_->fusionViews();
  if (views.empty()) {
    ImGui::TextUnformatted("No fusion candidates in this run.");
    return;
  }
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_ScrollX |
                                     ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersV | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("fusion", 11, kFlags)) return;
  ImGui::TableSetupScrollFreeze(1, 1);
  for (const char* h : {"#", "candidate", "kernels", "instances", "unfused", "predicted fused", "payoff", "share",
                        "measured fused", "model error", "verdict"}) {
    ImGui::TableSetupColumn(h);
  }
  ImGui::TableHeadersRow();
  auto ns = [](const std::optional<double>& v) { return v ? formatDurationNs(*v) : std::string("n/a"); };
  for (size_t i = 0; i < views.size(); ++i) {
    const analysis::FusionCandidate& c = views[i].candidate;
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::PushID(static_cast<int>(i));
    if (ImGui::Selectable(std::to_string(i + 1).c_str(), selected_fusion_ == i, ImGuiSelectableFlags_SpanAllColumns)) {
      selected_fusion_ = selected_fusion_ == i ? std::nullopt : std::optional<size_t>(i);
    }
    ImGui::PopID();
    const analysis::KernelNames& names = run_->kernelNames();
    // Named by its pattern and ops; its kernels by their short names beside.
    const std::string stages = names.chainLabel(c.stages);
    const std::array<std::string, 10> cells = {
        c.op.empty() ? c.name : fmt::format("{}: {}", c.op, c.name),
        stages,
        std::to_string(c.instances),
        formatDurationNs(c.unfused_ns),
        ns(c.predicted_fused_ns),
        ns(c.total_saving_ns),
        c.program_share ? fmt::format("{:.1f}%", *c.program_share * 100) : "n/a",
        ns(c.measured_fused_ns),
        c.prediction_error ? fmt::format("{:+.1f}%", *c.prediction_error * 100) : "n/a",
        c.fuse ? "fuse: " + c.suggestion + (c.risks.empty() ? "" : "; risk: " + c.risks.front()) : "don't: " + c.reason};
    for (const std::string& s : cells) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(shown(s).c_str());
    }
  }
  ImGui::EndTable();
}

void Viewer::drawDiff() {
  if (!base_) {
    ImGui::TextWrapped("No baseline. Open one to compare: fprof view RUN.fprof BASE.fprof");
    return;
  }
  for (const std::string& w : diff_.warnings) ImGui::TextColored(ImColor(kUntestable), "warning: %s", shown(w).c_str());
  drawAppliedFusions();
  int64_t regressions = 0;
  for (const DiffRow& r : diff_.kernels) regressions += r.change == Change::kRegression;
  ImGui::Text("%zu kernels compared (as fprof gate does), %lld regression(s). Arrows on kernel-group points: baseline -> "
              "current; red = regression, amber = slower but not significant, green = faster.",
              diff_.kernels.size(), static_cast<long long>(regressions));
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_ScrollX |
                                     ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersV | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("diff", 8, kFlags)) return;
  ImGui::TableSetupScrollFreeze(1, 1);
  for (const char* h : {"change", "kernel", "launch shape", "base median", "current median", "time", "p (slower)", "why (fprof gate)"}) {
    ImGui::TableSetupColumn(h);
  }
  ImGui::TableHeadersRow();
  for (size_t i = 0; i < diff_.kernels.size(); ++i) {
    const DiffRow& r = diff_.kernels[i];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::PushID(static_cast<int>(i));
    const ImU32 col = r.change == Change::kRegression    ? kRegression
                      : r.change == Change::kImprovement ? kImprovement
                      : r.change == Change::kUntestable  ? kUntestable
                                                         : kAxisText;
    ImGui::PushStyleColor(ImGuiCol_Text, col);
    if (ImGui::Selectable(changeName(r.change), r.cur_item && selected_ == r.cur_item, ImGuiSelectableFlags_SpanAllColumns) &&
        r.cur_item) {
      setMode(PointMode::kKernelGroups);
      select(r.cur_item);
    }
    ImGui::PopStyleColor();
    ImGui::PopID();
    const std::array<std::string, 7> cells = {
        r.short_name.empty() ? r.name : r.short_name,
        r.shape,
        r.base_median_ns ? formatDurationNs(*r.base_median_ns) : "-",
        r.cur_median_ns ? formatDurationNs(*r.cur_median_ns) : "-",
        r.time_change ? fmt::format("{:+.1f}%", *r.time_change * 100) : "n/a",
        r.p_value ? fmt::format("{:.3g}", *r.p_value) : "n/a",
        r.why};
    for (const std::string& s : cells) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(shown(s).c_str());
    }
  }
  ImGui::EndTable();
}

// The baseline's fusion candidates this run runs fused, as fprof diff lists them: the saving the
// model predicted for those instances next to the one measured, and the error.
void Viewer::drawAppliedFusions() {
  applied_fusions_drawn_ = 0;
  ImGui::TextWrapped("Fusions applied: %s", shown(appliedFusionsSummary(diff_)).c_str());
  for (const std::string& n : diff_.outcomes.notes) ImGui::TextColored(ImColor(kUntestable), "note: %s", shown(n).c_str());
  if (diff_.fusions.empty()) return;
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_ScrollX |
                                     ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersV | ImGuiTableFlags_SizingFixedFit;
  // A few rows high: the kernel rows below keep the rest of the tab.
  const float row_h = ImGui::GetTextLineHeightWithSpacing();
  const float height = row_h * (static_cast<float>(std::min<size_t>(diff_.fusions.size(), 4)) + 1.6f);
  if (!ImGui::BeginTable("applied fusions", 7, kFlags, ImVec2(0, height))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  for (const char* h : {"found by", "instances", "launches", "predicted", "measured", "error", "candidate (baseline)"}) {
    ImGui::TableSetupColumn(h);
  }
  ImGui::TableHeadersRow();
  for (const AppliedFusion& f : diff_.fusions) {
    ImGui::TableNextRow();
    for (const std::string& cell : appliedFusionCells(f)) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(shown(cell).c_str());
    }
    ++applied_fusions_drawn_;
  }
  ImGui::EndTable();
  ImGui::Separator();
}

// The rank combo, on databases of several ranks only: "all ranks" or one of them.
void Viewer::drawRankFilter() {
  if (rank_groups_.size() < 2) return;
  const std::string current = rank_ ? "rank " + std::to_string(*rank_) : "all ranks";
  ImGui::SetNextItemWidth(120);
  if (ImGui::BeginCombo("rank", current.c_str())) {
    if (ImGui::Selectable("all ranks", !rank_)) {
      if (core::Status st = setRank(std::nullopt); !st) status_ = st.error();
    }
    for (const core::RankGroup& g : rank_groups_) {
      if (!g.rank) continue;  // a process without a rank is shown with all of them
      if (ImGui::Selectable(shown(g.label).c_str(), rank_ == g.rank)) {
        if (core::Status st = setRank(g.rank); !st) status_ = st.error();
      }
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
}

// One row per rank: where it ran, its kernel time, NCCL share and top kernel; a click shows it.
void Viewer::drawRanks() {
  ImGui::TextUnformatted("Kernel time per rank (trace). NCCL = share of the rank's kernel time in NCCL kernels. "
                         "Click a rank to show it alone.");
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_ScrollX |
                                     ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersV | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("ranks", 9, kFlags)) return;
  ImGui::TableSetupScrollFreeze(1, 1);
  for (const char* h : {"rank", "host", "device", "mode", "kernels", "kernel time", "share", "NCCL", "top kernel"}) {
    ImGui::TableSetupColumn(h);
  }
  ImGui::TableHeadersRow();
  auto percent = [](const std::optional<double>& v) { return v ? fmt::format("{:.1f}%", *v * 100) : std::string("n/a"); };
  for (size_t i = 0; i < rank_rows_.size(); ++i) {
    const analysis::RankRow& r = rank_rows_[i];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::PushID(static_cast<int>(i));
    const bool selectable = r.group.rank.has_value();
    if (ImGui::Selectable(r.group.rank ? std::to_string(*r.group.rank).c_str() : shown(r.group.label).c_str(),
                          selectable && rank_ == r.group.rank, ImGuiSelectableFlags_SpanAllColumns) &&
        selectable) {
      if (core::Status st = setRank(rank_ == r.group.rank ? std::nullopt : r.group.rank); !st) status_ = st.error();
    }
    ImGui::PopID();
    const std::array<std::string, 8> cells = {
        r.hosts, r.devices, r.mode, std::to_string(r.kernel_count),
        formatDurationNs(static_cast<double>(r.total_kernel_ns)), percent(r.share), percent(r.nccl_share),
        r.top_kernel.empty() ? "none"
                             : percent(r.topKernelShare()) + "  " + all_run_->kernelNames().shortName(r.top_kernel)};
    for (const std::string& c : cells) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(shown(c).c_str());
    }
  }
  ImGui::EndTable();
}

}  // namespace fprof::gui
