// Helpers shared by the core tests: temporary paths and a small synthetic profile.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>

#include "fprof/core/store.h"

namespace fprof::testing {

inline std::string tempPath(const std::string& name) {
  std::filesystem::create_directories(FPROF_TEST_TMP);
  std::string p = std::string(FPROF_TEST_TMP) + "/" + name;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(p + suffix);
  return p;
}

// Runs SQL (one or more statements) on a database file: tests that damage or age a file.
inline void execSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

inline core::KernelRecord makeKernel(const std::string& name, int64_t start_ns, int64_t duration_ns,
                                     uint32_t correlation_id) {
  core::KernelRecord k;
  k.process_id = 1;
  k.name = name;
  k.demangled_name = name;
  k.correlation_id = correlation_id;
  k.start_ns = start_ns;
  k.end_ns = start_ns + duration_ns;
  k.grid_x = 128;
  k.grid_y = 1;
  k.grid_z = 1;
  k.block_x = 256;
  k.block_y = 1;
  k.block_z = 1;
  k.registers_per_thread = 32;
  k.stream_id = 7;
  return k;
}

}  // namespace fprof::testing
