// Escaping: HTML text and attributes, JSON inside <script>, invalid UTF-8.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fprof/reports/escape.h"

namespace fprof::reports {
namespace {

TEST(Escape, HtmlEscapesMarkupAndQuotes) {
  EXPECT_EQ(htmlEscape("void f<float, 4>(A&, \"x\", 'y')"),
            "void f&lt;float, 4&gt;(A&amp;, &quot;x&quot;, &#39;y&#39;)");
  EXPECT_EQ(htmlEscape("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(htmlEscape("plain_kernel"), "plain_kernel");
}

TEST(Escape, HtmlKeepsValidUtf8AndReplacesInvalid) {
  EXPECT_EQ(htmlEscape("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(htmlEscape("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(htmlEscape("\xC0\xBC"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '<' must not survive
  // Control characters become visible Control Pictures; line feeds and tabs (layout) stay.
  EXPECT_EQ(htmlEscape("a\x01" "b"), "a\xE2\x90\x81" "b");
  EXPECT_EQ(htmlEscape("\x1B[31mred"), "\xE2\x90\x9B[31mred");
  EXPECT_EQ(htmlEscape("a\nb\tc\rd"), "a\nb\tc\xE2\x90\x8D" "d");
  EXPECT_EQ(htmlEscape(std::string("a\0b", 3)), "a\xE2\x90\x80" "b");
  EXPECT_EQ(sanitizeUtf8("x\xE2\x82"), "x\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Escape, JsonForScriptCannotCloseTheScriptElement) {
  const nlohmann::json j = {{"name", "</script><script>alert(1)</script><!-- & -->"}};
  const std::string s = jsonForScript(j);
  EXPECT_EQ(s.find('<'), std::string::npos) << s;
  EXPECT_EQ(s.find('>'), std::string::npos) << s;
  EXPECT_EQ(s.find('&'), std::string::npos) << s;
  // Still the same JSON.
  EXPECT_EQ(nlohmann::json::parse(s), j);
  EXPECT_EQ(s, R"({"name":"\u003c/script\u003e\u003cscript\u003ealert(1)\u003c/script\u003e\u003c!-- \u0026 --\u003e"})");
}

TEST(Escape, JsonForScriptEscapesLineSeparatorsAndBadUtf8) {
  const nlohmann::json j = {{"a", "x\xE2\x80\xA8y\xE2\x80\xA9z"}, {"b", std::string("bad\xFF")}};
  const std::string s = jsonForScript(j);
  EXPECT_NE(s.find("\\u2028"), std::string::npos);
  EXPECT_NE(s.find("\\u2029"), std::string::npos);
  EXPECT_EQ(s.find("\xE2\x80\xA8"), std::string::npos);
  EXPECT_NE(s.find("bad\xEF\xBF\xBD"), std::string::npos) << s;
}

}  // namespace
}  // namespace fprof::reports
