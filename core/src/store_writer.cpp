// core::Writer: buffered, transactional writes of a .fprof database (see store.h).
#include <sqlite3.h>

#include <filesystem>
#include <functional>
#include <string>

#include "fprof/core/schema.h"
#include "fprof/core/store.h"
#include "schema_tables.h"
#include "sqlite_util.h"

namespace fprof::core {

using detail::Statement;

namespace {
Error sqlError(const std::string& path, sqlite3* db, const std::string& what) {
  return makeError(path + ": " + what + ": " + detail::sqliteMessage(db));
}

// A table's INSERT, generated once per table and never destroyed: the collector's last flush runs
// from its exit handler, after the static objects made since that handler was registered (this
// one, at the first flush) are gone.
template <const auto& kTable>
const char* insertStatement() {
  static const std::string* const sql = new std::string(detail::insertSql(kTable));
  return sql->c_str();
}

// What a row's columns need from the writer while they are bound: strings interned into this
// file, and the id the writer hands the row (kernel.id).
template <class Intern>
struct RowContext {
  Intern& intern;
  int64_t id = 0;
  int64_t assignedId() const { return id; }
};

// Inserts `rows` into kTable with one prepared statement; each_row(row, context) runs before a
// row is bound (to hand out its id).
template <const auto& kTable, class Rec, class Intern, class EachRow>
Status insertRows(sqlite3* db, const std::string& path, const std::vector<Rec>& rows, Intern&& intern,
                  EachRow&& each_row) {
  if (rows.empty()) return {};
  Statement st(db, insertStatement<kTable>());
  if (!st.ok()) return sqlError(path, db, std::string("prepare ") + kTable.info.name);
  RowContext<Intern> context{intern};
  for (const Rec& r : rows) {
    each_row(r, context);
    if (!detail::bindRow(kTable, st, r, context)) return sqlError(path, db, "write string");
    if (st.run() != SQLITE_DONE) return sqlError(path, db, std::string("write ") + kTable.info.name);
  }
  return {};
}

// A writer of rows without strings.
struct NoStrings {
  Expected<uint32_t> operator()(std::string_view) const { return makeError("no strings in this table"); }
};
constexpr auto kNothingPerRow = [](const auto&, auto&) {};

template <const auto& kTable, class Rec>
Status insertRows(sqlite3* db, const std::string& path, const std::vector<Rec>& rows) {
  return insertRows<kTable>(db, path, rows, NoStrings{}, kNothingPerRow);
}
}  // namespace

Expected<std::unique_ptr<Writer>> Writer::create(const std::string& path, bool overwrite) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    if (!overwrite) return makeError(path + ": file exists; choose another name or overwrite it with --force");
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix, ec);
  }
  std::unique_ptr<Writer> w(new Writer());
  w->path_ = path;
  int rc = sqlite3_open_v2(path.c_str(), &w->db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) return sqlError(path, w->db_, "cannot create the database");
  // WAL + NORMAL: each committed batch survives a crash of the process; no fsync per record.
  for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA foreign_keys=OFF",
                             "PRAGMA cache_size=-32768"}) {
    if (Status s = w->exec(pragma); !s) return Error{s.error()};
  }
  std::string app_id = "PRAGMA application_id=" + std::to_string(kSqliteApplicationId);
  if (Status s = w->exec(app_id.c_str()); !s) return Error{s.error()};
  std::string create =
      "BEGIN;\n" + schemaCreateSql(/*with_indexes=*/false) + "INSERT INTO string(id, value) VALUES (0, '');\nCOMMIT;";
  if (Status s = w->exec(create.c_str()); !s) return Error{s.error()};
  w->string_ids_.emplace("", 0);
  if (Status s = w->setMetadata("schema_version", std::to_string(kSchemaVersion)); !s) return Error{s.error()};
  return w;
}

Writer::~Writer() {
  if (db_) {
    (void)close();
  }
}

Status Writer::exec(const char* sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    const bool full = (sqlite3_extended_errcode(db_) & 0xff) == SQLITE_FULL;
    std::string m = path_ + ": " + (full ? detail::sqliteMessage(db_) : msg ? msg : "SQLite error");
    sqlite3_free(msg);
    return makeError(m);
  }
  return {};
}

Status Writer::setMetadata(const std::string& key, const std::string& value) {
  Statement st(db_, "INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)");
  if (!st.ok()) return sqlError(path_, db_, "prepare metadata");
  st.bind(1, key);
  st.bind(2, value);
  if (st.run() != SQLITE_DONE) return sqlError(path_, db_, "write metadata");
  return {};
}

Expected<uint32_t> Writer::addProcess(const ProcessInfo& p) {
  if (Status s = insertRows<detail::kProcessTable>(db_, path_, std::vector<ProcessInfo>{p}); !s) return Error{s.error()};
  return static_cast<uint32_t>(sqlite3_last_insert_rowid(db_));
}

