// The roofline chart as inline SVG: log-log axes, one diagonal roof per memory level, one flat
// roof per precision, one point per kernel group (measured counters) and, with a baseline,
// arrows from each group's old place to its new one.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>

#include "fprof/reports/escape.h"
#include "fprof/reports/format.h"
#include "fprof/reports/html_report.h"
#include "palette.h"

namespace fprof::reports {
namespace {

// Sized for the report's first screen, beside the findings; compute roofs are labelled inside the
// plot at its right edge.
constexpr double kWidth = 620, kHeight = 330;
constexpr double kLeft = 90, kRight = 22, kTop = 10, kBottom = 42;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;

struct Axes {
  double lx0 = -2, lx1 = 3, ly0 = 9, ly1 = 15;  // log10 of the ranges
  double x(double v) const { return kLeft + (std::log10(v) - lx0) / (lx1 - lx0) * kPlotW; }
  double y(double v) const { return kTop + kPlotH - (std::log10(v) - ly0) / (ly1 - ly0) * kPlotH; }
  double xmin() const { return std::pow(10.0, lx0); }
  double xmax() const { return std::pow(10.0, lx1); }
  double ymin() const { return std::pow(10.0, ly0); }
  double ymax() const { return std::pow(10.0, ly1); }
};

std::string decadeLabel(int k, const char* unit) {
  static const char* const kPrefix[] = {"", "k", "M", "G", "T", "P", "E"};
  if (k < 0 || *unit == '\0') {
    if (k >= 0 && k <= 4) return fmt::format("{}", static_cast<long long>(std::llround(std::pow(10.0, k))));
    if (k < 0 && k >= -3) return fmt::format("{:.{}f}", std::pow(10.0, k), -k);
    return fmt::format("1e{}", k);
  }
  const int p = std::min(k / 3, 6);
  const int rest = k - 3 * p;
  return fmt::format("{} {}{}", rest == 0 ? 1 : (rest == 1 ? 10 : 100), kPrefix[p], unit);
}

std::string roofLabel(const Roof& r) {
  std::string name = r.name == "dram" ? "DRAM" : (r.name == "l2" ? "L2" : (r.name == "l1" ? "L1" : r.name));
  return fmt::format("{} {} ({})", name, r.is_bandwidth ? formatByteRate(r.value) : formatFlopRate(r.value), r.source);
}

std::string groupTitle(const GroupRow& g) {
  // The short name, then the full one: each cut for display on its own.
  const std::string names =
      g.short_name == g.name ? shownText(g.name) : shownText(g.short_name) + "\n" + shownText(g.name);
  std::string t = fmt::format("{}\ngrid {} block {}\nop: {}\ntime {} ({} of kernel time), {} calls", names, g.grid,
                              g.block, g.op.empty() ? "(none)" : shownText(g.op),
                              formatDurationNs(static_cast<double>(g.total_ns)), formatPercent(g.share), g.calls);
  t += "\nintensity (DRAM) " + orNa(g.intensity_dram, formatIntensity);
  t += "\nachieved " + orNa(g.flops_per_s, formatFlopRate);
  t += "\n" + formatPercent(g.roof_fraction) + " of roof" + (g.binding_roof.empty() ? "" : " (" + g.binding_roof + ")");
  if (!g.bound.empty()) t += ", " + g.bound + " bound";
  return t;
}

double pointRadius(double share) { return 3.0 + 11.0 * std::sqrt(std::clamp(share, 0.0, 1.0)); }

}  // namespace

std::string renderRooflineSvg(const ReportData& report) {
  if (!report.header.has_counters) {
    return "<div class=\"nochart\" id=\"roofline-none\"><p><b>No roofline for this run.</b> It was recorded in "
           "trace mode: kernels were timed, but no hardware counters (bytes moved per memory level, FLOPs per "
           "precision) were collected, so no kernel has an arithmetic intensity or an achieved FLOP/s, and "
           "placing points would be guessing.</p><p>Record the counters with <code>fprof run --metrics roofline "
           "-o run.fprof ./program</code>, then build this report again.</p></div>\n";
  }
  std::vector<const GroupRow*> pts;
  for (const GroupRow& g : report.groups) {
    if (g.onRoofline()) pts.push_back(&g);
  }
  if (pts.empty()) {
    return "<div class=\"nochart\" id=\"roofline-none\"><p><b>No roofline points.</b> The run has counters, "
           "but no listed kernel group has both FLOPs and DRAM bytes (pure data movement has no arithmetic "
           "intensity); see the kernel table for bytes/s.</p></div>\n";
  }
  // Compute roofs: the precisions the plotted kernels mostly run in, plus fp32 as the reference;
  // a roof for every precision the GPU has would bury the chart (the ceilings table lists them all).
  std::vector<const Roof*> compute_roofs;
  std::vector<const Roof*> memory_roofs;
  for (const Roof& r : report.roofs) {
    if (r.is_bandwidth) {
      if (r.name == "dram" || r.name == "l2" || r.name == "l1") memory_roofs.push_back(&r);
      continue;
    }
    bool used = r.name == "fp32";
    for (const GroupRow* g : pts) used = used || g->precision == r.name;
    if (used) compute_roofs.push_back(&r);
  }
  double peak_compute = 0, min_compute = 0, max_bw = 0, min_bw = 0;
  for (const Roof* r : memory_roofs) {
    max_bw = std::max(max_bw, r->value);
    min_bw = min_bw == 0 ? r->value : std::min(min_bw, r->value);
  }
  for (const Roof* r : compute_roofs) {
    peak_compute = std::max(peak_compute, r->value);
    min_compute = min_compute == 0 ? r->value : std::min(min_compute, r->value);
  }
  // Ranges: every point (current and baseline) and every roof's knee, padded to whole decades.
  double xlo = 1e300, xhi = 0, ylo = 1e300, yhi = 0;
  auto include = [&](double x, double y) {
    xlo = std::min(xlo, x), xhi = std::max(xhi, x), ylo = std::min(ylo, y), yhi = std::max(yhi, y);
  };
  for (const GroupRow* g : pts) {
    include(*g->intensity_dram, *g->flops_per_s);
    if (g->base_intensity_dram && g->base_flops_per_s && *g->base_intensity_dram > 0 && *g->base_flops_per_s > 0 &&
        std::isfinite(*g->base_intensity_dram) && std::isfinite(*g->base_flops_per_s)) {
      include(*g->base_intensity_dram, *g->base_flops_per_s);
    }
  }
  if (peak_compute > 0 && max_bw > 0) {
    include(min_compute / max_bw, peak_compute);
    include(peak_compute / min_bw, min_compute);
  } else if (peak_compute > 0) {
    yhi = std::max(yhi, peak_compute);
  }
  Axes ax;
  ax.lx0 = std::floor(std::log10(xlo) - 0.3);
  ax.lx1 = std::ceil(std::log10(xhi) + 0.3);
  ax.ly1 = std::ceil(std::log10(yhi) + 0.15);
  ax.ly0 = std::max(std::floor(std::log10(ylo) - 0.3), ax.ly1 - 9);  // nine decades are plenty
  if (ax.lx1 - ax.lx0 < 2) ax.lx1 = ax.lx0 + 2;
  if (ax.ly1 - ax.ly0 < 2) ax.ly0 = ax.ly1 - 2;

  std::string s;
  s.reserve(4096 + pts.size() * 400);
  s += fmt::format(
      "<svg id=\"roofline\" class=\"roofline\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" "
      "role=\"img\" aria-labelledby=\"roofline-title\" data-points=\"{}\">\n"
      "<title id=\"roofline-title\">Roofline: achieved FLOP/s against arithmetic intensity (DRAM), log-log</title>\n"
      "<defs><marker id=\"arrowhead\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
      "markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"#444\"/></marker>"
      "<clipPath id=\"plotclip\"><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/></clipPath></defs>\n",
      kWidth, kHeight, pts.size(), kLeft, kTop, kPlotW, kPlotH);
  s += fmt::format("<rect class=\"plot\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>\n", kLeft,
                   kTop, kPlotW, kPlotH);
  // Grid and ticks at each decade.
  for (int k = static_cast<int>(ax.lx0); k <= static_cast<int>(ax.lx1); ++k) {
    const double px = ax.x(std::pow(10.0, k));
    s += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>"
                     "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
                     px, kTop, kTop + kPlotH, kTop + kPlotH + 16, decadeLabel(k, ""));
  }
  for (int k = static_cast<int>(ax.ly0); k <= static_cast<int>(ax.ly1); ++k) {
    const double py = ax.y(std::pow(10.0, k));
    s += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\"/>"
                     "<text class=\"tick\" x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                     kLeft, py, kLeft + kPlotW, kLeft - 6, py + 4, decadeLabel(k, "FLOP/s"));
  }
  s += fmt::format("<text class=\"axis\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">Arithmetic intensity "
                   "(FLOP per DRAM byte)</text>\n",
                   kLeft + kPlotW / 2, kHeight - 8);
  s += fmt::format("<text class=\"axis\" transform=\"translate(12 {:.1f}) rotate(-90)\" text-anchor=\"middle\">"
                   "Achieved performance (FLOP/s)</text>\n",
                   kTop + kPlotH / 2);

