// The Markdown summary: same findings and numbers as the HTML, names safe in GitHub's renderer.
#include <gtest/gtest.h>

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
  EXPECT_NE(s.find("### Top findings"), std::string::npos);
  for (size_t i = 0; i < r.findings.size(); ++i) {
    EXPECT_NE(s.find(std::to_string(i + 1) + ". "), std::string::npos);
  }
  EXPECT_NE(s.find("### Top 10 kernels by GPU time (grouped by name and launch shape)"), std::string::npos);
  // Same units as fprof info: 10 ms of 22.968 ms.
  EXPECT_NE(s.find("| 1 | 10.00 ms | 43.5% | 50 | 200.00 us | 128x16x1 | 128 | 255 | 48.0 KiB | 96 B | 25.0% |"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("intensity (DRAM)"), std::string::npos);
  EXPECT_NE(s.find("`fprof run --metrics roofline`"), std::string::npos);
}

TEST(Markdown, CountersAddRooflineColumns) {
  const core::Profile p = loadSynthetic("m_counters.fprof", {.counters = true});
  const std::string s = renderMarkdown(buildReport(p, nullptr));
  EXPECT_NE(s.find("intensity (DRAM)"), std::string::npos);
  EXPECT_NE(s.find("| memory |"), std::string::npos);
  EXPECT_NE(s.find("| compute |"), std::string::npos);
  EXPECT_NE(s.find("ceilings: dram 3.00 TB/s (measured)"), std::string::npos) << s;
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

}  // namespace
}  // namespace fprof::reports
