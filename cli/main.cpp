// fprof: the command-line front end. One subcommand per cmd_*.cpp file.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "fprof/core/text.h"
#include "help_format.h"
#include "progress.h"

namespace fprof::cli {

int inputError(const std::string& message) {
  printText(stderr, "fprof: " + core::cleanText(message) + "\n");
  return 2;
}

core::Expected<core::Profile> loadProfile(const std::string& path, Progress* progress) {
  auto loaded = core::loadProfile(path);
  if (loaded) {
    if (progress && !loaded->warnings.empty()) progress->done();
    for (const std::string& w : loaded->warnings) printText(stderr, "fprof: warning: " + core::cleanText(w) + "\n");
  }
  return loaded;
}

void printText(std::FILE* stream, const std::string& text) {
  const std::string clean = core::cleanText(text, core::TextLines::kKeepLineBreaks);
  std::fwrite(clean.data(), 1, clean.size(), stream);
}

}  // namespace fprof::cli

int main(int argc, char** argv) {
  using namespace fprof::cli;
  CLI::App app{"fprof " FPROF_VERSION_STRING
               ": GPU profiling and roofline analysis for CUDA programs.\n"
               "Profile a program, see where each kernel sits on the roofline, find the fusions that pay."};
  app.name("fprof");
  app.formatter(std::make_shared<WrappedHelpFormatter>());  // before the subcommands: they take it from here
  app.set_version_flag("--version", "fprof " FPROF_VERSION_STRING);
  app.require_subcommand(1, 1);
  app.fallthrough(false);

  std::vector<Command> commands = {addRunCommand(app), addInfoCommand(app), addReportCommand(app), addCeilingsCommand(app), addMetricsCommand(app), addSchemaCommand(app)};
  commands.push_back(addDiffCommand(app));
  commands.push_back(addGateCommand(app));
  commands.push_back(addMergeCommand(app));
  commands.push_back(addExportCommand(app));
  commands.push_back(addViewCommand(app));
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    for (const Command& c : commands) {
      if (c.app->get_name() == argv[1]) known = "ok";
    }
    if (known != "ok") {
      std::string names;
      for (const Command& c : commands) names += (names.empty() ? "" : ", ") + c.app->get_name();
      return inputError(std::string("unknown command '") + argv[1] + "'; commands: " + names +
                        " (see 'fprof --help')");
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion&) {
    std::printf("fprof %s\n", FPROF_VERSION_STRING);
    return 0;
  } catch (const CLI::ParseError& e) {
    // A subcommand's --help is thrown as CallForHelp from inside parse; everything else is misuse.
    std::fprintf(stderr, "fprof: %s\nRun 'fprof --help' for usage.\n", e.what());
    return 2;
  }
  for (const Command& c : commands) {
    if (c.app->parsed()) {
      try {
        return c.run();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "fprof: internal error: %s\n", e.what());
        return 3;
      }
    }
  }
  return inputError("no command given; run 'fprof --help'");
}
