// Opening, validating and loading .fprof databases (see store.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "counter_columns.h"
#include "schema_tables.h"
#include "fprof/core/dependency_wait.h"
#include "fprof/core/profile_stream.h"
#include "fprof/core/schema.h"
#include "fprof/core/store.h"
#include "fprof/core/text.h"
#include "sqlite_util.h"

namespace fprof::core {

using detail::Statement;

const DeviceInfo* Profile::device(uint32_t process_id, uint32_t device_id) const {
  for (const DeviceInfo& d : devices) {
    if (d.process_id == process_id && d.id == device_id) return &d;
  }
  return nullptr;
}

std::string Profile::meta(const std::string& key, const std::string& fallback) const {
  auto it = metadata.find(key);
  return it == metadata.end() ? fallback : it->second;
}

namespace {

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// The sentence for a file the system would not let fprof read: the cause it gave.
Error cannotRead(const std::string& path, int error_number) {
  if (error_number == EACCES || error_number == EPERM) return makeError(path + ": cannot read: permission denied");
  return makeError(path + ": cannot read: " + std::generic_category().message(error_number));
}

// What checkFile learnt from the file's header that opening it needs.
struct FileFacts {
  bool wal_mode = false;  // a write-ahead-log database (its writer died, or has not closed it yet)
  bool has_wal = false;   // with a -wal file holding pages
};

// The first 100 bytes (the SQLite header), or fewer if the file is shorter; errno where it
// cannot be read.
int readHeader(const std::string& path, std::array<unsigned char, 100>& header, size_t& got) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  got = 0;
  while (got < header.size()) {
    const ssize_t n = ::read(fd, header.data() + got, header.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error_number = errno;
      ::close(fd);
      return error_number;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  return 0;
}

int64_t modifiedNs(const struct stat& st) { return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec; }

FileStamp stampOf(const std::string& path) {
  FileStamp stamp;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    stamp.device = st.st_dev;
    stamp.inode = st.st_ino;
    stamp.size = st.st_size;
    stamp.modified_ns = modifiedNs(st);
  }
  if (::stat((path + "-wal").c_str(), &st) == 0) {
    stamp.wal_size = st.st_size;
    stamp.wal_modified_ns = modifiedNs(st);
  }
  return stamp;
}

// Checks the file itself before SQLite sees it, so a wrong or damaged file gets a precise sentence.
Status checkFile(const std::string& path, FileFacts& facts) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
    return cannotRead(path, ec.value());
  }
  if (!fs::exists(status)) return makeError(path + ": no such file");
  if (fs::is_directory(status)) return makeError(path + ": is a directory, not an fprof database");
  const auto size = fs::file_size(path, ec);
  if (ec) return makeError(path + ": cannot read: " + ec.message());
  if (size == 0) {
    return makeError(path +
                     ": empty file (0 bytes): the profiled program probably ended before the collector wrote "
                     "anything");
  }
  std::array<unsigned char, 100> header{};
  size_t got = 0;
  if (int error_number = readHeader(path, header, got); error_number != 0) return cannotRead(path, error_number);
  if (got < 16 || std::memcmp(header.data(), "SQLite format 3\0", 16) != 0) {
    return makeError(path + ": not an fprof database (not a SQLite file)");
  }
  if (got < header.size()) {
    return makeError(path + ": truncated (" + std::to_string(size) + " bytes, shorter than a SQLite header)");
  }
  uint32_t page_size = (uint32_t{header[16]} << 8) | header[17];
  if (page_size == 1) page_size = 65536;
  const uint32_t page_count = be32(&header[28]);
  facts.wal_mode = header[18] == 2 || header[19] == 2;
  facts.has_wal = fs::exists(path + "-wal", ec) && fs::file_size(path + "-wal", ec) > 0;
  // The in-header page count is valid only when the change counter matches "version-valid-for"
  // and no WAL holds newer pages.
  const bool count_valid = be32(&header[24]) == be32(&header[92]);
  if (count_valid && !facts.has_wal && page_count > 0 && uint64_t{page_count} * page_size > size) {
    return makeError(path + ": truncated (" + std::to_string(size) + " bytes, its header says " +
                     std::to_string(uint64_t{page_count} * page_size) + "); the file was cut short while copying");
  }
  return {};
}

// A read-only connection, and how it was opened (the loading threads open theirs the same way).
struct Db {
  sqlite3* db = nullptr;
  std::string name;  // the path, or a file: URI
  int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX;
  ~Db() { sqlite3_close(db); }

  bool open(const std::string& open_name, int open_flags) {
    sqlite3_close(db);
    db = nullptr;
    name = open_name;
    flags = open_flags;
    return sqlite3_open_v2(name.c_str(), &db, flags, nullptr) == SQLITE_OK;
  }
};

// A file: URI for a path, its reserved characters escaped.
std::string fileUri(const std::string& path, const char* query) {
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c < 0x20 || c >= 0x7f) {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", c);
      uri += escaped;
    } else {
      uri += static_cast<char>(c);
    }
  }
  return uri + "?" + query;
}

// Another process holds a lock on the file (SQLite's BUSY or LOCKED).
bool lockedByAnother(sqlite3* db) {
  const int code = sqlite3_errcode(db);
  return code == SQLITE_BUSY || code == SQLITE_LOCKED;
}

// A read writes nothing but SQLite's temporary files, where it sorts rows too many to sort in
// memory (a table not in time order in the file, read as a stream): no folder for them, or a full
// one, is no damage of the file.
std::optional<std::string> temporaryFilesProblem(sqlite3* db) {
  const int code = sqlite3_extended_errcode(db);
  if (code == SQLITE_IOERR_GETTEMPPATH) {
    return "no folder among SQLITE_TMPDIR, TMPDIR, /var/tmp, /usr/tmp, /tmp and the current one can be written";
  }
  if ((code & 0xff) == SQLITE_FULL) return "no space left on device";
  return std::nullopt;
}

// Why a query of a file that opened failed, in one sentence.
Error queryError(const std::string& path, sqlite3* db) {
  if (lockedByAnother(db)) {
    return makeError(path + ": locked by another process (one still writing it?); try again once it has finished");
  }
  if (std::optional<std::string> problem = temporaryFilesProblem(db)) {
    return makeError(path + ": no room for SQLite's temporary files, where it sorts the rows (" + *problem +
                     "); point SQLITE_TMPDIR at a folder with room");
  }
  return makeError(path + ": damaged database (" + detail::sqliteMessage(db) + ")");
}

// SQLite reads a WAL-mode database through a -shm file beside it, which it creates; in a
// directory the user cannot write it cannot (SQLITE_READONLY_DIRECTORY, or SQLITE_CANTOPEN).
bool walNeedsShm(sqlite3* db) {
  const int code = sqlite3_errcode(db);
  return code == SQLITE_READONLY || code == SQLITE_CANTOPEN;
}

// A WAL-mode file SQLite could not open read-only: without pages in a -wal file the main file is
// the whole database, read as it is (immutable: no -shm, no locks; nobody can write it in a
// directory where a -wal cannot be created). With pages in a -wal they would be missed: refused.
Status openWithoutShm(const std::string& path, const FileFacts& facts, Db& h) {
  if (facts.has_wal) {
    return makeError(path + ": its write-ahead log (" + path + "-wal) cannot be read without creating " + path +
                     "-shm, and its directory is read-only; copy the file and its -wal to a directory you can write");
  }
  if (!h.open(fileUri(path, "immutable=1"), SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI)) {
    return makeError(path + ": cannot open: " + detail::sqliteMessage(h.db));
  }
  return {};
}

// The file's schema_version, checked: a number this fprof can read.
Status checkSchemaVersion(const std::string& path, const std::string& value, int& version) {
  errno = 0;
  char* end = nullptr;
  const long long parsed = std::strtoll(value.c_str(), &end, 10);
  const std::string shown = cleanText(truncateText(value, 40));
  if (value.empty() || *end != '\0') {
    return makeError(path + ": damaged database (schema_version '" + shown + "' is not a number)");
  }
  if (parsed < 1) {
    return makeError(path + ": damaged database (schema_version is " + shown +
                     ", and fprof's schema versions start at 1)");
  }
  if (errno == ERANGE || parsed > std::numeric_limits<int>::max()) {
    return makeError(path + ": damaged database (schema_version " + shown + " is no version any fprof has written)");
  }
  version = static_cast<int>(parsed);
  if (version > kSchemaVersion) {
    return makeError(path + ": schema version " + std::to_string(version) + " is newer than this fprof (" +
                     std::to_string(kSchemaVersion) + "); upgrade fprof to read it");
  }
  if (version < kOldestReadableSchemaVersion) {
    return makeError(path + ": schema version " + std::to_string(version) +
                     " is older than this fprof can read (oldest " + std::to_string(kOldestReadableSchemaVersion) +
                     "); re-record the profile");
  }
  return {};
}

Status openAndCheck(const std::string& path, Db& h, int& version) {
  FileFacts facts;
  if (Status s = checkFile(path, facts); !s) return s;
  if (!h.open(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX)) {
    return makeError(path + ": cannot open: " + detail::sqliteMessage(h.db));
  }
  const char* query = "SELECT value FROM metadata WHERE key = 'schema_version'";
  Statement has_meta(h.db, query);
  if (!has_meta.ok() && facts.wal_mode && walNeedsShm(h.db)) {
    if (Status s = openWithoutShm(path, facts, h); !s) return s;
    has_meta = Statement(h.db, query);
  }
  if (!has_meta.ok()) {
    const std::string msg = detail::sqliteMessage(h.db);
    if (msg.find("no such table") != std::string::npos) {
      return makeError(path + ": a SQLite database, but not an fprof database (no metadata table)");
    }
    return queryError(path, h.db);
  }
  int rc = has_meta.step();
  if (rc == SQLITE_DONE) return makeError(path + ": not an fprof database (no schema_version in metadata)");
  if (rc != SQLITE_ROW) return queryError(path, h.db);
  return checkSchemaVersion(path, has_meta.text(0), version);
}

template <class Fn>
Status forEachRow(sqlite3* db, const std::string& path, const char* sql, Fn&& fn) {
  Statement st(db, sql);
  if (!st.ok()) return queryError(path, db);
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) fn(st);
  if (rc != SQLITE_DONE) return queryError(path, db);
  return {};
}

struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view v) const { return std::hash<std::string_view>{}(v); }
};

// Puts each row where `order` sends it (order[j].second: the position of the row that goes to j)
// by following the permutation's cycles: every row moves once and one is held aside, where a
// sorted copy would hold the table twice (a KernelRow is 200 bytes).
template <class Row>
void permuteInPlace(std::vector<Row>& rows, std::vector<std::pair<int64_t, size_t>>& order) {
  for (size_t j = 0; j < rows.size(); ++j) {
    if (order[j].second == j) continue;  // in place, or placed by an earlier cycle
    Row held = std::move(rows[j]);
    size_t at = j;
    for (;;) {
      const size_t from = std::exchange(order[at].second, at);
      if (from == j) break;
      rows[at] = std::move(rows[from]);
      at = from;
    }
    rows[at] = std::move(held);
  }
}

// Orders rows by start_ns, ties in their present (rowid) order, what a stable sort gives: the
// (start_ns, position) pairs are sorted and each row is moved once, in place.
template <class Row>
void sortByStart(std::vector<Row>& rows) {
  auto by_start = [](const Row& a, const Row& b) { return a.start_ns < b.start_ns; };
  if (std::is_sorted(rows.begin(), rows.end(), by_start)) return;
  std::vector<std::pair<int64_t, size_t>> order(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) order[i] = {rows[i].start_ns, i};
  std::sort(order.begin(), order.end());
  permuteInPlace(rows, order);
}

