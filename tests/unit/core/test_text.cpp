// Cleaning untrusted text (core/text.h): invalid UTF-8, control characters, cutting for display,
// CSV fields.
#include <gtest/gtest.h>

#include <string>

#include "fprof/core/text.h"

namespace fprof::core {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Text, CleanAsciiIsUnchanged) {
  EXPECT_TRUE(isCleanText("void saxpy<float>(int, float const*, float*)"));
  EXPECT_EQ(cleanText("void saxpy<float>(int, float const*, float*)"), "void saxpy<float>(int, float const*, float*)");
  EXPECT_TRUE(isCleanText(""));
  EXPECT_EQ(cleanText(""), "");
}

TEST(Text, ValidUtf8IsKept) {
  const std::string s = "caf\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x9A\x80";  // café → 🚀
  EXPECT_TRUE(isCleanText(s));
  EXPECT_EQ(cleanText(s), s);
}

TEST(Text, EachInvalidByteBecomesReplacementCharacter) {
  EXPECT_EQ(cleanText("a\xFF" "b"), "a" + kFffd + "b");
  EXPECT_EQ(cleanText("\xC0\xBC"), kFffd + kFffd);             // overlong '<'
  EXPECT_EQ(cleanText("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // a surrogate
  EXPECT_EQ(cleanText("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // past U+10FFFF
  EXPECT_EQ(cleanText("x\xE2\x82"), "x" + kFffd + kFffd);       // cut short
  EXPECT_EQ(cleanText("\x80"), kFffd);                          // stray continuation byte
  EXPECT_FALSE(isCleanText("a\xFF"));
}

TEST(Text, ControlCharactersBecomeVisiblePictures) {
  EXPECT_EQ(cleanText(std::string("a\0b", 3)), "a\xE2\x90\x80" "b");      // NUL -> U+2400
  EXPECT_EQ(cleanText("\x1B[31mred\x1B[0m"), "\xE2\x90\x9B[31mred\xE2\x90\x9B[0m");  // ESC -> U+241B
  EXPECT_EQ(cleanText("a\rb"), "a\xE2\x90\x8D" "b");                        // CR -> U+240D
  EXPECT_EQ(cleanText("a\nb\tc"), "a\xE2\x90\x8A" "b\xE2\x90\x89" "c");     // one line: LF, TAB too
  EXPECT_EQ(cleanText("a\x7F"), "a\xE2\x90\xA1");                           // DEL -> U+2421
  EXPECT_FALSE(isCleanText("a\nb"));
}

TEST(Text, KeepLineBreaksKeepsOnlyLineFeedAndTab) {
  EXPECT_EQ(cleanText("a\nb\tc", TextLines::kKeepLineBreaks), "a\nb\tc");
  EXPECT_TRUE(isCleanText("a\nb\tc", TextLines::kKeepLineBreaks));
  EXPECT_EQ(cleanText("a\r\nb", TextLines::kKeepLineBreaks), "a\xE2\x90\x8D\nb");
  EXPECT_EQ(cleanText("\x1B]0;title\x07", TextLines::kKeepLineBreaks), "\xE2\x90\x9B]0;title\xE2\x90\x87");
}

TEST(Text, C1ControlsAndBidiOverridesAreReplaced) {
  EXPECT_EQ(cleanText("a\xC2\x9B" "31m"), "a" + kFffd + "31m");     // 8-bit CSI
  EXPECT_EQ(cleanText("x\xE2\x80\xAEy"), "x" + kFffd + "y");        // U+202E right-to-left override
  EXPECT_EQ(cleanText("x\xE2\x81\xA6y"), "x" + kFffd + "y");        // U+2066 left-to-right isolate
  EXPECT_EQ(cleanText("\xC2\xA0"), "\xC2\xA0");                      // U+00A0 is no control
}

TEST(Text, CleaningIsIdempotent) {
  const std::string hostile = std::string("\0\x1B[2J\xFF\xC2\x9B\r\n<script>", 12);
  const std::string once = cleanText(hostile);
  EXPECT_TRUE(isCleanText(once));
  EXPECT_EQ(cleanText(once), once);
  std::string in_place = hostile;
  cleanTextInPlace(in_place);
  EXPECT_EQ(in_place, once);
}

TEST(Text, EveryByteValueCleansToValidText) {
  for (int b = 0; b < 256; ++b) {
    const std::string s(1, static_cast<char>(b));
    EXPECT_TRUE(isCleanText(cleanText(s))) << b;
    for (size_t i = 0; i < cleanText(s).size();) {
      const size_t n = utf8SequenceLength(cleanText(s), i);
      ASSERT_GT(n, 0u) << b;
      i += n;
    }
  }
}

TEST(Text, TruncateCutsBetweenCodePoints) {
  EXPECT_EQ(truncateText("abcdef", 10), "abcdef");
  EXPECT_EQ(truncateText("abcdef", 4), "abc\xE2\x80\xA6");
  EXPECT_EQ(codePointCount(truncateText("abcdef", 4)), 4u);
  // Three-byte characters are never cut in the middle.
  const std::string arrows = "\xE2\x86\x92\xE2\x86\x92\xE2\x86\x92\xE2\x86\x92";
  EXPECT_EQ(truncateText(arrows, 3), "\xE2\x86\x92\xE2\x86\x92\xE2\x80\xA6");
  EXPECT_EQ(truncateText(arrows, 4), arrows);
  EXPECT_TRUE(isCleanText(truncateText(arrows, 2)));
}

TEST(Text, TruncateMiddleKeepsBothEnds) {
  EXPECT_EQ(truncateTextMiddle("abcdefghij", 7, "..."), "ab...ij");
  EXPECT_EQ(truncateTextMiddle("abcdefghij", 10, "..."), "abcdefghij");
  EXPECT_EQ(truncateTextMiddle("abcdefghij", 5), "ab\xE2\x80\xA6" "ij");
  const std::string arrows(30, 'x');
  EXPECT_EQ(codePointCount(truncateTextMiddle("\xE2\x86\x92" + arrows + "\xE2\x86\x92", 9)), 9u);
}

TEST(Text, OneMegabyteIsCutQuickly) {
  const std::string big(1 << 20, 'k');
  const std::string shown = truncateText(big, kMaxShownCodePoints);
  EXPECT_EQ(codePointCount(shown), kMaxShownCodePoints);
  EXPECT_LT(shown.size(), size_t{8192});
}

// RFC 4180: quote fields holding a comma, a quote, CR or LF; double the quotes.
TEST(Text, CsvFieldQuotesPerRfc4180) {
  EXPECT_EQ(csvField("plain"), "plain");
  EXPECT_EQ(csvField("a,b"), "\"a,b\"");
  EXPECT_EQ(csvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csvField(""), "");
  // A bare CR or LF from a profiled program becomes visible: the row stays one row.
  EXPECT_EQ(csvField("a\rb"), "a\xE2\x90\x8D" "b");
  EXPECT_EQ(csvField("a\nb,c"), "\"a\xE2\x90\x8A" "b,c\"");
  EXPECT_EQ(csvField("bad\xFF"), "bad" + kFffd);
}

}  // namespace
}  // namespace fprof::core
