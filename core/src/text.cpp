// Cleaning untrusted text (see text.h).
#include "fprof/core/text.h"

namespace fprof::core {
namespace {

// What a code point (or an invalid byte, cp < 0) becomes.
enum class Action { kKeep, kPicture, kReplace };

Action actionFor(long cp, TextLines lines) {
  if (cp < 0) return Action::kReplace;
  if (cp < 0x20) {
    return lines == TextLines::kKeepLineBreaks && (cp == '\n' || cp == '\t') ? Action::kKeep : Action::kPicture;
  }
  if (cp < 0x7F) return Action::kKeep;
  if (cp == 0x7F) return Action::kPicture;
  if (cp < 0xA0) return Action::kReplace;  // C1 controls
  if ((cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069)) return Action::kReplace;
  return Action::kKeep;
}

long decode(std::string_view s, size_t at, size_t n) {
  const auto b0 = static_cast<unsigned char>(s[at]);
  if (n == 1) return b0;
  long cp = b0 & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[at + k]) & 0x3F);
  return cp;
}

// The Control Picture of a C0 control or DEL, as UTF-8 (U+2400 + c; DEL is U+2421).
void appendPicture(std::string& out, long cp) {
  const long picture = cp == 0x7F ? 0x2421 : 0x2400 + cp;
  out += static_cast<char>(0xE0 | (picture >> 12));
  out += static_cast<char>(0x80 | ((picture >> 6) & 0x3F));
  out += static_cast<char>(0x80 | (picture & 0x3F));
}

// Calls fn(at, length, code point or -1) for each sequence or invalid byte of s.
template <class Fn>
void forEachCodePoint(std::string_view s, Fn&& fn) {
  for (size_t at = 0; at < s.size();) {
    const size_t n = utf8SequenceLength(s, at);
    if (n == 0) {
      if (!fn(at, size_t{1}, -1L)) return;
      ++at;
    } else {
      if (!fn(at, n, decode(s, at, n))) return;
      at += n;
    }
  }
}

// Byte offset after the first `count` code points of valid UTF-8.
size_t offsetAfter(std::string_view utf8, size_t count) {
  size_t at = 0;
  for (size_t seen = 0; at < utf8.size() && seen < count; ++seen) {
    const size_t n = utf8SequenceLength(utf8, at);
    at += n == 0 ? 1 : n;
  }
  return at;
}

constexpr std::string_view kEllipsis = "\xE2\x80\xA6";

}  // namespace

size_t utf8SequenceLength(std::string_view s, size_t at) {
  const auto b0 = static_cast<unsigned char>(s[at]);
  if (b0 < 0x80) return 1;
  size_t n = 0;
  unsigned min_cp = 0;
  unsigned cp = 0;
  if ((b0 & 0xE0) == 0xC0) {
    n = 2, min_cp = 0x80, cp = b0 & 0x1Fu;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3, min_cp = 0x800, cp = b0 & 0x0Fu;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4, min_cp = 0x10000, cp = b0 & 0x07u;
  } else {
    return 0;
  }
  if (at + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[at + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  // Overlong forms (an overlong '<' must not pass as one), surrogates and values past U+10FFFF.
  if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

bool isCleanText(std::string_view s, TextLines lines) {
  // Printable ASCII, the bulk of every name, is checked without decoding.
  size_t at = 0;
  while (at < s.size() && static_cast<unsigned char>(s[at]) >= 0x20 && static_cast<unsigned char>(s[at]) < 0x7F) ++at;
  if (at == s.size()) return true;
  bool clean = true;
  forEachCodePoint(s.substr(at), [&](size_t, size_t, long cp) {
    clean = actionFor(cp, lines) == Action::kKeep;
    return clean;
  });
  return clean;
}

std::string cleanText(std::string_view s, TextLines lines) {
  if (isCleanText(s, lines)) return std::string(s);  // the common case: one scan, one copy
  std::string out;
  out.reserve(s.size());
  forEachCodePoint(s, [&](size_t at, size_t n, long cp) {
    switch (actionFor(cp, lines)) {
      case Action::kKeep: out.append(s.substr(at, n)); break;
      case Action::kPicture: appendPicture(out, cp); break;
      case Action::kReplace: out += kReplacementCharacter; break;
    }
    return true;
  });
  return out;
}

void cleanTextInPlace(std::string& s, TextLines lines) {
  if (!isCleanText(s, lines)) s = cleanText(s, lines);
}

size_t codePointCount(std::string_view utf8) {
  size_t count = 0;
  for (char c : utf8) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return count;
}

std::string truncateText(std::string_view utf8, size_t max_code_points) {
  if (utf8.size() <= max_code_points || codePointCount(utf8) <= max_code_points) return std::string(utf8);
  if (max_code_points == 0) return "";
  std::string out(utf8.substr(0, offsetAfter(utf8, max_code_points - 1)));
  out += kEllipsis;
  return out;
}

std::string truncateTextMiddle(std::string_view utf8, size_t max_code_points, std::string_view ellipsis) {
  const size_t count = utf8.size() <= max_code_points ? utf8.size() : codePointCount(utf8);
  if (count <= max_code_points) return std::string(utf8);
  const size_t marker = codePointCount(ellipsis);
  if (max_code_points < marker + 2) return truncateText(utf8, max_code_points);
  const size_t head = (max_code_points - marker) / 2;
  const size_t tail = max_code_points - marker - head;
  std::string out(utf8.substr(0, offsetAfter(utf8, head)));
  out += ellipsis;
  out.append(utf8.substr(offsetAfter(utf8, count - tail)));
  return out;
}

std::string csvField(std::string_view s) {
  std::string text = cleanText(s);
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace fprof::core
