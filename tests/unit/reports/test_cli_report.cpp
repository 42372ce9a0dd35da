// `fprof report` as a user meets it: help, formats, output files, errors and exit codes.
#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

namespace fprof {
namespace {

using testing::readFile;
using testing::runFprof;
using testing::tempPath;

TEST(CliReport, Help) {
  const auto r = runFprof("report --help");
  EXPECT_EQ(r.code, 0);
  for (const char* opt : {"--baseline", "-o,--output", "--format"}) EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
  EXPECT_NE(r.out.find("html (default) or md"), std::string::npos) << r.out;
  EXPECT_NE(runFprof("--help").out.find("  report "), std::string::npos);
}

TEST(CliReport, WritesHtmlAndMarkdown) {
  const std::string db = tempPath("cli_run.fprof");
  ASSERT_TRUE(testing::writeSyntheticProfile(db, {.counters = true}).ok());
  const std::string html = tempPath("cli_run.html");
  auto r = runFprof("report " + db + " -o " + html);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("wrote " + html), std::string::npos);
  const std::string s = readFile(html);
  EXPECT_EQ(s.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(s.find("</html>"), std::string::npos);

  r = runFprof("report " + db + " --format md");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("## fprof report: `./model --ops all --variant unfused`", 0), 0u) << r.out;

  const std::string base = tempPath("cli_base.fprof");
  ASSERT_TRUE(testing::writeSyntheticProfile(base, {.counters = true, .slowdown = 0.8}).ok());
  r = runFprof("report " + db + " --baseline " + base + " --format md -o -");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("### Against the baseline"), std::string::npos);
}

TEST(CliReport, BadInputExits2) {
  const std::string db = tempPath("cli_bad.fprof");
  ASSERT_TRUE(testing::writeSyntheticProfile(db, {}).ok());
  EXPECT_EQ(runFprof("report /nonexistent/run.fprof").code, 2);
  EXPECT_EQ(runFprof("report " + db + " --format pdf").code, 2);
  EXPECT_EQ(runFprof("report " + db + " --baseline /nonexistent.fprof").code, 2);
  // Not a database.
  const std::string text = tempPath("cli_not_a_db.fprof");
  { std::ofstream(text) << "hello"; }
  auto r = runFprof("report " + text);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("fprof: "), std::string::npos);
  // Never overwrite the input with the report.
  r = runFprof("report " + db + " -o " + db);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find(db + " is an input of this command; write the report to another file"), std::string::npos) << r.out;
  EXPECT_TRUE(core::checkDatabase(db).ok());
  EXPECT_EQ(runFprof("report " + db + " -o /nonexistent/dir/r.html").code, 2);
}

}  // namespace
}  // namespace fprof
