// Counter ranges matched to profiled launches by name and order (collector/src/metrics/range_matching.h).
#include "metrics/range_matching.h"

#include <gtest/gtest.h>

namespace fprof::collector {
namespace {

const ProfiledLaunchName kAxpy{"_Z4axpyfPKfPfi", "axpy(float, float const*, float*, int)"};
const ProfiledLaunchName kRelu{"_Z4reluPfi", "relu(float*, int)"};
const ProfiledLaunchName kGemm{"_Z5sgemmPKfS0_Pfi", "sgemm(float const*, float const*, float*, int)"};

using Match = std::vector<std::optional<size_t>>;

TEST(RangeMatching, NamesMangledDemangledOrWithoutParameters) {
  EXPECT_TRUE(rangeNameMatches("_Z4axpyfPKfPfi", kAxpy));
  EXPECT_TRUE(rangeNameMatches("axpy(float, float const*, float*, int)", kAxpy));
  EXPECT_TRUE(rangeNameMatches("axpy", kAxpy));
  EXPECT_FALSE(rangeNameMatches("axp", kAxpy));
  EXPECT_FALSE(rangeNameMatches("", kAxpy));
  const ProfiledLaunchName templated{"_Z1kILi4EEvPf", "void k<4>(float*)"};
  EXPECT_TRUE(rangeNameMatches("void k<4>", templated));
}

TEST(RangeMatching, OneToOneInOrder) {
  EXPECT_EQ(matchRangesToLaunches({"axpy", "relu", "axpy"}, 3, {kAxpy, kRelu, kAxpy}), (Match{0, 1, 2}));
}

TEST(RangeMatching, ALaunchWithoutRangeDoesNotShiftItsNeighbours) {
  // The relu made no range (it failed, say): the second axpy still gets the second axpy range.
  EXPECT_EQ(matchRangesToLaunches({"axpy", "axpy", "sgemm"}, 3, {kAxpy, kRelu, kAxpy, kGemm}),
            (Match{0, std::nullopt, 1, 2}));
}

TEST(RangeMatching, ARangeWithoutLaunchIsDropped) {
  EXPECT_EQ(matchRangesToLaunches({"axpy", "relu", "sgemm"}, 3, {kAxpy, kGemm}), (Match{0, 2}));
}

TEST(RangeMatching, WithoutNamesOnlyEqualCountsMatchByPosition) {
  EXPECT_EQ(matchRangesToLaunches({}, 2, {kAxpy, kRelu}), (Match{0, 1}));
  EXPECT_EQ(matchRangesToLaunches({}, 1, {kAxpy, kRelu}), (Match{std::nullopt, std::nullopt}));
  // Names that name nothing (an unknown naming scheme) count as no names.
  EXPECT_EQ(matchRangesToLaunches({"range0", "range1"}, 2, {kAxpy, kRelu}), (Match{0, 1}));
  EXPECT_EQ(matchRangesToLaunches({"range0"}, 1, {kAxpy, kRelu}), (Match{std::nullopt, std::nullopt}));
}

TEST(RangeMatching, InterleavedThreadsSerializedByWindowsStayMatched) {
  // Two threads' launches, serialized by the profiling window, arrive in window order.
  const std::vector<ProfiledLaunchName> launches = {kAxpy, kGemm, kRelu, kGemm, kAxpy};
  EXPECT_EQ(matchRangesToLaunches({"axpy", "sgemm", "relu", "sgemm", "axpy"}, 5, launches), (Match{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace fprof::collector
