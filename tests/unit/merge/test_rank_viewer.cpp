// The viewer's rank filter, headless: a merged database opens on all ranks, a rank shows exactly
// what its own file shows, the baseline follows the rank, and a missing rank changes nothing.
#include <gtest/gtest.h>
#include <imgui.h>

#include <filesystem>

#include "fprof/core/merge.h"
#include "fprof/gui/viewer.h"
#include "rank_fixture.h"

namespace fprof::gui {
namespace {

namespace fs = std::filesystem;

class RankViewer : public ::testing::Test {
 protected:
  void SetUp() override {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = {1600, 1000};
    io.DeltaTime = 1.0f / 60.0f;
    io.IniFilename = nullptr;
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
    dir_ = std::string(FPROF_TEST_TMP) + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    inputs_ = testing::writeThreeRanks(dir_);
    ASSERT_EQ(inputs_.size(), 3u);
    ASSERT_TRUE(core::mergeDatabases(inputs_, dir_ + "/job.fprof").ok());
  }
  void TearDown() override { ImGui::DestroyContext(); }
  static void frame(Viewer& v, int n = 2) {
    for (int i = 0; i < n; ++i) {
      ImGui::NewFrame();
      v.frame();
      ImGui::Render();
    }
  }
  std::string dir_;
  std::vector<std::string> inputs_;
};

TEST_F(RankViewer, FilterShowsOneRankAsItsOwnFile) {
  Viewer v(Document::open(dir_ + "/job.fprof"));
  frame(v);
  ASSERT_TRUE(v.errors().empty());
  ASSERT_EQ(v.rankGroups().size(), 3u);
  ASSERT_EQ(v.rankRows().size(), 3u);
  EXPECT_FALSE(v.rank());
  EXPECT_EQ(v.document()->profile().kernels.size(), 27u);
  v.setMode(PointMode::kKernelGroups);
  frame(v);
  EXPECT_EQ(v.tableRows().size(), 3u) << "three kernel groups over all ranks";
  // A group pooling rank 2's counted launches with the trace ranks' uncounted ones has no complete
  // counters, so no point: the all-ranks view of a mixed-mode job plots nothing (docs/multi-process.md).
  EXPECT_EQ(v.pointsPlotted(), 0u);

  for (int rank = 0; rank < 3; ++rank) {
    SCOPED_TRACE(rank);
    ASSERT_TRUE(v.setRank(rank).ok());
    frame(v);
    EXPECT_EQ(v.rank(), rank);
    auto own = Document::open(inputs_[static_cast<size_t>(rank)]);
    ASSERT_TRUE(own.ok());
    const auto& mine = v.document()->items(PointMode::kKernelGroups);
    const auto& theirs = (*own)->items(PointMode::kKernelGroups);
    ASSERT_EQ(mine.size(), theirs.size());
    for (size_t i = 0; i < mine.size(); ++i) {
      EXPECT_EQ(mine[i].name, theirs[i].name);
      EXPECT_EQ(mine[i].duration_ns, theirs[i].duration_ns);
      EXPECT_EQ(mine[i].placement.roof_fraction, theirs[i].placement.roof_fraction);
    }
    EXPECT_EQ(v.document()->fusionViews().size(), (*own)->fusionViews().size());
    EXPECT_EQ(v.pointsPlotted(), rank == 2 ? 2u : 0u) << "rank 2 counted all but its NCCL kernels";
    EXPECT_EQ(v.document()->profile().path, dir_ + "/job.fprof (rank " + std::to_string(rank) + ")");
  }
  const auto status = v.setRank(7);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error(), dir_ + "/job.fprof: no process has rank 7; the file holds ranks 0-2");
  EXPECT_EQ(v.rank(), 2) << "a missing rank leaves the view as it was";
  ASSERT_TRUE(v.setRank(std::nullopt).ok());
  frame(v);
  EXPECT_EQ(v.document()->profile().kernels.size(), 27u);
}

// A rank's view of a recorded two-rank job has the data flow and the fusion candidates of the file
// that rank wrote: the job's document keeps the launch tables the views are cut from.
TEST_F(RankViewer, RankViewOfARecordedJobKeepsItsDataFlow) {
  const std::string data = std::string(FPROF_SOURCE_DIR) + "/tests/data/";
  const std::vector<std::string> ranks = {data + "torchrun_allreduce_h200x2.rank0.fprof",
                                          data + "torchrun_allreduce_h200x2.rank1.fprof"};
  const std::string job = dir_ + "/torchrun.fprof";
  ASSERT_TRUE(core::mergeDatabases(ranks, job).ok());
  Viewer v(Document::open(job));
  frame(v);
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE(rank);
    ASSERT_TRUE(v.setRank(rank).ok());
    frame(v);
    auto own = Document::open(ranks[static_cast<size_t>(rank)]);
    ASSERT_TRUE(own.ok());
    const analysis::DataFlow& mine = v.document()->analysis().dataFlow();
    const analysis::DataFlow& theirs = (*own)->analysis().dataFlow();
    ASSERT_TRUE(theirs.have_args);
    ASSERT_FALSE(theirs.accesses.empty());
    EXPECT_EQ(mine.have_args, theirs.have_args);
    EXPECT_EQ(mine.accesses.size(), theirs.accesses.size());
    EXPECT_EQ(mine.allocations.size(), theirs.allocations.size());
    EXPECT_EQ(mine.edges.size(), theirs.edges.size());
    EXPECT_EQ(v.document()->fusionViews().size(), (*own)->fusionViews().size());
  }
}

TEST_F(RankViewer, BaselineFollowsTheRank) {
  // The baseline is the same job with rank 1 faster: only rank 1's diff moves.
  std::vector<std::string> base_inputs;
  for (testing::RankFixture f : testing::threeRanks()) {
    if (f.rank == 1) f.slowdown = 1.0;
    base_inputs.push_back(dir_ + "/base.rank" + std::to_string(f.rank) + ".fprof");
    ASSERT_TRUE(testing::writeRankDatabase(base_inputs.back(), f).ok());
  }
  ASSERT_TRUE(core::mergeDatabases(base_inputs, dir_ + "/base.fprof").ok());
  Viewer v(Document::open(dir_ + "/job.fprof"), Document::open(dir_ + "/base.fprof"));
  frame(v);
  auto slower = [&] {
    int n = 0;
    for (const DiffRow& r : v.diff()) n += r.time_change && *r.time_change > 0.2;
    return n;
  };
  ASSERT_TRUE(v.setRank(0).ok());
  EXPECT_EQ(slower(), 0);
  EXPECT_EQ(v.baseline()->profile().processes.size(), 1u);
  ASSERT_TRUE(v.setRank(1).ok());
  frame(v);
  EXPECT_EQ(slower(), 3) << "all three kernels of rank 1 are 25% slower than in its baseline";
}

TEST_F(RankViewer, SingleProcessHasNoFilter) {
  Viewer v(Document::open(inputs_[0]));
  frame(v);
  EXPECT_EQ(v.rankGroups().size(), 1u);
  EXPECT_TRUE(v.rankRows().empty());
}

}  // namespace
}  // namespace fprof::gui
