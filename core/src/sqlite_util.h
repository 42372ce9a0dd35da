// Small RAII helpers over the SQLite C API, private to core.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fprof/core/expected.h"

namespace fprof::core::detail {

class Statement {
 public:
  Statement() = default;
  Statement(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement(Statement&& o) noexcept : stmt_(o.stmt_), rc_(o.rc_) { o.stmt_ = nullptr; }
  Statement& operator=(Statement&& o) noexcept {
    std::swap(stmt_, o.stmt_);
    std::swap(rc_, o.rc_);
    return *this;
  }

  bool ok() const { return rc_ == SQLITE_OK && stmt_ != nullptr; }
  sqlite3_stmt* get() const { return stmt_; }

  void bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void bind(int i, uint64_t v) { sqlite3_bind_int64(stmt_, i, static_cast<int64_t>(v)); }
  void bind(int i, int32_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void bind(int i, uint32_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void bind(int i, std::string_view v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  template <class T>
  void bind(int i, const std::optional<T>& v) {
    if (v) {
      bind(i, *v);
    } else {
      sqlite3_bind_null(stmt_, i);
    }
  }
  // Binds every argument in order, from parameter 1.
  template <class... T>
  void bindAll(const T&... values) {
    int i = 1;
    (bind(i++, values), ...);
  }
  // Runs an insert/update; returns the SQLite result code (SQLITE_DONE on success). Bindings
  // stay: every caller binds every parameter before each run.
  int run() {
    int rc = sqlite3_step(stmt_);
    sqlite3_reset(stmt_);
    return rc;
  }
  int step() { return sqlite3_step(stmt_); }
  // Rewinds a query so it can run again with new bindings.
  void reset() { sqlite3_reset(stmt_); }

  int64_t i64(int col) const { return sqlite3_column_int64(stmt_, col); }
  double f64(int col) const { return sqlite3_column_double(stmt_, col); }
  // The value's type as stored (SQLITE_INTEGER, ...): meaningful only before i64/f64/text convert it.
  int type(int col) const { return sqlite3_column_type(stmt_, col); }
  bool isNull(int col) const { return type(col) == SQLITE_NULL; }
  std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  std::string_view textView(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? std::string_view(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string_view();
  }
  template <class T>
  std::optional<T> opt(int col) const {
    if (isNull(col)) return std::nullopt;
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(f64(col));
    } else {
      return static_cast<T>(i64(col));
    }
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

// The arguments of an application-defined SQL function, read like a Statement's columns. A
// function called once per row receives the row's values without a sqlite3_column_* call (and
// its locking and error checks) per value: the reader's big tables go through one.
class ValueRow {
 public:
  explicit ValueRow(sqlite3_value** values) : v_(values) {}
  int64_t i64(int col) const { return sqlite3_value_int64(v_[col]); }
  double f64(int col) const { return sqlite3_value_double(v_[col]); }
  int type(int col) const { return sqlite3_value_type(v_[col]); }
  bool isNull(int col) const { return type(col) == SQLITE_NULL; }
  std::string_view textView(int col) const {
    const unsigned char* t = sqlite3_value_text(v_[col]);
    return t ? std::string_view(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_value_bytes(v_[col])))
             : std::string_view();
  }
  template <class T>
  std::optional<T> opt(int col) const {
    if (isNull(col)) return std::nullopt;
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(f64(col));
    } else {
      return static_cast<T>(i64(col));
    }
  }

 private:
  sqlite3_value** v_;
};

// A Statement's current row read as a ValueRow: each column's value taken once
// (sqlite3_column_value), so that reading it -- its type, then its number or text -- makes no
// sqlite3_column_* call per read. Valid until the statement steps again; one buffer serves every
// row. For a connection used by one thread at a time, as every reader's is (the values are
// unprotected: SQLite takes no lock to read them).
class ColumnValues {
 public:
  ValueRow of(const Statement& st) {
    const int n = sqlite3_column_count(st.get());
    values_.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) values_[static_cast<size_t>(i)] = sqlite3_column_value(st.get(), i);
    return ValueRow(values_.data());
  }

 private:
  std::vector<sqlite3_value*> values_;
};

// SQLite's message for its last error, or the system's where SQLite only says a write failed: a
// full file system is "no space left on device", as every other writer says it.
inline std::string sqliteMessage(sqlite3* db) {
  if (!db) return "out of memory";
  if ((sqlite3_extended_errcode(db) & 0xff) == SQLITE_FULL) return "no space left on device";
  return sqlite3_errmsg(db);
}

}  // namespace fprof::core::detail
