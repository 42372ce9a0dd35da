// fprof job: a whole training job's rank files analysed on Dask, by the Python package (python/,
// docs/jobs.md). This command finds the package's Python and hands it every argument.
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "python_package.h"

namespace fprof::cli {

Command addJobCommand(CLI::App& root) {
  auto args = std::make_shared<std::vector<std::string>>();
  CLI::App* app = root.add_subcommand(
      "job", "Analyse a whole job's rank files (FILES, DIR or GLOB) on Dask: each rank summarised on a worker, the "
             "summaries joined into a job folder of Parquet tables and an HTML job report (needs fprof's Python "
             "package; fprof job --help lists its options).");
  // Every argument, --help included, is the package's: its parser documents and checks them.
  app->set_help_flag();
  app->allow_extras();
  app->prefix_command();
  return {app, [app, args] {
            std::vector<std::string> forwarded = {"job"};
            for (const std::string& a : app->remaining()) forwarded.push_back(a);
            return runPackageCommand(forwarded);
          }};
}

}  // namespace fprof::cli
