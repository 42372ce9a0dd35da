// Plot math with exact values: log mapping, ticks and labels, roofs and ridge points, hit testing,
// zoom, pan, fit, point size and overdraw culling.
#include <gtest/gtest.h>

#include "fprof/gui/plot_math.h"

namespace fprof::gui {
namespace {

const View kView{-2, 4, 9, 16};

void expectNear(std::optional<Vec2> got, Vec2 want) {
  ASSERT_TRUE(got);
  EXPECT_NEAR(got->x, want.x, 1e-9);
  EXPECT_NEAR(got->y, want.y, 1e-9);
}
const Rect kScreen{100, 50, 700, 750};  // 600 x 700 pixels

TEST(LogMapping, MapsDecadesToPixelsAndBack) {
  const LogMapping m(kView, kScreen);
  expectNear(m.toScreen(1, 1e9), {300, 750});    // x: 2 of 6 decades in; y: bottom edge
  expectNear(m.toScreen(1e4, 1e16), {700, 50});  // top-right corner
  expectNear(m.toScreen(0.01, 1e16), {100, 50});
  const Vec2 mid = *m.toScreen(10, 1e12);  // 3 of 6 decades, 3 of 7 decades
  EXPECT_DOUBLE_EQ(mid.x, 400);
  EXPECT_DOUBLE_EQ(mid.y, 750 - 300);
  EXPECT_FALSE(m.toScreen(0, 1e12));
  EXPECT_FALSE(m.toScreen(1, -5));
  const Vec2 d = m.screenToData({400, 450});
  EXPECT_NEAR(d.x, 10, 1e-12);
  EXPECT_NEAR(d.y, 1e12, 1e-3);
  expectNear(m.screenToLog({700, 50}), {4, 16});
}

TEST(Ticks, WholeDecadesInsideTheRange) {
  EXPECT_EQ(decadeTicks(-2.5, 1.2), (std::vector<int>{-2, -1, 0, 1}));
  EXPECT_EQ(decadeTicks(3, 3), (std::vector<int>{3}));
  EXPECT_EQ(decadeTicks(2.9999999999999, 4.0000000000001), (std::vector<int>{3, 4}));
  EXPECT_TRUE(decadeTicks(0.2, 0.8).empty());
}

TEST(Ticks, LabelsWithSiPrefixesAndUnits) {
  EXPECT_EQ(formatDecadeSi(9), "1 G");
  EXPECT_EQ(formatDecadeSi(10), "10 G");
  EXPECT_EQ(formatDecadeSi(11), "100 G");
  EXPECT_EQ(formatDecadeSi(12), "1 T");
  EXPECT_EQ(formatDecadeSi(15), "1 P");
  EXPECT_EQ(formatDecadeSi(0), "1");
  EXPECT_EQ(formatDecadeSi(2), "100");
  EXPECT_EQ(formatDecadeSi(-1), "100 m");
  EXPECT_EQ(formatDecadeSi(-3), "1 m");
  EXPECT_EQ(formatDecadePlain(-2), "0.01");
  EXPECT_EQ(formatDecadePlain(0), "1");
  EXPECT_EQ(formatDecadePlain(3), "1000");
  EXPECT_EQ(formatDecadePlain(5), "1e5");
  EXPECT_EQ(formatSi(1.5e12, "FLOP/s"), "1.50 TFLOP/s");
  EXPECT_EQ(formatSi(3.35e12, "B/s"), "3.35 TB/s");
  EXPECT_EQ(formatSi(42.0e9, "B"), "42.0 GB");
  EXPECT_EQ(formatSi(999.999e9, "B/s"), "1.00 TB/s");  // rounding carries into the next prefix
  EXPECT_EQ(formatSi(989e12, "FLOP/s"), "989 TFLOP/s");
  EXPECT_EQ(formatSi(0, "B"), "0 B");
}

TEST(Roofs, RidgeAndAttainable) {
  EXPECT_DOUBLE_EQ(ridgeIntensity(3e12, 6e13), 20);
  EXPECT_DOUBLE_EQ(attainableRate(10, 3e12, 6e13), 3e13);
  EXPECT_DOUBLE_EQ(attainableRate(100, 3e12, 6e13), 6e13);
  EXPECT_DOUBLE_EQ(attainableRate(20, 3e12, 6e13), 6e13);
}

TEST(Roofs, BandwidthDiagonalStopsAtTheCap) {
  auto s = bandwidthRoofSegment(1e12, 1e14, kView);  // ridge at 100 FLOP/byte
  ASSERT_TRUE(s);
  EXPECT_EQ(s->a, (Vec2{-2, 10}));
  EXPECT_EQ(s->b, (Vec2{2, 14}));
  auto uncapped = bandwidthRoofSegment(1e12, 0, kView);
  ASSERT_TRUE(uncapped);
  EXPECT_EQ(uncapped->b, (Vec2{4, 16}));
  // Starts below the view: clipped where it enters the bottom edge (x = 0, y = 9).
  auto low = bandwidthRoofSegment(1e9, 1e14, kView);
  ASSERT_TRUE(low);
  EXPECT_DOUBLE_EQ(low->a.x, 0);
  EXPECT_DOUBLE_EQ(low->a.y, 9);
  EXPECT_DOUBLE_EQ(low->b.x, 4);
  EXPECT_DOUBLE_EQ(low->b.y, 13);
  EXPECT_FALSE(bandwidthRoofSegment(1e2, 0, kView));   // entirely below the view
  EXPECT_FALSE(bandwidthRoofSegment(1e12, 1e9, kView));  // meets its cap left of the view
  EXPECT_FALSE(bandwidthRoofSegment(0, 1e14, kView));
}

TEST(Roofs, ComputeRoofStartsAtItsRidge) {
  auto s = computeRoofSegment(1e14, 1e12, kView);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->a, (Vec2{2, 14}));
  EXPECT_EQ(s->b, (Vec2{4, 14}));
  EXPECT_FALSE(computeRoofSegment(1e14, 1e9, kView));  // ridge at 1e5, right of the view
  auto no_bw = computeRoofSegment(1e14, 0, kView);
  ASSERT_TRUE(no_bw);
  EXPECT_EQ(no_bw->a, (Vec2{-2, 14}));
  EXPECT_FALSE(computeRoofSegment(1e17, 1e12, kView));  // above the view
}

TEST(Roofs, ClipToView) {
  EXPECT_FALSE(clipToView({{-5, 0}, {-3, 20}}, kView));
  auto c = clipToView({{-4, 8}, {6, 18}}, kView);  // slope 1 through the whole view
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->a.x, -2);
  EXPECT_DOUBLE_EQ(c->a.y, 10);
  EXPECT_DOUBLE_EQ(c->b.x, 4);
  EXPECT_DOUBLE_EQ(c->b.y, 16);
}