// Kernel arguments by (process, launch, index), ties in rowid order.
void sortKernelArgs(std::vector<KernelArgRecord>& args) {
  auto arg_less = [](const KernelArgRecord& a, const KernelArgRecord& b) {
    return std::tie(a.process_id, a.correlation_id, a.index) < std::tie(b.process_id, b.correlation_id, b.index);
  };
  if (!std::is_sorted(args.begin(), args.end(), arg_less)) std::stable_sort(args.begin(), args.end(), arg_less);
}

// Row count of a table's rowid range: tables whose rowids run first..first+count-1 (every table
// fprof writes) are read in chunks, each chunk filling its own slots; others are read whole.
struct RowidSpan {
  int64_t first = 0;
  int64_t count = 0;
  bool dense = true;
};

Expected<RowidSpan> rowidSpan(sqlite3* db, const std::string& path, const std::string& table) {
  auto scalar = [&](const std::string& sql, int64_t& value) -> Status {
    Statement st(db, sql.c_str());
    if (!st.ok() || st.step() != SQLITE_ROW) return queryError(path, db);
    value = st.i64(0);
    return {};
  };
  RowidSpan span;
  if (Status s = scalar("SELECT count(*) FROM " + table, span.count); !s) return Error{s.error()};
  if (span.count == 0) return span;
  int64_t last = 0;
  if (Status s = scalar("SELECT min(rowid) FROM " + table, span.first); !s) return Error{s.error()};
  if (Status s = scalar("SELECT max(rowid) FROM " + table, last); !s) return Error{s.error()};
  span.dense = last >= span.first &&
               static_cast<uint64_t>(last) - static_cast<uint64_t>(span.first) == static_cast<uint64_t>(span.count - 1);
  return span;
}

// How one table is read: its columns (the first one the rowid), and for a dense table its size,
// set once by whichever chunk runs first (touching a few hundred MB of new rows takes a while; the
// other threads start on other tables meanwhile).
struct TableRead {
  const char* table;
  const char* rowid_column;
  const char* columns;
  RowidSpan span;
  std::once_flag sized;
};

// Rows [begin, end) of a dense table's vector, or (whole) the table read in one go.
struct ChunkRows {
  TableRead* read = nullptr;
  size_t begin = 0;
  size_t end = 0;
  bool whole = false;
};

// 16K rows: a few MB per chunk, enough chunks for the threads to share the work evenly.
constexpr int64_t kChunkRows = 16384;

template <class Chunk>
void planChunks(TableRead& read, std::vector<Chunk>& chunks) {
  if (read.span.count == 0) return;
  if (!read.span.dense) {
    chunks.emplace_back().rows = ChunkRows{&read, 0, 0, true};
    return;
  }
  for (int64_t at = 0; at < read.span.count; at += kChunkRows) {
    chunks.emplace_back().rows = ChunkRows{&read, static_cast<size_t>(at),
                                           static_cast<size_t>(std::min(at + kChunkRows, read.span.count)), false};
  }
}

// Launch API and occupancy limiter texts seen in one chunk of kernels, in order of first sight; rows
// hold the index here until the chunk's texts get string ids.
struct ChunkTexts {
  std::vector<std::string> texts;
  std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>> index;  // once there are many

  uint32_t id(std::string_view t) {
    if (index.empty()) {
      for (size_t i = 0; i < texts.size(); ++i) {
        if (texts[i] == t) return static_cast<uint32_t>(i);
      }
    } else if (auto it = index.find(t); it != index.end()) {
      return it->second;
    }
    const auto id = static_cast<uint32_t>(texts.size());
    texts.emplace_back(t);
    if (!index.empty()) {
      index.emplace(texts.back(), id);
    } else if (texts.size() > 32) {
      for (size_t i = 0; i < texts.size(); ++i) index.emplace(texts[i], static_cast<uint32_t>(i));
    }
    return id;
  }
};

// Database string id -> index into Profile::strings, or kMissingString where the string table has
// no such id (a damaged file).
constexpr uint32_t kMissingString = UINT32_MAX;

struct StringIds {
  const std::vector<uint32_t>* dense;
  const std::unordered_map<int64_t, uint32_t>* sparse;
  uint32_t operator()(int64_t db_id) const {
    if (db_id >= 0 && static_cast<size_t>(db_id) < dense->size()) return (*dense)[static_cast<size_t>(db_id)];
    auto it = sparse->find(db_id);
    return it == sparse->end() ? kMissingString : it->second;
  }
};

// What a dangling string id is shown as: never an empty name.
std::string unknownString(std::string_view what, int64_t db_id) {
  return "<unknown " + std::string(what) + " #" + std::to_string(db_id) + ">";
}

// Rows of one kind that name a string id the string table lacks: how many, and the first.
struct Dangling {
  int64_t rows = 0;
  int64_t first_row = 0;     // the row's id (kernel id)
  int64_t first_string = 0;  // the missing string id

  void see(int64_t row, int64_t string_id) {
    if (rows++ == 0) first_row = row, first_string = string_id;
  }
  void add(const Dangling& o) {
    if (o.rows == 0) return;
    if (rows == 0) first_row = o.first_row, first_string = o.first_string;
    rows += o.rows;
  }
};

// Rows holding a value of another kind in a number column (detail::holdsDeclaredKind): damage, or
// a writer that is not fprof's. Each such value is read as SQLite converts it; the rows are
// counted per table and said once, as every other damage is. The tasks that read tables side by
// side share one.
class WrongKinds {
 public:
  void see(const char* table, const detail::WrongKind& wrong) {
    std::lock_guard lock(mutex_);
    Table& t = tables_[table];
    if (t.rows++ == 0) t.first = wrong;
  }
  // In table order, whatever order the tasks ran in.
  void sayTo(const std::string& path, std::vector<std::string>& warnings) const {
    std::lock_guard lock(mutex_);
    for (const auto& [table, t] : tables_) {
      warnings.push_back(path + ": " + std::to_string(t.rows) + (t.rows == 1 ? " row of " : " rows of ") + table +
                         (t.rows == 1 ? " holds" : " hold") + " a value of the wrong type in a number column (first: " +
                         t.first.column + " holds " + heldAsRead(t.first.type) + ")");
    }
  }

 private:
  struct Table {
    int64_t rows = 0;
    detail::WrongKind first;
  };
  // What a value of that type held, and how it was read.
  static const char* heldAsRead(int type) {
    if (type == SQLITE_FLOAT) return "a fraction, read cut to its integer part";
    if (type == SQLITE_BLOB) return "a blob, read as the number its bytes begin with, else 0";
    return "text, read as the number it begins with, else 0";
  }
  mutable std::mutex mutex_;
  std::map<std::string, Table, std::less<>> tables_;
};

struct TableChunk {
  ChunkRows rows;
};

struct KernelChunk {
  ChunkRows rows;
  ChunkTexts texts;
  // Kernels naming missing strings; their ids hold kChunkText | an index into `texts` (a
  // placeholder text) until the chunk's texts get string ids.
  Dangling missing_names;
  Dangling missing_paths;
  int64_t negative_durations = 0;
  int64_t first_negative = 0;  // kernel id
};

constexpr uint32_t kChunkText = 0x80000000u;

struct CounterChunk {
  ChunkRows rows;
  int64_t non_finite = 0;
  int64_t first_non_finite = 0;  // kernel id
};

void rowFunction(sqlite3_context* ctx, int, sqlite3_value** values);

