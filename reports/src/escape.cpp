// HTML and script-embedded JSON escaping (see escape.h).
#include "fprof/reports/escape.h"

#include <nlohmann/json.hpp>

#include "fprof/core/text.h"

namespace fprof::reports {

std::string sanitizeUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = core::utf8SequenceLength(text, i);
    if (n == 0) {
      out += core::kReplacementCharacter;
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string htmlEscape(std::string_view text) {
  // Clean first (our own line feeds and tabs are layout: a tooltip's lines), then escape markup.
  const std::string clean = core::cleanText(text, core::TextLines::kKeepLineBreaks);
  std::string out;
  out.reserve(clean.size() + clean.size() / 8);
  for (const char c : clean) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string shownText(std::string_view text) { return core::truncateText(text, core::kMaxShownCodePoints); }

std::string htmlEscapeShown(std::string_view text) { return htmlEscape(shownText(text)); }

std::string jsonForScript(const nlohmann::json& value) {
  const std::string raw = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(raw.size() + 16);
  for (size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xE2' && i + 2 < raw.size() && raw[i + 1] == '\x80' && (raw[i + 2] == '\xA8' || raw[i + 2] == '\xA9')) {
      out += raw[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace fprof::reports
