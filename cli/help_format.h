// fprof's --help layout: every line of the root's and each subcommand's help fits kHelpWidth
// columns. CLI11 prints a description on one line however long it is; this formatter wraps the
// descriptions (options, subcommands, the command's own) and the footers at word boundaries, so the
// texts in cmd_*.cpp stay plain sentences.
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>

namespace fprof::cli {

// The widest line any `fprof ... --help` prints (tests/unit/cli checks every command's).
constexpr std::size_t kHelpWidth = 100;

// Each line of `text` broken at spaces into lines of at most `width` characters; a continuation
// keeps the leading spaces of the line it continues. A word longer than the room stays whole on a
// line of its own. Line breaks already in the text are kept.
std::string wrapLines(const std::string& text, std::size_t width);

// CLI11's formatter with the descriptions and footers wrapped to kHelpWidth. Set it on the root
// before adding subcommands: each subcommand takes its parent's formatter when it is made.
class WrappedHelpFormatter : public CLI::Formatter {
 public:
  std::string make_description(const CLI::App* app) const override;
  std::string make_footer(const CLI::App* app) const override;
  std::string make_subcommand(const CLI::App* sub) const override;
  std::string make_option_desc(const CLI::Option* opt) const override;

 private:
  // Room for a description printed in the second column (after the name column).
  std::size_t descriptionWidth() const;
};

}  // namespace fprof::cli