  // Roofs. The diagonal of a memory level runs up to the highest compute roof; each compute roof
  // starts where it meets the fastest memory level.
  s += "<g class=\"roofs\" clip-path=\"url(#plotclip)\">\n";
  const double slope_deg = -std::atan((kPlotH / (ax.ly1 - ax.ly0)) / (kPlotW / (ax.lx1 - ax.lx0))) * 180.0 /
                           std::numbers::pi;
  int label_slot = 0;
  for (const Roof* rp : memory_roofs) {
    const Roof& r = *rp;
    const double x_end = peak_compute > 0 ? peak_compute / r.value : ax.xmax();
    const double x_start = std::max(ax.xmin(), ax.ymin() / r.value);
    if (x_start >= x_end) continue;
    s += fmt::format("<line class=\"roof roof-bw roof-{}\" data-roof=\"{}\" x1=\"{:.1f}\" y1=\"{:.1f}\" "
                     "x2=\"{:.1f}\" y2=\"{:.1f}\"><title>{}</title></line>\n",
                     htmlEscapeShown(r.name), htmlEscapeShown(r.name), ax.x(x_start), ax.y(x_start * r.value), ax.x(x_end),
                     ax.y(x_end * r.value), htmlEscapeShown(roofLabel(r) + ": " + r.method));
    // Label along the line, a little in from its start, staggered so levels do not overlap.
    const double lx = std::pow(10.0, std::log10(x_start) + (std::log10(x_end) - std::log10(x_start)) * (0.12 + 0.1 * label_slot));
    s += fmt::format("<text class=\"roof-label\" transform=\"translate({:.1f} {:.1f}) rotate({:.1f})\">{}</text>\n",
                     ax.x(lx), ax.y(lx * r.value) - 5, slope_deg, htmlEscapeShown(roofLabel(r)));
    ++label_slot;
  }
  s += "</g>\n";
  // Compute roofs, labelled at the right edge; labels are pushed apart so close roofs stay legible.
  std::vector<std::pair<double, const Roof*>> labels;
  for (const Roof* rp : compute_roofs) {
    const Roof& r = *rp;
    const double x_start = max_bw > 0 ? std::max(ax.xmin(), r.value / max_bw) : ax.xmin();
    if (r.value < ax.ymin() || r.value > ax.ymax()) continue;
    s += fmt::format("<line class=\"roof roof-compute\" data-roof=\"{}\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" "
                     "y2=\"{:.1f}\"><title>{}</title></line>\n",
                     htmlEscapeShown(r.name), ax.x(x_start), ax.y(r.value), kLeft + kPlotW, ax.y(r.value),
                     htmlEscapeShown(roofLabel(r) + ": " + r.method));
    labels.emplace_back(ax.y(r.value) - 4, &r);
  }
  // Above each roof, right-aligned; a label that would run into the one above moves up.
  std::sort(labels.begin(), labels.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 1; i < labels.size(); ++i) labels[i].first = std::min(labels[i].first, labels[i - 1].first - 13);
  for (const auto& [y, r] : labels) {
    s += fmt::format("<text class=\"roof-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
                     kLeft + kPlotW - 4, std::max(y, kTop + 10), htmlEscapeShown(roofLabel(*r)));
  }

