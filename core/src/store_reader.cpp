// Opening, validating and loading .fprof databases (see store.h).
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "counter_columns.h"
#include "fprof/core/dependency_wait.h"
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

// Checks the file itself before SQLite sees it, so a wrong or damaged file gets a precise sentence.
Status checkFile(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) return makeError(path + ": no such file");
  if (fs::is_directory(path, ec)) return makeError(path + ": is a directory, not an fprof database");
  const auto size = fs::file_size(path, ec);
  if (ec) return makeError(path + ": cannot read: " + ec.message());
  if (size == 0) {
    return makeError(path +
                     ": empty file (0 bytes): the profiled program probably ended before the collector wrote "
                     "anything");
  }
  std::ifstream in(path, std::ios::binary);
  std::array<unsigned char, 100> header{};
  in.read(reinterpret_cast<char*>(header.data()), header.size());
  if (static_cast<size_t>(in.gcount()) < 16 || std::memcmp(header.data(), "SQLite format 3\0", 16) != 0) {
    return makeError(path + ": not an fprof database (not a SQLite file)");
  }
  if (static_cast<size_t>(in.gcount()) < header.size()) {
    return makeError(path + ": truncated (" + std::to_string(size) + " bytes, shorter than a SQLite header)");
  }
  uint32_t page_size = (uint32_t{header[16]} << 8) | header[17];
  if (page_size == 1) page_size = 65536;
  const uint32_t page_count = be32(&header[28]);
  // The in-header page count is valid only when the change counter matches "version-valid-for"
  // and no WAL holds newer pages.
  const bool count_valid = be32(&header[24]) == be32(&header[92]);
  const bool has_wal = fs::exists(path + "-wal", ec) && fs::file_size(path + "-wal", ec) > 0;
  if (count_valid && !has_wal && page_count > 0 && uint64_t{page_count} * page_size > size) {
    return makeError(path + ": truncated (" + std::to_string(size) + " bytes, its header says " +
                     std::to_string(uint64_t{page_count} * page_size) + "); the file was cut short while copying");
  }
  return {};
}

struct Db {
  sqlite3* db = nullptr;
  ~Db() { sqlite3_close(db); }
};

Status openAndCheck(const std::string& path, Db& h, int& version) {
  if (Status s = checkFile(path); !s) return s;
  if (sqlite3_open_v2(path.c_str(), &h.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    return makeError(path + ": cannot open: " + detail::sqliteMessage(h.db));
  }
  Statement has_meta(h.db, "SELECT value FROM metadata WHERE key = 'schema_version'");
  if (!has_meta.ok()) {
    const std::string msg = detail::sqliteMessage(h.db);
    if (msg.find("no such table") != std::string::npos) {
      return makeError(path + ": a SQLite database, but not an fprof database (no metadata table)");
    }
    return makeError(path + ": damaged database (" + msg + ")");
  }
  int rc = has_meta.step();
  if (rc == SQLITE_DONE) return makeError(path + ": not an fprof database (no schema_version in metadata)");
  if (rc != SQLITE_ROW) return makeError(path + ": damaged database (" + detail::sqliteMessage(h.db) + ")");
  const std::string v = has_meta.text(0);
  char* end = nullptr;
  const long parsed = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || parsed <= 0) {
    return makeError(path + ": damaged database (schema_version '" + cleanText(truncateText(v, 40)) +
                     "' is not a number)");
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

template <class Fn>
Status forEachRow(sqlite3* db, const std::string& path, const char* sql, Fn&& fn) {
  Statement st(db, sql);
  if (!st.ok()) return makeError(path + ": damaged database (" + detail::sqliteMessage(db) + ")");
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) fn(st);
  if (rc != SQLITE_DONE) return makeError(path + ": damaged database (" + detail::sqliteMessage(db) + ")");
  return {};
}

struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view v) const { return std::hash<std::string_view>{}(v); }
};

