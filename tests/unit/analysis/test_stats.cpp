// Median and the one-sided Mann-Whitney U test against values computed by hand.
#include <gtest/gtest.h>

#include "fprof/analysis/stats.h"

namespace fprof::analysis {
namespace {

TEST(Stats, Median) {
  EXPECT_FALSE(median({}));
  EXPECT_DOUBLE_EQ(*median({3.0}), 3.0);
  EXPECT_DOUBLE_EQ(*median({5.0, 1.0, 3.0}), 3.0);
  EXPECT_DOUBLE_EQ(*median({4.0, 1.0, 3.0, 2.0}), 2.5);
}

TEST(Stats, OrderStatistics) {
  // No more values than asked for: all of them, as given.
  EXPECT_EQ(orderStatistics({3.0, 1.0, 2.0}, 4), (std::vector<double>{3.0, 1.0, 2.0}));
  // 0..999 cut to 4: the values at ranks (i + 1/2) * 1000 / 4 = 125, 375, 625, 875.
  std::vector<double> values;
  for (int i = 999; i >= 0; --i) values.push_back(i);
  EXPECT_EQ(orderStatistics(values, 4), (std::vector<double>{125, 375, 625, 875}));
}

TEST(MannWhitney, ExactSmallSamples) {
  // Complete separation, 3 vs 3: U = 9, one arrangement of C(6,3) = 20 -> p = 0.05.
  auto r = mannWhitneyGreater({1, 2, 3}, {4, 5, 6});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->exact);
  EXPECT_DOUBLE_EQ(r->u, 9.0);
  EXPECT_DOUBLE_EQ(r->p_greater, 0.05);
  // {1,2,4} vs {3,5,6}: U = 2 + 3 + 3 = 8; arrangements with U >= 8: two of 20.
  r = mannWhitneyGreater({1, 2, 4}, {3, 5, 6});
  EXPECT_DOUBLE_EQ(r->u, 8.0);
  EXPECT_DOUBLE_EQ(r->p_greater, 0.1);
  // The other direction: U = 0, every arrangement has U >= 0.
  r = mannWhitneyGreater({4, 5, 6}, {1, 2, 3});
  EXPECT_DOUBLE_EQ(r->u, 0.0);
  EXPECT_DOUBLE_EQ(r->p_greater, 1.0);
  // 5 vs 5 separated: 1 / C(10,5) = 1/252.
  r = mannWhitneyGreater({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_NEAR(r->p_greater, 1.0 / 252.0, 1e-15);
}

TEST(MannWhitney, NormalApproximationWithTies) {
  // Ties force the approximation. Ranks: 1,2 -> 1,2; 3,3 -> 3.5; 4,4 -> 5.5; 5,5 -> 7.5; 6 -> 9; 7 -> 10.
  // R(cur) = 3.5 + 5.5 + 7.5 + 9 + 10 = 35.5, U = 35.5 - 15 = 20.5, mean 12.5,
  // var = 25/12 * (11 - 3*6/90) = 22.5, z = (20.5 - 12.5 - 0.5) / sqrt(22.5) = 1.58114,
  // p = 1 - Phi(1.58114) = 0.0569231.
  auto r = mannWhitneyGreater({1, 2, 3, 4, 5}, {3, 4, 5, 6, 7});
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->exact);
  EXPECT_DOUBLE_EQ(r->u, 20.5);
  EXPECT_NEAR(r->p_greater, 0.0569231, 1e-7);
}

TEST(MannWhitney, IdenticalValuesGiveNoEvidence) {
  auto r = mannWhitneyGreater({5, 5, 5}, {5, 5, 5});
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->p_greater, 1.0);
  EXPECT_FALSE(mannWhitneyGreater({}, {1.0}));
}

}  // namespace
}  // namespace fprof::analysis
