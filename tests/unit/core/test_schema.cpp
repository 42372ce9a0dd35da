// The schema is data: every column documented, SQL valid, docs/schema.md in sync with the code.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <set>
#include <sstream>

#include "fprof/core/schema.h"

namespace fprof::core {
namespace {

TEST(Schema, EveryTableAndColumnIsDocumented) {
  std::set<std::string> names;
  for (const TableDef& t : schemaTables()) {
    EXPECT_TRUE(names.insert(t.name).second) << "duplicate table " << t.name;
    EXPECT_FALSE(t.doc.empty()) << t.name;
    std::set<std::string> cols;
    for (const ColumnDef& c : t.columns) {
      EXPECT_TRUE(cols.insert(c.name).second) << t.name << "." << c.name;
      EXPECT_FALSE(c.doc.empty()) << t.name << "." << c.name;
      EXPECT_FALSE(c.type.empty()) << t.name << "." << c.name;
    }
  }
  for (const ViewDef& v : schemaViews()) EXPECT_FALSE(v.doc.empty()) << v.name;
  EXPECT_TRUE(names.count("kernel") && names.count("nvtx_range") && names.count("metadata") &&
              names.count("device") && names.count("memcpy") && names.count("memory_event"));
}

TEST(Schema, CreateSqlBuildsAWorkingDatabase) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, schemaCreateSql().c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  // Every view must compile against the tables (a typo in a view fails only when it is used).
  for (const ViewDef& v : schemaViews()) {
    sqlite3_stmt* st = nullptr;
    const std::string q = "SELECT * FROM " + v.name;
    EXPECT_EQ(sqlite3_prepare_v2(db, q.c_str(), -1, &st, nullptr), SQLITE_OK) << v.name << ": " << sqlite3_errmsg(db);
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
}

TEST(Schema, DocsSchemaMdMatchesTheCode) {
  std::ifstream in(std::string(FPROF_SOURCE_DIR) + "/docs/schema.md");
  ASSERT_TRUE(in.good()) << "docs/schema.md missing; create it with: build/bin/fprof schema --markdown > docs/schema.md";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), schemaMarkdown())
      << "docs/schema.md is stale; regenerate it with: build/bin/fprof schema --markdown > docs/schema.md";
}

}  // namespace
}  // namespace fprof::core
