// Subcommand registry: each cli/cmd_*.cpp adds one subcommand (STYLE.md rule 11).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "fprof/core/output.h"
#include "fprof/core/store.h"

namespace fprof::cli {

// A subcommand's run function returns the process exit code: 0 ok, 1 a finding (gate), 2 bad input.
using RunFn = std::function<int()>;

struct Command {
  CLI::App* app = nullptr;
  RunFn run;
};

// Each cmd_*.cpp defines one of these; main.cpp lists them in help order.
Command addRunCommand(CLI::App& root);
Command addInfoCommand(CLI::App& root);
Command addReportCommand(CLI::App& root);
Command addCeilingsCommand(CLI::App& root);
Command addMetricsCommand(CLI::App& root);
Command addSchemaCommand(CLI::App& root);
Command addViewCommand(CLI::App& root);
Command addDiffCommand(CLI::App& root);
Command addGateCommand(CLI::App& root);
Command addExportCommand(CLI::App& root);
Command addMergeCommand(CLI::App& root);
Command addJobCommand(CLI::App& root);

// Prints "fprof: <message>" on stderr and returns 2, for bad input. The message is cleaned to one
// line (core/text.h): it may quote a damaged file.
int inputError(const std::string& message);

class Progress;

// core::loadProfile, and on stderr one "fprof: warning: ..." line per kind of damage the reader
// repaired (Profile::warnings). A progress line, if given, is cleared before the first warning so
// that each warning starts a line of its own (the next step draws it again).
core::Expected<core::Profile> loadProfile(const std::string& path, Progress* progress = nullptr,
                                          const core::LoadOptions& options = {});
// The same warnings, for a file read as a stream (core/profile_stream.h).
void printWarnings(const std::vector<std::string>& warnings);
// Those a profile gained after loadProfile printed the first `printed` of them (its launch tables,
// read by RunAnalysis::owningThenLoadingLaunchTables), the progress line cleared as loadProfile does.
void printWarningsAfter(const std::vector<std::string>& warnings, size_t printed, Progress* progress = nullptr);

// The rules an output of a command follows (core/output.h): replace an existing file only with
// --force (`force`), never one of `inputs`; `what` names the output in messages ("the report").
core::OutputRules outputRules(bool force, std::vector<std::string> inputs, std::string what);

// The --force flag's help, the same for every command that writes a file.
inline constexpr const char* kForceHelp =
    "Replace an output file that exists (never an input of the command; the new file is put in place only once "
    "complete)";

// The footer of a writing command's --help: the rules every output follows (docs/outputs.md).
inline constexpr const char* kOutputRulesFooter =
    "Output files: an existing file is replaced only with --force, an input never; each is written to a temporary "
    "file beside it and put in place only once complete, so a failed write leaves no partial file "
    "(docs/outputs.md).";

// Writes text for a terminal (stdout or stderr): cleaned, line feeds and tabs kept, so that no
// escape sequence a database holds reaches the terminal, whatever path it took.
void printText(std::FILE* stream, const std::string& text);

}  // namespace fprof::cli
