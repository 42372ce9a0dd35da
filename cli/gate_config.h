// The gate's configuration file (docs/gate.md): JSON or TOML, the same keys, the same checks and
// the same error messages whatever the format; command-line options override it.
#pragma once

#include <string>

#include "fprof/analysis/diff.h"
#include "fprof/core/expected.h"

namespace fprof::cli {

enum class GateConfigFormat { kJson, kToml };

// By extension (.json, .toml); otherwise JSON when the text starts with '{', else TOML.
GateConfigFormat gateConfigFormat(const std::string& path, const std::string& text);

// "5%" or "5" -> 0.05. Thresholds are always percentages; `what` names the option in the error.
core::Expected<double> parsePercent(const std::string& text, const std::string& what);

// Applies `text` (named `source` in messages) over `g`. Unknown keys are an error, so a typo
// cannot silently disable a check.
core::Status applyGateConfigText(const std::string& text, GateConfigFormat format, const std::string& source,
                                 analysis::GateOptions& g);

// Reads the file at `path` and applies it, in the format gateConfigFormat() says.
core::Status applyGateConfigFile(const std::string& path, analysis::GateOptions& g);

// The gate's options as a command gives them: the defaults, then the configuration file (if any),
// then the options given on the command line ("" and 0 for those not given).
struct GateCommandOptions {
  std::string config, time_threshold, counter_threshold;
  double alpha = 0;
};
core::Expected<analysis::GateOptions> gateOptionsOf(const GateCommandOptions& given);

}  // namespace fprof::cli
