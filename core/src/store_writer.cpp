// core::Writer: buffered, transactional writes of a .fprof database (see store.h).
#include <sqlite3.h>

#include <filesystem>
#include <functional>
#include <string>

#include "fprof/core/schema.h"
#include "fprof/core/store.h"
#include "counter_columns.h"
#include "sqlite_util.h"

namespace fprof::core {

using detail::Statement;

namespace {
Error sqlError(const std::string& path, sqlite3* db, const std::string& what) {
  return makeError(path + ": " + what + ": " + detail::sqliteMessage(db));
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
    std::string m = path_ + ": " + (msg ? msg : "SQLite error");
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
  Statement st(db_,
               "INSERT INTO process(pid, host, rank, local_rank, command_line, start_unix_ns) VALUES (?,?,?,?,?,?)");
  if (!st.ok()) return sqlError(path_, db_, "prepare process");
  st.bind(1, p.pid);
  st.bind(2, p.host);
  st.bind(3, p.rank);
  st.bind(4, p.local_rank);
  st.bind(5, p.command_line);
  st.bind(6, p.start_unix_ns);
  if (st.run() != SQLITE_DONE) return sqlError(path_, db_, "write process");
  return static_cast<uint32_t>(sqlite3_last_insert_rowid(db_));
}

Status Writer::addDevice(const DeviceInfo& d) {
  Statement st(db_,
               "INSERT OR REPLACE INTO device(process_id, id, name, uuid, compute_major, compute_minor, sm_count, "
               "max_threads_per_sm, max_threads_per_block, max_blocks_per_sm, max_warps_per_sm, regs_per_sm, "
               "regs_per_block, warp_size, shared_per_sm_bytes, shared_per_block_bytes, "
               "shared_per_block_optin_bytes, reserved_shared_per_block_bytes, l2_bytes, global_memory_bytes, "
               "memory_bus_width_bits, memory_clock_khz, sm_clock_khz) "
               "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!st.ok()) return sqlError(path_, db_, "prepare device");
  int i = 1;
  st.bind(i++, d.process_id);
  st.bind(i++, d.id);
  st.bind(i++, d.name);
  st.bind(i++, d.uuid);
  for (int v : {d.compute_major, d.compute_minor, d.sm_count, d.max_threads_per_sm, d.max_threads_per_block,
                d.max_blocks_per_sm, d.max_warps_per_sm, d.regs_per_sm, d.regs_per_block, d.warp_size}) {
    st.bind(i++, v);
  }
  for (int64_t v : {d.shared_per_sm_bytes, d.shared_per_block_bytes, d.shared_per_block_optin_bytes,
                    d.reserved_shared_per_block_bytes, d.l2_bytes, d.global_memory_bytes}) {
    st.bind(i++, v);
  }
  st.bind(i++, d.memory_bus_width_bits);
  st.bind(i++, d.memory_clock_khz);
  st.bind(i++, d.sm_clock_khz);
  if (st.run() != SQLITE_DONE) return sqlError(path_, db_, "write device");
  return {};
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
  auto forgetNewStrings = [&] {
    // Strings interned in a rolled-back transaction are not in the file: forget them too.
    std::erase_if(string_ids_, [&](const auto& kv) { return kv.second >= first_new_string; });
    next_string_id_ = first_new_string;
  };
  auto fail = [&](const char* what) {
    Error e = sqlError(path_, db_, what);
    (void)exec("ROLLBACK");
    forgetNewStrings();
    return e;
  };

  if (!kernels_.empty()) {
    Statement st(db_,
                 "INSERT INTO kernel(id, process_id, device_id, context_id, stream_id, correlation_id, thread_id, "
                 "start_ns, end_ns, duration_ns, name_id, demangled_id, grid_x, grid_y, grid_z, block_x, block_y, "
                 "block_z, cluster_x, cluster_y, cluster_z, registers_per_thread, static_shared_bytes, "
                 "dynamic_shared_bytes, local_bytes_per_thread, local_bytes_total, shared_carveout_bytes, "
                 "theoretical_occupancy, theoretical_blocks_per_sm, occupancy_limiter, graph_id, graph_node_id, "
                 "launch_api, nvtx_range_id, nvtx_path_id, programmatic_launch) "
                 "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!st.ok()) return fail("prepare kernel");
    int64_t kernel_id = next_kernel_id_;
    for (const KernelRecord& k : kernels_) {
      auto name = intern(k.name);
      auto dem = intern(k.demangled_name.empty() ? k.name : k.demangled_name);
      std::optional<uint32_t> path;
      if (!k.nvtx_path.empty()) {
        auto p = intern(k.nvtx_path);
        if (!p) return fail("write string");
        path = *p;
      }
      if (!name || !dem) return fail("write string");
      int i = 1;
      kernel_by_correlation_[(uint64_t{k.process_id} << 32) | k.correlation_id] = {kernel_id, k.end_ns - k.start_ns};
      if (k.graph_node_id != 0 && default_missing_reason_) {  // a metrics run: counters go to graph nodes
        graph_kernel_by_node_[{k.process_id, k.correlation_id, k.graph_node_id}] = {kernel_id, k.end_ns - k.start_ns};
      }
      st.bind(i++, kernel_id++);
      st.bind(i++, k.process_id);
      st.bind(i++, k.device_id);
      st.bind(i++, k.context_id);
      st.bind(i++, k.stream_id);
      st.bind(i++, k.correlation_id);
      st.bind(i++, k.thread_id);
      st.bind(i++, k.start_ns);
      st.bind(i++, k.end_ns);
      st.bind(i++, k.end_ns - k.start_ns);
      st.bind(i++, *name);
      st.bind(i++, *dem);
      for (int32_t v : {k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z, k.cluster_x, k.cluster_y,
                        k.cluster_z, k.registers_per_thread, k.static_shared_bytes, k.dynamic_shared_bytes}) {
        st.bind(i++, v);
      }
      st.bind(i++, k.local_bytes_per_thread);
      st.bind(i++, k.local_bytes_total);
      st.bind(i++, k.shared_carveout_bytes);
      st.bind(i++, k.theoretical_occupancy);
      st.bind(i++, k.theoretical_blocks_per_sm);
      st.bind(i++, k.occupancy_limiter);
      st.bind(i++, k.graph_id);
      st.bind(i++, k.graph_node_id);
      st.bind(i++, k.launch_api);
      st.bind(i++, k.nvtx_range_key);
      st.bind(i++, path);
      st.bind(i++, k.programmatic_launch ? 1 : 0);
      if (st.run() != SQLITE_DONE) return fail("write kernel");
    }
  }
  // One prepared statement per table and batch; bindRow binds one record's columns in order.
  auto insertAll = [&](const auto& rows, const char* sql, auto&& bindRow) {
    if (rows.empty()) return true;
    Statement st(db_, sql);
    if (!st.ok()) return false;
    for (const auto& r : rows) {
      bindRow(st, r);
      if (st.run() != SQLITE_DONE) return false;
    }
    return true;
  };
  if (!insertAll(args_,
                 "INSERT INTO kernel_arg(process_id, correlation_id, arg_index, offset_bytes, size_bytes, value) "
                 "VALUES (?,?,?,?,?,?)",
                 [](Statement& st, const KernelArgRecord& a) {
                   st.bindAll(a.process_id, a.correlation_id, a.index, a.offset_bytes, a.size_bytes, a.value);
                 })) {
    return fail("write kernel_arg");
  }
  if (!insertAll(ranges_,
                 "INSERT OR REPLACE INTO nvtx_range(id, process_id, parent_id, domain, message, payload, thread_id, "
                 "depth, start_ns, end_ns, push_pop) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                 [](Statement& st, const NvtxRangeRecord& r) {
                   st.bindAll(r.key, r.process_id, r.parent_key, std::string_view(r.domain),
                              std::string_view(r.message), r.payload, r.thread_id, r.depth, r.start_ns, r.end_ns,
                              int32_t{r.push_pop ? 1 : 0});
                 })) {
    return fail("write nvtx_range");
  }
  if (!insertAll(memcpys_,
                 "INSERT INTO memcpy(process_id, device_id, context_id, stream_id, correlation_id, start_ns, end_ns, "
                 "bytes, copy_kind, src_kind, dst_kind, graph_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                 [](Statement& st, const MemcpyRecord& m) {
                   st.bindAll(m.process_id, m.device_id, m.context_id, m.stream_id, m.correlation_id, m.start_ns,
                              m.end_ns, m.bytes, std::string_view(m.copy_kind), std::string_view(m.src_kind),
                              std::string_view(m.dst_kind), m.graph_id);
                 })) {
    return fail("write memcpy");
  }
  if (!insertAll(memcpy_addresses_,
                 "INSERT OR REPLACE INTO memcpy_address(process_id, correlation_id, src_address, dst_address, bytes) "
                 "VALUES (?,?,?,?,?)",
                 [](Statement& st, const MemcpyAddressRecord& m) {
                   st.bindAll(m.process_id, m.correlation_id, static_cast<int64_t>(m.src_address),
                              static_cast<int64_t>(m.dst_address), m.bytes);
                 })) {
    return fail("write memcpy_address");
  }
  if (!insertAll(memsets_,
                 "INSERT INTO memset(process_id, device_id, context_id, stream_id, correlation_id, start_ns, end_ns, "
                 "bytes, value, memory_kind, graph_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                 [](Statement& st, const MemsetRecord& m) {
                   st.bindAll(m.process_id, m.device_id, m.context_id, m.stream_id, m.correlation_id, m.start_ns,
                              m.end_ns, m.bytes, m.value, std::string_view(m.memory_kind), m.graph_id);
                 })) {
    return fail("write memset");
  }
  if (!insertAll(memory_events_,
                 "INSERT INTO memory_event(process_id, device_id, context_id, stream_id, correlation_id, "
                 "timestamp_ns, operation, address, bytes, memory_kind) VALUES (?,?,?,?,?,?,?,?,?,?)",
                 [](Statement& st, const MemoryEventRecord& m) {
                   st.bindAll(m.process_id, m.device_id, m.context_id, m.stream_id, m.correlation_id, m.timestamp_ns,
                              std::string_view(m.is_alloc ? "alloc" : "free"), m.address, m.bytes,
                              std::string_view(m.memory_kind));
                 })) {
    return fail("write memory_event");
  }
  // Kernels of this batch are inserted above, so one lookup finds rows old and new.
  if (Status r = resolveLaunchCounters(); !r) {
    (void)exec("ROLLBACK");
    forgetNewStrings();
    return r;
  }
  if (!counters_.empty()) {
    std::string sql = "INSERT OR REPLACE INTO kernel_counter(kernel_id, ";
    for (const char* column : detail::kCounterValueColumns) sql += std::string(column) + ", ";
    sql += "source, source_kernel_id, signature_varies, half_flops_method, tensor_flops_method) VALUES (?";
    for (size_t n = 0; n < std::size(detail::kCounterValueColumns) + 5; ++n) sql += ",?";
    sql += ")";
    Statement st(db_, sql.c_str());
    if (!st.ok()) return fail("prepare kernel_counter");
    for (const KernelCounters& c : counters_) {
      int i = 1;
      st.bind(i++, c.kernel_id);
      for (const std::optional<double>* v : detail::counterValues(c)) st.bind(i++, *v);
      st.bind(i++, std::string_view(c.source));
      st.bind(i++, c.source_kernel_id);
      st.bind(i++, c.signature_varies ? std::optional<int64_t>(*c.signature_varies ? 1 : 0) : std::nullopt);
      st.bind(i++, c.half_flops_method.empty() ? std::optional<std::string_view>() :
                                                 std::optional<std::string_view>(c.half_flops_method));
      st.bind(i++, c.tensor_flops_method.empty() ? std::optional<std::string_view>() :
                                                   std::optional<std::string_view>(c.tensor_flops_method));
      if (st.run() != SQLITE_DONE) return fail("write kernel_counter");
    }
  }
  if (!metrics_.empty()) {
    Statement st(db_, "INSERT OR REPLACE INTO kernel_metric(kernel_id, metric_id, value) VALUES (?,?,?)");
    if (!st.ok()) return fail("prepare kernel_metric");
    for (const KernelMetricRecord& m : metrics_) {
      auto id = intern(m.metric);
      if (!id) return fail("write string");
      st.bind(1, m.kernel_id);
      st.bind(2, *id);
      st.bind(3, m.value);
      if (st.run() != SQLITE_DONE) return fail("write kernel_metric");
    }
  }
  if (!insertAll(ceilings_,
                 "INSERT OR REPLACE INTO ceiling(device_name, ceiling, unit, value, source, method) "
                 "VALUES (?,?,?,?,?,?)",
                 [](Statement& st, const CeilingRecord& c) {
                   st.bindAll(std::string_view(c.device_name), std::string_view(c.ceiling), std::string_view(c.unit),
                              c.value, std::string_view(c.source), std::string_view(c.method));
                 })) {
    return fail("write ceiling");
  }
  if (!insertAll(missing_, "INSERT OR REPLACE INTO kernel_counter_missing(kernel_id, reason) VALUES (?,?)",
                 [](Statement& st, const KernelCounterMissing& m) {
                   st.bindAll(m.kernel_id, std::string_view(m.reason));
                 })) {
    return fail("write kernel_counter_missing");
  }
  if (Status f = writeFunctionTables(); !f) {
    (void)exec("ROLLBACK");
    forgetNewStrings();
    return f;
  }
  std::vector<GraphLaunchCounters> graph_launches_waiting;
  if (Status g = writeGraphLaunches(graph_launches_waiting); !g) {
    (void)exec("ROLLBACK");
    forgetNewStrings();
    return g;
  }
  if (!insertAll(events_, "INSERT INTO collector_event(process_id, timestamp_ns, severity, message) VALUES (?,?,?,?)",
                 [](Statement& st, const CollectorEventRecord& e) {
                   st.bindAll(e.process_id, e.timestamp_ns, std::string_view(e.severity),
                              std::string_view(e.message));
                 })) {
    return fail("write collector_event");
  }
  if (Status s = exec("COMMIT"); !s) {
    (void)exec("ROLLBACK");
    forgetNewStrings();
    return s;
  }
  next_kernel_id_ += static_cast<int64_t>(kernels_.size());
  kernels_.clear();
  counters_.clear();
  metrics_.clear();
  ceilings_.clear();
  missing_.clear();
  functions_.clear();
  function_args_.clear();
  function_sass_ops_.clear();
  graph_launches_ = std::move(graph_launches_waiting);
  args_.clear();
  ranges_.clear();
  memcpys_.clear();
  memcpy_addresses_.clear();
  memsets_.clear();
  memory_events_.clear();
  events_.clear();
  return {};
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
  std::string sql = "INSERT OR REPLACE INTO graph_launch_counter(process_id, correlation_id";
  for (const char* column : detail::kCounterValueColumns) sql += std::string(", ") + column;
  sql += ") VALUES (?,?";
  for (size_t n = 0; n < std::size(detail::kCounterValueColumns); ++n) sql += ",?";
  sql += ")";
  Statement counters(db_, sql.c_str());
  Statement metrics(db_, "INSERT OR REPLACE INTO graph_launch_metric(process_id, correlation_id, metric_id, value) "
                         "VALUES (?,?,?,?)");
  if (!counters.ok() || !metrics.ok()) return sqlError(path_, db_, "prepare graph_launch_counter");
  for (GraphLaunchCounters& g : graph_launches_) {
    if (!written(g.process_id, g.correlation_id)) {
      if (written(g.process_id, g.alt_correlation_id)) {
        g.correlation_id = g.alt_correlation_id;
      } else if (!closing_) {
        waiting.push_back(g);
        continue;
      }
    }
    int i = 1;
    counters.bind(i++, g.process_id);
    counters.bind(i++, g.correlation_id);
    for (const std::optional<double>* v : detail::counterValues(g.counters)) counters.bind(i++, *v);
    if (counters.run() != SQLITE_DONE) return sqlError(path_, db_, "write graph_launch_counter");
    for (const auto& [name, value] : g.raw) {
      auto id = intern(name);
      if (!id) return Error{id.error()};
      metrics.bindAll(g.process_id, g.correlation_id, *id, value);
      if (metrics.run() != SQLITE_DONE) return sqlError(path_, db_, "write graph_launch_metric");
    }
  }
  return {};
}

// The per-function tables, keyed by (process, interned mangled name).
Status Writer::writeFunctionTables() {
  auto nameId = [&](const std::string& name) { return intern(name); };
  if (!functions_.empty()) {
    Statement st(db_,
                 "INSERT OR REPLACE INTO function(process_id, name_id, registers_per_thread, local_bytes_per_thread, "
                 "static_shared_bytes, const_bytes, max_threads_per_block, binary_version, ptx_version) "
                 "VALUES (?,?,?,?,?,?,?,?,?)");
    if (!st.ok()) return sqlError(path_, db_, "prepare function");
    for (const FunctionRecord& f : functions_) {
      auto id = nameId(f.name);
      if (!id) return Error{id.error()};
      st.bindAll(f.process_id, *id, f.registers_per_thread, f.local_bytes_per_thread, f.static_shared_bytes,
                 f.const_bytes, f.max_threads_per_block, f.binary_version, f.ptx_version);
      if (st.run() != SQLITE_DONE) return sqlError(path_, db_, "write function");
    }
  }
  if (!function_args_.empty()) {
    Statement st(db_,
                 "INSERT OR REPLACE INTO function_arg(process_id, name_id, arg_index, role, method, sampled_bytes, "
                 "correlation_id, offset_bytes) VALUES (?,?,?,?,?,?,?,?)");
    if (!st.ok()) return sqlError(path_, db_, "prepare function_arg");
    for (const FunctionArgRecord& a : function_args_) {
      auto id = nameId(a.name);
      if (!id) return Error{id.error()};
      st.bindAll(a.process_id, *id, a.arg_index, std::string_view(a.role), std::string_view(a.method),
                 a.sampled_bytes, a.correlation_id, a.offset_bytes);
      if (st.run() != SQLITE_DONE) return sqlError(path_, db_, "write function_arg");
    }
  }
  if (!function_sass_ops_.empty()) {
    Statement st(db_,
                 "INSERT OR REPLACE INTO function_sass_op(process_id, name_id, opcode, static_count) VALUES (?,?,?,?)");
    if (!st.ok()) return sqlError(path_, db_, "prepare function_sass_op");
    for (const FunctionSassOpRecord& o : function_sass_ops_) {
      auto id = nameId(o.name);
      if (!id) return Error{id.error()};
      st.bindAll(o.process_id, *id, std::string_view(o.opcode), o.static_count);
      if (st.run() != SQLITE_DONE) return sqlError(path_, db_, "write function_sass_op");
    }
  }
  return {};
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
    Statement st(db,
                 "INSERT OR REPLACE INTO ceiling(device_name, ceiling, unit, value, source, method) "
                 "VALUES (?,?,?,?,?,?)");
    if (!st.ok()) return sqlError(path, db, "prepare ceiling");
    for (const CeilingRecord& c : ceilings) {
      st.bindAll(c.device_name, c.ceiling, c.unit, c.value, c.source, c.method);
      if (st.run() != SQLITE_DONE) return sqlError(path, db, "write ceiling");
    }
    return {};
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
