// Joining the second run of application replay to the first (see replay_merge.h).
#include "fprof/core/replay_merge.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fprof/core/metric_sets.h"
#include "fprof/core/store.h"
#include "counter_columns.h"
#include "sqlite_util.h"

namespace fprof::core {
namespace {

using detail::Statement;

Error sqlError(const std::string& path, sqlite3* db, const std::string& what) {
  return makeError(path + ": " + what + ": " + detail::sqliteMessage(db));
}

using RawCounters = std::vector<std::pair<std::string, double>>;
using TwinKey = std::tuple<uint32_t, std::string, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t,
                           int32_t, int32_t, int32_t>;

TwinKey twinKey(const Profile& p, const KernelRow& k) {
  return {k.process_id,  p.str(k.name_id), k.grid_x,    k.grid_y,    k.grid_z,    k.block_x,
          k.block_y,     k.block_z,        k.cluster_x, k.cluster_y, k.cluster_z, k.dynamic_shared_bytes};
}

// Kernel ids of each twin key, in launch order.
std::map<TwinKey, std::vector<int64_t>> launchesByKey(const Profile& p) {
  std::vector<const KernelRow*> order;
  for (const KernelRow& k : p.kernels) order.push_back(&k);
  std::sort(order.begin(), order.end(), [](const KernelRow* a, const KernelRow* b) {
    return std::tie(a->process_id, a->correlation_id, a->id) < std::tie(b->process_id, b->correlation_id, b->id);
  });
  std::map<TwinKey, std::vector<int64_t>> out;
  for (const KernelRow* k : order) out[twinKey(p, *k)].push_back(k->id);
  return out;
}

// First-run kernel id -> second-run kernel id: the n-th launch of a key to the n-th.
std::unordered_map<int64_t, int64_t> pairTwins(const Profile& first, const Profile& second) {
  const auto a = launchesByKey(first);
  const auto b = launchesByKey(second);
  std::unordered_map<int64_t, int64_t> out;
  for (const auto& [key, ids] : a) {
    auto it = b.find(key);
    if (it == b.end()) continue;
    for (size_t i = 0; i < ids.size() && i < it->second.size(); ++i) out[ids[i]] = it->second[i];
  }
  return out;
}

std::unordered_map<int64_t, RawCounters> rawByKernel(const Profile& p) {
  std::unordered_map<int64_t, RawCounters> out;
  for (const KernelMetricRecord& m : p.metrics) out[m.kernel_id].emplace_back(m.metric, m.value);
  return out;
}

// `raw` with `added` in place of its values of the same names.
void replaceOrAdd(RawCounters& raw, const RawCounters& added) {
  std::erase_if(raw, [&](const auto& m) {
    return std::any_of(added.begin(), added.end(), [&](const auto& a) { return a.first == m.first; });
  });
  raw.insert(raw.end(), added.begin(), added.end());
}

// For each kernel with counters, the launch whose counts it holds (by correlation id): its own,
// or, copied counters, its source launch's.
std::unordered_map<int64_t, uint32_t> countedLaunchOf(const Profile& p) {
  std::unordered_map<int64_t, uint32_t> correlation;
  for (const KernelRow& k : p.kernels) correlation[k.id] = k.correlation_id;
  std::unordered_map<int64_t, uint32_t> out;
  for (const KernelCounters& c : p.counters) {
    auto launch = correlation.find(c.source_kernel_id.value_or(c.kernel_id));
    if (launch != correlation.end()) out[c.kernel_id] = launch->second;
  }
  return out;
}

// The second run's raw counters with those computed after it (mergeSecondRun's by_launch): each
// kernel with counters takes its own launch's, or its copy source's.
std::unordered_map<int64_t, RawCounters> secondRunRaw(const Profile& second, const LaunchRawCounters& by_launch) {
  std::unordered_map<int64_t, RawCounters> out = rawByKernel(second);
  if (by_launch.empty()) return out;
  for (const auto& [kernel_id, launch] : countedLaunchOf(second)) {
    auto added = by_launch.find(launch);
    if (added != by_launch.end()) replaceOrAdd(out[kernel_id], added->second);
  }
  return out;
}

// The first run's counters, then the second run's that the first did not count.
RawCounters joined(const RawCounters& first, const RawCounters& second) {
  RawCounters out = first;
  std::set<std::string> have;
  for (const auto& [name, value] : first) have.insert(name);
  for (const auto& item : second) {
    if (!have.count(item.first)) out.push_back(item);
  }
  return out;
}

Expected<int64_t> stringId(sqlite3* db, const std::string& path, const std::string& value) {
  Statement find(db, "SELECT id FROM string WHERE value = ?");
  find.bind(1, std::string_view(value));
  if (find.step() == SQLITE_ROW) return find.i64(0);
  Statement add(db, "INSERT INTO string(id, value) VALUES ((SELECT COALESCE(MAX(id), 0) + 1 FROM string), ?)");
  add.bind(1, std::string_view(value));
  if (add.run() != SQLITE_DONE) return sqlError(path, db, "write string");
  return sqlite3_last_insert_rowid(db);
}

// kernel_counter's derived columns from all raw counters of the kernel (source, its copy source and
// the signature check stay as the first run wrote them).
Status writeDerived(sqlite3* db, const std::string& path, int64_t kernel_id, const RawCounters& raw) {
  std::vector<std::string> names;
  std::vector<double> values;
  for (const auto& [name, value] : raw) {
    names.push_back(name);
    values.push_back(value);
  }
  const KernelCounters c = deriveCounters(names, values);
  std::string sql = "UPDATE kernel_counter SET ";
  for (const char* column : detail::kCounterValueColumns) sql += std::string(column) + " = ?, ";
  sql += "half_flops_method = ?, tensor_flops_method = ? WHERE kernel_id = ?";
  Statement st(db, sql.c_str());
  if (!st.ok()) return sqlError(path, db, "prepare kernel_counter");
  int i = 1;
  for (const std::optional<double>* v : detail::counterValues(c)) st.bind(i++, *v);
  auto text = [](const std::string& s) {
    return s.empty() ? std::optional<std::string_view>() : std::optional<std::string_view>(s);
  };
  st.bind(i++, text(c.half_flops_method));
  st.bind(i++, text(c.tensor_flops_method));
  st.bind(i++, kernel_id);
  if (st.run() != SQLITE_DONE) return sqlError(path, db, "write kernel_counter");
  return {};
}

Status writeRaw(sqlite3* db, const std::string& path, int64_t kernel_id, const RawCounters& raw) {
  Statement st(db, "INSERT OR REPLACE INTO kernel_metric(kernel_id, metric_id, value) VALUES (?,?,?)");
  if (!st.ok()) return sqlError(path, db, "prepare kernel_metric");
  for (const auto& [name, value] : raw) {
    auto id = stringId(db, path, name);
    if (!id) return makeError(id.error());
    st.bindAll(kernel_id, *id, value);
    if (st.run() != SQLITE_DONE) return sqlError(path, db, "write kernel_metric");
  }
  return {};
}

// A kernel's new raw counters (`added`), and its derived columns from all of them (`all`).
Status writeKernelCounters(sqlite3* db, const std::string& path, int64_t kernel_id, const RawCounters& added,
                           const RawCounters& all) {
  if (Status s = writeRaw(db, path, kernel_id, added); !s) return s;
  return writeDerived(db, path, kernel_id, all);
}

Status addEvent(sqlite3* db, const std::string& path, uint32_t process_id, const char* severity,
                const std::string& message) {
  Statement st(db, "INSERT INTO collector_event(process_id, timestamp_ns, severity, message) VALUES (?, 0, ?, ?)");
  st.bindAll(process_id, std::string_view(severity), std::string_view(message));
  if (st.run() != SQLITE_DONE) return sqlError(path, db, "write collector_event");
  return {};
}

double metaNumber(const Profile& p, const char* key) { return std::atof(p.meta(key, "0").c_str()); }

// The run as a whole: both runs' metrics, passes and replay time.
std::map<std::string, std::string> joinedMetadata(const Profile& first, const Profile& second) {
  auto seconds = [&](const char* key) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", metaNumber(first, key) + metaNumber(second, key));
    return std::string(buf);
  };
  std::map<std::string, std::string> out = {{"metrics", first.meta("metrics") + "," + second.meta("metrics")},
          {"metrics_passes", std::to_string(static_cast<int>(metaNumber(first, "metrics_passes") +
                                                             metaNumber(second, "metrics_passes")))},
          {"metrics_replay_seconds", seconds("metrics_replay_seconds")},
          {"metrics_decode_seconds", seconds("metrics_decode_seconds")},
          {"application_runs", "2"},
          {"second_run_metrics", second.meta("metrics")},
          {"second_run_kernels", std::to_string(second.kernels.size())},
          {"second_run_replay_seconds", second.meta("metrics_replay_seconds", "0")}};
  if (const std::string t = second.meta("sass_patching_seconds"); !t.empty()) out["second_run_sass_patching_seconds"] = t;
  if (const std::string t = second.meta("metrics_launch_steps_seconds"); !t.empty()) {
    out["second_run_launch_steps_seconds"] = t;
  }
  return out;
}

Status writeMetadata(sqlite3* db, const std::string& path, const std::map<std::string, std::string>& facts) {
  Statement st(db, "INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)");
  for (const auto& [key, value] : facts) {
    st.bindAll(std::string_view(key), std::string_view(value));
    if (st.run() != SQLITE_DONE) return sqlError(path, db, "write metadata");
  }
  return {};
}

}  // namespace

