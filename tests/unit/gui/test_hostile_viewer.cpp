// The viewer, headless (as test_viewer_headless.cpp), over every database of the hostile corpus
// (tests/unit/robust/corpus.h), each with the clean file as its baseline and as the baseline of
// it: every mode, level, selection, filter and sort renders; every text the viewer shows (table
// cells, details, tooltips, fusion, diff) is clean and cut for display; the CSV it writes has a
// constant width per RFC 4180.
#include <gtest/gtest.h>
#include <imgui.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "checks.h"
#include "corpus.h"
#include "fprof/core/text.h"
#include "fprof/gui/viewer.h"
#include "test_util.h"

namespace fprof::testing {

void PrintTo(const CorpusCase& c, std::ostream* os) { *os << c.name; }

}  // namespace fprof::testing

namespace fprof::gui {
namespace {

using fprof::testing::CorpusCase;
using fprof::testing::terminalProblem;

class HostileViewer : public ::testing::TestWithParam<CorpusCase> {
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
    dir_ = testing::tempPath("hostile/" + GetParam().name);
    std::filesystem::create_directories(dir_);
    file_ = dir_ + "/" + GetParam().name + ".fprof";
    clean_ = dir_ + "/clean.fprof";
    ASSERT_EQ(fprof::testing::writeCorpusDatabase(GetParam().name, file_).error(), "");
    ASSERT_EQ(fprof::testing::writeCorpusDatabase("clean", clean_).error(), "");
  }
  void TearDown() override {
    ImGui::DestroyContext();
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  static void frame(Viewer& v, int n = 1) {
    for (int i = 0; i < n; ++i) {
      ImGui::NewFrame();
      v.frame();
      ImGui::Render();
    }
  }

  // What the viewer shows of an item: clean, one line per cell, cut to the display limit; a
  // kernel's short name clean and short (an op's is its NVTX path, cut in the cell).
  static void checkItemTexts(const Document& d, size_t index, MemLevel level, int64_t total_ns, PointMode mode) {
    const Item& it = d.items(mode)[index];
    if (mode != PointMode::kOps) {
      EXPECT_EQ(fprof::testing::shortNameProblem(std::string(it.short_name)), "");
    }
    for (size_t c = 0; c < kColumnCount; ++c) {
      const std::string cell = cellText(it, static_cast<Column>(c), level, total_ns);
      EXPECT_EQ(terminalProblem(cell), "") << columnName(static_cast<Column>(c));
      EXPECT_EQ(cell.find('\n'), std::string::npos) << columnName(static_cast<Column>(c));
      EXPECT_LE(core::codePointCount(cell), core::kMaxShownCodePoints) << columnName(static_cast<Column>(c));
    }
    for (const std::string& text : {d.details(mode, index), tooltipText(it, level)}) {
      EXPECT_EQ(terminalProblem(text), "");
      EXPECT_LT(text.size(), size_t{64 * 1024}) << "a tooltip or details text not cut for display";
    }
  }

  void exercise(Viewer& v) {
    frame(v, 2);
    EXPECT_TRUE(v.errors().empty()) << v.errors().front();
    const Document* d = v.document();
    ASSERT_NE(d, nullptr);
    for (PointMode m : {PointMode::kKernels, PointMode::kKernelGroups, PointMode::kOps}) {
      v.setMode(m);
      for (MemLevel l : {MemLevel::kDram, MemLevel::kL2, MemLevel::kL1}) {
        v.setLevel(l);
        frame(v);
      }
      const auto& items = d->items(m);
      for (size_t i = 0; i < items.size() && i < 40; ++i) {
        checkItemTexts(*d, i, v.level(), d->totalKernelNs(), m);
        v.select(i);
        frame(v);  // the details panel draws the selected item
      }
      v.select(std::nullopt);
      for (size_t c = 0; c < kColumnCount; ++c) v.sortBy(static_cast<Column>(c), c % 2 == 0);
      v.setNameFilter(".*");
      v.setNvtxFilter("e");
      frame(v);
      v.setNameFilter("");
      v.setNvtxFilter("");
      frame(v);
      const std::string csv = dir_ + "/table.csv";
      std::filesystem::remove(csv);  // an export keeps a file that exists (docs/outputs.md)
      ASSERT_TRUE(v.exportCsv(csv).ok());
      std::ifstream in(csv, std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      EXPECT_EQ(fprof::testing::csvProblem(text.str()), "");
    }
    for (size_t f = 0; f < d->fusionViews().size(); ++f) {
      v.selectFusion(f);
      frame(v);
      for (const std::string& s : d->fusionViews()[f].candidate.stages) EXPECT_EQ(terminalProblem(s), "");
    }
    for (const DiffRow& r : v.diff()) {
      EXPECT_EQ(terminalProblem(r.name), "");
      EXPECT_EQ(terminalProblem(r.short_name), "");
      EXPECT_LE(core::codePointCount(r.short_name), 2 * fprof::testing::kShortNameMaxCodePoints + 4);  // "a -> b"
      EXPECT_EQ(terminalProblem(r.why), "");
    }
    EXPECT_EQ(terminalProblem(v.tooltip()), "");
  }

  std::string dir_, file_, clean_;
};

TEST_P(HostileViewer, EveryViewRendersCleanText) {
  const auto t0 = std::chrono::steady_clock::now();
  {
    auto run = Document::open(file_);
    ASSERT_TRUE(run.ok()) << run.error();
    Viewer v(std::move(run), Document::open(clean_));
    exercise(v);
  }
  {
    Viewer v(Document::open(clean_), Document::open(file_));
    exercise(v);
  }
  // A hang fails here as a time, not as a stuck CI job (ctest's TIMEOUT stops a true hang).
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60.0);
}

INSTANTIATE_TEST_SUITE_P(Corpus, HostileViewer, ::testing::ValuesIn(fprof::testing::corpusCases()),
                         [](const ::testing::TestParamInfo<CorpusCase>& param) { return param.param.name; });

}  // namespace
}  // namespace fprof::gui