// One loading thread's connection (SQLite connections are used by one thread at a time) and its
// chunk queries, prepared once and rebound for every chunk. A chunk query selects
// fprof_row(columns...): SQLite hands each row to `sink` as function arguments, which costs less
// than a sqlite3_column_* call per value.
class Conn {
 public:
  explicit Conn(sqlite3* db) : db_(db) {}
  ~Conn() {
    statements_.clear();
    if (registered_) sqlite3_create_function_v2(db_, "fprof_row", -1, SQLITE_UTF8, nullptr, nullptr, nullptr, nullptr, nullptr);
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  sqlite3* db() const { return db_; }

  Statement* statement(const TableRead& t, bool whole) {
    for (auto& [key, st] : statements_) {
      if (key.first == &t && key.second == whole) return st.get();
    }
    if (!registered_) {
      // DIRECTONLY: the file's own views and triggers cannot call it.
      if (sqlite3_create_function_v2(db_, "fprof_row", -1, SQLITE_UTF8 | SQLITE_DIRECTONLY, this, rowFunction, nullptr,
                                     nullptr, nullptr) != SQLITE_OK) {
        return nullptr;
      }
      registered_ = true;
    }
    const std::string rowid = t.rowid_column;
    const std::string sql = std::string("SELECT fprof_row(") + t.columns + ") FROM " + t.table +
                            (whole ? "" : " WHERE " + rowid + " BETWEEN ?1 AND ?2") + " ORDER BY " + rowid;
    auto st = std::make_unique<Statement>(db_, sql.c_str());
    if (!st->ok()) return nullptr;
    statements_.emplace_back(std::make_pair(&t, whole), std::move(st));
    return statements_.back().second.get();
  }

  // Called by fprof_row for each row of the running chunk query.
  std::function<void(const detail::ValueRow&)> sink;
  std::exception_ptr sink_error;  // an exception must not unwind through SQLite's frames

 private:
  sqlite3* db_;
  bool registered_ = false;
  std::vector<std::pair<std::pair<const TableRead*, bool>, std::unique_ptr<Statement>>> statements_;
};

void rowFunction(sqlite3_context* ctx, int, sqlite3_value** values) {
  auto* conn = static_cast<Conn*>(sqlite3_user_data(ctx));
  try {
    conn->sink(detail::ValueRow(values));
  } catch (...) {
    conn->sink_error = std::current_exception();
    sqlite3_result_error(ctx, "fprof: reading a row failed", -1);
  }
}

using Task = std::function<Status(Conn&)>;

// Reads one chunk of a table into its rows.
template <class Row, class Decode>
Status loadChunk(Conn& conn, const std::string& path, ChunkRows& c, std::vector<Row>& out, Decode&& decode) {
  const TableRead& t = *c.read;
  Statement* st = conn.statement(t, c.whole);
  if (!st) return queryError(path, conn.db());
  const int64_t first = t.span.first;
  size_t read = 0;
  bool stray = false;
  if (c.whole) {
    out.reserve(static_cast<size_t>(t.span.count));
    conn.sink = [&](const detail::ValueRow& row) {
      decode(row, out.emplace_back());
      ++read;
    };
  } else {
    std::call_once(c.read->sized, [&] { out.resize(static_cast<size_t>(t.span.count)); });
    st->bind(1, first + static_cast<int64_t>(c.begin));
    st->bind(2, first + static_cast<int64_t>(c.end) - 1);
    conn.sink = [&](const detail::ValueRow& row) {
      const auto at = static_cast<size_t>(row.i64(0) - first);
      if (at < c.begin || at >= c.end) {
        stray = true;
        return;
      }
      decode(row, out[at]);
      ++read;
    };
  }
  int rc;
  while ((rc = st->step()) == SQLITE_ROW) {
  }
  const Error failure = queryError(path, conn.db());  // before reset, which clears the error
  st->reset();
  conn.sink = nullptr;
  if (conn.sink_error) std::rethrow_exception(std::exchange(conn.sink_error, nullptr));
  if (rc != SQLITE_DONE) return failure;
  if (c.whole) {
    c.end = out.size();
  } else if (stray || read != c.end - c.begin) {
    return makeError(path + ": damaged database (" + t.table + " rowids " +
                     std::to_string(first + static_cast<int64_t>(c.begin)) + ".." +
                     std::to_string(first + static_cast<int64_t>(c.end) - 1) + " were counted but " +
                     std::to_string(read) + " read)");
  }
  return {};
}

// --- Rows read through the table declarations (schema_tables.h) ---

// The read context of a table without strings.
struct NoStrings {};

// A row's string ids where the file may lack the string: the first missing id is kept for the
// table's damage count (and its placeholder name); the row holds id 0 until then.
struct RowStrings {
  const StringIds* ids;
  std::optional<int64_t> missing;
  uint32_t stringId(int64_t db_id, std::string_view) {
    const uint32_t id = (*ids)(db_id);
    if (id != kMissingString) return id;
    if (!missing) missing = db_id;
    return 0;
  }
};

// A kernel's strings: a string id the file lacks gets a placeholder text among the chunk's texts,
// never an empty name; launch API and occupancy limiter texts become chunk text ids too.
struct KernelStrings {
  const StringIds* ids;
  ChunkTexts* texts;
  std::optional<int64_t> missing_name, missing_path;
  uint32_t stringId(int64_t db_id, std::string_view what) {
    const uint32_t id = (*ids)(db_id);
    if (id != kMissingString) return id;
    std::optional<int64_t>& missing = what == "NVTX path" ? missing_path : missing_name;
    if (!missing) missing = db_id;
    return kChunkText | texts->id(unknownString(what, db_id));
  }
  uint32_t textId(std::string_view text) { return texts->id(text); }
};

// A metric name read through a join with the string table (column `joined`, after the declared
// columns; NULL where the file lacks the string), so rows sort by name as SQLite compares them.
struct JoinedMetricName {
  int joined;
  const char* placeholder;  // what a missing name reads; nullptr: <unknown metric #ID>
  std::optional<int64_t> missing;
  template <class Row>
  std::string stringText(const Row& row, int i, const char* what) {
    if (!row.isNull(joined)) return cleanText(row.textView(joined));
    missing = row.i64(i);
    return placeholder ? std::string(placeholder) : unknownString(what, *missing);
  }
};

// How a table read whole is queried: its declared columns (qualified by `prefix`), then `extra`,
// from `from` (the table itself where empty), in `order`.
struct TableQuery {
  const char* prefix = "";
  const char* extra = "";
  const char* from = "";
  const char* order = "";
};

// kernel_metric and graph_launch_metric are read through a join with the string table (the
// joined name last), so rows sort by name as SQLite compares them.
constexpr TableQuery kKernelMetricQuery{.prefix = "m.",
                                        .extra = ", s.value",
                                        .from = "kernel_metric m LEFT JOIN string s ON s.id = m.metric_id",
                                        .order = "m.kernel_id, s.value"};
constexpr TableQuery kGraphLaunchMetricQuery{.prefix = "m.",
                                             .extra = ", s.value",
                                             .from = "graph_launch_metric m LEFT JOIN string s ON s.id = m.metric_id",
                                             .order = "m.process_id, m.correlation_id, s.value"};

template <const auto& kTable>
std::string selectSql(int schema_version, const TableQuery& q) {
  std::string sql = "SELECT " + detail::selectList(kTable, schema_version, q.prefix) + q.extra + " FROM " +
                    (*q.from ? q.from : kTable.info.name);
  if (*q.order) sql += std::string(" ORDER BY ") + q.order;
  return sql;
}

// The number of rows of a table, to size what reads it; 0 where it cannot be counted (the read
// that follows says what is wrong).
size_t rowCountOrZero(sqlite3* db, const char* table) {
  const std::string sql = std::string("SELECT count(*) FROM ") + table;
  Statement st(db, sql.c_str());
  if (!st.ok() || st.step() != SQLITE_ROW) return 0;
  return static_cast<size_t>(std::max<int64_t>(0, st.i64(0)));
}

// Reads a whole table: each row decoded by its declaration (values of the wrong kind counted in
// `wrong`), then handed to sink(row, context), which keeps it (and repairs what the context found).
template <const auto& kTable, class Row, class Ctx, class Sink>
Status readTable(sqlite3* db, const std::string& path, int schema_version, WrongKinds& wrong, const TableQuery& query,
                 Ctx& ctx, Sink&& sink) {
  const std::string sql = selectSql<kTable>(schema_version, query);
  detail::ColumnValues values;
  return forEachRow(db, path, sql.c_str(), [&](Statement& st) {
    Row row{};
    if (detail::WrongKind w = detail::readRow(kTable, values.of(st), row, ctx)) wrong.see(kTable.info.name, w);
    sink(row, ctx);
  });
}

// The same, every row appended to `out`, sized for the table first: grown row by row, a table of
// a million NVTX ranges would keep up to twice its size for as long as the profile is held.
template <const auto& kTable, class Row>
Status readTable(sqlite3* db, const std::string& path, int schema_version, WrongKinds& wrong, const TableQuery& query,
                 std::vector<Row>& out) {
  if (!*query.from) out.reserve(out.size() + rowCountOrZero(db, kTable.info.name));
  NoStrings none;
  return readTable<kTable, Row>(db, path, schema_version, wrong, query, none,
                                [&](Row& row, NoStrings&) { out.push_back(std::move(row)); });
}

// The chunk-read tables: the SELECT list of a TableRead (its rowid first).
template <const auto& kTable>
std::string chunkColumns(int schema_version, bool rowid_first) {
  return (rowid_first ? "rowid, " : "") + detail::selectList(kTable, schema_version);
}

// A kernel row's repairs (every reader of the kernel table makes them): a negative duration
// counted, dangling names counted (their placeholders were given while decoding), a non-finite
// occupancy dropped.
template <class Strings>
void repairKernel(KernelRow& k, const Strings& strings, KernelChunk& c) {
  if (k.end_ns < k.start_ns && c.negative_durations++ == 0) c.first_negative = k.id;
  if (strings.missing_name) c.missing_names.see(k.id, *strings.missing_name);
  if (k.theoretical_occupancy && !std::isfinite(*k.theoretical_occupancy)) k.theoretical_occupancy.reset();
  if (strings.missing_path) c.missing_paths.see(k.id, *strings.missing_path);
}

// A counter is a count: an infinite value (SQLite stores NaN as NULL) is no measurement.
void repairCounters(KernelCounters& k, CounterChunk& c) {
  for (std::optional<double>* v : detail::counterValues(k)) {
    if (*v && !std::isfinite(**v)) {
      v->reset();
      if (c.non_finite++ == 0) c.first_non_finite = k.kernel_id;
    }
  }
}

Status loadKernels(Conn& conn, const std::string& path, const StringIds& str_id, WrongKinds& wrong, KernelChunk& c,
                   std::vector<KernelRow>& out) {
  return loadChunk(conn, path, c.rows, out, [&](const detail::ValueRow& row, KernelRow& k) {
    KernelStrings strings{&str_id, &c.texts, {}, {}};
    if (detail::WrongKind w = detail::readRow(detail::kKernelTable, row, k, strings)) {
      wrong.see(detail::kKernelTable.info.name, w);
    }
    repairKernel(k, strings, c);
  });
}

Status loadKernelArgs(Conn& conn, const std::string& path, WrongKinds& wrong, TableChunk& c,
                      std::vector<KernelArgRecord>& out) {
  return loadChunk(conn, path, c.rows, out, [&wrong](const detail::ValueRow& row, KernelArgRecord& a) {
    NoStrings none;
    if (detail::WrongKind w = detail::readRow(detail::kKernelArgTable, row, a, none, /*first=*/1)) {
      wrong.see(detail::kKernelArgTable.info.name, w);
    }
  });
}

Status loadCounters(Conn& conn, const std::string& path, WrongKinds& wrong, CounterChunk& c,
                    std::vector<KernelCounters>& out) {
  return loadChunk(conn, path, c.rows, out, [&](const detail::ValueRow& row, KernelCounters& k) {
    NoStrings none;
    if (detail::WrongKind w = detail::readRow(detail::kKernelCounterTable, row, k, none)) {
      wrong.see(detail::kKernelCounterTable.info.name, w);
    }
    repairCounters(k, c);
  });
}

// Runs the tasks on this thread's connection and, when there are chunks to share, on up to three
// more threads with their own read-only connections. Every task runs, whatever fails: the error
// returned is the one of the lowest `order`, the one a sequential read would have met first.
struct OrderedTask {
  size_t order;
  Task run;
};

Status runTasks(const Db& main, const std::vector<OrderedTask>& tasks, size_t chunks) {
  std::vector<Status> results(tasks.size());
  std::atomic<size_t> next{0};
  auto work = [&](Conn& conn) {
    for (size_t t; (t = next.fetch_add(1)) < tasks.size();) results[t] = tasks[t].run(conn);
  };
  const size_t hardware = std::max(1u, std::thread::hardware_concurrency());
  const size_t helpers = chunks >= 2 ? std::min<size_t>({hardware, 4, chunks}) - 1 : 0;
  std::vector<std::exception_ptr> errors(helpers + 1);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < helpers; ++i) {
    try {
      threads.emplace_back([&, i] {
        try {
          Db own;
          // A helper that cannot open the file leaves its share to the others.
          if (!own.open(main.name, main.flags)) return;
          Conn conn(own.db);
          work(conn);
        } catch (...) {
          errors[i + 1] = std::current_exception();
        }
      });
    } catch (const std::system_error&) {
      break;  // no more threads: fewer helpers
    }
  }
  try {
    Conn conn(main.db);
    work(conn);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  const Status* first = nullptr;
  size_t first_order = 0;
  for (size_t t = 0; t < tasks.size(); ++t) {
    if (!results[t] && (!first || tasks[t].order < first_order)) {
      first = &results[t];
      first_order = tasks[t].order;
    }
  }
  return first ? *first : Status{};
}

// NVTX ranges whose parent links run in a circle (a range its own parent, two ranges each
// other's): every walk up the parents would never end. Each circle is cut at the range whose
// parent link closes it, which is said by id. Linear in the ranges, without recursion, so a
// chain 200,000 ranges deep costs what 200,000 separate ranges do. A Range has process_id, key and
// parent_key (an NvtxRangeRecord, or merge's lighter NvtxLink).
template <class Range>
void breakNvtxCycles(std::vector<Range>& ranges, const std::string& file, std::vector<std::string>& warnings) {
  struct KeyHash {
    size_t operator()(const std::pair<uint32_t, uint64_t>& k) const {
      return std::hash<uint64_t>{}(k.second * 0x9E3779B97F4A7C15ull ^ k.first);
    }
  };
  // The collector numbers ranges as they open, so a parent's key is below its child's; merge moves
  // a file's keys together. Links that all point to lower keys of the same process cannot close a
  // circle: then there is nothing to look up (the common case, and a cheap one).
  bool all_down = true;
  for (const Range& r : ranges) all_down = all_down && (!r.parent_key || *r.parent_key < r.key);
  if (all_down) return;
  std::unordered_map<std::pair<uint32_t, uint64_t>, size_t, KeyHash> index;
  index.reserve(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    index.emplace(std::make_pair(ranges[i].process_id, ranges[i].key), i);
  }
  enum : uint8_t { kUnseen, kOnPath, kDone };
  std::vector<uint8_t> state(ranges.size(), kUnseen);
  std::vector<size_t> path;
  int64_t cycles = 0;
  std::string first;
  for (size_t start = 0; start < ranges.size(); ++start) {
    path.clear();
    for (size_t at = start; state[at] == kUnseen;) {
      state[at] = kOnPath;
      path.push_back(at);
      const Range& r = ranges[at];
      if (!r.parent_key) break;
      auto it = index.find({r.process_id, *r.parent_key});
      if (it == index.end()) break;  // a parent not in the file: the range is at the top
      if (state[it->second] == kOnPath) {
        // `at` closes a circle that starts at it->second.
        if (cycles++ == 0) {
          std::string chain;
          const auto from = std::find(path.begin(), path.end(), it->second);
          for (auto c = from; c != path.end() && chain.size() < 200; ++c) {
            chain += std::to_string(ranges[*c].key) + " -> ";
          }
          first = "range " + std::to_string(r.key) +
                  (r.key == *r.parent_key ? " is its own parent"
                                          : " is its own ancestor (" + chain + std::to_string(*r.parent_key) + ")");
        }
        ranges[at].parent_key.reset();
        break;
      }
      at = it->second;
    }
    for (size_t x : path) state[x] = kDone;
  }
  if (cycles > 0) {
    warnings.push_back(file + ": " + std::to_string(cycles) + " NVTX parent chain" +
                         (cycles == 1 ? " runs" : "s run") + " in a circle (" + first +
                         (cycles == 1 ? "" : ", and others") + "); the parent link that closes each circle is ignored");
  }
}


// Rows of the function tables whose name id the string table lacks: (row index, string id), given
// their placeholder name once the loading threads are done (strings are not shared with them).
struct FunctionNamesMissing {
  std::vector<std::pair<size_t, int64_t>> functions, args, sass_ops;
};

// Damage that leaves a file readable: repaired while reading, counted, and said once per kind.
struct Damage {
  Dangling missing_names, missing_paths, missing_function_names, missing_metric_names;
  int64_t negative_durations = 0, first_negative = 0;
  int64_t counters_non_finite = 0, first_counter_non_finite = 0;
  int64_t metrics_non_finite = 0, first_metric_non_finite = 0;
  int64_t ceilings_non_finite = 0;

