// The .fprof schema as data: every table, column and view with its doc string, as declared once in
// core/src/schema_tables.h. The SQL that creates a database, docs/schema.md, the writer, the reader
// and merge are all generated from those declarations.
#pragma once

#include <string>
#include <vector>

namespace fprof::core {

// Version 1: trace mode (kernels, NVTX, memcpy/memset, memory events, launch arguments).
// Version 2: per-function facts (function, function_arg, function_sass_op), counter provenance
// (kernel_counter.source...) and kernel_counter_missing. Version-1 files are read as they are.
// Version 3: memcpy_address. Version 4: kernel_counter.tensor_flops_method (tensor FLOPs from the
// tensor pipe's active cycles and the function's SASS). Version 5: graph_launch_counter and
// graph_launch_metric (a CUDA graph launch counted as one range). Version 6: kernel.programmatic_launch
// (programmatic dependent launch; older files read it as 0).
inline constexpr int kSchemaVersion = 6;
// Oldest schema this build can read; older versions down to it are read as they are.
inline constexpr int kOldestReadableSchemaVersion = 1;
// Application id stored in the SQLite header so `file` and fprof can tell an fprof database.
inline constexpr int kSqliteApplicationId = 0x46505246;  // "FPRF"

struct ColumnDef {
  std::string name;
  std::string type;  // SQL type and constraints, e.g. "INTEGER NOT NULL"
  std::string doc;
  int since_version = 1;         // the schema version that added the column
  std::string older_files_read;  // what files older than that read in its place, as SQL ("NULL", "0")
  std::string holds_ids_of;      // "process", "kernel", "nvtx_range" or "string" where it holds ids; else ""
};

struct TableDef {
  std::string name;
  std::string doc;
  std::vector<ColumnDef> columns;
  std::vector<std::string> indexes;  // extra CREATE INDEX statements
  std::string table_constraints;     // e.g. "PRIMARY KEY (a, b)"
  int since_version = 1;             // the schema version that added the table
};

struct ViewDef {
  std::string name;
  std::string doc;
  std::string select_sql;
};

const std::vector<TableDef>& schemaTables();
const std::vector<ViewDef>& schemaViews();

// All statements that create an empty database of kSchemaVersion. The writer creates the
// indexes only when it closes the file (schemaIndexSql): building them once, sorted, costs about
// half of what maintaining them row by row during collection does. A file whose writer died has
// no indexes; every query still works, some more slowly.
std::string schemaCreateSql(bool with_indexes = true);
std::string schemaIndexSql();

// docs/schema.md, generated; a test checks the committed file equals this text.
std::string schemaMarkdown();

}  // namespace fprof::core