Status Writer::addDevice(const DeviceInfo& d) {
  return insertRows<detail::kDeviceTable>(db_, path_, std::vector<DeviceInfo>{d});
}

void Writer::addCountersForLaunch(uint32_t process_id, uint32_t correlation_id, uint32_t alt_correlation_id,
                                  const KernelCounters& counters, std::vector<std::pair<std::string, double>> raw) {
  pending_launch_counters_.push_back(
      {process_id, {correlation_id, alt_correlation_id}, std::nullopt, counters, std::move(raw)});
}

void Writer::addCopiedCountersForLaunch(uint32_t process_id, LaunchRef launch, LaunchRef source,
                                        const KernelCounters& counters,
                                        std::vector<std::pair<std::string, double>> raw) {
  KernelCounters copied = counters;
  copied.source = kCounterSourceSameSignature;
  pending_launch_counters_.push_back({process_id, launch, source, std::move(copied), std::move(raw)});
}

void Writer::addMissingCountersForLaunch(uint32_t process_id, LaunchRef launch, std::string reason) {
  pending_launch_missing_.push_back({process_id, launch, std::move(reason)});
}

size_t Writer::pendingRecords() const {
  return kernels_.size() + args_.size() + ranges_.size() + memcpys_.size() + memcpy_addresses_.size() + memsets_.size() +
         memory_events_.size() + events_.size() + counters_.size() + metrics_.size() + ceilings_.size() +
         missing_.size() + functions_.size() + function_args_.size() + function_sass_ops_.size() + graph_launches_.size() +
         pending_launch_counters_.size();
}

std::optional<std::pair<int64_t, int64_t>> Writer::kernelOf(uint32_t process_id, LaunchRef launch) const {
  if (launch.graph_node_id != 0) {
    auto node = graph_kernel_by_node_.find({process_id, launch.correlation_id, launch.graph_node_id});
    if (node == graph_kernel_by_node_.end()) return std::nullopt;
    return node->second;
  }
  auto it = kernel_by_correlation_.find((uint64_t{process_id} << 32) | launch.correlation_id);
  if (it == kernel_by_correlation_.end() && launch.alt_correlation_id != 0) {
    it = kernel_by_correlation_.find((uint64_t{process_id} << 32) | launch.alt_correlation_id);
  }
  if (it == kernel_by_correlation_.end()) return std::nullopt;
  return it->second;
}

// Launch-keyed counters and reasons become kernel-keyed rows once their kernels are written; the
// rest waits for a later flush (a kernel record can arrive after its counters).
Status Writer::resolveLaunchCounters() {
  if (!pending_launch_counters_.empty()) {
    Statement set_time(db_, "UPDATE kernel SET end_ns = start_ns + ?, duration_ns = ? WHERE id = ?");
    if (!set_time.ok()) return sqlError(path_, db_, "prepare kernel time update");
    std::vector<LaunchCounters> still_pending;
    for (LaunchCounters& lc : pending_launch_counters_) {
      const auto kernel = kernelOf(lc.process_id, lc.launch);
      const auto source = lc.source ? kernelOf(lc.process_id, *lc.source) : std::nullopt;
      if (!kernel || (lc.source && !source)) {
        still_pending.push_back(std::move(lc));
        continue;
      }
      lc.counters.kernel_id = kernel->first;
      if (source) lc.counters.source_kernel_id = source->first;
      if (kernel->second == 0 && lc.counters.gpu_time_ns && !lc.source) {
        const auto ns = static_cast<int64_t>(*lc.counters.gpu_time_ns);
        set_time.bind(1, ns);
        set_time.bind(2, ns);
        set_time.bind(3, lc.counters.kernel_id);
        if (set_time.run() != SQLITE_DONE) return sqlError(path_, db_, "set kernel time from counters");
      }
      counters_.push_back(lc.counters);
      for (auto& [metric, value] : lc.raw) metrics_.push_back({lc.counters.kernel_id, metric, value});
    }
    pending_launch_counters_ = std::move(still_pending);
  }
  return {};
}

