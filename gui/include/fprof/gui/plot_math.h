// Roofline plot geometry with no GUI in it: log-log mapping between data and screen, decade
// ticks, roof polylines and ridge points, hit testing, zoom and pan, and overdraw culling.
// The viewer draws what these functions return; the unit tests check them with exact values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fprof::gui {

struct Vec2 {
  double x = 0;
  double y = 0;
  bool operator==(const Vec2&) const = default;
};

// The visible window of the plot in log10 units: x = log10(FLOP/byte), y = log10(FLOP/s).
struct View {
  double x_lo = -2, x_hi = 4;
  double y_lo = 9, y_hi = 16;
  bool operator==(const View&) const = default;
};

// A screen rectangle in pixels, y growing downwards (as in ImGui and image files).
struct Rect {
  double x0 = 0, y0 = 0, x1 = 1, y1 = 1;
  double width() const { return x1 - x0; }
  double height() const { return y1 - y0; }
  bool contains(Vec2 p) const { return p.x >= x0 && p.x <= x1 && p.y >= y0 && p.y <= y1; }
};

// Maps (intensity FLOP/byte, rate FLOP/s) to pixels and back through log10 on both axes.
class LogMapping {
 public:
  LogMapping(const View& view, const Rect& screen) : view_(view), screen_(screen) {}
  // None for a value that has no logarithm (<= 0): such a point cannot sit on a log-log plot.
  std::optional<Vec2> toScreen(double intensity, double rate) const;
  Vec2 logToScreen(Vec2 log_point) const;
  Vec2 screenToLog(Vec2 screen_point) const;
  Vec2 screenToData(Vec2 screen_point) const;  // (intensity, rate)
  const View& view() const { return view_; }
  const Rect& screen() const { return screen_; }

 private:
  View view_;
  Rect screen_;
};

// Integer decades e with lo <= e <= hi (ticks at 10^e).
std::vector<int> decadeTicks(double log_lo, double log_hi);

// "10 G", "1 T", "0.01", "100": a decade with an SI prefix for rates, plain for intensities.
std::string formatDecadeSi(int exponent);
std::string formatDecadePlain(int exponent);
// A value with an SI prefix and unit: formatSi(1.5e12, "FLOP/s") = "1.50 TFLOP/s".
std::string formatSi(double value, const std::string& unit);

// The intensity (FLOP/byte) where a bandwidth roof meets a compute roof.
double ridgeIntensity(double bandwidth_bytes_per_s, double peak_flops_per_s);
// min(bandwidth * intensity, peak): the attainable rate at an intensity.
double attainableRate(double intensity, double bandwidth_bytes_per_s, double peak_flops_per_s);

// A straight segment in log space.
struct Segment {
  Vec2 a;
  Vec2 b;
};

// The diagonal of a bandwidth roof in log space from the view's left edge up to where it meets
// `cap_flops_per_s` (the highest compute roof shown) or the right edge. None when the segment lies
// entirely outside the view.
std::optional<Segment> bandwidthRoofSegment(double bandwidth_bytes_per_s, double cap_flops_per_s, const View& view);
// The horizontal compute roof from its ridge with `bandwidth_bytes_per_s` to the right edge.
std::optional<Segment> computeRoofSegment(double peak_flops_per_s, double bandwidth_bytes_per_s, const View& view);

// Clips a log-space segment to the view rectangle (Liang-Barsky). None when fully outside.
std::optional<Segment> clipToView(Segment s, const View& view);

// Index of the point under the mouse: among points whose disc (radius + slack pixels) contains
// the mouse, the one whose centre is nearest; ties go to the later point (drawn on top).
// Points with radius < 0 are hidden and never hit.
std::optional<size_t> hitTest(const std::vector<Vec2>& centres, const std::vector<float>& radii, Vec2 mouse,
                              double slack_px = 2.0);

// Zooms by `factor` (> 1 zooms in) keeping the data under `anchor` (a screen point) fixed.
View zoomAt(const View& view, const Rect& screen, Vec2 anchor, double factor);
// Pans by a mouse drag of (dx, dy) pixels: the data follows the mouse.
View panBy(const View& view, const Rect& screen, double dx_px, double dy_px);
// The smallest view on whole decades holding every (log) point, with at least `margin_decades`
// around them; a default view when there is nothing to hold.
View fitView(const std::vector<Vec2>& log_points, double margin_decades = 0.5);

// Radius in pixels of a point whose share of the shown time is `time_share` (0..1): area grows
// with time, between min_px and max_px.
float pointRadius(double time_share, float min_px = 2.5f, float max_px = 18.0f);

// Overdraw culling for very many points: keeps, per screen cell of `cell_px` pixels and per
// colour, only the first point listed (callers list big points first). Points already
// off-screen are dropped. Returns indices into centres, in the input order.
std::vector<uint32_t> cullOverlapping(const std::vector<Vec2>& centres, const std::vector<uint32_t>& colours,
                                      const Rect& screen, double cell_px);

}  // namespace fprof::gui
