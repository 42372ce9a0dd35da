#include "help_format.h"

#include <sstream>
#include <vector>

namespace fprof::cli {
namespace {

std::vector<std::string> splitWords(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// One line (no line feed in it) broken into lines of at most `width` characters.
std::string wrapLine(const std::string& line, std::size_t width) {
  if (line.size() <= width) return line;
  const std::string indent(line.find_first_not_of(' ') == std::string::npos ? 0 : line.find_first_not_of(' '), ' ');
  std::string out;
  std::string current = indent;
  for (const std::string& word : splitWords(line)) {
    const bool empty = current.size() == indent.size();
    if (!empty && current.size() + 1 + word.size() > width) {
      out += current + "\n";
      current = indent;
    }
    current += (current.size() == indent.size() ? "" : " ") + word;
  }
  return out + current;
}

}  // namespace

std::string wrapLines(const std::string& text, std::size_t width) {
  std::string out;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find('\n', start);
    out += wrapLine(text.substr(start, end == std::string::npos ? std::string::npos : end - start), width);
    if (end == std::string::npos) return out;
    out += "\n";
    start = end + 1;
  }
}

std::size_t WrappedHelpFormatter::descriptionWidth() const {
  const std::size_t column = get_column_width();
  return kHelpWidth > column + 20 ? kHelpWidth - column : 20;
}

std::string WrappedHelpFormatter::make_description(const CLI::App* app) const {
  return wrapLines(CLI::Formatter::make_description(app), kHelpWidth);
}

std::string WrappedHelpFormatter::make_footer(const CLI::App* app) const {
  return wrapLines(CLI::Formatter::make_footer(app), kHelpWidth);
}

std::string WrappedHelpFormatter::make_subcommand(const CLI::App* sub) const {
  std::stringstream out;
  CLI::detail::format_help(out, sub->get_display_name(true), wrapLines(sub->get_description(), descriptionWidth()),
                           get_column_width());
  return out.str();
}

std::string WrappedHelpFormatter::make_option_desc(const CLI::Option* opt) const {
  return wrapLines(CLI::Formatter::make_option_desc(opt), descriptionWidth());
}

}  // namespace fprof::cli