  // What the kernel and counter rows of one chunk (or stream) found.
  void add(const KernelChunk& c) {
    missing_names.add(c.missing_names);
    missing_paths.add(c.missing_paths);
    if (c.negative_durations > 0 && negative_durations == 0) first_negative = c.first_negative;
    negative_durations += c.negative_durations;
  }
  void add(const CounterChunk& c) {
    if (c.non_finite > 0 && counters_non_finite == 0) first_counter_non_finite = c.first_non_finite;
    counters_non_finite += c.non_finite;
  }
  void sayTo(const std::string& path, std::vector<std::string>& warnings) const;
};

void Damage::sayTo(const std::string& path, std::vector<std::string>& warnings) const {
  auto plural = [](int64_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  auto say = [&](bool damaged, std::string sentence) {
    if (damaged) warnings.push_back(path + ": " + std::move(sentence));
  };
  auto dangling = [&](const Dangling& d, const char* one, const char* many, const std::string& what) {
    say(d.rows > 0, plural(d.rows, one, many) + what);
  };
  dangling(missing_names, "kernel names", "kernels name",
           " a string id missing from the string table (first: kernel " + std::to_string(missing_names.first_row) +
               ", string #" + std::to_string(missing_names.first_string) + "); shown as <unknown name #ID>");
  dangling(missing_paths, "kernel names", "kernels name",
           " an NVTX path string id missing from the string table (first: kernel " +
               std::to_string(missing_paths.first_row) + ", string #" + std::to_string(missing_paths.first_string) +
               "); shown as <unknown NVTX path #ID>");
  dangling(missing_function_names, "function table row names", "function table rows name",
           " a string id missing from the string table (first: string #" +
               std::to_string(missing_function_names.first_string) + "); shown as <unknown name #ID>");
  dangling(missing_metric_names, "kernel_metric row names", "kernel_metric rows name",
           " a metric string id missing from the string table (first: kernel " +
               std::to_string(missing_metric_names.first_row) + ", string #" +
               std::to_string(missing_metric_names.first_string) + "); shown as <unknown metric #ID>");
  say(negative_durations > 0, plural(negative_durations, "kernel ends", "kernels end") +
                                  " before it starts (first: kernel " + std::to_string(first_negative) +
                                  "); their durations are negative and the totals they enter are wrong");
  say(counters_non_finite > 0,
      plural(counters_non_finite, "kernel_counter value is", "kernel_counter values are") +
          " infinite (first: kernel " + std::to_string(first_counter_non_finite) + "); read as not collected (n/a)");
  say(metrics_non_finite > 0, plural(metrics_non_finite, "kernel_metric value is", "kernel_metric values are") +
                                  " not finite (first: kernel " + std::to_string(first_metric_non_finite) + ")");
  say(ceilings_non_finite > 0,
      plural(ceilings_non_finite, "ceiling row has", "ceiling rows have") + " an infinite value; left out");
}

// One load of a profile: loadProfile's steps, and what they hand each other. ProfileStream runs the
// steps of the small tables only, and reads the big ones itself.
class ProfileLoad {
 public:
  explicit ProfileLoad(const std::string& path, const LoadOptions& options = {}) : options_(options) {
    p_.path = path;
  }
  Expected<Profile> run();
  Status runSmallTables();
  Expected<LaunchTables> runLaunchTables();

 private:
  friend struct ProfileStream::Impl;
  Status readMetadata();
  Status readStrings();
  uint32_t internText(std::string_view raw);
  Status readProcessesAndDevices();
  Status planChunkedTables();
  Status planArgumentChunks();
  Status planRead(TableRead& read, const char* table, const char* rowid_column, const std::string& columns);
  Status readTables();
  void addEventTableTasks(const std::function<void(Task)>& add);
  Task memoryEventTask();
  void addLaterTableTasks(const std::function<void(Task)>& add);
  void addFunctionTableTasks(const std::function<void(Task)>& add);
  template <const auto& kTable, class Row>
  void addFunctionTableTask(const std::function<void(Task)>& add, const char* order, std::vector<Row>& out,
                            std::vector<std::pair<size_t, int64_t>>& missing);
  Status readGraphLaunches(sqlite3* db);
  Status readMetrics(sqlite3* db);
  Status readCeilings(sqlite3* db);
  void numberChunkTexts();
  void nameFunctionRowsWithoutName();
  void sortRows();

  const std::string& path() const { return p_.path; }
  int version() const { return p_.schema_version; }

  LoadOptions options_;
  Db h_;
  Profile p_;
  // Strings: ids are dense from 0 in files fprof writes; map any other id space densely too. A
  // dense vector (not a hash map) serves the common case; other ids (and a damaged file's stray
  // huge id, which must not size the vector) fall back to the map.
  std::vector<uint32_t> dense_;
  std::unordered_map<int64_t, uint32_t> sparse_;
  std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>> text_ids_;
  const StringIds ids_{&dense_, &sparse_};
  // The big tables (kernels, their arguments, counters), read in rowid chunks.
  std::string kernel_columns_, arg_columns_, counter_columns_;
  TableRead kernel_read_{}, arg_read_{}, counter_read_{};
  std::vector<KernelChunk> kernel_chunks_;
  std::vector<TableChunk> arg_chunks_;
  std::vector<CounterChunk> counter_chunks_;
  FunctionNamesMissing function_names_missing_;
  Damage damage_;
  WrongKinds wrong_kinds_;
};

Expected<Profile> ProfileLoad::run() {
  p_.file_stamp = stampOf(path());
  if (Status s = openAndCheck(path(), h_, p_.schema_version); !s) return Error{s.error()};
  for (auto step : {&ProfileLoad::readMetadata, &ProfileLoad::readStrings, &ProfileLoad::readProcessesAndDevices,
                    &ProfileLoad::planChunkedTables, &ProfileLoad::readTables}) {
    if (Status s = (this->*step)(); !s) return Error{s.error()};
  }
  numberChunkTexts();
  nameFunctionRowsWithoutName();
  sortRows();
  damage_.sayTo(path(), p_.warnings);
  wrong_kinds_.sayTo(path(), p_.warnings);
  breakNvtxCycles(p_.nvtx_ranges, p_.path, p_.warnings);
  for (std::string& w : p_.warnings) cleanTextInPlace(w);  // the path is the user's, and may hold anything
  return std::move(p_);
}

// For loadLaunchTables: the file checked as run() checks it, and only its kernel arguments and
// memory events read, by run()'s own tasks and sorted as run() sorts them.
Expected<LaunchTables> ProfileLoad::runLaunchTables() {
  if (Status s = openAndCheck(path(), h_, p_.schema_version); !s) return Error{s.error()};
  if (Status s = planArgumentChunks(); !s) return Error{s.error()};
  std::vector<OrderedTask> tasks;
  for (TableChunk& c : arg_chunks_) {
    tasks.push_back({tasks.size(),
                     [this, &c](Conn& conn) { return loadKernelArgs(conn, path(), wrong_kinds_, c, p_.kernel_args); }});
  }
  tasks.push_back({tasks.size(), memoryEventTask()});
  if (Status s = runTasks(h_, tasks, arg_chunks_.size()); !s) return Error{s.error()};
  sortKernelArgs(p_.kernel_args);
  std::vector<std::string> warnings;
  wrong_kinds_.sayTo(path(), warnings);
  for (std::string& w : warnings) cleanTextInPlace(w);
  return LaunchTables{std::move(p_.kernel_args), std::move(p_.memory_events), std::move(warnings)};
}

// For a stream: the file checked, and the tables of a few rows each (per process, device,
// function, graph launch, ceiling) read whole, in the order run() reads them.
Status ProfileLoad::runSmallTables() {
  if (Status s = openAndCheck(path(), h_, p_.schema_version); !s) return s;
  for (auto step : {&ProfileLoad::readMetadata, &ProfileLoad::readStrings, &ProfileLoad::readProcessesAndDevices}) {
    if (Status s = (this->*step)(); !s) return s;
  }
  std::vector<Task> tasks;
  if (detail::kFunctionTable.existsIn(version())) addFunctionTableTasks([&](Task t) { tasks.push_back(std::move(t)); });
  if (detail::kGraphLaunchCounterTable.existsIn(version())) {
    tasks.push_back([this](Conn& conn) { return readGraphLaunches(conn.db()); });
  }
  tasks.push_back([this](Conn& conn) { return readCeilings(conn.db()); });
  Conn conn(h_.db);
  for (Task& task : tasks) {
    if (Status s = task(conn); !s) return s;
  }
  nameFunctionRowsWithoutName();
  return {};
}

Status ProfileLoad::readMetadata() {
  return forEachRow(h_.db, path(), "SELECT key, value FROM metadata",
                    [&](Statement& st) { p_.metadata[cleanText(st.textView(0))] = cleanText(st.textView(1)); });
}

Status ProfileLoad::readStrings() {
  Status s = forEachRow(h_.db, path(), "SELECT id, value FROM string ORDER BY id", [&](Statement& st) {
    const int64_t db_id = st.i64(0);
    const auto id = static_cast<uint32_t>(p_.strings.size());
    if (db_id >= 0 && db_id < (int64_t{1} << 26) && static_cast<size_t>(db_id) <= 2 * p_.strings.size() + 1024) {
      if (dense_.size() <= static_cast<size_t>(db_id)) dense_.resize(static_cast<size_t>(db_id) + 1, kMissingString);
      dense_[static_cast<size_t>(db_id)] = id;
    } else {
      sparse_[db_id] = id;
    }
    p_.strings.push_back(st.text(1));
    cleanTextInPlace(p_.strings.back());
    text_ids_.emplace(p_.strings.back(), id);
  });
  if (!s) return s;
  if (p_.strings.empty()) {
    p_.strings.emplace_back();
    text_ids_.emplace("", 0);
  }
  return {};
}

// Low-cardinality TEXT columns (launch API, occupancy limiter) become string ids too, without a
// std::string per row; so do the placeholders of dangling string ids.
uint32_t ProfileLoad::internText(std::string_view raw) {
  const std::string t = cleanText(raw);
  auto it = text_ids_.find(t);
  if (it != text_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(p_.strings.size());
  p_.strings.push_back(t);
  text_ids_.emplace(t, id);
  return id;
}

Status ProfileLoad::readProcessesAndDevices() {
  Status s = readTable<detail::kProcessTable>(h_.db, path(), version(), wrong_kinds_, {.order = "id"}, p_.processes);
  if (!s) return s;
  return readTable<detail::kDeviceTable>(h_.db, path(), version(), wrong_kinds_, {.order = "process_id, id"},
                                         p_.devices);
}

// The big tables are read in rowid chunks by up to four threads, one connection each; every other
// table is one task of the same pool. Each task fills only its own rows, so the profile is the
// same whatever the number of threads.
Status ProfileLoad::planChunkedTables() {
  kernel_columns_ = chunkColumns<detail::kKernelTable>(version(), false);
  counter_columns_ = chunkColumns<detail::kKernelCounterTable>(version(), false);
  if (Status s = planRead(kernel_read_, "kernel", "id", kernel_columns_); !s) return s;
  if (options_.launch_tables) {
    if (Status s = planArgumentChunks(); !s) return s;
  }
  if (Status s = planRead(counter_read_, "kernel_counter", "kernel_id", counter_columns_); !s) return s;
  planChunks(kernel_read_, kernel_chunks_);
  planChunks(counter_read_, counter_chunks_);
  return {};
}

// The kernel arguments' chunks: all that runLaunchTables reads in chunks.
Status ProfileLoad::planArgumentChunks() {
  arg_columns_ = chunkColumns<detail::kKernelArgTable>(version(), true);
  if (Status s = planRead(arg_read_, "kernel_arg", "rowid", arg_columns_); !s) return s;
  planChunks(arg_read_, arg_chunks_);
  return {};
}

// One big table's rowid span, and the columns its chunks select.
Status ProfileLoad::planRead(TableRead& read, const char* table, const char* rowid_column, const std::string& columns) {
  read.table = table;
  read.rowid_column = rowid_column;
  read.columns = columns.c_str();
  Expected<RowidSpan> span = rowidSpan(h_.db, path(), table);
  if (!span) return Error{span.error()};
  read.span = *span;
  return {};
}

Status ProfileLoad::readTables() {
  // Tasks in the order a sequential read takes the tables (which error is reported) ...
  std::vector<Task> in_order;
  std::vector<size_t> kernel_tasks, arg_tasks, counter_tasks, whole_tasks;
  auto add = [&](std::vector<size_t>& kind, Task task) {
    kind.push_back(in_order.size());
    in_order.push_back(std::move(task));
  };
  auto add_whole = [&](Task task) { add(whole_tasks, std::move(task)); };
  for (KernelChunk& c : kernel_chunks_) {
    add(kernel_tasks, [this, &c](Conn& conn) { return loadKernels(conn, path(), ids_, wrong_kinds_, c, p_.kernels); });
  }
  for (TableChunk& c : arg_chunks_) {
    add(arg_tasks, [this, &c](Conn& conn) { return loadKernelArgs(conn, path(), wrong_kinds_, c, p_.kernel_args); });
  }
  addEventTableTasks(add_whole);
  for (CounterChunk& c : counter_chunks_) {
    add(counter_tasks, [this, &c](Conn& conn) { return loadCounters(conn, path(), wrong_kinds_, c, p_.counters); });
  }
  if (detail::kKernelCounterMissingTable.existsIn(version())) {
    add_whole([this](Conn& conn) {
      return readTable<detail::kKernelCounterMissingTable>(conn.db(), path(), version(), wrong_kinds_,
                                                           {.order = "kernel_id"}, p_.counters_missing);
    });
  }
  addLaterTableTasks(add_whole);

  // ... and in the order they run: each big table's first chunk (it sizes the table) and the tables
  // read whole go first, so that no thread is left with a long task at the end.
  std::vector<OrderedTask> tasks;
  auto run = [&](const std::vector<size_t>& kind, size_t from, size_t to) {
    for (size_t i = from; i < std::min(to, kind.size()); ++i) tasks.push_back({kind[i], std::move(in_order[kind[i]])});
  };
  run(kernel_tasks, 0, 1);
  run(arg_tasks, 0, 1);
  run(counter_tasks, 0, 1);
  run(whole_tasks, 0, whole_tasks.size());
  run(arg_tasks, 1, arg_tasks.size());
  run(counter_tasks, 1, counter_tasks.size());
  run(kernel_tasks, 1, kernel_tasks.size());
  return runTasks(h_, tasks, kernel_chunks_.size() + arg_chunks_.size() + counter_chunks_.size());
}

void ProfileLoad::addEventTableTasks(const std::function<void(Task)>& add) {
  add([this](Conn& conn) {
    p_.nvtx_ranges.reserve(rowCountOrZero(conn.db(), detail::kNvtxRangeTable.info.name));
    p_.nvtx_messages_loaded = options_.nvtx_messages;
    if (options_.nvtx_messages) p_.nvtx_messages = std::make_shared<TextArena>();
    NoStrings none;
    return readTable<detail::kNvtxRangeTable, NvtxRangeRecord>(
        conn.db(), path(), version(), wrong_kinds_, {}, none, [&](const NvtxRangeRecord& row, NoStrings&) {
          p_.nvtx_ranges.emplace_back(row, p_.nvtx_messages.get(), options_.nvtx_messages);
        });
  });
  add([this](Conn& conn) {
    return readTable<detail::kMemcpyTable>(conn.db(), path(), version(), wrong_kinds_, {.order = "start_ns, id"},
                                           p_.memcpys);
  });
  add([this](Conn& conn) {
    return readTable<detail::kMemsetTable>(conn.db(), path(), version(), wrong_kinds_, {.order = "start_ns, id"},
                                           p_.memsets);
  });
  if (options_.launch_tables) add(memoryEventTask());
  add([this](Conn& conn) {
    return readTable<detail::kCollectorEventTable>(conn.db(), path(), version(), wrong_kinds_, {.order = "id"},
                                                   p_.collector_events);
  });
}

Task ProfileLoad::memoryEventTask() {
  return [this](Conn& conn) {
    return readTable<detail::kMemoryEventTable>(conn.db(), path(), version(), wrong_kinds_,
                                                {.order = "timestamp_ns, id"}, p_.memory_events);
  };
}

// The tables read after the counters, in the order a sequential read takes them (which error is
// reported).
void ProfileLoad::addLaterTableTasks(const std::function<void(Task)>& add) {
  if (detail::kFunctionTable.existsIn(version())) addFunctionTableTasks(add);
  if (detail::kMemcpyAddressTable.existsIn(version())) {
    add([this](Conn& conn) {
      return readTable<detail::kMemcpyAddressTable>(conn.db(), path(), version(), wrong_kinds_,
                                                    {.order = "process_id, correlation_id"}, p_.memcpy_addresses);
    });
  }
  if (detail::kGraphLaunchCounterTable.existsIn(version())) {
    add([this](Conn& conn) { return readGraphLaunches(conn.db()); });
  }
  add([this](Conn& conn) { return readMetrics(conn.db()); });
  add([this](Conn& conn) { return readCeilings(conn.db()); });
}

// Schema 2's per-function facts.
void ProfileLoad::addFunctionTableTasks(const std::function<void(Task)>& add) {
  addFunctionTableTask<detail::kFunctionTable>(add, "process_id, name_id", p_.functions,
                                               function_names_missing_.functions);
  addFunctionTableTask<detail::kFunctionArgTable>(add, "process_id, name_id, arg_index, offset_bytes",
                                                  p_.function_args, function_names_missing_.args);
  addFunctionTableTask<detail::kFunctionSassOpTable>(add, "process_id, name_id, opcode", p_.function_sass_ops,
                                                     function_names_missing_.sass_ops);
}

template <const auto& kTable, class Row>
void ProfileLoad::addFunctionTableTask(const std::function<void(Task)>& add, const char* order, std::vector<Row>& out,
                                       std::vector<std::pair<size_t, int64_t>>& missing) {
  add([this, order, &out, &missing](Conn& conn) {
    RowStrings strings{&ids_, {}};
    return readTable<kTable, Row>(conn.db(), path(), version(), wrong_kinds_, {.order = order}, strings,
                                  [&](Row& row, RowStrings& s) {
                                    if (s.missing) missing.emplace_back(out.size(), *std::exchange(s.missing, {}));
                                    out.push_back(std::move(row));
                                  });
  });
}

// Schema 5: CUDA graph launches counted as one range, with the raw metrics behind each.
Status ProfileLoad::readGraphLaunches(sqlite3* db) {
  std::map<std::pair<uint32_t, uint32_t>, size_t> index;
  NoStrings none;
  Status s = readTable<detail::kGraphLaunchCounterTable, GraphLaunchCounters>(
      db, path(), version(), wrong_kinds_, {.order = "process_id, correlation_id"}, none,
      [&](GraphLaunchCounters& g, NoStrings&) {
        index[{g.process_id, g.correlation_id}] = p_.graph_launch_counters.size();
        p_.graph_launch_counters.push_back(std::move(g));
      });
  if (!s) return s;
  JoinedMetricName name{detail::readColumnCount(detail::kGraphLaunchMetricTable), "(unknown metric)", {}};
  return readTable<detail::kGraphLaunchMetricTable, GraphLaunchMetricRecord>(
      db, path(), version(), wrong_kinds_, kGraphLaunchMetricQuery, name,
      [&](GraphLaunchMetricRecord& m, JoinedMetricName&) {
        auto it = index.find({m.process_id, m.correlation_id});
        if (it == index.end()) return;  // a metric without its launch row: nothing to attach to
        p_.graph_launch_counters[it->second].raw.emplace_back(std::move(m.metric), m.value);
      });
}

Status ProfileLoad::readMetrics(sqlite3* db) {
  JoinedMetricName name{detail::readColumnCount(detail::kKernelMetricTable), nullptr, {}};
  return readTable<detail::kKernelMetricTable, KernelMetricRecord>(
      db, path(), version(), wrong_kinds_, kKernelMetricQuery, name, [&](KernelMetricRecord& m, JoinedMetricName& n) {
        if (n.missing) damage_.missing_metric_names.see(m.kernel_id, *std::exchange(n.missing, {}));
        // Raw values are kept as recorded (merge copies them); a non-finite one is said.
        if (!std::isfinite(m.value) && damage_.metrics_non_finite++ == 0) damage_.first_metric_non_finite = m.kernel_id;
        p_.metrics.push_back(std::move(m));
      });
}

// An infinite roof would place every kernel at 0% of it and stretch the chart's axes without end:
// such a row is left out.
Status ProfileLoad::readCeilings(sqlite3* db) {
  NoStrings none;
  return readTable<detail::kCeilingTable, CeilingRecord>(db, path(), version(), wrong_kinds_,
                                                         {.order = "device_name, ceiling, source"}, none,
                                                         [&](CeilingRecord& c, NoStrings&) {
                                                           if (!std::isfinite(c.value)) {
                                                             ++damage_.ceilings_non_finite;
                                                             return;
                                                           }
                                                           p_.ceilings.push_back(std::move(c));
                                                         });
}

// Launch API and occupancy limiter texts became string ids per chunk; numbering them chunk by
// chunk, in row order, gives the ids one sequential scan would. So do the placeholders of dangling
// string ids.
void ProfileLoad::numberChunkTexts() {
  for (const KernelChunk& c : kernel_chunks_) {
    std::vector<uint32_t> global;
    global.reserve(c.texts.texts.size());
    for (const std::string& t : c.texts.texts) global.push_back(internText(t));
    const bool placeholders = c.missing_names.rows > 0 || c.missing_paths.rows > 0;
    for (size_t i = c.rows.begin; i < c.rows.end; ++i) {
      KernelRow& k = p_.kernels[i];
      k.occupancy_limiter_id = global[k.occupancy_limiter_id];
      k.launch_api_id = global[k.launch_api_id];
      if (!placeholders) continue;
      for (uint32_t* id : {&k.name_id, &k.demangled_id}) {
        if (*id & kChunkText) *id = global[*id & ~kChunkText];
      }
      if (k.nvtx_path_id && (*k.nvtx_path_id & kChunkText)) k.nvtx_path_id = global[*k.nvtx_path_id & ~kChunkText];
    }
    damage_.add(c);
  }
  for (const CounterChunk& c : counter_chunks_) damage_.add(c);
}

void ProfileLoad::nameFunctionRowsWithoutName() {
  for (auto [rows, list] : {std::pair{&function_names_missing_.functions, 0}, {&function_names_missing_.args, 1},
                            {&function_names_missing_.sass_ops, 2}}) {
    for (const auto& [row, db_id] : *rows) {
      const uint32_t id = internText(unknownString("name", db_id));
      if (list == 0) p_.functions[row].name_id = id;
      if (list == 1) p_.function_args[row].name_id = id;
      if (list == 2) p_.function_sass_ops[row].name_id = id;
      damage_.missing_function_names.see(static_cast<int64_t>(row), db_id);
    }
  }
  if (damage_.missing_function_names.rows > 0) {  // the placeholders' ids came last: keep the documented order
    auto by_name = [](const auto& a, const auto& b) {
      return std::tie(a.process_id, a.name_id) < std::tie(b.process_id, b.name_id);
    };
    std::stable_sort(p_.functions.begin(), p_.functions.end(), by_name);
    std::stable_sort(p_.function_args.begin(), p_.function_args.end(), by_name);
    std::stable_sort(p_.function_sass_ops.begin(), p_.function_sass_ops.end(), by_name);
  }
}

// Rows come in rowid order; sorting here is much cheaper than SQLite walking the start_ns index
// and fetching each row. The writer inserts in time order, so usually there is nothing to sort.
void ProfileLoad::sortRows() {
  sortByStart(p_.kernels);
  settleDependencyWaits(p_.kernels);
  sortKernelArgs(p_.kernel_args);
  sortByStart(p_.nvtx_ranges);  // the collector writes ranges as they end
}


}  // namespace

// --- ProfileStream: the big tables row by row (see fprof/core/profile_stream.h) ---

namespace detail {
namespace {

// The NVTX links a stream keeps from its look over the file: enough to find parent circles.
struct NvtxLink {
  uint32_t process_id = 0;
  uint64_t key = 0;
  std::optional<uint64_t> parent_key;
};

// A big table's strings for a stream: ids straight into Profile::strings, placeholders and texts
// interned there as they come.
struct StreamStrings {
  const StringIds* ids;
  std::function<uint32_t(std::string_view)> intern;
  std::optional<int64_t> missing_name, missing_path;
  uint32_t stringId(int64_t db_id, std::string_view what) {
    const uint32_t id = (*ids)(db_id);
    if (id != kMissingString) return id;
    std::optional<int64_t>& missing = what == "NVTX path" ? missing_path : missing_name;
    if (!missing) missing = db_id;
    return intern(unknownString(what, db_id));
  }
  uint32_t textId(std::string_view text) { return intern(text); }
};

// The rows of one query, each decoded by its table's declaration, then repaired.
template <const auto& kTable, class Row, class Ctx, class Repair>
class QueryStream : public RowStream<Row> {
 public:
  QueryStream(sqlite3* db, std::string path, WrongKinds& wrong, const std::string& sql, Ctx ctx, Repair repair)
      : db_(db), path_(std::move(path)), wrong_(wrong), st_(db, sql.c_str()), ctx_(std::move(ctx)),
        repair_(std::move(repair)) {}
  Expected<bool> next(Row& row) override {
    if (!st_.ok()) return queryError(path_, db_);
    const int rc = st_.step();
    if (rc == SQLITE_DONE) return false;
    if (rc != SQLITE_ROW) return queryError(path_, db_);
    row = Row{};
    if (detail::WrongKind w = detail::readRow(kTable, values_.of(st_), row, ctx_)) wrong_.see(kTable.info.name, w);
    repair_(row, ctx_);
    return true;
  }

 private:
  sqlite3* db_;
  std::string path_;
  WrongKinds& wrong_;
  Statement st_;
  detail::ColumnValues values_;
  Ctx ctx_;
  Repair repair_;
};

// Rows read whole, where loadProfile's order is not the file's (sorted in memory as it sorts them).
template <class Row>
class VectorStream : public RowStream<Row> {
 public:
  explicit VectorStream(std::vector<Row> rows) : rows_(std::move(rows)) {}
  Expected<bool> next(Row& row) override {
    if (at_ == rows_.size()) return false;
    row = std::move(rows_[at_++]);
    return true;
  }

 private:
  std::vector<Row> rows_;
  size_t at_ = 0;
};

constexpr auto kAsRead = [](auto&, auto&) {};

template <const auto& kTable, class Row, class Ctx, class Repair>
std::unique_ptr<RowStream<Row>> queryStream(sqlite3* db, const std::string& path, WrongKinds& wrong,
                                            const std::string& sql, Ctx ctx, Repair repair) {
  return std::make_unique<QueryStream<kTable, Row, Ctx, Repair>>(db, path, wrong, sql, std::move(ctx),
                                                                 std::move(repair));
}

template <const auto& kTable, class Row>
std::unique_ptr<RowStream<Row>> plainStream(sqlite3* db, const std::string& path, int version, WrongKinds& wrong,
                                            const char* order) {
  return queryStream<kTable, Row>(db, path, wrong, selectSql<kTable>(version, {.order = order}), NoStrings{}, kAsRead);
}

}  // namespace
}  // namespace detail

// The stream's pieces above are the reader's own (detail): the stream names them unqualified.
using namespace detail;

struct ProfileStream::Impl {
  explicit Impl(const std::string& path) : load(path) {}

  ProfileLoad load;
  Profile& p() { return load.p_; }
  const Damage& damage() { return load.damage_; }
  WrongKinds& wrongKinds() { return load.wrong_kinds_; }
  sqlite3* db() { return load.h_.db; }
  const std::string& path() { return load.p_.path; }
  int version() { return load.p_.schema_version; }

  // What the look over the big tables found.
  std::unordered_set<uint32_t> known_processes;
  std::map<std::string, uint32_t, std::less<>> unknown_process;  // table -> first process id without a row
  std::optional<std::vector<int64_t>> kernel_ids;  // read on first use (kernelIds)
  std::optional<std::pair<uint64_t, uint64_t>> nvtx_keys;
  bool kernels_by_id_in_start_order = true;
  bool args_in_file_order = true;
  bool nvtx_in_file_order = true;
  std::vector<size_t> nvtx_cut;  // ranges (in loadProfile's order) whose parent link closes a circle
  std::vector<std::string> cycle_warnings;
  // Damage the big tables' rows show as they are streamed.
  KernelChunk kernel_damage;
  CounterChunk counter_damage;

  Status lookOver();
  Status lookOverKernels();
  Status lookOverArgs();
  Status lookOverNvtx();
  Status cutNvtxCycles();
  Status lookOverOtherTables();
  void seeNvtxKey(uint64_t key);
  void seeProcess(const char* table, uint32_t process_id, bool first_so_far);

  std::unique_ptr<RowStream<KernelRow>> kernels(const char* order);
  std::unique_ptr<RowStream<KernelCounters>> counters();
  // A kernel name's string id, a placeholder's where the file lacks the string.
  uint32_t nameId(int64_t db_id);
  // countersOf's lookup, prepared on first use; none where the file holds no counters.
  std::optional<Statement> counter_lookup;
  ColumnValues counter_values;  // the lookup's row, read as the streams read theirs
  bool counters_looked_for = false;
  std::unique_ptr<RowStream<KernelMetricRecord>> metrics();
  Expected<std::unique_ptr<RowStream<KernelArgRecord>>> kernelArgs();
  Expected<std::unique_ptr<RowStream<NvtxRangeRecord>>> nvtxRanges();
};

Status ProfileStream::Impl::lookOver() {
  for (const ProcessInfo& pr : p().processes) known_processes.insert(pr.id);
  for (auto step : {&Impl::lookOverKernels, &Impl::lookOverArgs, &Impl::lookOverNvtx, &Impl::lookOverOtherTables}) {
    if (Status s = (this->*step)(); !s) return s;
  }
  return {};
}

void ProfileStream::Impl::seeNvtxKey(uint64_t key) {
  nvtx_keys = nvtx_keys ? std::pair{std::min(nvtx_keys->first, key), std::max(nvtx_keys->second, key)}
                        : std::pair{key, key};
}

// Records a process id without a process row if it comes first in loadProfile's order so far.
void ProfileStream::Impl::seeProcess(const char* table, uint32_t process_id, bool first_so_far) {
  if (known_processes.count(process_id)) return;
  if (first_so_far || !unknown_process.count(table)) unknown_process[table] = process_id;
}

// Whether kernels by id are by start too, the NVTX ids they name, and the first kernel in start
// order whose process has no row.
Status ProfileStream::Impl::lookOverKernels() {
  std::optional<std::pair<int64_t, size_t>> first_unknown;  // (start_ns, position): loadProfile's order
  size_t position = 0;
  int64_t previous_start = INT64_MIN;
  return forEachRow(db(), path(), "SELECT id, start_ns, process_id, nvtx_range_id FROM kernel ORDER BY id",
                    [&](Statement& st) {
                      if (st.i64(1) < previous_start) kernels_by_id_in_start_order = false;
                      previous_start = st.i64(1);
                      const auto process_id = static_cast<uint32_t>(st.i64(2));
                      const std::pair<int64_t, size_t> at{st.i64(1), position++};
                      if (!known_processes.count(process_id) && (!first_unknown || at < *first_unknown)) {
                        first_unknown = at;
                        seeProcess("kernel", process_id, true);
                      }
                      if (!st.isNull(3)) seeNvtxKey(static_cast<uint64_t>(st.i64(3)));
                    });
}

// Whether the arguments are already in loadProfile's order (by process, launch, index), which
// they are as the collector writes them; else the stream sorts them in memory as it does.
Status ProfileStream::Impl::lookOverArgs() {
  using Key = std::tuple<uint32_t, uint32_t, int32_t>;
  std::optional<Key> previous;
  std::optional<std::pair<Key, size_t>> least_unknown;
  std::optional<uint32_t> first_unknown_in_file;
  size_t position = 0;
  Status s = forEachRow(db(), path(), "SELECT process_id, correlation_id, arg_index FROM kernel_arg ORDER BY rowid",
                        [&](Statement& st) {
                          const Key key{static_cast<uint32_t>(st.i64(0)), static_cast<uint32_t>(st.i64(1)),
                                        static_cast<int32_t>(st.i64(2))};
                          if (previous && key < *previous) args_in_file_order = false;
                          previous = key;
                          const uint32_t process_id = std::get<0>(key);
                          if (!known_processes.count(process_id)) {
                            if (!first_unknown_in_file) first_unknown_in_file = process_id;
                            const std::pair<Key, size_t> at{key, position};
                            if (!least_unknown || at < *least_unknown) least_unknown = at;
                          }
                          ++position;
                        });
  if (!s) return s;
  if (first_unknown_in_file) {
    unknown_process["kernel_arg"] = args_in_file_order ? *first_unknown_in_file : std::get<0>(least_unknown->first);
  }
  return {};
}

// What the look over the NVTX ranges finds, without holding them: whether they are in loadProfile's
// order already, the ids they span, the first range (by start) whose process has no row, and
// whether any link points up to a key not below its range's, without which there is no circle.
Status ProfileStream::Impl::lookOverNvtx() {
  bool all_down = true;
  std::optional<std::pair<uint64_t, uint64_t>> keys;
  std::optional<uint64_t> lowest_parent;
  std::optional<std::tuple<int64_t, size_t, uint32_t>> first_unknown;  // (start_ns, position, process)
  size_t position = 0;
  int64_t previous_start = INT64_MIN;
  Status s = forEachRow(db(), path(), "SELECT process_id, id, parent_id, start_ns FROM nvtx_range", [&](Statement& st) {
    const auto process_id = static_cast<uint32_t>(st.i64(0));
    const auto key = static_cast<uint64_t>(st.i64(1));
    const std::optional<uint64_t> parent = st.opt<uint64_t>(2);
    const int64_t start = st.i64(3);
    if (start < previous_start) nvtx_in_file_order = false;
    previous_start = start;
    if (parent && *parent >= key) all_down = false;
    if (parent) lowest_parent = std::min(lowest_parent.value_or(*parent), *parent);
    keys = keys ? std::pair{std::min(keys->first, key), std::max(keys->second, key)} : std::pair{key, key};
    const std::tuple<int64_t, size_t, uint32_t> at{start, position++, process_id};
    if (!known_processes.count(process_id) && (!first_unknown || at < *first_unknown)) first_unknown = at;
  });
  if (!s || !all_down) return s ? cutNvtxCycles() : s;
  // Every parent is below its range's key: only the lowest can widen the span.
  if (keys) {
    seeNvtxKey(keys->first);
    seeNvtxKey(keys->second);
  }
  if (lowest_parent) seeNvtxKey(*lowest_parent);
  if (first_unknown) seeProcess("nvtx_range", std::get<2>(*first_unknown), false);
  return {};
}

// Links that may close a circle: the links in loadProfile's order (by start, stable), circles cut
// as it cuts them, and what lookOverNvtx says, of the links that are kept.
Status ProfileStream::Impl::cutNvtxCycles() {
  std::vector<NvtxLink> links;
  std::vector<int64_t> starts;
  Status s = forEachRow(db(), path(), "SELECT process_id, id, parent_id, start_ns FROM nvtx_range", [&](Statement& st) {
    links.push_back({static_cast<uint32_t>(st.i64(0)), static_cast<uint64_t>(st.i64(1)), st.opt<uint64_t>(2)});
    starts.push_back(st.i64(3));
  });
  if (!s) return s;
  if (!nvtx_in_file_order) {
    std::vector<size_t> order(links.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return starts[a] < starts[b]; });
    std::vector<NvtxLink> sorted;
    sorted.reserve(links.size());
    for (size_t i : order) sorted.push_back(links[i]);
    links = std::move(sorted);
  }
  std::vector<bool> had_parent(links.size());
  for (size_t i = 0; i < links.size(); ++i) had_parent[i] = links[i].parent_key.has_value();
  breakNvtxCycles(links, path(), cycle_warnings);
  for (size_t i = 0; i < links.size(); ++i) {
    const NvtxLink& l = links[i];
    if (had_parent[i] && !l.parent_key) nvtx_cut.push_back(i);
    seeNvtxKey(l.key);
    if (l.parent_key) seeNvtxKey(*l.parent_key);
    if (!known_processes.count(l.process_id)) seeProcess("nvtx_range", l.process_id, false);
  }
  return {};
}

// The first process id without a row in each other table, in the order loadProfile reads it.
Status ProfileStream::Impl::lookOverOtherTables() {
  struct Look {
    const char* table;
    const char* order;
    bool exists;
  };
  for (const Look& l : {Look{"memcpy", "start_ns, id", true},
                        Look{"memcpy_address", "process_id, correlation_id", kMemcpyAddressTable.existsIn(version())},
                        Look{"memset", "start_ns, id", true}, Look{"memory_event", "timestamp_ns, id", true},
                        Look{"collector_event", "id", true}}) {
    if (!l.exists) continue;
    const std::string sql = std::string("SELECT process_id FROM ") + l.table + " ORDER BY " + l.order;
    Status s = forEachRow(db(), path(), sql.c_str(), [&](Statement& st) {
      seeProcess(l.table, static_cast<uint32_t>(st.i64(0)), false);
    });
    if (!s) return s;
  }
  return {};
}

std::unique_ptr<RowStream<KernelRow>> ProfileStream::Impl::kernels(const char* order) {
  StreamStrings strings{&load.ids_, [this](std::string_view t) { return load.internText(t); }, {}, {}};
  return queryStream<kKernelTable, KernelRow>(db(), path(), load.wrong_kinds_,
                                              selectSql<kKernelTable>(version(), {.order = order}), std::move(strings),
                                              [this](KernelRow& k, StreamStrings& s) {
                                                repairKernel(k, s, kernel_damage);
                                                s.missing_name.reset();
                                                s.missing_path.reset();
                                              });
}

std::unique_ptr<RowStream<KernelCounters>> ProfileStream::Impl::counters() {
  return queryStream<kKernelCounterTable, KernelCounters>(
      db(), path(), load.wrong_kinds_, selectSql<kKernelCounterTable>(version(), {.order = "kernel_id"}), NoStrings{},
      [this](KernelCounters& k, NoStrings&) { repairCounters(k, counter_damage); });
}

std::unique_ptr<RowStream<KernelMetricRecord>> ProfileStream::Impl::metrics() {
  Damage& damage = load.damage_;
  return queryStream<kKernelMetricTable, KernelMetricRecord>(
      db(), path(), load.wrong_kinds_, selectSql<kKernelMetricTable>(version(), kKernelMetricQuery),
      JoinedMetricName{readColumnCount(kKernelMetricTable), nullptr, {}},
      [&damage](KernelMetricRecord& m, JoinedMetricName& n) {
        if (n.missing) damage.missing_metric_names.see(m.kernel_id, *std::exchange(n.missing, {}));
        if (!std::isfinite(m.value) && damage.metrics_non_finite++ == 0) damage.first_metric_non_finite = m.kernel_id;
      });
}

Expected<std::unique_ptr<RowStream<KernelArgRecord>>> ProfileStream::Impl::kernelArgs() {
  if (args_in_file_order) {
    return plainStream<kKernelArgTable, KernelArgRecord>(db(), path(), version(), load.wrong_kinds_, "rowid");
  }
  std::vector<KernelArgRecord> rows;
  if (Status s = readTable<kKernelArgTable>(db(), path(), version(), load.wrong_kinds_, {.order = "rowid"}, rows); !s) {
    return Error{s.error()};
  }
  std::stable_sort(rows.begin(), rows.end(), [](const KernelArgRecord& a, const KernelArgRecord& b) {
    return std::tie(a.process_id, a.correlation_id, a.index) < std::tie(b.process_id, b.correlation_id, b.index);
  });
  return std::unique_ptr<RowStream<KernelArgRecord>>(std::make_unique<VectorStream<KernelArgRecord>>(std::move(rows)));
}

// Ranges by start, ties in file order, as loadProfile's stable sort leaves them: in file order
// where that is already by start, else sorted by SQLite (which spills to temporary files rather
// than hold the table). CAST gives the value each row decodes to, whatever the column holds.
Expected<std::unique_ptr<RowStream<NvtxRangeRecord>>> ProfileStream::Impl::nvtxRanges() {
  const char* order = nvtx_in_file_order ? "" : "CAST(start_ns AS INTEGER), rowid";
  return queryStream<kNvtxRangeTable, NvtxRangeRecord>(
      db(), path(), load.wrong_kinds_, selectSql<kNvtxRangeTable>(version(), {.order = order}), NoStrings{},
      [this, at = size_t{0}, cut = size_t{0}](NvtxRangeRecord& r, NoStrings&) mutable {
        if (cut < nvtx_cut.size() && nvtx_cut[cut] == at) {
          r.parent_key.reset();
          ++cut;
        }
        ++at;
      });
}

// Kernels by start, ties by id: in id order where that is already by start (as the collector
// writes them), else sorted by SQLite, CAST as for the ranges. Waits are settled as they come.
class KernelsByStart : public RowStream<KernelRow> {
 public:
  explicit KernelsByStart(std::unique_ptr<RowStream<KernelRow>> rows) : rows_(std::move(rows)) {}
  Expected<bool> next(KernelRow& row) override {
    Expected<bool> more = rows_->next(row);
    if (more && *more) waits_.settle(row);
    return more;
  }