// Reasons go to every kernel of their launch (a graph launch has one per node) that has no
// counters; then, in a metrics run, every kernel still without either gets the default reason.
Status Writer::resolveMissingCounters() {
  if (pending_launch_missing_.empty() && !default_missing_reason_) return {};
  if (Status s = exec("BEGIN"); !s) return s;
  auto fail = [&](const char* what) {
    Error e = sqlError(path_, db_, what);
    (void)exec("ROLLBACK");
    return e;
  };
  Statement st(db_,
               "INSERT OR IGNORE INTO kernel_counter_missing(kernel_id, reason) SELECT id, ? FROM kernel "
               "WHERE process_id = ? AND (correlation_id = ? OR correlation_id = ?) "
               "AND id NOT IN (SELECT kernel_id FROM kernel_counter)");
  if (!st.ok()) return fail("prepare kernel_counter_missing");
  for (const LaunchMissing& lm : pending_launch_missing_) {
    const uint32_t alt = lm.launch.alt_correlation_id != 0 ? lm.launch.alt_correlation_id : lm.launch.correlation_id;
    st.bindAll(std::string_view(lm.reason), lm.process_id, lm.launch.correlation_id, alt);
    if (st.run() != SQLITE_DONE) return fail("write kernel_counter_missing");
  }
  if (default_missing_reason_) {
    Statement rest(db_,
                   "INSERT OR IGNORE INTO kernel_counter_missing(kernel_id, reason) SELECT id, ? FROM kernel "
                   "WHERE id NOT IN (SELECT kernel_id FROM kernel_counter)");
    if (!rest.ok()) return fail("prepare kernel_counter_missing");
    rest.bindAll(std::string_view(*default_missing_reason_));
    if (rest.run() != SQLITE_DONE) return fail("write kernel_counter_missing");
  }
  if (exec("DELETE FROM kernel_counter_missing WHERE kernel_id IN (SELECT kernel_id FROM kernel_counter)")) {
    pending_launch_missing_.clear();
    return exec("COMMIT");
  }
  return fail("clean kernel_counter_missing");
}

Expected<uint32_t> Writer::intern(std::string_view s) {
  auto it = string_ids_.find(s);
  if (it != string_ids_.end()) return it->second;
  Statement st(db_, "INSERT INTO string(id, value) VALUES (?, ?)");
  uint32_t id = next_string_id_++;
  st.bind(1, id);
  st.bind(2, s);
  if (st.run() != SQLITE_DONE) return sqlError(path_, db_, "write string");
  string_ids_.emplace(std::string(s), id);
  return id;
}

Status Writer::flush() {
  if (!db_) return makeError(path_ + ": writer is closed");
  if (pendingRecords() == 0) return {};
  if (Status s = exec("BEGIN"); !s) return s;
  const uint32_t first_new_string = next_string_id_;
  std::vector<GraphLaunchCounters> graph_launches_waiting;
  Status s = writeBatch(graph_launches_waiting);
  if (s) s = exec("COMMIT");
  if (!s) {
    (void)exec("ROLLBACK");
    // Strings interned in a rolled-back transaction are not in the file: forget them too.
    std::erase_if(string_ids_, [&](const auto& kv) { return kv.second >= first_new_string; });
    next_string_id_ = first_new_string;
    return s;
  }
  next_kernel_id_ += static_cast<int64_t>(kernels_.size());
  clearBatch();
  graph_launches_ = std::move(graph_launches_waiting);
  return {};
}

// Every buffered record, table by table, in one transaction the caller commits.
Status Writer::writeBatch(std::vector<GraphLaunchCounters>& graph_launches_waiting) {
  auto intern = [this](std::string_view text) { return this->intern(text); };
  Status s = writeKernels();
  if (s) s = insertRows<detail::kKernelArgTable>(db_, path_, args_);
  if (s) s = insertRows<detail::kNvtxRangeTable>(db_, path_, ranges_);
  if (s) s = insertRows<detail::kMemcpyTable>(db_, path_, memcpys_);
  if (s) s = insertRows<detail::kMemcpyAddressTable>(db_, path_, memcpy_addresses_);
  if (s) s = insertRows<detail::kMemsetTable>(db_, path_, memsets_);
  if (s) s = insertRows<detail::kMemoryEventTable>(db_, path_, memory_events_);
  // Kernels of this batch are inserted above, so one lookup finds rows old and new.
  if (s) s = resolveLaunchCounters();
  if (s) s = insertRows<detail::kKernelCounterTable>(db_, path_, counters_);
  if (s) s = insertRows<detail::kKernelMetricTable>(db_, path_, metrics_, intern, kNothingPerRow);
  if (s) s = insertRows<detail::kCeilingTable>(db_, path_, ceilings_);
  if (s) s = insertRows<detail::kKernelCounterMissingTable>(db_, path_, missing_);
  if (s) s = insertRows<detail::kFunctionTable>(db_, path_, functions_, intern, kNothingPerRow);
  if (s) s = insertRows<detail::kFunctionArgTable>(db_, path_, function_args_, intern, kNothingPerRow);
  if (s) s = insertRows<detail::kFunctionSassOpTable>(db_, path_, function_sass_ops_, intern, kNothingPerRow);
  if (s) s = writeGraphLaunches(graph_launches_waiting);
  if (s) s = insertRows<detail::kCollectorEventTable>(db_, path_, events_);
  return s;
}

