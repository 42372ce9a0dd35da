// fprof schema: prints the .fprof schema as SQL or as the Markdown of docs/schema.md.
#include <memory>

#include "command.h"
#include "fprof/core/schema.h"

namespace fprof::cli {

Command addSchemaCommand(CLI::App& root) {
  auto markdown = std::make_shared<bool>(false);
  CLI::App* app = root.add_subcommand(
      "schema", "Print the SQL schema of .fprof databases (or, with --markdown, its documentation).");
  app->add_flag("--markdown", *markdown, "Print docs/schema.md instead of SQL");
  return {app, [markdown] {
            const std::string text = *markdown ? core::schemaMarkdown() : core::schemaCreateSql();
            (void)core::writeStandardOutput(text);  // a failure is said when fprof exits (exit 2)
            return 0;
          }};
}

}  // namespace fprof::cli
