// Escaping for the HTML report: every string that came from a profile (kernel names are C++
// templates full of <, >, & and quotes; a name may be hostile) passes through one of these.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>

namespace fprof::reports {

// Text content and quoted attribute values: the text cleaned (core/text.h: invalid UTF-8 becomes
// U+FFFD so a browser cannot be tricked into a different decoding; control characters other than
// line feed and tab become visible), then & < > " ' become entities.
std::string htmlEscape(std::string_view text);

// htmlEscape of the text cut to core::kMaxShownCodePoints (longer text ends in an ellipsis).
std::string htmlEscapeShown(std::string_view text);

// The text cut to core::kMaxShownCodePoints, not escaped (JSON embedded in the report, Markdown,
// the terminal).
std::string shownText(std::string_view text);

// JSON to embed inside <script type="application/json">: <, >, & and U+2028/U+2029 are written
// as \u escapes, so no "</script>" or "<!--" can appear and end or confuse the script element.
std::string jsonForScript(const nlohmann::json& value);

// Replaces invalid UTF-8 sequences with U+FFFD.
std::string sanitizeUtf8(std::string_view text);

}  // namespace fprof::reports
