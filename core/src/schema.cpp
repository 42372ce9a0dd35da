// The schema as data (see schema.h): the tables as schema_tables.h declares them, the views, and
// the SQL and Markdown generated from both.
#include "fprof/core/schema.h"

#include <sstream>

#include "schema_tables.h"

namespace fprof::core {
namespace {

std::vector<TableDef> makeTables() {
  std::vector<TableDef> tables;
  detail::forEachTable([&](const auto& t) { tables.push_back(detail::tableDef(t)); });
  return tables;
}

std::vector<ViewDef> makeViews() {
  std::vector<ViewDef> views;
  for (const detail::ViewInfo& v : detail::kViews) views.push_back({v.name, v.doc, v.select_sql});
  return views;
}

}  // namespace

const std::vector<TableDef>& schemaTables() {
  static const std::vector<TableDef> tables = makeTables();
  return tables;
}

const std::vector<ViewDef>& schemaViews() {
  static const std::vector<ViewDef> views = makeViews();
  return views;
}

std::string schemaIndexSql() {
  std::ostringstream sql;
  for (const TableDef& t : schemaTables()) {
    for (const std::string& idx : t.indexes) sql << idx << ";\n";
  }
  return sql.str();
}

std::string schemaCreateSql(bool with_indexes) {
  std::ostringstream sql;
  for (const TableDef& t : schemaTables()) {
    sql << "CREATE TABLE " << t.name << " (";
    for (size_t i = 0; i < t.columns.size(); ++i) {
      sql << (i ? ", " : "") << t.columns[i].name << ' ' << t.columns[i].type;
    }
    if (!t.table_constraints.empty()) sql << ", " << t.table_constraints;
    sql << ");\n";
  }
  if (with_indexes) sql << schemaIndexSql();
  for (const ViewDef& v : schemaViews()) sql << "CREATE VIEW " << v.name << " AS " << v.select_sql << ";\n";
  return sql.str();
}

std::string schemaMarkdown() {
  std::ostringstream md;
  md << "# The .fprof database schema (version " << kSchemaVersion << ")\n\n"
     << "Generated from `core/src/schema_tables.h` by `fprof schema --markdown`; a test fails when this file\n"
     << "and the code disagree. A `.fprof` file is a SQLite database (application id 0x46505246);\n"
     << "`metadata.schema_version` says which version of this schema it holds. Times are in ns on the\n"
     << "CUPTI clock unless a column says otherwise; `*_id` columns naming strings point into `string`.\n\n";
  for (const TableDef& t : schemaTables()) {
    md << "## Table `" << t.name << "`\n\n" << t.doc << "\n\n| column | type | meaning |\n| --- | --- | --- |\n";
    for (const ColumnDef& c : t.columns) md << "| `" << c.name << "` | " << c.type << " | " << c.doc << " |\n";
    if (!t.table_constraints.empty()) md << "\nConstraint: `" << t.table_constraints << "`.\n";
    md << '\n';
  }
  md << "## Views\n\n";
  for (const ViewDef& v : schemaViews()) md << "### `" << v.name << "`\n\n" << v.doc << "\n\n";
  return md.str();
}

}  // namespace fprof::core