Expected<SecondRunMerge> mergeSecondRun(const std::string& first_db, const std::string& second_db,
                                        const LaunchRawCounters& by_launch) {
  auto first = loadProfile(first_db);
  if (!first) return makeError(first.error());
  auto second = loadProfile(second_db);
  if (!second) return makeError(second.error());
  const auto twins = pairTwins(*first, *second);
  const auto first_raw = rawByKernel(*first);
  const auto second_raw = secondRunRaw(*second, by_launch);
  SecondRunMerge result;
  result.first_run_kernels = first->kernels.size();
  result.second_run_kernels = second->kernels.size();
  const uint32_t process_id = first->processes.empty() ? 0 : first->processes.front().id;
  Status written = updateDatabase(first_db, [&](sqlite3* db) -> Status {
    for (const KernelCounters& c : first->counters) {
      auto twin = twins.find(c.kernel_id);
      auto theirs = twin == twins.end() ? second_raw.end() : second_raw.find(twin->second);
      if (theirs == second_raw.end()) {
        ++result.kernels_without;
        continue;
      }
      auto mine = first_raw.find(c.kernel_id);
      const RawCounters all = joined(mine == first_raw.end() ? RawCounters{} : mine->second, theirs->second);
      if (Status s = writeKernelCounters(db, first_db, c.kernel_id, theirs->second, all); !s) return s;
      ++result.kernels_joined;
    }
    if (result.kernels_without > 0) {
      const std::string message =
          "application replay: " + std::to_string(result.kernels_without) +
          " kernels of the first run found no launch of the same function and shape in the second run (" +
          std::to_string(result.first_run_kernels) + " kernels in the first run, " +
          std::to_string(result.second_run_kernels) +
          " in the second: the program is not deterministic); their FLOPs and instructions are unknown";
      if (Status s = addEvent(db, first_db, process_id, "warning", message); !s) return s;
    }
    return writeMetadata(db, first_db, joinedMetadata(*first, *second));
  });
  if (!written) return makeError(written.error());
  return result;
}

