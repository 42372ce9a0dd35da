// Checks of what fprof writes, shared by the hostile-corpus tests of the CLI and the viewer: text
// fit for a terminal, CSV per RFC 4180, JSON, HTML without live markup, Markdown tables that keep
// their columns, JUnit XML. Each returns "" when the text passes, else what is wrong and where.
#pragma once

#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fprof/core/text.h"

namespace fprof::testing {

inline bool validUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = core::utf8SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// "" when text can go to a terminal: valid UTF-8, no C0 control but line feed, no DEL, no C1
// control (U+0080..U+009F), no bidi override or isolate. Otherwise what is wrong, and where.
inline std::string terminalProblem(const std::string& s, bool allow_tab = false) {
  if (!validUtf8(s)) return "invalid UTF-8";
  for (size_t i = 0; i < s.size(); ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    const bool c0 = b < 0x20 && b != '\n' && !(allow_tab && b == '\t');
    const bool c1 = b == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) < 0xA0;
    const bool bidi = b == 0xE2 && i + 2 < s.size() &&
                      ((s[i + 1] == '\x80' && static_cast<unsigned char>(s[i + 2]) >= 0xAA &&
                        static_cast<unsigned char>(s[i + 2]) <= 0xAE) ||
                       (s[i + 1] == '\x81' && static_cast<unsigned char>(s[i + 2]) >= 0xA6 &&
                        static_cast<unsigned char>(s[i + 2]) <= 0xA9));
    if (c0 || b == 0x7F || c1 || bidi) return "control character at byte " + std::to_string(i);
  }
  return "";
}

// Records per RFC 4180 (CRLF or LF ends a record outside quotes); "" or what is wrong.
inline std::string parseCsv(const std::string& s, std::vector<std::vector<std::string>>& rows) {
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quoted) {
      if (c == '"' && i + 1 < s.size() && s[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
        if (i + 1 < s.size() && s[i + 1] != ',' && s[i + 1] != '\n' && s[i + 1] != '\r') {
          return "text after a closing quote at byte " + std::to_string(i);
        }
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"') {
      if (!field.empty()) return "a quote inside an unquoted field at byte " + std::to_string(i);
      quoted = was_quoted = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      was_quoted = false;
    } else if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') {
      continue;  // CRLF
    } else if (c == '\r') {
      return "a bare CR outside quotes at byte " + std::to_string(i);
    } else if (c == '\n') {
      row.push_back(std::move(field));
      field.clear();
      rows.push_back(std::move(row));
      row.clear();
      was_quoted = false;
    } else {
      field += c;
    }
  }
  if (quoted) return "an unterminated quoted field";
  if (!field.empty() || was_quoted || !row.empty()) return "the last record lacks its line end";
  return "";
}

inline std::string csvProblem(const std::string& s) {
  if (!validUtf8(s)) return "invalid UTF-8";
  std::vector<std::vector<std::string>> rows;
  if (std::string e = parseCsv(s, rows); !e.empty()) return e;
  if (rows.empty()) return "no header";
  for (size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].size() != rows[0].size()) {
      return "row " + std::to_string(r) + " has " + std::to_string(rows[r].size()) + " fields, the header " +
             std::to_string(rows[0].size());
    }
  }
  for (const auto& row : rows) {
    for (const std::string& f : row) {
      if (std::string e = terminalProblem(f); !e.empty()) return "field: " + e;
    }
  }
  return "";
}

// Every string in a JSON document (keys too) is clean text.
inline std::string jsonStringProblem(const nlohmann::json& j) {
  if (j.is_string()) {
    const std::string e = terminalProblem(j.get<std::string>(), /*allow_tab=*/false);
    return e.empty() ? "" : "string: " + e;
  }
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (std::string e = terminalProblem(it.key()); !e.empty()) return "key: " + e;
      if (std::string e = jsonStringProblem(it.value()); !e.empty()) return e;
    }
  } else if (j.is_array()) {
    for (const auto& v : j) {
      if (std::string e = jsonStringProblem(v); !e.empty()) return e;
    }
  }
  return "";
}

