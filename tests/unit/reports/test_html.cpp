// The HTML report: self-contained, escaped, one roofline point per plottable group, honest about
// trace-mode runs, and small for large runs.
#include <gtest/gtest.h>

#include <regex>

#include "fprof/reports/html_report.h"
#include "fprof/reports/report_data.h"
#include "test_util.h"

namespace fprof::reports {
namespace {

using testing::countOf;
using testing::loadSynthetic;

std::string html(const core::Profile& p, const core::Profile* base = nullptr) {
  return renderHtml(buildReport(p, base), HtmlOptions{.csp_nonce = "testnonce"});
}

TEST(Html, CountersRunHasOnePointPerPlottableGroup) {
  const core::Profile p = loadSynthetic("h_counters.fprof", {.counters = true});
  const std::string s = html(p);
  EXPECT_EQ(countOf(s, "<circle class=\"pt\""), static_cast<size_t>(testing::kSyntheticRooflineGroups));
  EXPECT_NE(s.find("data-points=\"9\""), std::string::npos);
  EXPECT_NE(s.find("1 listed groups have no FLOPs or no DRAM bytes and are not on the chart"), std::string::npos);
  // Roofs: three memory levels and the compute roofs, with their source in the label.
  EXPECT_NE(s.find("data-roof=\"dram\""), std::string::npos);
  EXPECT_NE(s.find("data-roof=\"l2\""), std::string::npos);
  EXPECT_NE(s.find("data-roof=\"l1\""), std::string::npos);
  EXPECT_NE(s.find("data-roof=\"tensor_fp16\""), std::string::npos);
  EXPECT_NE(s.find("data-roof=\"fp32\""), std::string::npos);
  EXPECT_EQ(s.find("data-roof=\"fp64\""), std::string::npos);  // no kernel runs fp64: no roof drawn
  EXPECT_NE(s.find("DRAM 3.00 TB/s (measured)"), std::string::npos);
  EXPECT_NE(s.find("Arithmetic intensity (FLOP per DRAM byte)"), std::string::npos);
  EXPECT_NE(s.find("Achieved performance (FLOP/s)"), std::string::npos);
  EXPECT_EQ(s.find("roofline-none"), std::string::npos);
  // One table row per group.
  EXPECT_EQ(countOf(s, "<tr id=\"g"), static_cast<size_t>(testing::kSyntheticGroups));
  // Three declared pairs in the fusion table; the fusable ones carry their payoff.
  EXPECT_EQ(countOf(s, "<td class=\"mono pair\">"), 3u);
  EXPECT_NE(s.find("<tr class=\"fuse\" data-payoff="), std::string::npos);
}

TEST(Html, ShortKernelNamesWithTheFullOnesOnHover) {
  const core::Profile p = loadSynthetic("h_names.fprof", {.counters = true});
  const std::string s = html(p);
  const std::string full = "void attention_pv_kernel&lt;64, true&gt;(__half const*, __half const*, __half*, float)";
  EXPECT_NE(s.find("<td class=\"name\" title=\"" + full + "\">attention_pv_kernel&lt;64, true&gt;</td>"),
            std::string::npos);
  EXPECT_NE(s.find("<div class=\"label mono\" title=\"" + full + "\">attention_pv_kernel&lt;64, true&gt;</div>"),
            std::string::npos);
  // A name that is no C++ function name stays whole, and needs no hover.
  EXPECT_NE(s.find("<td class=\"name\">void softmax_kernel&lt;float&gt;(float*, float const*, int) [with "),
            std::string::npos);
  // The chart's data (inert JSON, '<' escaped): full and short name; the tooltip starts with the short one.
  EXPECT_NE(s.find("\"short_name\":\"attention_pv_kernel\\u003c64, true\\u003e\""), std::string::npos);
  EXPECT_NE(s.find("\"tip\":\"attention_pv_kernel\\u003c64, true\\u003e\\nvoid attention_pv_kernel\\u003c64"),
            std::string::npos);
}

TEST(Html, TraceRunSaysWhyThereIsNoRoofline) {
  const core::Profile p = loadSynthetic("h_trace.fprof", {});
  const std::string s = html(p);
  EXPECT_EQ(countOf(s, "class=\"pt\""), 0u);
  EXPECT_NE(s.find("id=\"roofline-none\""), std::string::npos);
  EXPECT_NE(s.find("fprof run --metrics roofline"), std::string::npos);
  // Counter columns are n/a, not 0 (behind "all columns", where they are all n/a).
  EXPECT_GE(countOf(s, "<td class=\"num na\">n/a</td>") + countOf(s, "<td class=\"more num na\">n/a</td>"),
            static_cast<size_t>(testing::kSyntheticGroups) * 5);
  EXPECT_NE(s.find("<th class=\"sortable num more\" data-col=\"intensity\">"), std::string::npos);
  EXPECT_NE(s.find("<th class=\"sortable num\" data-col=\"roof\">"), std::string::npos);
  EXPECT_EQ(s.find(">0.00 FLOP/B<"), std::string::npos);
}

TEST(Html, SelfContainedWithNoNetworkReferences) {
  const core::Profile p = loadSynthetic("h_net.fprof", {.counters = true});
  const std::string s = html(p);
  // The only URL is the SVG namespace, which is a name, not a fetch.
  std::string stripped = s;
  for (size_t pos; (pos = stripped.find("xmlns=\"http://www.w3.org/2000/svg\"")) != std::string::npos;) stripped.erase(pos, 34);
  EXPECT_EQ(stripped.find("http://"), std::string::npos);
  EXPECT_EQ(stripped.find("https://"), std::string::npos);
  EXPECT_EQ(stripped.find(" src="), std::string::npos);
  EXPECT_EQ(stripped.find("<link"), std::string::npos);
  EXPECT_NE(s.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(s.find("script-src 'nonce-testnonce'"), std::string::npos);
  EXPECT_EQ(countOf(s, "<script"), 2u);  // the inert JSON data and the report's own script
  EXPECT_NE(s.find("<script nonce=\"testnonce\">"), std::string::npos);
}

TEST(Html, HostileKernelNamesAreText) {
  const core::Profile p = loadSynthetic("h_hostile.fprof", {.counters = true, .hostile_names = true});
  const std::string s = html(p);
  EXPECT_EQ(countOf(s, "<script"), 2u) << "a kernel name opened a script element";
  EXPECT_EQ(s.find("<img"), std::string::npos);
  EXPECT_EQ(s.find("<svg onload"), std::string::npos);
  EXPECT_EQ(s.find("onerror=\""), std::string::npos);
  EXPECT_EQ(s.find("<!--"), std::string::npos);
  EXPECT_NE(s.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  // Inside the JSON, "</" never appears.
  const size_t json_start = s.find("id=\"fprof-data\">");
  const size_t json_end = s.find("</script>", json_start);
  ASSERT_NE(json_start, std::string::npos);
  const std::string json = s.substr(json_start, json_end - json_start);
  EXPECT_EQ(json.find("</"), std::string::npos);
  EXPECT_NE(json.find("\\u003cscript\\u003ealert(1)"), std::string::npos);
  // All groups are still plotted and listed.
  EXPECT_EQ(countOf(s, "<circle class=\"pt\""),
            static_cast<size_t>(testing::kSyntheticRooflineGroups + testing::kHostileGroups));
}

TEST(Html, BaselineDrawsArrowsAndTheDiff) {
  const core::Profile cur = loadSynthetic("h_cur.fprof", {.counters = true});
  const core::Profile base = loadSynthetic("h_base.fprof", {.counters = true, .slowdown = 0.8});
  const std::string s = html(cur, &base);
  // Only the epilogue moved on the chart: one arrow, a baseline marker for every matched point.
  EXPECT_EQ(countOf(s, "<line class=\"arrow\""), 1u);
  EXPECT_EQ(countOf(s, "<circle class=\"pt-base\""), static_cast<size_t>(testing::kSyntheticRooflineGroups));
  EXPECT_NE(s.find("id=\"diff-table\""), std::string::npos);
  EXPECT_NE(s.find("+25.0%"), std::string::npos);
  EXPECT_NE(s.find("id=\"gate-verdict\">gate: FAIL<"), std::string::npos);
  EXPECT_EQ(countOf(s, "<tr class=\"regression\">"), 1u);
}

TEST(Html, LargeRunStaysSmall) {
  // 100,000 launches of 100,000 distinct names: the table keeps the top groups, the file < 10 MB.
  const std::string path = testing::tempPath("h_large.fprof");
  ASSERT_TRUE(testing::writeLargeProfile(path, 100000, 100000, true).ok());
  auto p = core::loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  const ReportData r = buildReport(*p, nullptr);
  EXPECT_EQ(r.group_count, 100000);
  EXPECT_EQ(r.groups.size(), BuildOptions{}.max_groups);
  EXPECT_EQ(r.omitted_groups, 100000 - static_cast<int64_t>(BuildOptions{}.max_groups));
  const std::string s = renderHtml(r);
  EXPECT_LT(s.size(), 10u * 1000 * 1000);
  EXPECT_NE(s.find("id=\"omitted\""), std::string::npos);
}

TEST(Html, ManyLaunchesAggregateByNameAndShape) {
  const std::string path = testing::tempPath("h_agg.fprof");
  ASSERT_TRUE(testing::writeLargeProfile(path, 100000, 50, false).ok());
  auto p = core::loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  const ReportData r = buildReport(*p, nullptr);
  EXPECT_EQ(r.group_count, 50 * 4);
  int64_t calls = 0;
  for (const GroupRow& g : r.groups) calls += g.calls;
  EXPECT_EQ(calls, 100000);
  EXPECT_EQ(countOf(renderHtml(r), "<tr id=\"g"), 200u);
}

}  // namespace
}  // namespace fprof::reports