Expected<LaunchCountersJoin> joinLaunchCounters(const std::string& db_path, const LaunchRawCounters& by_launch) {
  auto profile = loadProfile(db_path);
  if (!profile) return makeError(profile.error());
  return joinLaunchCounters(db_path, *profile, by_launch);
}

Expected<LaunchCountersJoin> joinLaunchCounters(const std::string& db_path, const Profile& profile,
                                                const LaunchRawCounters& by_launch) {
  auto raw = rawByKernel(profile);
  const auto launch_of = countedLaunchOf(profile);
  LaunchCountersJoin result;
  const uint32_t process_id = profile.processes.empty() ? 0 : profile.processes.front().id;
  Status written = updateDatabase(db_path, [&](sqlite3* db) -> Status {
    for (const KernelCounters& c : profile.counters) {
      auto launch = launch_of.find(c.kernel_id);
      auto added = launch == launch_of.end() ? by_launch.end() : by_launch.find(launch->second);
      if (added == by_launch.end()) {
        ++result.kernels_without;
        continue;
      }
      RawCounters& all = raw[c.kernel_id];
      replaceOrAdd(all, added->second);
      if (Status s = writeKernelCounters(db, db_path, c.kernel_id, added->second, all); !s) return s;
      ++result.kernels_joined;
    }
    if (result.kernels_without > 0) {
      const std::string message =
          "application replay: " + std::to_string(result.kernels_without) +
          " kernels with hardware counters have no SASS counts from a duplicate of their launch; their FLOPs and "
          "instructions are unknown";
      if (Status s = addEvent(db, db_path, process_id, "warning", message); !s) return s;
    }
    return writeMetadata(db, db_path, {{"application_runs", "1"}, {"sass_counted_by", "duplicate"}});
  });
  if (!written) return makeError(written.error());
  return result;
}

}  // namespace fprof::core