inline std::string jsonProblem(const std::string& s, nlohmann::json* parsed = nullptr) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(s);
  } catch (const std::exception& e) {
    return std::string("does not parse: ") + e.what();
  }
  if (std::string e = jsonStringProblem(j); !e.empty()) return e;
  if (parsed) *parsed = std::move(j);
  return "";
}

inline std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// No live markup from the data: the only elements are the report's own (two scripts, one chart),
// no attribute is an event handler, the embedded JSON cannot end its script element, and no
// control byte is left.
inline std::string htmlProblem(const std::string& html) {
  if (std::string e = terminalProblem(html, /*allow_tab=*/true); !e.empty()) return e;
  static const std::set<std::string> kTags = {
      "!doctype", "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "dl", "dt", "dd", "code",
      "div", "span", "table", "thead", "tbody", "tr", "th", "td", "ul", "li", "b", "i", "br", "svg", "defs",
      "marker", "path", "clippath", "rect", "line", "text", "circle", "g", "label", "input", "footer", "pre",
      "script", "polyline", "polygon", "small", "a", "section", "details", "summary", "em", "strong", "ol", "sup"};
  int scripts = 0, svgs = 0;
  size_t at = 0;
  std::string in_script;  // the script element's text, when inside one
  while ((at = html.find('<', at)) != std::string::npos) {
    const size_t end = html.find('>', at);
    if (end == std::string::npos) return "a '<' without '>' at byte " + std::to_string(at);
    std::string tag = html.substr(at + 1, end - at - 1);
    const bool closing = !tag.empty() && tag[0] == '/';
    if (closing) tag.erase(0, 1);
    const size_t name_end = tag.find_first_of(" \t\n/");
    const std::string name = lower(tag.substr(0, name_end));
    if (!kTags.count(name)) return "element <" + name + "> at byte " + std::to_string(at);
    if (!closing && name == "script") {
      ++scripts;
      const size_t close = html.find("</script>", end);
      if (close == std::string::npos) return "an unclosed script";
      // The embedded data holds no '<' at all (written as \u003c), so nothing in it can end or
      // confuse its element; the report's own code is the other script.
      if (tag.find("application/json") != std::string::npos && html.find('<', end + 1) != close) {
        return "a '<' inside the embedded JSON";
      }
      at = close;
      continue;
    }
    if (!closing && name == "svg") ++svgs;
    // Attributes: names outside quoted values; none may be an event handler.
    std::string rest = name_end == std::string::npos ? "" : tag.substr(name_end);
    std::string attribute;
    char quote = 0;
    for (char c : rest) {
      if (quote) {
        if (c == quote) quote = 0;
        continue;
      }
      if (c == '"' || c == '\'') {
        quote = c;
      } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':') {
        attribute += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        continue;
      }
      if (attribute.rfind("on", 0) == 0) return "event handler attribute " + attribute + " in <" + name + ">";
      attribute.clear();
    }
    if (attribute.rfind("on", 0) == 0) return "event handler attribute " + attribute + " in <" + name + ">";
    at = end + 1;
  }
  if (scripts != 2) return std::to_string(scripts) + " script elements, not the report's 2";
  if (svgs > 1) return std::to_string(svgs) + " svg elements";
  if (html.find("<!--") != std::string::npos) return "an HTML comment";
  return "";
}

// A kernel's short name (analysis/kernel_names.h) as an output gives it: not empty, clean text, and
// short even for a 1 MB name (a short name has at most about 240 characters, plus " #n").
inline constexpr size_t kShortNameMaxCodePoints = 400;
inline std::string shortNameProblem(const std::string& s) {
  if (s.empty()) return "an empty short name";
  if (std::string e = terminalProblem(s); !e.empty()) return "short name: " + e;
  if (core::codePointCount(s) > kShortNameMaxCodePoints) {
    return "a short name of " + std::to_string(core::codePointCount(s)) + " characters";
  }
  return "";
}

// The JSON the HTML report embeds for its tooltips (<script type="application/json">), parsed;
// null when there is none or it does not parse.
inline nlohmann::json htmlEmbeddedJson(const std::string& html) {
  const std::string open = "<script type=\"application/json\"";
  const size_t at = html.find(open);
  if (at == std::string::npos) return nullptr;
  const size_t begin = html.find('>', at);
  const size_t end = html.find("</script>", begin);
  if (begin == std::string::npos || end == std::string::npos) return nullptr;
  return nlohmann::json::parse(html.substr(begin + 1, end - begin - 1), nullptr, /*allow_exceptions=*/false);
}

