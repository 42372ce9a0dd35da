// Bad input gets one clear sentence naming the file and what is wrong with it.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>

#include "fprof/core/schema.h"
#include "fprof/core/store.h"
#include "test_util.h"

namespace fprof::core {
namespace {

using fprof::testing::execSql;
using fprof::testing::makeKernel;
using fprof::testing::tempPath;

std::string errorOf(const std::string& path) {
  auto p = loadProfile(path);
  EXPECT_FALSE(p.ok()) << path << " loaded but should not have";
  Status s = checkDatabase(path);
  EXPECT_FALSE(s.ok());
  if (!p.ok()) {
    EXPECT_EQ(p.error(), s.error());
  }
  return p.ok() ? "" : p.error();
}

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string makeValid(const std::string& name, int kernels = 2000) {
  const std::string path = tempPath(name);
  auto w = Writer::create(path);
  EXPECT_TRUE(w.ok());
  for (int i = 0; i < kernels; ++i) (*w)->add(makeKernel("kernel_with_a_long_name_" + std::to_string(i), i, 1, 0));
  EXPECT_TRUE((*w)->close());
  return path;
}

TEST(BadFiles, Missing) { EXPECT_EQ(errorOf(tempPath("missing.fprof")), tempPath("missing.fprof") + ": no such file"); }

TEST(BadFiles, Empty) {
  const std::string path = tempPath("empty.fprof");
  writeFile(path, "");
  EXPECT_NE(errorOf(path).find("empty file (0 bytes)"), std::string::npos);
}

TEST(BadFiles, NotSqlite) {
  const std::string path = tempPath("text.fprof");
  writeFile(path, "this is a text file, not a database\n");
  EXPECT_EQ(errorOf(path), path + ": not an fprof database (not a SQLite file)");
}

TEST(BadFiles, SqliteButNotFprof) {
  const std::string path = tempPath("other.sqlite");
  execSql(path, "CREATE TABLE t(x); INSERT INTO t VALUES (1);");
  EXPECT_EQ(errorOf(path), path + ": a SQLite database, but not an fprof database (no metadata table)");
}

TEST(BadFiles, NewerSchemaIsRefusedWithTheFix) {
  const std::string path = makeValid("newer.fprof", 1);
  execSql(path, "UPDATE metadata SET value = '" + std::to_string(kSchemaVersion + 6) + "' WHERE key = 'schema_version'");
  EXPECT_EQ(errorOf(path), path + ": schema version " + std::to_string(kSchemaVersion + 6) +
                               " is newer than this fprof (" + std::to_string(kSchemaVersion) +
                               "); upgrade fprof to read it");
}

TEST(BadFiles, GarbledSchemaVersion) {
  const std::string path = makeValid("garbled.fprof", 1);
  execSql(path, "UPDATE metadata SET value = 'seven' WHERE key = 'schema_version'");
  EXPECT_NE(errorOf(path).find("schema_version 'seven' is not a number"), std::string::npos);
}

TEST(BadFiles, TruncatedCopy) {
  const std::string path = makeValid("full.fprof");
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 8192u);
  const std::string cut = tempPath("cut.fprof");
  writeFile(cut, bytes.substr(0, bytes.size() / 2));
  EXPECT_NE(errorOf(cut).find(": truncated ("), std::string::npos) << errorOf(cut);
  const std::string tiny = tempPath("tiny.fprof");
  writeFile(tiny, bytes.substr(0, 50));
  EXPECT_NE(errorOf(tiny).find(": truncated ("), std::string::npos);
}

TEST(BadFiles, CorruptPagesAreReportedNotCrashed) {
  const std::string path = makeValid("corrupt.fprof");
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(4096);  // pages 2-4: the roots of the first tables, b-tree headers included
  const std::string junk(3 * 4096, '\x5a');
  f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  f.close();
  auto p = loadProfile(path);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().rfind(path + ": ", 0), 0u) << p.error();
  EXPECT_NE(p.error().find("damaged database"), std::string::npos) << p.error();
}

TEST(BadFiles, Directory) {
  EXPECT_EQ(errorOf(FPROF_TEST_TMP), std::string(FPROF_TEST_TMP) + ": is a directory, not an fprof database");
}

}  // namespace
}  // namespace fprof::core