 private:
  std::unique_ptr<RowStream<KernelRow>> rows_;
  DependencyWaits waits_;
};

Expected<std::unique_ptr<RowStream<KernelRow>>> ProfileStream::kernelsByStart() {
  const char* order = impl_->kernels_by_id_in_start_order ? "id" : "CAST(start_ns AS INTEGER), id";
  return std::unique_ptr<RowStream<KernelRow>>(std::make_unique<KernelsByStart>(impl_->kernels(order)));
}

// One kernel's counters by its id (kernel_counter's key). The lookup's repairs are made, and its
// damage left to the counter stream, which sees every row once.
Expected<std::optional<KernelCounters>> ProfileStream::countersOf(int64_t kernel_id) {
  Impl& m = *impl_;
  if (!m.counters_looked_for) {
    m.counters_looked_for = true;
    bool any = false;
    Status s = forEachRow(m.db(), m.path(), "SELECT 1 FROM kernel_counter LIMIT 1", [&](Statement&) { any = true; });
    if (!s) return Error{s.error()};
    if (any) {
      const std::string sql = selectSql<kKernelCounterTable>(m.version(), {}) + " WHERE kernel_id = ?1 LIMIT 1";
      m.counter_lookup.emplace(m.db(), sql.c_str());
    }
  }
  if (!m.counter_lookup) return std::optional<KernelCounters>{};
  Statement& st = *m.counter_lookup;
  if (!st.ok()) return queryError(m.path(), m.db());
  st.reset();
  st.bind(1, kernel_id);
  const int rc = st.step();
  if (rc == SQLITE_DONE) return std::optional<KernelCounters>{};
  if (rc != SQLITE_ROW) return queryError(m.path(), m.db());
  KernelCounters c;
  NoStrings none;
  readRow(kKernelCounterTable, m.counter_values.of(st), c, none);
  CounterChunk not_counted;
  repairCounters(c, not_counted);
  return std::optional<KernelCounters>{std::move(c)};
}

// A missing name gets the placeholder a kernel row naming it gets.
uint32_t ProfileStream::Impl::nameId(int64_t db_id) {
  const uint32_t id = load.ids_(db_id);
  return id != kMissingString ? id : load.internText(unknownString("name", db_id));
}

Expected<std::vector<uint32_t>> ProfileStream::kernelNameIds() {
  Impl& m = *impl_;
  std::vector<uint32_t> ids;
  Status s = forEachRow(m.db(), m.path(), "SELECT DISTINCT demangled_id FROM kernel",
                        [&](Statement& st) { ids.push_back(m.nameId(st.i64(0))); });
  if (!s) return Error{s.error()};
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

Expected<std::optional<int64_t>> ProfileStream::firstEventNs() {
  Impl& m = *impl_;
  std::optional<int64_t> first;
  for (const char* table : {"kernel", "nvtx_range", "memcpy", "memset"}) {
    const std::string sql = std::string("SELECT min(CAST(start_ns AS INTEGER)) FROM ") + table;
    Status s = forEachRow(m.db(), m.path(), sql.c_str(), [&](Statement& st) {
      if (!st.isNull(0)) first = std::min(first.value_or(INT64_MAX), st.i64(0));
    });
    if (!s) return Error{s.error()};
  }
  return first;
}

Expected<std::unique_ptr<ProfileStream>> ProfileStream::open(const std::string& path) {
  auto impl = std::make_unique<Impl>(path);
  if (Status s = impl->load.runSmallTables(); !s) return Error{s.error()};
  if (Status s = impl->lookOver(); !s) return Error{s.error()};
  return std::unique_ptr<ProfileStream>(new ProfileStream(std::move(impl)));
}

ProfileStream::ProfileStream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProfileStream::~ProfileStream() = default;

const Profile& ProfileStream::small() const { return impl_->p(); }

std::optional<uint32_t> ProfileStream::unknownProcess(std::string_view table) const {
  auto it = impl_->unknown_process.find(table);
  if (it == impl_->unknown_process.end()) return std::nullopt;
  return it->second;
}

Expected<const std::vector<int64_t>*> ProfileStream::kernelIds() {
  Impl& m = *impl_;
  if (!m.kernel_ids) {
    std::vector<int64_t> ids;
    Status s = forEachRow(m.db(), m.path(), "SELECT id FROM kernel ORDER BY id",
                          [&](Statement& st) { ids.push_back(st.i64(0)); });
    if (!s) return Error{s.error()};
    m.kernel_ids = std::move(ids);
  }
  return &*m.kernel_ids;
}

std::optional<std::pair<uint64_t, uint64_t>> ProfileStream::nvtxKeys() const { return impl_->nvtx_keys; }

template <class Row>
Expected<std::unique_ptr<RowStream<Row>>> ProfileStream::rows() {
  Impl& m = *impl_;
  auto none = [] { return std::unique_ptr<RowStream<Row>>(std::make_unique<VectorStream<Row>>(std::vector<Row>{})); };
  if constexpr (std::is_same_v<Row, KernelRow>) {
    return m.kernels("id");
  } else if constexpr (std::is_same_v<Row, KernelCounters>) {
    return m.counters();
  } else if constexpr (std::is_same_v<Row, KernelMetricRecord>) {
    return m.metrics();
  } else if constexpr (std::is_same_v<Row, KernelCounterMissing>) {
    if (!kKernelCounterMissingTable.existsIn(m.version())) return none();
    return plainStream<kKernelCounterMissingTable, Row>(m.db(), m.path(), m.version(), m.wrongKinds(), "kernel_id");
  } else if constexpr (std::is_same_v<Row, KernelArgRecord>) {
    return m.kernelArgs();
  } else if constexpr (std::is_same_v<Row, NvtxRangeRecord>) {
    return m.nvtxRanges();
  } else if constexpr (std::is_same_v<Row, MemcpyRecord>) {
    return plainStream<kMemcpyTable, Row>(m.db(), m.path(), m.version(), m.wrongKinds(), "start_ns, id");
  } else if constexpr (std::is_same_v<Row, MemcpyAddressRecord>) {
    if (!kMemcpyAddressTable.existsIn(m.version())) return none();
    return plainStream<kMemcpyAddressTable, Row>(m.db(), m.path(), m.version(), m.wrongKinds(),
                                                 "process_id, correlation_id");
  } else if constexpr (std::is_same_v<Row, MemsetRecord>) {
    return plainStream<kMemsetTable, Row>(m.db(), m.path(), m.version(), m.wrongKinds(), "start_ns, id");
  } else if constexpr (std::is_same_v<Row, MemoryEventRecord>) {
    return plainStream<kMemoryEventTable, Row>(m.db(), m.path(), m.version(), m.wrongKinds(), "timestamp_ns, id");
  } else {
    static_assert(std::is_same_v<Row, CollectorEventRecord>, "a row type without a stream");
    return plainStream<kCollectorEventTable, Row>(m.db(), m.path(), m.version(), m.wrongKinds(), "id");
  }
}

template Expected<std::unique_ptr<RowStream<KernelRow>>> ProfileStream::rows<KernelRow>();
template Expected<std::unique_ptr<RowStream<KernelCounters>>> ProfileStream::rows<KernelCounters>();
template Expected<std::unique_ptr<RowStream<KernelMetricRecord>>> ProfileStream::rows<KernelMetricRecord>();
template Expected<std::unique_ptr<RowStream<KernelCounterMissing>>> ProfileStream::rows<KernelCounterMissing>();
template Expected<std::unique_ptr<RowStream<KernelArgRecord>>> ProfileStream::rows<KernelArgRecord>();
template Expected<std::unique_ptr<RowStream<NvtxRangeRecord>>> ProfileStream::rows<NvtxRangeRecord>();
template Expected<std::unique_ptr<RowStream<MemcpyRecord>>> ProfileStream::rows<MemcpyRecord>();
template Expected<std::unique_ptr<RowStream<MemcpyAddressRecord>>> ProfileStream::rows<MemcpyAddressRecord>();
template Expected<std::unique_ptr<RowStream<MemsetRecord>>> ProfileStream::rows<MemsetRecord>();
template Expected<std::unique_ptr<RowStream<MemoryEventRecord>>> ProfileStream::rows<MemoryEventRecord>();
template Expected<std::unique_ptr<RowStream<CollectorEventRecord>>> ProfileStream::rows<CollectorEventRecord>();

std::vector<std::string> ProfileStream::warnings() {
  Damage damage = impl_->damage();
  damage.add(impl_->kernel_damage);
  damage.add(impl_->counter_damage);
  std::vector<std::string> said;
  damage.sayTo(impl_->path(), said);
  impl_->wrongKinds().sayTo(impl_->path(), said);
  said.insert(said.end(), impl_->cycle_warnings.begin(), impl_->cycle_warnings.end());
  for (std::string& w : said) cleanTextInPlace(w);
  return said;
}

Status checkDatabase(const std::string& path) {
  Db h;
  int version = 0;
  return openAndCheck(path, h, version);
}

Expected<Profile> loadProfile(const std::string& path, const LoadOptions& options) {
  ProfileLoad load(path, options);
  return load.run();
}

namespace {

Status changedWhileRead(const Profile& p) {
  return makeError(p.path + ": changed while fprof was reading it (replaced, rewritten or still being written); "
                   "run the command again once it is complete");
}

Status unchanged(const Profile& p) {
  if (stampOf(p.path) == p.file_stamp) return {};
  return changedWhileRead(p);
}

// Range index by key: a dense vector where the keys are (nearly) dense, as fprof writes them; else
// a sorted one.
class RangeIndexByKey {
 public:
  explicit RangeIndexByKey(const std::vector<NvtxRangeRow>& ranges) {
    if (ranges.empty()) return;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const NvtxRangeRow& r : ranges) {
      lo = std::min(lo, r.key);
      hi = std::max(hi, r.key);
    }
    if (hi - lo < 2 * static_cast<uint64_t>(ranges.size())) {
      first_ = lo;
      dense_.assign(static_cast<size_t>(hi - lo + 1), kNone);
      for (size_t i = 0; i < ranges.size(); ++i) dense_[static_cast<size_t>(ranges[i].key - lo)] = static_cast<uint32_t>(i);
      return;
    }
    sorted_.reserve(ranges.size());
    for (size_t i = 0; i < ranges.size(); ++i) sorted_.emplace_back(ranges[i].key, static_cast<uint32_t>(i));
    std::sort(sorted_.begin(), sorted_.end());
  }

  std::optional<size_t> of(uint64_t key) const {
    if (!dense_.empty()) {
      if (key < first_ || key - first_ >= dense_.size()) return std::nullopt;
      const uint32_t at = dense_[static_cast<size_t>(key - first_)];
      return at == kNone ? std::nullopt : std::optional<size_t>(at);
    }
    const auto it = std::lower_bound(sorted_.begin(), sorted_.end(), std::make_pair(key, uint32_t{0}));
    if (it == sorted_.end() || it->first != key) return std::nullopt;
    return it->second;
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  uint64_t first_ = 0;
  std::vector<uint32_t> dense_;
  std::vector<std::pair<uint64_t, uint32_t>> sorted_;
};

}  // namespace

Status forEachNvtxMessage(const Profile& p, const std::function<void(size_t, std::string_view)>& see) {
  if (Status s = unchanged(p); !s) return s;
  Db h;
  int version = 0;
  if (Status s = openAndCheck(p.path, h, version); !s) return s;
  const RangeIndexByKey index(p.nvtx_ranges);
  size_t rows = 0;
  bool stray = false;
  // Each key and message decoded as loadProfile decodes them (readValue: the text cleaned).
  Status s = forEachRow(h.db, p.path, "SELECT id, message FROM nvtx_range", [&](Statement& st) {
    const std::optional<size_t> at = index.of(static_cast<uint64_t>(st.i64(0)));
    if (!at) {
      stray = true;
      return;
    }
    ++rows;
    const std::string_view message = st.textView(1);
    if (isCleanText(message)) {
      see(*at, message);
    } else {
      see(*at, cleanText(message));
    }
  });
  if (!s) return s;
  if (stray || rows != p.nvtx_ranges.size()) return changedWhileRead(p);
  return unchanged(p);
}

Status loadNvtxMessages(Profile& p) {
  if (p.nvtx_messages_loaded) return {};
  auto arena = std::make_shared<TextArena>();
  std::vector<PackedText> messages(p.nvtx_ranges.size());
  if (Status s = forEachNvtxMessage(p, [&](size_t at, std::string_view m) { messages[at] = arena->hold(m); }); !s) {
    return s;
  }
  for (size_t i = 0; i < messages.size(); ++i) p.nvtx_ranges[i].message = std::move(messages[i]);
  p.nvtx_messages = std::move(arena);
  p.nvtx_messages_loaded = true;
  return {};
}

Expected<LaunchTables> loadLaunchTables(const Profile& p) {
  if (Status s = unchanged(p); !s) return Error{s.error()};
  ProfileLoad load(p.path);
  Expected<LaunchTables> t = load.runLaunchTables();
  if (!t) return t;
  if (Status s = unchanged(p); !s) return Error{s.error()};  // not changed while they were read
  return t;
}

}  // namespace fprof::core