// Orders kernels by start_ns, ties in rowid order (what a stable sort gives). A KernelRow is
// 200 bytes, so out-of-order input sorts (start_ns, position) pairs and moves each row once.
void sortKernelsByStart(std::vector<KernelRow>& kernels) {
  auto by_start = [](const KernelRow& a, const KernelRow& b) { return a.start_ns < b.start_ns; };
  if (std::is_sorted(kernels.begin(), kernels.end(), by_start)) return;
  std::vector<std::pair<int64_t, size_t>> order(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) order[i] = {kernels[i].start_ns, i};
  std::sort(order.begin(), order.end());
  std::vector<KernelRow> sorted;
  sorted.reserve(kernels.size());
  for (const auto& [start_ns, i] : order) sorted.push_back(std::move(kernels[i]));
  kernels = std::move(sorted);
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
    if (!st.ok() || st.step() != SQLITE_ROW) {
      return makeError(path + ": damaged database (" + detail::sqliteMessage(db) + ")");
    }
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
  if (!st) return makeError(path + ": damaged database (" + detail::sqliteMessage(conn.db()) + ")");
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
  const std::string message = detail::sqliteMessage(conn.db());
  st->reset();
  conn.sink = nullptr;
  if (conn.sink_error) std::rethrow_exception(std::exchange(conn.sink_error, nullptr));
  if (rc != SQLITE_DONE) return makeError(path + ": damaged database (" + message + ")");
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

Status loadKernels(Conn& conn, const std::string& path, const StringIds& str_id, KernelChunk& c,
                   std::vector<KernelRow>& out) {
  return loadChunk(conn, path, c.rows, out, [&](const detail::ValueRow& row, KernelRow& k) {
    int i = 0;
    k.id = row.i64(i++);
    k.process_id = static_cast<uint32_t>(row.i64(i++));
    k.device_id = static_cast<uint32_t>(row.i64(i++));
    k.context_id = static_cast<uint32_t>(row.i64(i++));
    k.stream_id = static_cast<uint32_t>(row.i64(i++));
    k.correlation_id = static_cast<uint32_t>(row.i64(i++));
    k.thread_id = static_cast<uint32_t>(row.i64(i++));
    k.start_ns = row.i64(i++);
    k.end_ns = row.i64(i++);
    if (k.end_ns < k.start_ns && c.negative_durations++ == 0) c.first_negative = k.id;
    // A string id the string table lacks gets a placeholder text, never an empty name.
    std::optional<int64_t> missing;
    auto name = [&](int64_t db_id, std::string_view what) {
      const uint32_t id = str_id(db_id);
      if (id != kMissingString) return id;
      if (!missing) missing = db_id;
      return kChunkText | c.texts.id(unknownString(what, db_id));
    };
    k.name_id = name(row.i64(i++), "name");
    k.demangled_id = name(row.i64(i++), "name");
    if (missing) c.missing_names.see(k.id, *missing);
    for (int32_t* f : {&k.grid_x, &k.grid_y, &k.grid_z, &k.block_x, &k.block_y, &k.block_z, &k.cluster_x, &k.cluster_y,
                       &k.cluster_z, &k.registers_per_thread, &k.static_shared_bytes, &k.dynamic_shared_bytes}) {
      *f = static_cast<int32_t>(row.i64(i++));
    }
    k.local_bytes_per_thread = row.i64(i++);
    k.local_bytes_total = row.i64(i++);
    k.shared_carveout_bytes = row.i64(i++);
    k.theoretical_occupancy = row.opt<double>(i++);
    if (k.theoretical_occupancy && !std::isfinite(*k.theoretical_occupancy)) k.theoretical_occupancy.reset();
    k.theoretical_blocks_per_sm = row.opt<int>(i++);
    k.occupancy_limiter_id = c.texts.id(row.textView(i++));
    k.graph_id = static_cast<uint32_t>(row.i64(i++));
    k.graph_node_id = static_cast<uint64_t>(row.i64(i++));
    k.launch_api_id = c.texts.id(row.textView(i++));
    k.nvtx_range_key = row.opt<uint64_t>(i++);
    if (auto path_id = row.opt<int64_t>(i++)) {
      missing.reset();
      k.nvtx_path_id = name(*path_id, "NVTX path");
      if (missing) c.missing_paths.see(k.id, *missing);
    }
    k.programmatic_launch = row.i64(i++) != 0;
  });
}

// Runs the tasks on this thread's connection and, when there are chunks to share, on up to three
// more threads with their own read-only connections. Every task runs, whatever fails: the error
// returned is the one of the lowest `order`, the one a sequential read would have met first.
struct OrderedTask {
  size_t order;
  Task run;
};

Status runTasks(sqlite3* db, const std::string& path, const std::vector<OrderedTask>& tasks, size_t chunks) {
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
          if (sqlite3_open_v2(path.c_str(), &own.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
            return;
          }
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
    Conn conn(db);
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
// chain 200,000 ranges deep costs what 200,000 separate ranges do.
void breakNvtxCycles(Profile& p) {
  struct KeyHash {
    size_t operator()(const std::pair<uint32_t, uint64_t>& k) const {
      return std::hash<uint64_t>{}(k.second * 0x9E3779B97F4A7C15ull ^ k.first);
    }
  };
  // The collector numbers ranges as they open, so a parent's key is below its child's; merge moves
  // a file's keys together. Links that all point to lower keys of the same process cannot close a
  // circle: then there is nothing to look up (the common case, and a cheap one).
  bool all_down = true;
  for (const NvtxRangeRecord& r : p.nvtx_ranges) all_down = all_down && (!r.parent_key || *r.parent_key < r.key);
  if (all_down) return;
  std::unordered_map<std::pair<uint32_t, uint64_t>, size_t, KeyHash> index;
  index.reserve(p.nvtx_ranges.size());
  for (size_t i = 0; i < p.nvtx_ranges.size(); ++i) {
    index.emplace(std::make_pair(p.nvtx_ranges[i].process_id, p.nvtx_ranges[i].key), i);
  }
  enum : uint8_t { kUnseen, kOnPath, kDone };
  std::vector<uint8_t> state(p.nvtx_ranges.size(), kUnseen);
  std::vector<size_t> path;
  int64_t cycles = 0;
  std::string first;
  for (size_t start = 0; start < p.nvtx_ranges.size(); ++start) {
    path.clear();
    for (size_t at = start; state[at] == kUnseen;) {
      state[at] = kOnPath;
      path.push_back(at);
      const NvtxRangeRecord& r = p.nvtx_ranges[at];
      if (!r.parent_key) break;
      auto it = index.find({r.process_id, *r.parent_key});
      if (it == index.end()) break;  // a parent not in the file: the range is at the top
      if (state[it->second] == kOnPath) {
        // `at` closes a circle that starts at it->second.
        if (cycles++ == 0) {
          std::string chain;
          const auto from = std::find(path.begin(), path.end(), it->second);
          for (auto c = from; c != path.end() && chain.size() < 200; ++c) {
            chain += std::to_string(p.nvtx_ranges[*c].key) + " -> ";
          }
          first = "range " + std::to_string(r.key) +
                  (r.key == *r.parent_key ? " is its own parent"
                                          : " is its own ancestor (" + chain + std::to_string(*r.parent_key) + ")");
        }
        p.nvtx_ranges[at].parent_key.reset();
        break;
      }
      at = it->second;
    }
    for (size_t x : path) state[x] = kDone;
  }
  if (cycles > 0) {
    p.warnings.push_back(p.path + ": " + std::to_string(cycles) + " NVTX parent chain" +
                         (cycles == 1 ? " runs" : "s run") + " in a circle (" + first +
                         (cycles == 1 ? "" : ", and others") + "); the parent link that closes each circle is ignored");
  }
}

}  // namespace

Status checkDatabase(const std::string& path) {
  Db h;
  int version = 0;
  return openAndCheck(path, h, version);
}

// Rows of the function tables whose name id the string table lacks: (row index, string id), given
// their placeholder name once the loading threads are done (strings are not shared with them).
struct FunctionNamesMissing {
  std::vector<std::pair<size_t, int64_t>> functions, args, sass_ops;
};

// Schema 5: CUDA graph launches counted as one range, with the raw metrics behind each.
Status loadGraphLaunches(Conn& conn, const std::string& path, Profile& p) {
  std::string sql = "SELECT process_id, correlation_id";
  for (const char* column : detail::kCounterValueColumns) sql += std::string(", ") + column;
  sql += " FROM graph_launch_counter ORDER BY process_id, correlation_id";
  std::map<std::pair<uint32_t, uint32_t>, size_t> index;
  Status s = forEachRow(conn.db(), path, sql.c_str(), [&](Statement& st) {
    GraphLaunchCounters& g = p.graph_launch_counters.emplace_back();
    g.process_id = static_cast<uint32_t>(st.i64(0));
    g.correlation_id = static_cast<uint32_t>(st.i64(1));
    int i = 2;
    for (std::optional<double>* v : detail::counterValues(g.counters)) {
      *v = st.isNull(i) ? std::nullopt : std::optional<double>(st.f64(i));
      ++i;
    }
    index[{g.process_id, g.correlation_id}] = p.graph_launch_counters.size() - 1;
  });
  if (!s) return s;
  return forEachRow(conn.db(), path,
                    "SELECT m.process_id, m.correlation_id, s.value, m.value FROM graph_launch_metric m LEFT JOIN "
                    "string s ON s.id = m.metric_id ORDER BY m.process_id, m.correlation_id, s.value",
                    [&](Statement& st) {
                      auto it = index.find({static_cast<uint32_t>(st.i64(0)), static_cast<uint32_t>(st.i64(1))});
                      if (it == index.end()) return;  // a metric without its launch row: nothing to attach to
                      p.graph_launch_counters[it->second].raw.emplace_back(
                          st.isNull(2) ? std::string("(unknown metric)") : cleanText(st.textView(2)), st.f64(3));
                    });
}

// The tables schema 2 added: per-function facts and why kernels have no counters.
template <class AddTask>
void addSchema2Tasks(Profile& p, const std::string& path, const StringIds& str_id, FunctionNamesMissing& missing,
                     AddTask&& add) {
  add([&p, &path](Conn& conn) {
    return forEachRow(conn.db(), path, "SELECT kernel_id, reason FROM kernel_counter_missing ORDER BY kernel_id",
                      [&](Statement& st) { p.counters_missing.push_back({st.i64(0), cleanText(st.textView(1))}); });
  });
  auto name = [&str_id](int64_t db_id, size_t row, std::vector<std::pair<size_t, int64_t>>& missing_rows) {
    const uint32_t id = str_id(db_id);
    if (id != kMissingString) return id;
    missing_rows.emplace_back(row, db_id);
    return uint32_t{0};
  };
  add([&p, &path, name, &missing](Conn& conn) {
    return forEachRow(conn.db(), path,
                      "SELECT process_id, name_id, registers_per_thread, local_bytes_per_thread, static_shared_bytes, "
                      "const_bytes, max_threads_per_block, binary_version, ptx_version FROM function "
                      "ORDER BY process_id, name_id",
                      [&](Statement& st) {
                        FunctionRow& f = p.functions.emplace_back();
                        f.process_id = static_cast<uint32_t>(st.i64(0));
                        f.name_id = name(st.i64(1), p.functions.size() - 1, missing.functions);
                        f.registers_per_thread = st.opt<int>(2);
                        f.local_bytes_per_thread = st.opt<int64_t>(3);
                        f.static_shared_bytes = st.opt<int64_t>(4);
                        f.const_bytes = st.opt<int64_t>(5);
                        f.max_threads_per_block = st.opt<int>(6);
                        f.binary_version = st.opt<int>(7);
                        f.ptx_version = st.opt<int>(8);
                      });
  });
  add([&p, &path, name, &missing](Conn& conn) {
    return forEachRow(conn.db(), path,
                      "SELECT process_id, name_id, arg_index, role, method, sampled_bytes, correlation_id, "
                      "offset_bytes FROM function_arg ORDER BY process_id, name_id, arg_index, offset_bytes",
                      [&](Statement& st) {
                        FunctionArgRow& a = p.function_args.emplace_back();
                        a.process_id = static_cast<uint32_t>(st.i64(0));
                        a.name_id = name(st.i64(1), p.function_args.size() - 1, missing.args);
                        a.arg_index = static_cast<int32_t>(st.i64(2));
                        a.role = cleanText(st.textView(3));
                        a.method = cleanText(st.textView(4));
                        a.sampled_bytes = st.opt<int64_t>(5);
                        a.correlation_id = st.opt<uint32_t>(6);
                        a.offset_bytes = static_cast<int32_t>(st.i64(7));
                      });
  });
  add([&p, &path, name, &missing](Conn& conn) {
    return forEachRow(conn.db(), path,
                      "SELECT process_id, name_id, opcode, static_count FROM function_sass_op "
                      "ORDER BY process_id, name_id, opcode",
                      [&](Statement& st) {
                        FunctionSassOpRow& o = p.function_sass_ops.emplace_back();
                        o.process_id = static_cast<uint32_t>(st.i64(0));
                        o.name_id = name(st.i64(1), p.function_sass_ops.size() - 1, missing.sass_ops);
                        o.opcode = cleanText(st.textView(2));
                        o.static_count = st.i64(3);
                      });
  });
}

Expected<Profile> loadProfile(const std::string& path) {
  Db h;
  Profile p;
  p.path = path;
  if (Status s = openAndCheck(path, h, p.schema_version); !s) return Error{s.error()};

  Status s = forEachRow(h.db, path, "SELECT key, value FROM metadata",
                        [&](Statement& st) { p.metadata[cleanText(st.textView(0))] = cleanText(st.textView(1)); });
  if (!s) return Error{s.error()};

  // Strings: ids are dense from 0 in files fprof writes; map any other id space densely too.
  // A dense vector (not a hash map) serves the common case; other ids (and a damaged file's stray
  // huge id, which must not size the vector) fall back to the map.
  std::vector<uint32_t> dense;
  std::unordered_map<int64_t, uint32_t> sparse;
  std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>> text_ids;
  s = forEachRow(h.db, path, "SELECT id, value FROM string ORDER BY id", [&](Statement& st) {
    const int64_t db_id = st.i64(0);
    const auto id = static_cast<uint32_t>(p.strings.size());
    if (db_id >= 0 && db_id < (int64_t{1} << 26) && static_cast<size_t>(db_id) <= 2 * p.strings.size() + 1024) {
      if (dense.size() <= static_cast<size_t>(db_id)) dense.resize(static_cast<size_t>(db_id) + 1, kMissingString);
      dense[static_cast<size_t>(db_id)] = id;
    } else {
      sparse[db_id] = id;
    }
    p.strings.push_back(st.text(1));
    cleanTextInPlace(p.strings.back());
    text_ids.emplace(p.strings.back(), id);
  });
  if (!s) return Error{s.error()};
  if (p.strings.empty()) {
    p.strings.emplace_back();
    text_ids.emplace("", 0);
  }
  // Low-cardinality TEXT columns (launch API, occupancy limiter) become string ids too, without
  // a std::string per row.
  auto internText = [&](std::string_view raw) -> uint32_t {
    const std::string t = cleanText(raw);
    auto it = text_ids.find(t);
    if (it != text_ids.end()) return it->second;
    const auto id = static_cast<uint32_t>(p.strings.size());
    p.strings.push_back(t);
    text_ids.emplace(t, id);
    return id;
  };

  s = forEachRow(h.db, path,
                 "SELECT id, pid, host, rank, local_rank, command_line, start_unix_ns FROM process ORDER BY id",
                 [&](Statement& st) {
                   ProcessInfo pi;
                   pi.id = static_cast<uint32_t>(st.i64(0));
                   pi.pid = st.i64(1);
                   pi.host = cleanText(st.textView(2));
                   pi.rank = st.opt<int>(3);
                   pi.local_rank = st.opt<int>(4);
                   pi.command_line = cleanText(st.textView(5));
                   pi.start_unix_ns = st.i64(6);
                   p.processes.push_back(std::move(pi));
                 });
  if (!s) return Error{s.error()};

  s = forEachRow(h.db, path,
                 "SELECT process_id, id, name, uuid, compute_major, compute_minor, sm_count, max_threads_per_sm, "
                 "max_threads_per_block, max_blocks_per_sm, max_warps_per_sm, regs_per_sm, regs_per_block, "
                 "warp_size, shared_per_sm_bytes, shared_per_block_bytes, shared_per_block_optin_bytes, "
                 "reserved_shared_per_block_bytes, l2_bytes, global_memory_bytes, memory_bus_width_bits, "
                 "memory_clock_khz, sm_clock_khz FROM device ORDER BY process_id, id",
                 [&](Statement& st) {
                   DeviceInfo d;
                   int i = 0;
                   d.process_id = static_cast<uint32_t>(st.i64(i++));
                   d.id = static_cast<uint32_t>(st.i64(i++));
                   d.name = cleanText(st.textView(i++));
                   d.uuid = cleanText(st.textView(i++));
                   for (int* f : {&d.compute_major, &d.compute_minor, &d.sm_count, &d.max_threads_per_sm,
                                  &d.max_threads_per_block, &d.max_blocks_per_sm, &d.max_warps_per_sm,
                                  &d.regs_per_sm, &d.regs_per_block, &d.warp_size}) {
                     *f = static_cast<int>(st.i64(i++));
                   }
                   for (int64_t* f : {&d.shared_per_sm_bytes, &d.shared_per_block_bytes,
                                      &d.shared_per_block_optin_bytes, &d.reserved_shared_per_block_bytes,
                                      &d.l2_bytes, &d.global_memory_bytes}) {
                     *f = st.i64(i++);
                   }
                   d.memory_bus_width_bits = static_cast<int>(st.i64(i++));
                   d.memory_clock_khz = st.i64(i++);
                   d.sm_clock_khz = st.i64(i++);
                   p.devices.push_back(std::move(d));
                 });
  if (!s) return Error{s.error()};

  // The big tables (kernels, their arguments, counters) are read in rowid chunks by up to four
  // threads, one connection each; every other table is one task of the same pool. Each task fills
  // only its own rows, so the profile is the same whatever the number of threads.
  const StringIds ids{&dense, &sparse};
  // Version 6 added programmatic_launch; older files had no such launches recorded.
  const std::string kernel_columns =
      std::string("id, process_id, device_id, context_id, stream_id, correlation_id, thread_id, start_ns, end_ns, "
                  "name_id, demangled_id, grid_x, grid_y, grid_z, block_x, block_y, block_z, cluster_x, "
                  "cluster_y, cluster_z, registers_per_thread, static_shared_bytes, dynamic_shared_bytes, "
                  "local_bytes_per_thread, local_bytes_total, shared_carveout_bytes, theoretical_occupancy, "
                  "theoretical_blocks_per_sm, occupancy_limiter, graph_id, graph_node_id, launch_api, "
                  "nvtx_range_id, nvtx_path_id, ") +
      (p.schema_version >= 6 ? "programmatic_launch" : "0");
  TableRead kernel_read{"kernel", "id", kernel_columns.c_str(), {}, {}};
  TableRead arg_read{"kernel_arg", "rowid",
                     "rowid, process_id, correlation_id, arg_index, offset_bytes, size_bytes, value", {}, {}};
  // Version 2 added where counters came from; a version-1 file has only profiled counters.
  const bool v2 = p.schema_version >= 2;
  const bool v4 = p.schema_version >= 4;  // added tensor_flops_method
  const std::string counter_columns =
      std::string("kernel_id, dram_read_bytes, dram_write_bytes, l2_bytes, l1_bytes, flops_fp64, flops_fp32, "
                  "flops_fp16, flops_bf16, flops_tensor_fp16, flops_tensor_bf16, flops_tensor_tf32, "
                  "flops_tensor_fp8, flops_tensor_fp64, ops_tensor_int8, achieved_occupancy, "
                  "local_load_bytes, local_store_bytes, instructions, gpu_time_ns") +
      (v2 ? ", source, source_kernel_id, signature_varies, half_flops_method" : "") +
      (v4 ? ", tensor_flops_method" : "");
  TableRead counter_read{"kernel_counter", "kernel_id", counter_columns.c_str(), {}, {}};
  for (TableRead* t : {&kernel_read, &arg_read, &counter_read}) {
    Expected<RowidSpan> span = rowidSpan(h.db, path, t->table);
    if (!span) return Error{span.error()};
    t->span = *span;
  }
  std::vector<KernelChunk> kernel_chunks;
  std::vector<TableChunk> arg_chunks;
  std::vector<CounterChunk> counter_chunks;
  planChunks(kernel_read, kernel_chunks);
  planChunks(arg_read, arg_chunks);
  planChunks(counter_read, counter_chunks);

  // Tasks in the order a sequential read takes the tables (which error is reported) ...
  std::vector<Task> in_order;
  std::vector<size_t> kernel_tasks, arg_tasks, counter_tasks, whole_tasks;
  auto add = [&](std::vector<size_t>& kind, Task task) {
    kind.push_back(in_order.size());
    in_order.push_back(std::move(task));
  };
  for (KernelChunk& c : kernel_chunks) {
    add(kernel_tasks, [&p, &c, &ids, &path](Conn& conn) { return loadKernels(conn, path, ids, c, p.kernels); });
  }
  for (TableChunk& c : arg_chunks) {
    add(arg_tasks, [&p, &c, &path](Conn& conn) {
      return loadChunk(conn, path, c.rows, p.kernel_args, [](const detail::ValueRow& row, KernelArgRecord& a) {
        a.process_id = static_cast<uint32_t>(row.i64(1));
        a.correlation_id = static_cast<uint32_t>(row.i64(2));
        a.index = static_cast<int32_t>(row.i64(3));
        a.offset_bytes = static_cast<int32_t>(row.i64(4));
        a.size_bytes = static_cast<int32_t>(row.i64(5));
        a.value = static_cast<uint64_t>(row.i64(6));
      });
    });
  }

  add(whole_tasks, [&p, &path](Conn& conn) {
    return forEachRow(conn.db(), path,
                      "SELECT id, process_id, parent_id, domain, message, payload, thread_id, depth, start_ns, end_ns, "
                      "push_pop FROM nvtx_range",
                      [&](Statement& st) {
                        NvtxRangeRecord& r = p.nvtx_ranges.emplace_back();
                        r.key = static_cast<uint64_t>(st.i64(0));
                        r.process_id = static_cast<uint32_t>(st.i64(1));
                        r.parent_key = st.opt<uint64_t>(2);
                        r.domain = cleanText(st.textView(3));
                        r.message = cleanText(st.textView(4));
                        r.payload = st.opt<uint64_t>(5);
                        r.thread_id = static_cast<uint32_t>(st.i64(6));
                        r.depth = static_cast<int32_t>(st.i64(7));
                        r.start_ns = st.i64(8);
                        r.end_ns = st.opt<int64_t>(9);
                        r.push_pop = st.i64(10) != 0;
                      });
  });

  add(whole_tasks, [&p, &path](Conn& conn) {
    return forEachRow(conn.db(), path,
                      "SELECT process_id, device_id, context_id, stream_id, correlation_id, start_ns, end_ns, bytes, "
                      "copy_kind, src_kind, dst_kind, graph_id FROM memcpy ORDER BY start_ns, id",
                      [&](Statement& st) {
                        MemcpyRecord& m = p.memcpys.emplace_back();
                        m.process_id = static_cast<uint32_t>(st.i64(0));
                        m.device_id = static_cast<uint32_t>(st.i64(1));
                        m.context_id = static_cast<uint32_t>(st.i64(2));
                        m.stream_id = static_cast<uint32_t>(st.i64(3));
                        m.correlation_id = static_cast<uint32_t>(st.i64(4));
                        m.start_ns = st.i64(5);
                        m.end_ns = st.i64(6);
                        m.bytes = st.i64(7);
                        m.copy_kind = cleanText(st.textView(8));
                        m.src_kind = cleanText(st.textView(9));
                        m.dst_kind = cleanText(st.textView(10));
                        m.graph_id = static_cast<uint32_t>(st.i64(11));
                      });
  });

  add(whole_tasks, [&p, &path](Conn& conn) {
    return forEachRow(conn.db(), path,
                      "SELECT process_id, device_id, context_id, stream_id, correlation_id, start_ns, end_ns, bytes, "
                      "value, memory_kind, graph_id FROM memset ORDER BY start_ns, id",
                      [&](Statement& st) {
                        MemsetRecord& m = p.memsets.emplace_back();
                        m.process_id = static_cast<uint32_t>(st.i64(0));
                        m.device_id = static_cast<uint32_t>(st.i64(1));
                        m.context_id = static_cast<uint32_t>(st.i64(2));
                        m.stream_id = static_cast<uint32_t>(st.i64(3));
                        m.correlation_id = static_cast<uint32_t>(st.i64(4));
                        m.start_ns = st.i64(5);
                        m.end_ns = st.i64(6);
                        m.bytes = st.i64(7);
                        m.value = static_cast<uint32_t>(st.i64(8));
                        m.memory_kind = cleanText(st.textView(9));
                        m.graph_id = static_cast<uint32_t>(st.i64(10));
                      });
  });

  add(whole_tasks, [&p, &path](Conn& conn) {
    return forEachRow(conn.db(), path,
                      "SELECT process_id, device_id, context_id, stream_id, correlation_id, timestamp_ns, operation, "
                      "address, bytes, memory_kind FROM memory_event ORDER BY timestamp_ns, id",
                      [&](Statement& st) {
                        MemoryEventRecord& m = p.memory_events.emplace_back();
                        m.process_id = static_cast<uint32_t>(st.i64(0));
                        m.device_id = static_cast<uint32_t>(st.i64(1));
                        m.context_id = static_cast<uint32_t>(st.i64(2));
                        m.stream_id = static_cast<uint32_t>(st.i64(3));
                        m.correlation_id = static_cast<uint32_t>(st.i64(4));
                        m.timestamp_ns = st.i64(5);
                        m.is_alloc = st.textView(6) == "alloc";
                        m.address = static_cast<uint64_t>(st.i64(7));
                        m.bytes = st.i64(8);
                        m.memory_kind = cleanText(st.textView(9));
                      });
  });

  add(whole_tasks, [&p, &path](Conn& conn) {
    return forEachRow(conn.db(), path,
                      "SELECT process_id, timestamp_ns, severity, message FROM collector_event ORDER BY id",
                      [&](Statement& st) {
                        CollectorEventRecord& e = p.collector_events.emplace_back();
                        e.process_id = static_cast<uint32_t>(st.i64(0));
                        e.timestamp_ns = st.i64(1);
                        e.severity = cleanText(st.textView(2));
                        e.message = cleanText(st.textView(3));
                      });
  });

  for (CounterChunk& c : counter_chunks) {
    add(counter_tasks, [&p, &c, &path, v2, v4](Conn& conn) {
      return loadChunk(conn, path, c.rows, p.counters, [&c, v2, v4](const detail::ValueRow& row, KernelCounters& k) {
        int i = 0;
        k.kernel_id = row.i64(i++);
        for (std::optional<double>* v :
             {&k.dram_read_bytes, &k.dram_write_bytes, &k.l2_bytes, &k.l1_bytes, &k.flops_fp64, &k.flops_fp32,
              &k.flops_fp16, &k.flops_bf16, &k.flops_tensor_fp16, &k.flops_tensor_bf16, &k.flops_tensor_tf32,
              &k.flops_tensor_fp8, &k.flops_tensor_fp64, &k.ops_tensor_int8, &k.achieved_occupancy,
              &k.local_load_bytes, &k.local_store_bytes, &k.instructions, &k.gpu_time_ns}) {
          *v = row.opt<double>(i++);
          // A counter is a count: an infinite value (SQLite stores NaN as NULL) is no measurement.
          if (*v && !std::isfinite(**v)) {
            v->reset();
            if (c.non_finite++ == 0) c.first_non_finite = k.kernel_id;
          }
        }
        if (!v2) return;
        k.source = cleanText(row.textView(i++));
        k.source_kernel_id = row.opt<int64_t>(i++);
        if (auto varies = row.opt<int64_t>(i++)) k.signature_varies = *varies != 0;
        k.half_flops_method = cleanText(row.textView(i++));
        if (v4) k.tensor_flops_method = cleanText(row.textView(i++));
      });
    });
  }

  FunctionNamesMissing function_names_missing;
  if (v2) addSchema2Tasks(p, path, ids, function_names_missing, [&](Task t) { add(whole_tasks, std::move(t)); });
  if (p.schema_version >= 3) {
    add(whole_tasks, [&p, &path](Conn& conn) {
      return forEachRow(conn.db(), path,
                        "SELECT process_id, correlation_id, src_address, dst_address, bytes FROM memcpy_address "
                        "ORDER BY process_id, correlation_id",
                        [&](Statement& st) {
                          MemcpyAddressRecord& m = p.memcpy_addresses.emplace_back();
                          m.process_id = static_cast<uint32_t>(st.i64(0));
                          m.correlation_id = static_cast<uint32_t>(st.i64(1));
                          m.src_address = static_cast<uint64_t>(st.i64(2));
                          m.dst_address = static_cast<uint64_t>(st.i64(3));
                          m.bytes = st.i64(4);
                        });
    });
  }

  if (p.schema_version >= 5) add(whole_tasks, [&p, &path](Conn& conn) { return loadGraphLaunches(conn, path, p); });

  int64_t metrics_non_finite = 0, first_metric_non_finite = 0;
  Dangling missing_metric_names;
  add(whole_tasks, [&](Conn& conn) {
    return forEachRow(conn.db(), path,
                      "SELECT m.kernel_id, s.value, m.value, m.metric_id FROM kernel_metric m LEFT JOIN string s "
                      "ON s.id = m.metric_id ORDER BY m.kernel_id, s.value",
                      [&](Statement& st) {
                        KernelMetricRecord& m = p.metrics.emplace_back();
                        m.kernel_id = st.i64(0);
                        if (st.isNull(1)) {
                          missing_metric_names.see(m.kernel_id, st.i64(3));
                          m.metric = unknownString("metric", st.i64(3));
                        } else {
                          m.metric = cleanText(st.textView(1));
                        }
                        // Raw values are kept as recorded (merge copies them); a non-finite one is said.
                        m.value = st.f64(2);
                        if (!std::isfinite(m.value) && metrics_non_finite++ == 0) first_metric_non_finite = m.kernel_id;
                      });
  });

  int64_t ceilings_non_finite = 0;
  add(whole_tasks, [&](Conn& conn) {
    return forEachRow(conn.db(), path,
                      "SELECT device_name, ceiling, unit, value, source, method FROM ceiling "
                      "ORDER BY device_name, ceiling, source",
                      [&](Statement& st) {
                        // An infinite roof would place every kernel at 0% of it and stretch the
                        // chart's axes without end: such a row is left out.
                        if (!std::isfinite(st.f64(3))) {
                          ++ceilings_non_finite;
                          return;
                        }
                        p.ceilings.push_back({cleanText(st.textView(0)), cleanText(st.textView(1)),
                                              cleanText(st.textView(2)), st.f64(3), cleanText(st.textView(4)),
                                              cleanText(st.textView(5))});
                      });
  });

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
  s = runTasks(h.db, path, tasks, kernel_chunks.size() + arg_chunks.size() + counter_chunks.size());
  if (!s) return Error{s.error()};

  // Launch API and occupancy limiter texts became string ids per chunk; numbering them chunk by
  // chunk, in row order, gives the ids one sequential scan would. So do the placeholders of
  // dangling string ids.
  Dangling missing_names, missing_paths;
  int64_t negative_durations = 0, first_negative = 0;
  for (const KernelChunk& c : kernel_chunks) {
    std::vector<uint32_t> global;
    global.reserve(c.texts.texts.size());
    for (const std::string& t : c.texts.texts) global.push_back(internText(t));
    const bool placeholders = c.missing_names.rows > 0 || c.missing_paths.rows > 0;
    for (size_t i = c.rows.begin; i < c.rows.end; ++i) {
      KernelRow& k = p.kernels[i];
      k.occupancy_limiter_id = global[k.occupancy_limiter_id];
      k.launch_api_id = global[k.launch_api_id];
      if (!placeholders) continue;
      for (uint32_t* id : {&k.name_id, &k.demangled_id}) {
        if (*id & kChunkText) *id = global[*id & ~kChunkText];
      }
      if (k.nvtx_path_id && (*k.nvtx_path_id & kChunkText)) k.nvtx_path_id = global[*k.nvtx_path_id & ~kChunkText];
    }
    missing_names.add(c.missing_names);
    missing_paths.add(c.missing_paths);
    if (c.negative_durations > 0 && negative_durations == 0) first_negative = c.first_negative;
    negative_durations += c.negative_durations;
  }
  Dangling missing_function_names;
  for (auto [rows, list] : {std::pair{&function_names_missing.functions, 0}, {&function_names_missing.args, 1},
                            {&function_names_missing.sass_ops, 2}}) {
    for (const auto& [row, db_id] : *rows) {
      const uint32_t id = internText(unknownString("name", db_id));
      if (list == 0) p.functions[row].name_id = id;
      if (list == 1) p.function_args[row].name_id = id;
      if (list == 2) p.function_sass_ops[row].name_id = id;
      missing_function_names.see(static_cast<int64_t>(row), db_id);
    }
  }
  if (missing_function_names.rows > 0) {  // the placeholders' ids came last: keep the documented order
    auto by_name = [](const auto& a, const auto& b) {
      return std::tie(a.process_id, a.name_id) < std::tie(b.process_id, b.name_id);
    };
    std::stable_sort(p.functions.begin(), p.functions.end(), by_name);
    std::stable_sort(p.function_args.begin(), p.function_args.end(), by_name);
    std::stable_sort(p.function_sass_ops.begin(), p.function_sass_ops.end(), by_name);
  }
  int64_t counters_non_finite = 0, first_counter_non_finite = 0;
  for (const CounterChunk& c : counter_chunks) {
    if (c.non_finite > 0 && counters_non_finite == 0) first_counter_non_finite = c.first_non_finite;
    counters_non_finite += c.non_finite;
  }
  // Rows come in rowid order; sorting here is much cheaper than SQLite walking the start_ns index
  // and fetching each row. The writer inserts in time order, so usually there is nothing to sort.
  sortKernelsByStart(p.kernels);
  settleDependencyWaits(p.kernels);
  auto arg_less = [](const KernelArgRecord& a, const KernelArgRecord& b) {
    return std::tie(a.process_id, a.correlation_id, a.index) < std::tie(b.process_id, b.correlation_id, b.index);
  };
  if (!std::is_sorted(p.kernel_args.begin(), p.kernel_args.end(), arg_less)) {
    std::stable_sort(p.kernel_args.begin(), p.kernel_args.end(), arg_less);
  }
  auto range_less = [](const NvtxRangeRecord& a, const NvtxRangeRecord& b) { return a.start_ns < b.start_ns; };
  if (!std::is_sorted(p.nvtx_ranges.begin(), p.nvtx_ranges.end(), range_less)) {
    std::stable_sort(p.nvtx_ranges.begin(), p.nvtx_ranges.end(), range_less);
  }

  // Damage that leaves the file readable: repaired above or below, and said once per kind.
  auto plural = [](int64_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  if (missing_names.rows > 0) {
    p.warnings.push_back(path + ": " + plural(missing_names.rows, "kernel names", "kernels name") +
                         " a string id missing from the string table (first: kernel " +
                         std::to_string(missing_names.first_row) + ", string #" +
                         std::to_string(missing_names.first_string) + "); shown as <unknown name #ID>");
  }
  if (missing_paths.rows > 0) {
    p.warnings.push_back(path + ": " + plural(missing_paths.rows, "kernel names", "kernels name") +
                         " an NVTX path string id missing from the string table (first: kernel " +
                         std::to_string(missing_paths.first_row) + ", string #" +
                         std::to_string(missing_paths.first_string) + "); shown as <unknown NVTX path #ID>");
  }
  if (missing_function_names.rows > 0) {
    p.warnings.push_back(path + ": " +
                         plural(missing_function_names.rows, "function table row names", "function table rows name") +
                         " a string id missing from the string table (first: string #" +
                         std::to_string(missing_function_names.first_string) + "); shown as <unknown name #ID>");
  }
  if (missing_metric_names.rows > 0) {
    p.warnings.push_back(path + ": " +
                         plural(missing_metric_names.rows, "kernel_metric row names", "kernel_metric rows name") +
                         " a metric string id missing from the string table (first: kernel " +
                         std::to_string(missing_metric_names.first_row) + ", string #" +
                         std::to_string(missing_metric_names.first_string) + "); shown as <unknown metric #ID>");
  }
  if (negative_durations > 0) {
    p.warnings.push_back(path + ": " + plural(negative_durations, "kernel ends", "kernels end") +
                         " before it starts (first: kernel " + std::to_string(first_negative) +
                         "); their durations are negative and the totals they enter are wrong");
  }
  if (counters_non_finite > 0) {
    p.warnings.push_back(path + ": " +
                         plural(counters_non_finite, "kernel_counter value is", "kernel_counter values are") +
                         " infinite (first: kernel " + std::to_string(first_counter_non_finite) +
                         "); read as not collected (n/a)");
  }
  if (metrics_non_finite > 0) {
    p.warnings.push_back(path + ": " +
                         plural(metrics_non_finite, "kernel_metric value is", "kernel_metric values are") +
                         " not finite (first: kernel " + std::to_string(first_metric_non_finite) + ")");
  }
  if (ceilings_non_finite > 0) {
    p.warnings.push_back(path + ": " + plural(ceilings_non_finite, "ceiling row has", "ceiling rows have") +
                         " an infinite value; left out");
  }
  breakNvtxCycles(p);
  for (std::string& w : p.warnings) cleanTextInPlace(w);  // the path is the user's, and may hold anything
  return p;
}

}  // namespace fprof::core
