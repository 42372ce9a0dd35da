// Bad input gets one clear sentence naming the file and what is wrong with it.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

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

// --- What the system said: permission, locks, a read-only directory ---

// A directory of its own under the system's temporary directory, which every user can enter (the
// unprivileged reader below must reach the files).
std::string sharedDir(const std::string& name) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("fprof-test-" + name + "-" +
                                                                     std::to_string(getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                        std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                                        std::filesystem::perms::others_exec);
  return dir;
}

// What loadProfile says of `path` to a user without privileges: this one, or (run as root, whom
// permissions do not stop) a forked child that became `nobody` first. "" where it loaded.
std::string unprivilegedError(const std::string& path) {
  if (geteuid() != 0) {
    auto p = loadProfile(path);
    return p ? "" : p.error();
  }
  int out[2];
  if (pipe(out) != 0) return "pipe failed";
  const pid_t child = fork();
  if (child == 0) {
    close(out[0]);
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    auto p = loadProfile(path);
    const std::string said = p ? "" : p.error();
    const ssize_t n = write(out[1], said.data(), said.size());
    _exit(n == static_cast<ssize_t>(said.size()) ? 0 : 4);
  }
  close(out[1]);
  std::string said;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) said.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the unprivileged child failed: " << status;
  return said;
}

TEST(BadFiles, UnreadableFileIsPermissionDenied) {
  const std::string dir = sharedDir("unreadable");
  const std::string path = dir + "/secret.fprof";
  std::filesystem::copy_file(makeValid("readable.fprof", 3), path);
  std::filesystem::permissions(path, std::filesystem::perms::none);
  EXPECT_EQ(unprivilegedError(path), path + ": cannot read: permission denied");
  std::filesystem::remove_all(dir);
}

TEST(BadFiles, FileInADirectoryOneCannotEnterIsPermissionDenied) {
  const std::string dir = sharedDir("closed");
  const std::string path = dir + "/inside.fprof";
  std::filesystem::copy_file(makeValid("enterable.fprof", 3), path);
  std::filesystem::permissions(dir, std::filesystem::perms::none);
  EXPECT_EQ(unprivilegedError(path), path + ": cannot read: permission denied");
  std::filesystem::permissions(dir, std::filesystem::perms::all);
  std::filesystem::remove_all(dir);
}

TEST(BadFiles, LockedByAnotherProcessIsSaid) {
  const std::string path = makeValid("locked.fprof", 3);
  int locked[2], done[2];
  ASSERT_EQ(pipe(locked), 0);
  ASSERT_EQ(pipe(done), 0);
  const pid_t child = fork();
  if (child == 0) {  // another process, in the middle of a write
    close(locked[0]);
    close(done[1]);
    alarm(120);  // never outlives a test that failed to let it go
    sqlite3* db = nullptr;
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK ||
        sqlite3_exec(db, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) != SQLITE_OK) {
      _exit(3);
    }
    char c = 'x';
    if (write(locked[1], &c, 1) != 1) _exit(4);
    while (read(done[0], &c, 1) > 0) {
    }
    _exit(0);
  }
  close(locked[1]);
  close(done[0]);
  char c = 0;
  ASSERT_EQ(read(locked[0], &c, 1), 1) << "the locking process did not start";
  const std::string expected =
      path + ": locked by another process (one still writing it?); try again once it has finished";
  auto p = loadProfile(path);
  EXPECT_FALSE(p.ok());
  if (!p.ok()) {
    EXPECT_EQ(p.error(), expected);
  }
  EXPECT_EQ(checkDatabase(path).error(), expected);
  close(done[1]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(loadProfile(path).ok()) << "once the lock is gone the file reads";
}

// A WAL-mode database whose writer is gone (no -wal left) in a directory the reader cannot write:
// SQLite cannot create the -shm it reads through, so fprof reads the file as it is.
TEST(BadFiles, WalFileInAReadOnlyDirectoryIsRead) {
  const std::string dir = sharedDir("walro");
  const std::string path = dir + "/wal.fprof";
  std::filesystem::copy_file(makeValid("wal_source.fprof", 5), path);
  execSql(path, "PRAGMA journal_mode=WAL");
  ASSERT_FALSE(std::filesystem::exists(path + "-wal"));
  std::filesystem::permissions(dir, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec |
                                        std::filesystem::perms::group_read | std::filesystem::perms::group_exec |
                                        std::filesystem::perms::others_read | std::filesystem::perms::others_exec);
  EXPECT_EQ(unprivilegedError(path), "");
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->kernels.size(), 5u);
  std::filesystem::permissions(dir, std::filesystem::perms::all);
  std::filesystem::remove_all(dir);
}

// The same with pages still in a -wal: reading the main file alone would miss them, so it is
// refused with what to do.
TEST(BadFiles, WalWithPagesInAReadOnlyDirectorySaysWhy) {
  const std::string dir = sharedDir("walpages");
  const std::string path = dir + "/pages.fprof";
  const std::string source = makeValid("wal_pages_source.fprof", 5);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(source.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; "
                             "INSERT INTO metadata(key, value) VALUES ('in_the_wal', 'yes');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  // A copy taken while the writer still has the file open: the database and its -wal, no -shm.
  std::filesystem::copy_file(source, path);
  std::filesystem::copy_file(source + "-wal", path + "-wal");
  sqlite3_close(db);
  std::filesystem::permissions(dir, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec |
                                        std::filesystem::perms::group_read | std::filesystem::perms::group_exec |
                                        std::filesystem::perms::others_read | std::filesystem::perms::others_exec);
  EXPECT_EQ(unprivilegedError(path), path + ": its write-ahead log (" + path +
                                         "-wal) cannot be read without creating " + path +
                                         "-shm, and its directory is read-only; copy the file and its -wal to a "
                                         "directory you can write");
  std::filesystem::permissions(dir, std::filesystem::perms::all);
  auto p = loadProfile(path);  // where the -shm can be created, the -wal's pages are read
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->meta("in_the_wal"), "yes");
  std::filesystem::remove_all(dir);
}

TEST(BadFiles, ImpossibleSchemaVersionsAreNamed) {
  for (const auto& [value, said] : std::vector<std::pair<std::string, std::string>>{
           {"0", "damaged database (schema_version is 0, and fprof's schema versions start at 1)"},
           {"-3", "damaged database (schema_version is -3, and fprof's schema versions start at 1)"},
           {"4294967297", "damaged database (schema_version 4294967297 is no version any fprof has written)"},
           {"99999999999999999999999",
            "damaged database (schema_version 99999999999999999999999 is no version any fprof has written)"}}) {
    const std::string path = makeValid("version_" + value + ".fprof", 1);
    execSql(path, "UPDATE metadata SET value = '" + value + "' WHERE key = 'schema_version'");
    EXPECT_EQ(errorOf(path), path + ": " + said);
  }
}

}  // namespace
}  // namespace fprof::core
