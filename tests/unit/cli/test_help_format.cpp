// The --help layout: wrapping at word boundaries, continuations indented like their line, and a
// formatter whose options and subcommands fit kHelpWidth however long their descriptions are.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>

#include "help_format.h"

namespace fprof::cli {
namespace {

size_t longestLine(const std::string& text) {
  std::istringstream in(text);
  size_t longest = 0;
  for (std::string line; std::getline(in, line);) longest = std::max(longest, line.size());
  return longest;
}

// A line that starts with `column` spaces and then text: a description continued in its column.
bool hasContinuationAtColumn(const std::string& text, size_t column) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.size() > column && line.find_first_not_of(' ') == column) return true;
  }
  return false;
}

TEST(HelpFormat, ShortLinesStayAsTheyAre) {
  EXPECT_EQ(wrapLines("a short line", 20), "a short line");
  EXPECT_EQ(wrapLines("", 20), "");
  EXPECT_EQ(wrapLines("one\ntwo", 20), "one\ntwo");
}

TEST(HelpFormat, BreaksAtSpacesWithinTheWidth) {
  EXPECT_EQ(wrapLines("aaa bbb ccc ddd", 7), "aaa bbb\nccc ddd");
  EXPECT_EQ(wrapLines("aaa bbb ccc ddd", 8), "aaa bbb\nccc ddd");
  EXPECT_EQ(wrapLines("aaa bbb ccc ddd", 11), "aaa bbb ccc\nddd");
}

TEST(HelpFormat, ContinuationKeepsTheLinesIndent) {
  EXPECT_EQ(wrapLines("  fprof run --metrics roofline ./model", 20), "  fprof run\n  --metrics roofline\n  ./model");
}

TEST(HelpFormat, AWordLongerThanTheRoomStaysWhole) {
  EXPECT_EQ(wrapLines("see averyveryverylongword here", 10), "see\naveryveryverylongword\nhere");
}

TEST(HelpFormat, KeepsLineBreaksAndWrapsEachLine) {
  EXPECT_EQ(wrapLines("aaa bbb ccc\nddd eee fff", 7), "aaa bbb\nccc\nddd eee\nfff");
}

TEST(HelpFormat, EveryLineOfAnAppsHelpFitsTheWidth) {
  const std::string sentence =
      "a sentence of plain words that goes on well past the width of one terminal line, as the descriptions "
      "of fprof's commands and options do, and has to be broken over several lines to stay within it";
  CLI::App app{"The command: " + sentence};
  app.formatter(std::make_shared<WrappedHelpFormatter>());
  app.footer("Examples:\n  fprof run --metrics roofline --kernel-regex gemm --launch-count 20 --launch-skip 100 "
             "--every-launch ./model --ops all");
  std::string value;
  app.add_option("--long-option", value, "An option with " + sentence);
  app.add_option("--an-option-whose-name-fills-the-column", value, "Short, on the next line");
  CLI::App* sub = app.add_subcommand("sub", "A subcommand with " + sentence);
  bool flag = false;
  sub->add_flag("--flag", flag, "A flag with " + sentence);
  const std::string root = app.help();
  const std::string subcommand = sub->help();
  EXPECT_LE(longestLine(root), kHelpWidth) << root;
  EXPECT_LE(longestLine(subcommand), kHelpWidth) << subcommand;
  // Nothing is lost: the words come out in order, the option's continuation in the description column.
  EXPECT_NE(root.find("--long-option TEXT"), std::string::npos) << root;
  EXPECT_TRUE(hasContinuationAtColumn(root, 30)) << root;
  EXPECT_NE(root.find("--every-launch"), std::string::npos) << root;
  EXPECT_NE(subcommand.find("A flag with a sentence"), std::string::npos) << subcommand;
}

}  // namespace
}  // namespace fprof::cli