// Kernels get their ids in the order they were added, and are remembered by launch so counters
// find them without an index during collection (indexes are built at close).
Status Writer::writeKernels() {
  int64_t kernel_id = next_kernel_id_;
  auto intern = [this](std::string_view text) { return this->intern(text); };
  return insertRows<detail::kKernelTable>(db_, path_, kernels_, intern, [&](const KernelRecord& k, auto& row) {
    row.id = kernel_id++;
    kernel_by_correlation_[(uint64_t{k.process_id} << 32) | k.correlation_id] = {row.id, k.end_ns - k.start_ns};
    if (k.graph_node_id != 0 && default_missing_reason_) {  // a metrics run: counters go to graph nodes
      graph_kernel_by_node_[{k.process_id, k.correlation_id, k.graph_node_id}] = {row.id, k.end_ns - k.start_ns};
    }
  });
}

void Writer::clearBatch() {
  kernels_.clear();
  counters_.clear();
  metrics_.clear();
  ceilings_.clear();
  missing_.clear();
  functions_.clear();
  function_args_.clear();
  function_sass_ops_.clear();
  args_.clear();
  ranges_.clear();
  memcpys_.clear();
  memcpy_addresses_.clear();
  memsets_.clear();
  memory_events_.clear();
  events_.clear();
}

// Graph launches counted as one range: their derived values and the raw metrics behind them.
// A launch waits for its kernel rows (to store the correlation id they carry) until the writer
// closes, when it is written as it is; `waiting` gets those not written (kept once the flush
// commits).
Status Writer::writeGraphLaunches(std::vector<GraphLaunchCounters>& waiting) {
  if (graph_launches_.empty()) return {};
  auto written = [&](uint32_t process_id, uint32_t correlation_id) {
    return correlation_id != 0 && kernel_by_correlation_.count((uint64_t{process_id} << 32) | correlation_id) != 0;
  };
  std::vector<GraphLaunchCounters> launches;
  std::vector<GraphLaunchMetricRecord> metrics;
  for (GraphLaunchCounters& g : graph_launches_) {
    if (!written(g.process_id, g.correlation_id)) {
      if (written(g.process_id, g.alt_correlation_id)) {
        g.correlation_id = g.alt_correlation_id;
      } else if (!closing_) {
        waiting.push_back(g);
        continue;
      }
    }
    launches.push_back(g);
    for (const auto& [name, value] : g.raw) metrics.push_back({g.process_id, g.correlation_id, name, value});
  }
  auto intern = [this](std::string_view text) { return this->intern(text); };
  if (Status s = insertRows<detail::kGraphLaunchCounterTable>(db_, path_, launches); !s) return s;
  return insertRows<detail::kGraphLaunchMetricTable>(db_, path_, metrics, intern, kNothingPerRow);
}

Status Writer::close() {
  if (!db_) return {};
  closing_ = true;
  Status s = flush();
  if (s) s = resolveMissingCounters();
  if (s) s = exec(("BEGIN;\n" + schemaIndexSql() + "COMMIT;").c_str());
  // Back to a rollback journal: the WAL is checkpointed and removed, leaving one file to share.
  if (s) s = exec("PRAGMA journal_mode=DELETE");
  if (sqlite3_close(db_) != SQLITE_OK && s) s = makeError(path_ + ": close failed: " + detail::sqliteMessage(db_));
  db_ = nullptr;
  return s;
}

Status updateDatabase(const std::string& path, const std::function<Status(sqlite3*)>& body) {
  if (Status s = checkDatabase(path); !s) return s;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    Error e = sqlError(path, db, "cannot open for writing");
    sqlite3_close(db);
    return e;
  }
  sqlite3_busy_timeout(db, 5000);
  Status result;
  if (sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) {
    result = sqlError(path, db, "begin");
  } else {
    result = body(db);
    const char* end = result ? "COMMIT" : "ROLLBACK";
    if (sqlite3_exec(db, end, nullptr, nullptr, nullptr) != SQLITE_OK && result) result = sqlError(path, db, "commit");
  }
  sqlite3_close(db);
  return result;
}

Status appendCeilings(const std::string& path, const std::vector<CeilingRecord>& ceilings) {
  return updateDatabase(path, [&](sqlite3* db) -> Status {
    return insertRows<detail::kCeilingTable>(db, path, ceilings);
  });
}

Status appendMetadata(const std::string& path, const std::map<std::string, std::string>& facts) {
  return updateDatabase(path, [&](sqlite3* db) -> Status {
    Statement st(db, "INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)");
    if (!st.ok()) return sqlError(path, db, "prepare metadata");
    for (const auto& [key, value] : facts) {
      st.bindAll(key, value);
      if (st.run() != SQLITE_DONE) return sqlError(path, db, "write metadata");
    }
    return {};
  });
}

}  // namespace fprof::core
