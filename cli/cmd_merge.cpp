// fprof merge: joins the databases the processes of one job wrote (one per rank under torchrun,
// mpirun or srun) into one, rank and host kept, for info, report, view and gate (docs/multi-process.md).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "fprof/core/merge.h"
#include "fprof/core/store.h"
#include "fprof/core/text.h"
#include "progress.h"

namespace fprof::cli {
namespace {

struct MergeCliOptions {
  std::vector<std::string> inputs;
  std::string output;
  bool force = false;
  bool quiet = false;
};

int runMerge(const MergeCliOptions& opt) {
  core::MergeOptions mo;
  mo.overwrite = opt.force;
  Progress progress(Progress::wanted(opt.quiet));
  progress.step(
      fmt::format("merging {} file{} into {}", opt.inputs.size(), opt.inputs.size() == 1 ? "" : "s", opt.output));
  auto merged = core::mergeDatabases(opt.inputs, opt.output, mo);
  progress.done();
  if (!merged) return inputError(merged.error());
  for (const std::string& note : merged->notes) printText(stderr, "[fprof] note: " + core::cleanText(note) + "\n");
  if (!opt.quiet) {
    // Read back what was written: the line names the ranks as every other command will see them.
    progress.step("reading back " + opt.output);
    auto p = core::loadProfile(opt.output);
    progress.done();
    if (!p) return inputError(p.error());
    printText(stderr, fmt::format("[fprof] merged {} file{} into {}: {} process{} ({}), {} kernels (next: fprof info {})\n",
                                  opt.inputs.size(), opt.inputs.size() == 1 ? "" : "s", opt.output, merged->processes,
                                  merged->processes == 1 ? "" : "es", core::describeRanks(core::rankGroups(*p)),
                                  merged->kernels, opt.output));
  }
  return 0;
}

}  // namespace

Command addMergeCommand(CLI::App& root) {
  auto opt = std::make_shared<MergeCliOptions>();
  CLI::App* app = root.add_subcommand(
      "merge",
      "Join the .fprof databases of several processes (the ranks of a torchrun, mpirun or srun job: "
      "NAME.rank<N>.fprof) into one, with rank and host kept. info, report, view and gate then show every rank "
      "together and one by one (--rank N). Merged files can be merged again.");
  app->add_option("inputs", opt->inputs, "The databases to join (at least one)")->required();
  app->add_option("-o,--output", opt->output, "The merged database to write")->required();
  app->add_flag("--force", opt->force, kForceHelp);
  app->add_flag("-q,--quiet", opt->quiet, "Print nothing but errors and notes");
  app->footer("Example (docs/multi-process.md):\n  fprof run -o job.fprof torchrun --nproc-per-node 2 train.py\n"
              "  fprof merge job.rank*.fprof -o job.all.fprof\n  fprof info job.all.fprof\n"
              "  fprof info job.all.fprof --rank 1\n\n" + std::string(kOutputRulesFooter));
  return {app, [opt] { return runMerge(*opt); }};
}

}  // namespace fprof::cli
