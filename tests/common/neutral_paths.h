// Recorded databases hold each profiled command line as the program was started, with the
// absolute paths of the machine it ran on; info and report print it. Golden files, and the
// recordings kept for tests/data, use it with every absolute path cut to its file name, so that
// no path of one machine enters the project (`/x/build/bin/prog full /tmp/d/expect.tsv` ->
// `prog full expect.tsv`).
#pragma once

#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace fprof::testing {

inline std::string neutralCommandLine(const std::string& command_line) {
  std::string out;
  size_t i = 0;
  while (i < command_line.size()) {
    const size_t end = command_line.find(' ', i);
    std::string word = command_line.substr(i, end == std::string::npos ? std::string::npos : end - i);
    if (!word.empty() && word.front() == '/' && word.size() > 1) {
      word = std::filesystem::path(word).filename().string();
    }
    out += word;
    if (end == std::string::npos) break;
    out += ' ';
    i = end + 1;
  }
  return out;
}

// Rewrites every process's command line of the database at `path` in place; "" or the error.
inline std::string neutralizeCommandLines(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    const std::string error = path + ": " + (db ? sqlite3_errmsg(db) : "cannot open");
    sqlite3_close(db);
    return error;
  }
  std::vector<std::pair<long long, std::string>> rows;
  std::string error;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT id, command_line FROM process", -1, &st, nullptr) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
      rows.emplace_back(sqlite3_column_int64(st, 0), text ? text : "");
    }
  } else {
    error = path + ": " + sqlite3_errmsg(db);
  }
  sqlite3_finalize(st);
  for (const auto& [id, command] : rows) {
    if (!error.empty()) break;
    if (sqlite3_prepare_v2(db, "UPDATE process SET command_line = ? WHERE id = ?", -1, &st, nullptr) != SQLITE_OK) {
      error = path + ": " + sqlite3_errmsg(db);
      break;
    }
    const std::string neutral = neutralCommandLine(command);
    sqlite3_bind_text(st, 1, neutral.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, id);
    if (sqlite3_step(st) != SQLITE_DONE) error = path + ": " + sqlite3_errmsg(db);
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return error;
}

// A copy of a recorded database with neutral command lines; "" or the error.
inline std::string copyWithNeutralCommandLines(const std::string& from, const std::string& to) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(to).parent_path(), ec);
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) return to + ": " + ec.message();
  return neutralizeCommandLines(to);
}

}  // namespace fprof::testing
