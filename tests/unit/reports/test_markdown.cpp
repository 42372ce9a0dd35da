// The Markdown summary: same findings and numbers as the HTML, names safe in GitHub's renderer.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fprof/core/text.h"

#include "fprof/reports/markdown_report.h"
#include "fprof/reports/report_data.h"
#include "test_util.h"

namespace fprof::reports {
namespace {

using testing::loadSynthetic;

TEST(Markdown, TraceRunShowsTopKernelsAndSaysWhyNoRoofline) {
  const core::Profile p = loadSynthetic("m_trace.fprof", {});
  const ReportData r = buildReport(p, nullptr);
  const std::string s = renderMarkdown(r);
  EXPECT_NE(s.find("### Findings"), std::string::npos);
  EXPECT_LT(s.find("### Findings"), s.find("<details><summary>Run details and ceilings</summary>"));
  for (size_t i = 0; i < r.findings.size(); ++i) {
    EXPECT_NE(s.find(std::to_string(i + 1) + ". "), std::string::npos);
  }
  EXPECT_NE(s.find("### Top 10 kernels by GPU time (grouped by name and launch shape)"), std::string::npos);
  // Same units as fprof info: 10 ms of 22.968 ms.
  EXPECT_NE(s.find("| 1 | `attention_pv_kernel<64, true>` | `attention (unfused)` | 10.00 ms | 43.5% | 50 | 200.00 us | "
                   "n/a | 25.0% |"),
            std::string::npos)
      << s;
  // The other columns, folded.
  EXPECT_NE(s.find("| 1 | 128x16x1 | 128 | 255 | 48.0 KiB | 96 B | 25.0% |"), std::string::npos) << s;
  EXPECT_EQ(s.find("intensity (DRAM)"), std::string::npos);
  EXPECT_NE(s.find("`fprof run --metrics roofline`"), std::string::npos);
}

TEST(Markdown, CountersAddRooflineColumns) {
  const core::Profile p = loadSynthetic("m_counters.fprof", {.counters = true});
  const std::string s = renderMarkdown(buildReport(p, nullptr));
  EXPECT_NE(s.find("intensity (DRAM)"), std::string::npos);
  EXPECT_NE(s.find("| memory |"), std::string::npos);
  EXPECT_NE(s.find("| compute |"), std::string::npos);
  EXPECT_NE(s.find("- ceiling dram: 3.00 TB/s (measured)"), std::string::npos) << s;
  EXPECT_NE(s.find("| # | kernel | op | time | share | calls | mean | % of roof | bound | to gain |"), std::string::npos);
}

TEST(Markdown, HostileNamesStayInCodeSpansWithPipesEscaped) {
  const core::Profile p = loadSynthetic("m_hostile.fprof", {.counters = true, .hostile_names = true});
  MarkdownOptions o;
  o.top_kernels = 100;
  const std::string s = renderMarkdown(buildReport(p, nullptr), o);
  EXPECT_NE(s.find("`<script>alert(1)</script>`"), std::string::npos) << s;
  // Outside code spans no raw tag survives.
  std::string outside;
  bool in_code = false;
  for (char c : s) {
    if (c == '`') in_code = !in_code;
    else if (!in_code) outside += c;
  }
  EXPECT_EQ(outside.find("<script"), std::string::npos) << outside;
  EXPECT_EQ(outside.find("<img"), std::string::npos);
}

TEST(Markdown, BaselineShowsTheLargestChange) {
  const core::Profile cur = loadSynthetic("m_cur.fprof", {.counters = true});
  const core::Profile base = loadSynthetic("m_base.fprof", {.counters = true, .slowdown = 0.8});
  const std::string s = renderMarkdown(buildReport(cur, &base));
  EXPECT_NE(s.find("| `bias_relu_kernel` | grid 4096x1x1 block 256x1x1 | 480.00 us | 600.00 us | +25.0% |"),
            std::string::npos)
      << s;
  // Markdown has no hover: the full names of the kernels shown short are listed, folded, at the end.
  EXPECT_NE(s.find("<details><summary>Full kernel names</summary>"), std::string::npos) << s;
  EXPECT_NE(s.find("- `bias_relu_kernel`: `bias_relu_kernel(float*, float const*, int)`\n"), std::string::npos) << s;
  EXPECT_NE(s.find("**Gate: FAIL** (10 kernels checked;"), std::string::npos) << s;
}

// The cells of every table row in a Markdown text (pipes escaped inside cells do not split).
std::vector<std::string> tableCells(const std::string& md) {
  std::vector<std::string> cells;
  size_t start = 0;
  while (start < md.size()) {
    size_t end = md.find('\n', start);
    if (end == std::string::npos) end = md.size();
    const std::string line = md.substr(start, end - start);
    start = end + 1;
    if (line.rfind("|", 0) != 0) continue;
    std::string cell;
    for (size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '|' && line[i - 1] != '\\') {
        cells.push_back(cell);
        cell.clear();
      } else {
        cell += line[i];
      }
    }
  }
  return cells;
}

// On every recording in tests/data (and the before/after pairs, with their baseline section), no
// cell of the Markdown report is longer than 200 characters: long texts go below the tables.
TEST(Markdown, NoCellOfARecordedRunIsLongerThan200Characters) {
  const std::string data = std::string(FPROF_SOURCE_DIR) + "/tests/data/";
  std::vector<std::pair<std::string, std::string>> runs;
  for (const auto& entry : std::filesystem::directory_iterator(data)) {
    if (entry.path().extension() == ".fprof") runs.emplace_back(entry.path().filename().string(), "");
  }
  runs.emplace_back("torch_proof_gpt_bf16_sdpa_h100.fprof", "torch_proof_gpt_bf16_eager_h100.fprof");
  runs.emplace_back("torch_mlp_compile_h100.fprof", "torch_mlp_eager_h100.fprof");
  runs.emplace_back("torch_transformer_compile_h100.fprof", "torch_transformer_eager_h100.fprof");
  runs.emplace_back("torch_proof_gpt_bf16_sdpa_h200.fprof", "torch_proof_gpt_bf16_eager_h200.fprof");
  runs.emplace_back("torch_proof_mlp_bf16_bias_gelu_h200.fprof", "torch_proof_mlp_bf16_eager_h200.fprof");
  runs.emplace_back("torch_proof_hfgpt2_forward_fp16_gelu_h200.fprof", "torch_proof_hfgpt2_forward_fp16_eager_h200.fprof");
  ASSERT_GT(runs.size(), 20u);
  for (const auto& [file, base_file] : runs) {
    auto run = core::loadProfile(data + file);
    ASSERT_TRUE(run.ok()) << file;
    std::optional<core::Profile> base;
    if (!base_file.empty()) {
      auto loaded = core::loadProfile(data + base_file);
      ASSERT_TRUE(loaded.ok()) << base_file;
      base = std::move(*loaded);
    }
    const ReportData report = buildReport(*run, base ? &*base : nullptr);
    // The best fusion among the findings is named by its pattern and ops, with a suggestion.
    for (const std::string& f : report.findings) {
      if (f.rfind("Best fusion: ", 0) != 0) continue;
      ASSERT_FALSE(report.fusion.empty()) << file;
      EXPECT_NE(f.find(report.fusion.front().pattern + ", "), std::string::npos) << file << ": " << f;
      EXPECT_NE(f.find(" kernels ("), std::string::npos) << file << ": " << f;
      EXPECT_NE(f.find(". Suggestion: "), std::string::npos) << file << ": " << f;
    }
    const std::string md = renderMarkdown(report);
    for (const std::string& cell : tableCells(md)) {
      EXPECT_LE(core::codePointCount(cell), 202u) << file << ": " << cell;  // 200 and the padding spaces
    }
  }
}

}  // namespace
}  // namespace fprof::reports