  // Baseline arrows under the points.
  const Palette palette = opPalette(report);
  std::string arrows, levels, points;
  for (size_t i = 0; i < report.groups.size(); ++i) {
    const GroupRow& g = report.groups[i];
    if (!g.onRoofline()) continue;
    const double cx = ax.x(*g.intensity_dram), cy = ax.y(*g.flops_per_s);
    if (g.base_intensity_dram && g.base_flops_per_s && *g.base_intensity_dram > 0 && *g.base_flops_per_s > 0 &&
        std::isfinite(*g.base_intensity_dram) && std::isfinite(*g.base_flops_per_s)) {
      const double bx = ax.x(*g.base_intensity_dram), by = ax.y(*g.base_flops_per_s);
      arrows += fmt::format("<circle class=\"pt-base\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\"/>", bx, by);
      if (std::hypot(cx - bx, cy - by) > 2.0) {
        arrows += fmt::format("<line class=\"arrow\" data-g=\"{}\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" "
                              "y2=\"{:.1f}\" marker-end=\"url(#arrowhead)\"/>",
                              i, bx, by, cx, cy);
      }
      arrows += "\n";
    }
    // The same FLOP/s against L2 and L1 bytes: the hierarchical roofline's other two points.
    const std::pair<const char*, const std::optional<double>*> lv[] = {{"l2", &g.intensity_l2}, {"l1", &g.intensity_l1}};
    for (const auto& [level, v] : lv) {
      if (!*v || !(**v > 0) || !std::isfinite(**v)) continue;
      levels += fmt::format("<rect class=\"lvl lvl-{}\" data-g=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"6\" "
                            "height=\"6\"><title>{} intensity {}</title></rect>\n",
                            level, i, ax.x(**v) - 3, cy - 3, level, formatIntensity(**v));
    }
  }
  // Points, largest first so small ones stay on top and can be hovered.
  std::vector<size_t> order;
  for (size_t i = 0; i < report.groups.size(); ++i) {
    if (report.groups[i].onRoofline()) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return report.groups[a].share > report.groups[b].share; });
  for (size_t i : order) {
    const GroupRow& g = report.groups[i];
    // Coloured by op; the page's "% of roof" view swaps in the other colour.
    points += fmt::format("<circle class=\"pt\" data-g=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{:.1f}\" fill=\"{}\" "
                          "data-op-fill=\"{}\" data-roof-fill=\"{}\"><title>{}</title></circle>\n",
                          i, ax.x(*g.intensity_dram), ax.y(*g.flops_per_s), pointRadius(g.share),
                          palette.colour(g.op), palette.colour(g.op), roofColour(g.roof_fraction),
                          htmlEscapeShown(groupTitle(g)));
  }
  s += "<g class=\"levels\" clip-path=\"url(#plotclip)\">\n" + levels + "</g>\n";
  s += "<g class=\"arrows\" clip-path=\"url(#plotclip)\">\n" + arrows + "</g>\n";
  s += "<g class=\"points\">\n" + points + "</g>\n</svg>\n";
  return s;
}

}  // namespace fprof::reports
