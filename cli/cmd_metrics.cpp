// fprof metrics list: the metric sets of `fprof run --metrics`, each metric checked against the
// GPU's chip (or a named one) with the CUPTI host API, and the replay passes each set costs.
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "fprof/core/child_output.h"
#include "paths.h"

namespace fprof::cli {
namespace {

int runList(const std::string& chip) {
  const std::string tool = findSibling("fprof-metrics-host");
  if (tool.empty()) {
    return inputError("metrics: fprof-metrics-host not found next to fprof (this build has no CUPTI)");
  }
  std::vector<std::string> args = {tool, "--list"};
  if (!chip.empty()) args.insert(args.end(), {"--chip", chip});
  // Its table is printed by fprof, whose writes to standard output are checked (a full disk).
  const auto out = core::childOutput(std::move(args), core::ChildErrors::kShown);
  if (!out) return inputError("metrics: " + out.error());
  printText(stdout, out->text);
  return out->exit_status == 0 ? 0 : 2;
}

}  // namespace

Command addMetricsCommand(CLI::App& root) {
  auto chip = std::make_shared<std::string>();
  CLI::App* app = root.add_subcommand("metrics", "Show the hardware-counter sets of 'fprof run --metrics'.");
  app->require_subcommand(1);
  CLI::App* list = app->add_subcommand(
      "list",
      "List the metric sets (memory, roofline, full), check each metric against this GPU's chip with the CUPTI host "
      "API (no program is run; without a GPU, against --chip, default GH100) and show the replay passes per kernel.");
  list->add_option("--chip", *chip, "Check against this chip (e.g. GH100, GA100, AD102) instead of the GPU's");
  return {app, [chip] { return runList(*chip); }};
}

}  // namespace fprof::cli
