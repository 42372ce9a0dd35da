// Roofline plot geometry (see plot_math.h). Pure arithmetic: no ImGui, no GL.
#include "fprof/gui/plot_math.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_set>

namespace fprof::gui {

std::optional<Vec2> LogMapping::toScreen(double intensity, double rate) const {
  if (!(intensity > 0) || !(rate > 0) || !std::isfinite(intensity) || !std::isfinite(rate)) return std::nullopt;
  return logToScreen({std::log10(intensity), std::log10(rate)});
}

Vec2 LogMapping::logToScreen(Vec2 p) const {
  const double fx = (p.x - view_.x_lo) / (view_.x_hi - view_.x_lo);
  const double fy = (p.y - view_.y_lo) / (view_.y_hi - view_.y_lo);
  return {screen_.x0 + fx * screen_.width(), screen_.y1 - fy * screen_.height()};
}

Vec2 LogMapping::screenToLog(Vec2 s) const {
  const double fx = (s.x - screen_.x0) / screen_.width();
  const double fy = (screen_.y1 - s.y) / screen_.height();
  return {view_.x_lo + fx * (view_.x_hi - view_.x_lo), view_.y_lo + fy * (view_.y_hi - view_.y_lo)};
}

Vec2 LogMapping::screenToData(Vec2 s) const {
  const Vec2 l = screenToLog(s);
  return {std::pow(10.0, l.x), std::pow(10.0, l.y)};
}

std::vector<int> decadeTicks(double log_lo, double log_hi) {
  // A small tolerance so a view edge computed as 2.9999999999 still shows its decade.
  constexpr double kEps = 1e-9;
  std::vector<int> ticks;
  for (double e = std::ceil(log_lo - kEps); e <= log_hi + kEps; e += 1) ticks.push_back(static_cast<int>(e));
  return ticks;
}

std::string formatDecadeSi(int exponent) {
  static constexpr std::array<const char*, 11> kPrefixes = {"a", "f", "p", "n", "u", "m", "", "k", "M", "G", "T"};
  static constexpr std::array<const char*, 3> kBig = {"P", "E", "Z"};
  // floor division so -1 maps to group -1 (0.1 = 100 m).
  const int group = exponent >= 0 ? exponent / 3 : -((-exponent + 2) / 3);
  const int rest = exponent - group * 3;
  const char* mantissa = rest == 0 ? "1" : rest == 1 ? "10" : "100";
  std::string prefix;
  if (group >= -6 && group <= 4) {
    prefix = kPrefixes[static_cast<size_t>(group + 6)];
  } else if (group >= 5 && group <= 7) {
    prefix = kBig[static_cast<size_t>(group - 5)];
  } else {
    return fmt::format("1e{}", exponent);
  }
  return prefix.empty() ? mantissa : fmt::format("{} {}", mantissa, prefix);
}

std::string formatDecadePlain(int exponent) {
  if (exponent >= 0 && exponent <= 4) return fmt::format("{}", static_cast<int64_t>(std::llround(std::pow(10.0, exponent))));
  if (exponent < 0 && exponent >= -4) return fmt::format("{:.{}f}", std::pow(10.0, exponent), -exponent);
  return fmt::format("1e{}", exponent);
}

std::string formatSi(double value, const std::string& unit) {
  if (!std::isfinite(value)) return "n/a";
  if (value == 0) return fmt::format("0 {}", unit);
  static constexpr std::array<const char*, 9> kPrefixes = {"p", "n", "u", "m", "", "k", "M", "G", "T"};
  const double mag = std::fabs(value);
  int group = static_cast<int>(std::floor(std::log10(mag) / 3.0));
  if (value >= 1e15) group = 4;  // stay in T: "1500 TFLOP/s" reads better than "1.50 PFLOP/s" here
  group = std::clamp(group, -4, 4);
  double m = value / std::pow(1000.0, group);
  // Rounding can carry into the next group (999.96 -> "1000"); move up instead.
  if (std::fabs(m) >= 999.995 && group < 4) {
    ++group;
    m /= 1000.0;
  }
  const double am = std::fabs(m);
  const int decimals = am >= 100 ? 0 : am >= 10 ? 1 : 2;
  return fmt::format("{:.{}f} {}{}", m, decimals, kPrefixes[static_cast<size_t>(group + 4)], unit);
}

double ridgeIntensity(double bandwidth_bytes_per_s, double peak_flops_per_s) {
  return peak_flops_per_s / bandwidth_bytes_per_s;
}

double attainableRate(double intensity, double bandwidth_bytes_per_s, double peak_flops_per_s) {
  return std::min(bandwidth_bytes_per_s * intensity, peak_flops_per_s);
}

std::optional<Segment> clipToView(Segment s, const View& v) {
  // Liang-Barsky: parametrise a + t (b - a), t in [0, 1], and narrow t against each edge.
  const double dx = s.b.x - s.a.x, dy = s.b.y - s.a.y;
  double t0 = 0, t1 = 1;
  const std::array<double, 4> p = {-dx, dx, -dy, dy};
  const std::array<double, 4> q = {s.a.x - v.x_lo, v.x_hi - s.a.x, s.a.y - v.y_lo, v.y_hi - s.a.y};
  for (size_t i = 0; i < 4; ++i) {
    if (p[i] == 0) {
      if (q[i] < 0) return std::nullopt;  // parallel to this edge and outside it
      continue;
    }
    const double t = q[i] / p[i];
    if (p[i] < 0) {
      t0 = std::max(t0, t);
    } else {
      t1 = std::min(t1, t);
    }
    if (t0 > t1) return std::nullopt;
  }
  return Segment{{s.a.x + t0 * dx, s.a.y + t0 * dy}, {s.a.x + t1 * dx, s.a.y + t1 * dy}};
}

std::optional<Segment> bandwidthRoofSegment(double bandwidth_bytes_per_s, double cap_flops_per_s, const View& v) {
  if (!(bandwidth_bytes_per_s > 0)) return std::nullopt;
  const double lb = std::log10(bandwidth_bytes_per_s);
  double x_end = v.x_hi;
  if (cap_flops_per_s > 0) x_end = std::min(x_end, std::log10(cap_flops_per_s) - lb);
  if (x_end <= v.x_lo) return std::nullopt;
  return clipToView({{v.x_lo, lb + v.x_lo}, {x_end, lb + x_end}}, v);
}

std::optional<Segment> computeRoofSegment(double peak_flops_per_s, double bandwidth_bytes_per_s, const View& v) {
  if (!(peak_flops_per_s > 0)) return std::nullopt;
  const double lp = std::log10(peak_flops_per_s);
  double x_start = v.x_lo;
  if (bandwidth_bytes_per_s > 0) x_start = std::max(x_start, lp - std::log10(bandwidth_bytes_per_s));
  if (x_start >= v.x_hi) return std::nullopt;
  return clipToView({{x_start, lp}, {v.x_hi, lp}}, v);
}

std::optional<size_t> hitTest(const std::vector<Vec2>& centres, const std::vector<float>& radii, Vec2 mouse,
                              double slack_px) {
  std::optional<size_t> best;
  double best_d2 = 0;
  for (size_t i = 0; i < centres.size(); ++i) {
    if (radii[i] < 0) continue;
    const double dx = centres[i].x - mouse.x, dy = centres[i].y - mouse.y;
    const double d2 = dx * dx + dy * dy;
    const double reach = radii[i] + slack_px;
    if (d2 > reach * reach) continue;
    if (!best || d2 <= best_d2) {
      best = i;
      best_d2 = d2;
    }
  }
  return best;
}

View zoomAt(const View& v, const Rect& screen, Vec2 anchor, double factor) {
  const Vec2 a = LogMapping(v, screen).screenToLog(anchor);
  View z;
  z.x_lo = a.x - (a.x - v.x_lo) / factor;
  z.x_hi = a.x + (v.x_hi - a.x) / factor;
  z.y_lo = a.y - (a.y - v.y_lo) / factor;
  z.y_hi = a.y + (v.y_hi - a.y) / factor;
  return z;
}

View panBy(const View& v, const Rect& screen, double dx_px, double dy_px) {
  const double dx = dx_px / screen.width() * (v.x_hi - v.x_lo);
  const double dy = dy_px / screen.height() * (v.y_hi - v.y_lo);
  return {v.x_lo - dx, v.x_hi - dx, v.y_lo + dy, v.y_hi + dy};
}

View fitView(const std::vector<Vec2>& log_points, double margin_decades) {
  if (log_points.empty()) return View{};
  double x_lo = log_points[0].x, x_hi = x_lo, y_lo = log_points[0].y, y_hi = y_lo;
  for (const Vec2& p : log_points) {
    x_lo = std::min(x_lo, p.x);
    x_hi = std::max(x_hi, p.x);
    y_lo = std::min(y_lo, p.y);
    y_hi = std::max(y_hi, p.y);
  }
  return {std::floor(x_lo - margin_decades), std::ceil(x_hi + margin_decades), std::floor(y_lo - margin_decades),
          std::ceil(y_hi + margin_decades)};
}

float pointRadius(double time_share, float min_px, float max_px) {
  const double s = std::clamp(std::isfinite(time_share) ? time_share : 0.0, 0.0, 1.0);
  return min_px + (max_px - min_px) * static_cast<float>(std::sqrt(s));
}

std::vector<uint32_t> cullOverlapping(const std::vector<Vec2>& centres, const std::vector<uint32_t>& colours,
                                      const Rect& screen, double cell_px) {
  std::vector<uint32_t> kept;
  std::unordered_set<uint64_t> seen;
  seen.reserve(std::min<size_t>(centres.size(), 1 << 16));
  const auto columns = static_cast<uint64_t>(std::ceil(screen.width() / cell_px)) + 1;
  for (size_t i = 0; i < centres.size(); ++i) {
    const Vec2 c = centres[i];
    if (!screen.contains(c)) continue;
    const auto cx = static_cast<uint64_t>((c.x - screen.x0) / cell_px);
    const auto cy = static_cast<uint64_t>((c.y - screen.y0) / cell_px);
    // Exact key: a screen has far fewer than 2^32 cells, and a colour is 32 bits.
    const uint64_t key = ((cy * columns + cx) << 32) | colours[i];
    if (seen.insert(key).second) kept.push_back(static_cast<uint32_t>(i));
  }
  return kept;
}

}  // namespace fprof::gui