// Markdown: no control byte; every table keeps its column count (pipes not escaped by a
// backslash); outside code spans and the report's own <details> lines, no '<' that could open a
// tag.
inline std::string markdownProblem(const std::string& md) {
  if (std::string e = terminalProblem(md); !e.empty()) return e;
  std::istringstream lines(md);
  std::string line;
  int line_no = 0;
  size_t columns = 0;  // 0: not in a table
  while (std::getline(lines, line)) {
    ++line_no;
    // The report's own markup (its folded lists: full kernel names, the fusion candidates'
    // details) holds no data: a summary of the report's own words.
    const std::string open = "<details><summary>", close_summary = "</summary>";
    if (line.rfind(open, 0) == 0 && line.size() > open.size() + close_summary.size() &&
        line.compare(line.size() - close_summary.size(), close_summary.size(), close_summary) == 0 &&
        line.find('<', open.size()) == line.size() - close_summary.size()) {
      continue;
    }
    if (line == "</details>") continue;
    // Code spans out (a run of n backticks to the next run of n); the rest is markup.
    std::string outside;
    for (size_t i = 0; i < line.size();) {
      if (line[i] != '`') {
        outside += line[i++];
        continue;
      }
      size_t n = 0;
      while (i + n < line.size() && line[i + n] == '`') ++n;
      const std::string fence(n, '`');
      size_t close = line.find(fence, i + n);
      while (close != std::string::npos && close + n < line.size() && line[close + n] == '`') {
        close = line.find(fence, close + n + 1);
      }
      if (close == std::string::npos) {
        outside += line.substr(i);
        break;
      }
      // A pipe inside a code span still ends a cell unless escaped: keep escaped/unescaped pipes.
      for (size_t k = i + n; k < close; ++k) {
        if (line[k] == '|') outside += (k > 0 && line[k - 1] == '\\') ? "\\|" : "|";
      }
      i = close + n;
    }
    for (size_t k = 0; k + 1 < outside.size(); ++k) {
      if (outside[k] == '<' && (std::isalpha(static_cast<unsigned char>(outside[k + 1])) || outside[k + 1] == '/' ||
                                outside[k + 1] == '!')) {
        return "markup outside code spans on line " + std::to_string(line_no);
      }
    }
    if (line.rfind("|", 0) != 0) {
      columns = 0;
      continue;
    }
    size_t pipes = 0;
    for (size_t k = 0; k < outside.size(); ++k) pipes += outside[k] == '|' && (k == 0 || outside[k - 1] != '\\');
    if (columns == 0) columns = pipes;
    if (pipes != columns) {
      return "table row on line " + std::to_string(line_no) + " has " + std::to_string(pipes) + " cell separators, not " +
             std::to_string(columns);
    }
  }
  return "";
}

// JUnit XML: clean text, and every '<' starts one of the report's own elements.
inline std::string junitProblem(const std::string& xml) {
  if (std::string e = terminalProblem(xml); !e.empty()) return e;
  static const std::set<std::string> kTags = {"?xml",    "testsuites", "testsuite", "testcase",
                                              "failure", "properties", "property",  "system-err"};
  for (size_t at = 0; (at = xml.find('<', at)) != std::string::npos; ++at) {
    const size_t name_start = xml.compare(at + 1, 1, "/") == 0 ? at + 2 : at + 1;
    const size_t name_end = xml.find_first_of(" />", name_start);
    const std::string name = xml.substr(name_start, name_end - name_start);
    if (!kTags.count(name)) return "element <" + name + ">";
  }
  for (size_t at = 0; (at = xml.find('&', at)) != std::string::npos; ++at) {
    const size_t semi = xml.find(';', at);
    const std::string entity = semi == std::string::npos ? "" : xml.substr(at, semi - at + 1);
    if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;" && entity != "&apos;") {
      return "a bare '&'";
    }
  }
  return "";
}

}  // namespace fprof::testing
