// fprof: the command-line front end. One subcommand per cmd_*.cpp file.
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.h"
#include "fprof/core/output.h"
#include "fprof/core/text.h"
#include "help_format.h"
#include "progress.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace fprof::cli {

int inputError(const std::string& message) {
  printText(stderr, "fprof: " + core::cleanText(message) + "\n");
  return 2;
}

core::Expected<core::Profile> loadProfile(const std::string& path, Progress* progress, const core::LoadOptions& options) {
  auto loaded = core::loadProfile(path, options);
  if (loaded) {
    if (progress && !loaded->warnings.empty()) progress->done();
    printWarnings(loaded->warnings);
  }
  return loaded;
}

void printWarnings(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) printText(stderr, "fprof: warning: " + core::cleanText(w) + "\n");
}

void printWarningsAfter(const std::vector<std::string>& warnings, size_t printed, Progress* progress) {
  if (warnings.size() <= printed) return;
  if (progress) progress->done();
  printWarnings({warnings.begin() + static_cast<std::ptrdiff_t>(printed), warnings.end()});
}

void printText(std::FILE* stream, const std::string& text) {
  const std::string clean = core::cleanText(text, core::TextLines::kKeepLineBreaks);
  if (stream == stdout) {
    (void)core::writeStandardOutput(clean);  // a failure is kept and reported when fprof exits
    return;
  }
  std::fwrite(clean.data(), 1, clean.size(), stream);
}

core::OutputRules outputRules(bool force, std::vector<std::string> inputs, std::string what) {
  core::OutputRules rules;
  rules.replace = force;
  rules.inputs = std::move(inputs);
  rules.what = std::move(what);
  return rules;
}

namespace {

std::vector<Command> addCommands(CLI::App& app) {
  std::vector<Command> commands = {addRunCommand(app), addInfoCommand(app), addReportCommand(app),
                                   addCeilingsCommand(app), addMetricsCommand(app), addSchemaCommand(app)};
  commands.push_back(addDiffCommand(app));
  commands.push_back(addGateCommand(app));
  commands.push_back(addMergeCommand(app));
  commands.push_back(addJobCommand(app));
  commands.push_back(addExportCommand(app));
  commands.push_back(addViewCommand(app));
  return commands;
}

// A first argument that is no option must name a command: say which exist.
std::optional<int> refuseUnknownCommand(int argc, char** argv, const std::vector<Command>& commands) {
  if (argc <= 1 || argv[1][0] == '-') return std::nullopt;
  std::string names;
  for (const Command& c : commands) {
    if (c.app->get_name() == argv[1]) return std::nullopt;
    names += (names.empty() ? "" : ", ") + c.app->get_name();
  }
  return inputError(std::string("unknown command '") + argv[1] + "'; commands: " + names + " (see 'fprof --help')");
}

// Parses the command line; a value when fprof is done (help, version, misuse).
std::optional<int> parseArguments(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    (void)fprof::core::writeStandardOutput(app.help());
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    (void)fprof::core::writeStandardOutput(app.help("", CLI::AppFormatMode::All));
    return 0;
  } catch (const CLI::CallForVersion&) {
    (void)fprof::core::writeStandardOutput("fprof " FPROF_VERSION_STRING "\n");
    return 0;
  } catch (const CLI::ParseError& e) {
    // A subcommand's --help is thrown as CallForHelp from inside parse; everything else is misuse.
    std::fprintf(stderr, "fprof: %s\nRun 'fprof --help' for usage.\n", e.what());
    return 2;
  }
  return std::nullopt;
}

int runParsedCommand(const std::vector<Command>& commands) {
  for (const Command& c : commands) {
    if (!c.app->parsed()) continue;
    try {
      return c.run();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fprof: internal error: %s\n", e.what());
      return 3;
    }
  }
  return inputError("no command given; run 'fprof --help'");
}

// Whatever the command printed is checked once more as fprof exits: a write that failed (a full
// disk behind a redirection) is an error, exit 2, not a silent exit 0. A command that failed (2)
// has said why already.
int exitChecked(int code) {
  if (core::Status s = core::finishStandardOutput(); !s && code != 2) return inputError(s.error());
  return code;
}

}  // namespace
}  // namespace fprof::cli

int main(int argc, char** argv) {
  using namespace fprof::cli;
#ifdef __GLIBC__
  // A fixed threshold: blocks of a mebibyte or more (the tables of a large run) are mapped on
  // their own and go back to the system when freed. glibc's default raises the threshold as such
  // blocks are freed, so later ones land in the heap and stay resident after the step that used
  // them, adding to the peak of the steps after it.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
  CLI::App app{"fprof " FPROF_VERSION_STRING
               ": GPU profiling and roofline analysis for CUDA programs.\n"
               "Profile a program, see where each kernel sits on the roofline, find the fusions that pay."};
  app.name("fprof");
  app.formatter(std::make_shared<WrappedHelpFormatter>());  // before the subcommands: they take it from here
  app.set_version_flag("--version", "fprof " FPROF_VERSION_STRING);
  app.require_subcommand(1, 1);
  app.fallthrough(false);
  const std::vector<Command> commands = addCommands(app);
  if (std::optional<int> code = refuseUnknownCommand(argc, argv, commands)) return exitChecked(*code);
  // `fprof run` forwards signals to the program it profiles; every other command, stopped, takes
  // the temporary files of its unfinished outputs with it.
  if (argc <= 1 || std::strcmp(argv[1], "run") != 0) fprof::core::removeTemporaryOutputsOnSignals();
  if (std::optional<int> code = parseArguments(app, argc, argv)) return exitChecked(*code);
  return exitChecked(runParsedCommand(commands));
}
