// Text from profiled programs is untrusted: a kernel name, an NVTX message, a host name or a
// damaged file may hold invalid UTF-8, NUL bytes, control characters (an ESC that recolours the
// terminal, a CR that splits a CSV row) and strings of any length. The reader cleans every string
// it loads with cleanText; every writer escapes for its own format on top (docs/report.md).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace fprof::core {

// U+FFFD, what an invalid byte becomes.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

// Where cleaned text goes: one line (a name, a table cell, a CSV field), or a block of our own
// lines (a report, a tooltip) whose line feeds and tabs are layout and stay.
enum class TextLines { kOneLine, kKeepLineBreaks };

// Length in bytes of the valid UTF-8 sequence starting at s[at] (1 to 4), or 0 where the byte
// starts none (stray continuation byte, overlong form, surrogate, past U+10FFFF, cut short).
size_t utf8SequenceLength(std::string_view s, size_t at);

// True when cleanText(s, lines) would return s unchanged (checking allocates nothing).
bool isCleanText(std::string_view s, TextLines lines = TextLines::kOneLine);

// Valid UTF-8 without control characters, every character still visible:
// - each byte that starts no valid UTF-8 sequence becomes U+FFFD;
// - C0 controls and DEL become their Control Pictures (NUL -> U+2400, ESC -> U+241B, CR -> U+240D,
//   LF -> U+240A, DEL -> U+2421), except LF and TAB with kKeepLineBreaks;
// - C1 controls (U+0080..U+009F: 8-bit CSI and friends) and the bidirectional embeddings,
//   overrides and isolates (U+202A..U+202E, U+2066..U+2069: text that displays in another order
//   than it reads) become U+FFFD.
std::string cleanText(std::string_view s, TextLines lines = TextLines::kOneLine);

// Cleans in place; no copy when the text is clean already (the common case).
void cleanTextInPlace(std::string& s, TextLines lines = TextLines::kOneLine);

// Code points in valid UTF-8 (what a terminal column or a table cell counts, roughly).
size_t codePointCount(std::string_view utf8);

// Front-ends (terminal, reports, viewer) show at most this many code points of one text, so that
// a 1 MB name does not blow up a table; exports (CSV, JSON, Chrome trace) keep the whole text.
inline constexpr size_t kMaxShownCodePoints = 2000;

// At most max_code_points code points of valid UTF-8 for display: longer text keeps its start
// and ends in an ellipsis (U+2026), cut between code points, never inside one.
std::string truncateText(std::string_view utf8, size_t max_code_points);

// The same, keeping the start and the end around the ellipsis (a kernel name's template
// arguments in the middle matter least). The ellipsis counts towards the maximum.
std::string truncateTextMiddle(std::string_view utf8, size_t max_code_points,
                               std::string_view ellipsis = "\xE2\x80\xA6");

// One CSV field per RFC 4180: the text cleaned to one line, then quoted (quotes doubled) when it
// holds a comma, a quote, CR or LF.
std::string csvField(std::string_view s);

}  // namespace fprof::core