TEST(HitTest, NearestCentreWithinRadius) {
  const std::vector<Vec2> c = {{10, 10}, {20, 10}, {21, 10}, {50, 50}};
  const std::vector<float> r = {5, 5, 5, -1};
  EXPECT_EQ(hitTest(c, r, {20.6, 10}), 2u);
  EXPECT_EQ(hitTest(c, r, {20.4, 10}), 1u);
  EXPECT_EQ(hitTest(c, r, {10, 16.5}), 0u);  // 6.5 px: outside the radius, inside radius + 2 px slack
  EXPECT_FALSE(hitTest(c, r, {10, 17.5}));
  EXPECT_FALSE(hitTest(c, r, {50, 50}));  // hidden point
  const std::vector<Vec2> same = {{5, 5}, {5, 5}};
  EXPECT_EQ(hitTest(same, {3, 3}, {5, 5}), 1u);  // the one drawn on top
}

TEST(ZoomPan, ZoomKeepsTheAnchorAndPanFollowsTheMouse) {
  const View v{0, 4, 0, 4};
  const Rect s{0, 0, 400, 400};
  const Vec2 anchor{100, 300};  // log (1, 1)
  const View z = zoomAt(v, s, anchor, 2);
  EXPECT_EQ(z, (View{0.5, 2.5, 0.5, 2.5}));
  EXPECT_EQ(LogMapping(z, s).screenToLog(anchor), LogMapping(v, s).screenToLog(anchor));
  EXPECT_EQ(zoomAt(z, s, anchor, 0.5), v);
  EXPECT_EQ(panBy(v, s, 100, 50), (View{-1, 3, 0.5, 4.5}));
}

TEST(Fit, WholeDecadesWithMargin) {
  EXPECT_EQ(fitView({{-0.7, 10.2}, {1.3, 12.9}}, 0.5), (View{-2, 2, 9, 14}));
  EXPECT_EQ(fitView({}, 0.5), View{});
}

TEST(Points, RadiusByTimeShareAndCulling) {
  EXPECT_FLOAT_EQ(pointRadius(0), 2.5f);
  EXPECT_FLOAT_EQ(pointRadius(1), 18.0f);
  EXPECT_FLOAT_EQ(pointRadius(0.25), 10.25f);
  EXPECT_FLOAT_EQ(pointRadius(7), 18.0f);
  const std::vector<Vec2> c = {{10.1, 10.1}, {10.9, 10.9}, {10.5, 10.5}, {12.5, 10.5}, {-3, 4}};
  const std::vector<uint32_t> col = {1, 1, 2, 1, 1};
  EXPECT_EQ(cullOverlapping(c, col, {0, 0, 100, 100}, 2.0), (std::vector<uint32_t>{0, 2, 3}));
}

}  // namespace
}  // namespace fprof::gui
