// Merging the databases of several processes into one, and selecting processes back out of a
// merged one (see merge.h).
#include "fprof/core/merge.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "fprof/core/output.h"
#include "fprof/core/profile_stream.h"
#include "schema_tables.h"

namespace fprof::core {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kProcessPrefix = "process.";
constexpr size_t kKernelsPerFlush = 65536;

std::string processPrefix(uint32_t process_id) { return std::string(kProcessPrefix) + std::to_string(process_id) + "."; }

bool samePath(const std::string& a, const std::string& b) {
  std::error_code ec;
  const bool same = fs::equivalent(a, b, ec);
  return same && !ec;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string describeProcess(const ProcessInfo& p) {
  std::string s = "pid " + std::to_string(p.pid) + " on " + (p.host.empty() ? std::string("an unknown host") : p.host);
  if (p.rank) s += " (rank " + std::to_string(*p.rank) + ")";
  return s;
}

// The ids an input's rows hold, moved into the merged file's id spaces: its processes get new
// process ids, its kernels new kernel ids, its NVTX ranges ids shifted past those already written.
// schema_tables.h says which columns hold which ids, so a column added there is moved too.
struct IdMoves {
  std::string input;
  std::unordered_map<uint32_t, uint32_t> process;
  // The input's kernel ids, ascending, get the merged file's ids from first_kernel_id on.
  const std::vector<int64_t>* kernel_ids = nullptr;
  int64_t first_kernel_id = 0;
  uint64_t nvtx_offset = 0;  // added modulo 2^64, so it may move ids down as well

  std::optional<int64_t> kernel(int64_t id) const {
    auto at = std::lower_bound(kernel_ids->begin(), kernel_ids->end(), id);
    if (at == kernel_ids->end() || *at != id) return std::nullopt;
    return first_kernel_id + (at - kernel_ids->begin());
  }
};

// Applies f to an id, or to the id an optional holds.
template <class V, class F>
void onId(V& v, F&& f) {
  using Id = std::remove_const_t<V>;
  if constexpr (detail::IsOptional<Id>::value) {
    if (!v) return;
    if constexpr (std::is_const_v<V>) {
      f(*v);
    } else {
      *v = static_cast<typename Id::value_type>(f(*v));
    }
  } else if constexpr (std::is_const_v<V>) {
    f(v);
  } else {
    v = static_cast<Id>(f(v));
  }
}

Error cannotMerge(const std::string& input, const std::string& what) {
  return makeError(input + ": damaged database (" + what + "); it cannot be merged");
}

// Every process id a table's rows name must have a process row: otherwise the rows cannot be
// given a new process id, and the file is damaged.
template <class T, class Row>
Status checkProcessIds(const T& table, const std::vector<Row>& rows, const Profile& p,
                       const std::unordered_set<uint32_t>& known) {
  auto check = [&](const detail::ColumnInfo&, const auto& id) -> Status {
    uint32_t process_id = 0;
    onId(id, [&](auto v) { return process_id = static_cast<uint32_t>(v); });
    if (known.count(process_id)) return {};
    return cannotMerge(p.path, std::string(table.info.name) + " rows name process " + std::to_string(process_id) +
                                   ", which is not in the process table");
  };
  for (const Row& row : rows) {
    if (Status s = detail::forEachRef<detail::Side::row>(table, detail::Ref::process, row, check); !s) return s;
  }
  return {};
}

// The small tables are checked here; the big ones the stream looked over once.
Status checkProcessIds(const ProfileStream& in) {
  const Profile& p = in.small();
  std::unordered_set<uint32_t> known;
  for (const ProcessInfo& pr : p.processes) known.insert(pr.id);
  Status s = checkProcessIds(detail::kDeviceTable, p.devices, p, known);
  for (const char* table : {detail::kKernelTable.info.name, detail::kKernelArgTable.info.name,
                            detail::kNvtxRangeTable.info.name, detail::kMemcpyTable.info.name,
                            detail::kMemcpyAddressTable.info.name, detail::kMemsetTable.info.name,
                            detail::kMemoryEventTable.info.name, detail::kCollectorEventTable.info.name}) {
    if (!s) break;
    if (auto id = in.unknownProcess(table)) {
      s = cannotMerge(p.path, std::string(table) + " rows name process " + std::to_string(*id) +
                                  ", which is not in the process table");
    }
  }
  auto check = [&](const auto& table, const auto& rows) {
    if (s) s = checkProcessIds(table, rows, p, known);
  };
  check(detail::kGraphLaunchCounterTable, p.graph_launch_counters);
  check(detail::kFunctionTable, p.functions);
  check(detail::kFunctionArgTable, p.function_args);
  check(detail::kFunctionSassOpTable, p.function_sass_ops);
  return s;
}

// Moves a record's process, kernel and NVTX range ids (checkProcessIds has made sure every process
// id has its new one). A kernel id the input's kernel table lacks cannot be moved: the file is
// damaged; the error names the table (and the column, unless it is the row's own kernel_id).
template <class T, class Rec>
Status moveIds(const T& table, Rec& r, const IdMoves& moves) {
  auto process = [&](const detail::ColumnInfo&, auto& id) -> Status {
    onId(id, [&](auto v) { return moves.process.at(static_cast<uint32_t>(v)); });
    return {};
  };
  auto nvtx = [&](const detail::ColumnInfo&, auto& id) -> Status {
    onId(id, [&](auto v) { return static_cast<uint64_t>(v) + moves.nvtx_offset; });
    return {};
  };
  auto kernel = [&](const detail::ColumnInfo& column, auto& id) -> Status {
    Status s;
    onId(id, [&](auto v) {
      if (auto moved = moves.kernel(static_cast<int64_t>(v))) return *moved;
      const std::string where = std::string_view(column.name) == "kernel_id"
                                    ? std::string(table.info.name)
                                    : std::string(table.info.name) + "." + column.name;
      s = cannotMerge(moves.input,
                      where + " row for kernel " + std::to_string(v) + ", which is not in the kernel table");
      return static_cast<int64_t>(v);
    });
    return s;
  };
  Status s = detail::forEachRef<detail::Side::record>(table, detail::Ref::process, r, process);
  if (s) s = detail::forEachRef<detail::Side::record>(table, detail::Ref::nvtx_range, r, nvtx);
  if (s) s = detail::forEachRef<detail::Side::record>(table, detail::Ref::kernel, r, kernel);
  return s;
}

// The record the writer takes for a row of an input, with its ids moved: a copy where both are one
// type, else each column copied as declared (string ids turned back into their text).
template <class Rec, class T, class Row>
Expected<Rec> mergedRecord(const T& table, const Row& row, const Profile& p, const IdMoves& moves) {
  Rec r;
  if constexpr (std::is_same_v<Rec, Row>) {
    r = row;
  } else {
    detail::copyRow(table, row, r, [&](uint32_t id) -> const std::string& { return p.str(id); });
  }
  if (Status s = moveIds(table, r, moves); !s) return Error{s.error()};
  return r;
}

// Every row of a table, moved and handed to the writer.
template <class Rec, class T, class Row>
Status addRows(const T& table, const std::vector<Row>& rows, const Profile& p, const IdMoves& moves, Writer& w) {
  for (const Row& row : rows) {
    Expected<Rec> r = mergedRecord<Rec>(table, row, p, moves);
    if (!r) return Error{r.error()};
    w.add(std::move(*r));
  }
  return {};
}

// Every row of a streamed table, moved and handed to the writer, which writes every so many rows
// (a flush changes nothing but when rows reach the file: each table keeps the order of its rows).
template <class Rec, class T, class Row>
Status addRows(const T& table, Expected<std::unique_ptr<RowStream<Row>>> stream, const Profile& p,
               const IdMoves& moves, Writer& w) {
  if (!stream) return Error{stream.error()};
  Row row;
  for (size_t n = 1;; ++n) {
    Expected<bool> more = (*stream)->next(row);
    if (!more) return Error{more.error()};
    if (!*more) return {};
    Expected<Rec> r = mergedRecord<Rec>(table, row, p, moves);
    if (!r) return Error{r.error()};
    w.add(std::move(*r));
    if (n % kKernelsPerFlush == 0) {
      if (Status s = w.flush(); !s) return s;
    }
  }
}

// A stream one row ahead, for rows that follow another table's (counters their kernel's).
template <class Row>
class Lookahead {
 public:
  explicit Lookahead(std::unique_ptr<RowStream<Row>> stream) : stream_(std::move(stream)) {}
  // The row ahead, or nullptr at the end.
  Expected<const Row*> peek() {
    if (!ahead_) {
      Expected<bool> more = stream_->next(row_);
      if (!more) return Error{more.error()};
      ahead_ = *more ? 1 : -1;
    }
    return ahead_ > 0 ? &row_ : nullptr;
  }
  void pop() { ahead_ = 0; }

 private:
  std::unique_ptr<RowStream<Row>> stream_;
  Row row_;
  int ahead_ = 0;  // 0: not read, 1: row_ is ahead, -1: at the end
};

// NVTX range ids are unique per database, not across databases: each input's ids (and every
// reference to them) move by one offset, to above the ids already written.
struct NvtxShift {
  uint64_t offset = 0;
  uint64_t next_free = 1;
};

NvtxShift nvtxShift(const ProfileStream& in, uint64_t next_free) {
  const auto keys = in.nvtxKeys();
  if (!keys) return {0, next_free};
  const uint64_t offset = next_free - keys->first;
  return {offset, keys->second + offset + 1};
}

}  // namespace

std::string processMetadataKey(uint32_t process_id, const std::string& key) { return processPrefix(process_id) + key; }

std::map<std::string, std::string> processMetadata(const Profile& p, uint32_t process_id) {
  std::map<std::string, std::string> out;
  const std::string prefix = processPrefix(process_id);
  for (auto it = p.metadata.lower_bound(prefix); it != p.metadata.end() && it->first.starts_with(prefix); ++it) {
    out.emplace(it->first.substr(prefix.size()), it->second);
  }
  if (!out.empty()) return out;
  // A database one process wrote: its top-level facts are that process's.
  for (const auto& [key, value] : p.metadata) {
    if (key == "schema_version" || key.starts_with(kProcessPrefix)) continue;
    out.emplace(key, value);
  }
  return out;
}

std::string processMeta(const Profile& p, uint32_t process_id, const std::string& key, const std::string& fallback) {
  if (auto it = p.metadata.find(processMetadataKey(process_id, key)); it != p.metadata.end()) return it->second;
  return p.meta(key, fallback);
}

std::map<std::string, std::string> combineProcessMetadata(
    const std::vector<std::map<std::string, std::string>>& per_process) {
  std::map<std::string, std::string> out;
  if (per_process.empty()) return out;
  std::set<std::string> keys;
  for (const auto& m : per_process) {
    for (const auto& kv : m) keys.insert(kv.first);
  }
  for (const std::string& key : keys) {
    std::optional<std::string> common;
    bool agree = true;
    for (const auto& m : per_process) {
      auto it = m.find(key);
      if (it == m.end() || (common && *common != it->second)) {
        agree = false;
        break;
      }
      common = it->second;
    }
    if (agree && common) {
      out.emplace(key, *common);
    } else if (key == "mode" || key == "fprof_version") {
      out.emplace(key, "mixed");
    } else if (key == "dropped_records") {
      long long sum = 0;
      for (const auto& m : per_process) {
        if (auto it = m.find(key); it != m.end()) sum += std::strtoll(it->second.c_str(), nullptr, 10);
      }
      out.emplace(key, std::to_string(sum));
    }
  }
  return out;
}

namespace {

// Joins the inputs one by one into a Writer: each input's processes, devices, kernels with their
// counters and metrics, then its other tables; ceilings and metadata once all are in.
class Merge {
 public:
  explicit Merge(Writer& w) : w_(w) {}
  Status addInput(const std::string& input);
  Status finish();
  MergeResult& result() { return result_; }

 private:
  Status addProcesses(const Profile& p, IdMoves& moves);
  Status addKernels(ProfileStream& in, IdMoves& moves);
  template <class T, class Row>
  Status addRowsOfKernel(const T& table, Lookahead<Row>& rows, int64_t kernel_id, const Profile& p,
                         const IdMoves& moves);
  Status addOtherTables(ProfileStream& in, const IdMoves& moves);
  void keepCeilings(const Profile& p, const std::string& input);

  Writer& w_;
  MergeResult result_;
  struct Seen {
    std::string input;
    ProcessInfo process;
  };
  std::vector<Seen> seen_;
  std::vector<std::pair<uint32_t, std::map<std::string, std::string>>> metadata_;  // new process id -> facts
  struct KeptCeiling {
    CeilingRecord row;
    std::string input;
  };
  std::vector<KeptCeiling> ceilings_;
  uint64_t next_nvtx_ = 1;
};

// An input is read table by table (ProfileStream), each row written as it comes: merge holds an
// input's small tables and its kernel ids, never its big tables.
Status Merge::addInput(const std::string& input) {
  auto opened = ProfileStream::open(input);
  if (!opened) return Error{opened.error()};
  ProfileStream& in = **opened;
  const Profile& p = in.small();
  if (Status s = checkProcessIds(in); !s) return s;
  const size_t notes_before = result_.notes.size();
  IdMoves moves;
  moves.input = input;
  if (Status s = addProcesses(p, moves); !s) return s;
  const NvtxShift shift = nvtxShift(in, next_nvtx_);
  next_nvtx_ = shift.next_free;
  moves.nvtx_offset = shift.offset;
  if (Status s = addKernels(in, moves); !s) return s;
  if (Status s = addOtherTables(in, moves); !s) return s;
  result_.kernels += static_cast<int64_t>(moves.kernel_ids->size());
  keepCeilings(p, input);
  // What the reader repaired in an input is written repaired; the user hears of it once, first.
  const std::vector<std::string> repaired = in.warnings();
  result_.notes.insert(result_.notes.begin() + static_cast<std::ptrdiff_t>(notes_before), repaired.begin(),
                       repaired.end());
  return w_.flush();
}

// Processes get new ids (and their metadata, under those ids), then their devices.
Status Merge::addProcesses(const Profile& p, IdMoves& moves) {
  for (const ProcessInfo& pr : p.processes) {
    for (const Seen& s : seen_) {
      // Two ranks may share a host name and pid (containers); a copy shares its rank too.
      if (s.process.host == pr.host && s.process.pid == pr.pid && s.process.start_unix_ns == pr.start_unix_ns &&
          s.process.rank == pr.rank && s.process.local_rank == pr.local_rank) {
        return makeError(s.input + " and " + moves.input + " both hold " + describeProcess(pr) +
                         ", started at the same time: the same process twice (a copy, or a file already merged "
                         "into the other); leave one out");
      }
      if (s.process.rank && pr.rank && *s.process.rank == *pr.rank) {
        result_.notes.push_back("rank " + std::to_string(*pr.rank) + " appears twice (" + describeProcess(s.process) +
                                " in " + s.input + ", " + describeProcess(pr) + " in " + moves.input +
                                "): a restarted rank? Both are kept; per-rank views show them together");
      }
    }
    seen_.push_back({moves.input, pr});
    auto id = w_.addProcess(pr);
    if (!id) return Error{id.error()};
    moves.process[pr.id] = *id;
    std::map<std::string, std::string> facts = processMetadata(p, pr.id);
    facts.emplace("merged_from", fs::path(moves.input).filename().string());  // a merged input keeps the first
    metadata_.emplace_back(*id, std::move(facts));
    ++result_.processes;
  }
  for (const DeviceInfo& d : p.devices) {
    Expected<DeviceInfo> moved = mergedRecord<DeviceInfo>(detail::kDeviceTable, d, p, moves);
    if (!moved) return Error{moved.error()};
    if (Status s = w_.addDevice(*moved); !s) return s;
  }
  return {};
}

// Kernels in their original id order; counters and metrics (both ordered by kernel id) follow
// their kernel's new id. Flushing every so many kernels bounds the writer's buffers.
Status Merge::addKernels(ProfileStream& in, IdMoves& moves) {
  // Ids are handed out in this order, so every old id's new id is known before the first add
  // (a copied counter may name a profiled kernel that comes later).
  auto ids = in.kernelIds();
  if (!ids) return Error{ids.error()};
  moves.kernel_ids = *ids;
  moves.first_kernel_id = w_.nextKernelId();
  auto kernels = in.rows<KernelRow>();
  auto counters = in.rows<KernelCounters>();
  auto metrics = in.rows<KernelMetricRecord>();
  if (!kernels) return Error{kernels.error()};
  if (!counters) return Error{counters.error()};
  if (!metrics) return Error{metrics.error()};
  Lookahead<KernelCounters> counter(std::move(*counters));
  Lookahead<KernelMetricRecord> metric(std::move(*metrics));
  const Profile& p = in.small();
  KernelRow k;
  for (size_t n = 1;; ++n) {
    Expected<bool> more = (*kernels)->next(k);
    if (!more) return Error{more.error()};
    if (!*more) break;
    Expected<KernelRecord> r = mergedRecord<KernelRecord>(detail::kKernelTable, k, p, moves);
    if (!r) return Error{r.error()};
    w_.add(std::move(*r));
    if (Status s = addRowsOfKernel(detail::kKernelCounterTable, counter, k.id, p, moves); !s) return s;
    if (Status s = addRowsOfKernel(detail::kKernelMetricTable, metric, k.id, p, moves); !s) return s;
    if (n % kKernelsPerFlush == 0) {
      if (Status s = w_.flush(); !s) return s;
    }
  }
  // Rows left are rows of kernels the kernel table lacks.
  if (Status s = addRowsOfKernel(detail::kKernelCounterTable, counter, INT64_MAX, p, moves); !s) return s;
  return addRowsOfKernel(detail::kKernelMetricTable, metric, INT64_MAX, p, moves);
}

// The rows ahead that belong to kernel `kernel_id` (of a table ordered by kernel id); one for an
// earlier kernel names a kernel the input lacks.
template <class T, class Row>
Status Merge::addRowsOfKernel(const T& table, Lookahead<Row>& rows, int64_t kernel_id, const Profile& p,
                              const IdMoves& moves) {
  for (;;) {
    Expected<const Row*> ahead = rows.peek();
    if (!ahead) return Error{ahead.error()};
    if (!*ahead || (*ahead)->kernel_id > kernel_id) return {};
    if ((*ahead)->kernel_id != kernel_id) {
      return cannotMerge(moves.input, std::string(table.info.name) + " row for kernel " +
                                          std::to_string((*ahead)->kernel_id) + ", which is not in the kernel table");
    }
    Expected<Row> moved = mergedRecord<Row>(table, **ahead, p, moves);
    if (!moved) return Error{moved.error()};
    w_.add(std::move(*moved));
    rows.pop();
  }
}

// The input's other tables, each row with its ids moved, in the order the writer has always been
// given them.
Status Merge::addOtherTables(ProfileStream& in, const IdMoves& moves) {
  const Profile& p = in.small();
  Status s = addRows<KernelCounterMissing>(detail::kKernelCounterMissingTable, in.rows<KernelCounterMissing>(), p,
                                           moves, w_);
  if (s) s = addRows<FunctionRecord>(detail::kFunctionTable, p.functions, p, moves, w_);
  if (s) s = addRows<FunctionArgRecord>(detail::kFunctionArgTable, p.function_args, p, moves, w_);
  if (s) s = addRows<FunctionSassOpRecord>(detail::kFunctionSassOpTable, p.function_sass_ops, p, moves, w_);
  if (s) s = addRows<KernelArgRecord>(detail::kKernelArgTable, in.rows<KernelArgRecord>(), p, moves, w_);
  if (s) s = addRows<NvtxRangeRecord>(detail::kNvtxRangeTable, in.rows<NvtxRangeRecord>(), p, moves, w_);
  if (s) s = addRows<MemcpyRecord>(detail::kMemcpyTable, in.rows<MemcpyRecord>(), p, moves, w_);
  if (s) s = addRows<MemcpyAddressRecord>(detail::kMemcpyAddressTable, in.rows<MemcpyAddressRecord>(), p, moves, w_);
  if (s) s = addRows<MemsetRecord>(detail::kMemsetTable, in.rows<MemsetRecord>(), p, moves, w_);
  if (s) s = addRows<MemoryEventRecord>(detail::kMemoryEventTable, in.rows<MemoryEventRecord>(), p, moves, w_);
  if (s) {
    s = addRows<CollectorEventRecord>(detail::kCollectorEventTable, in.rows<CollectorEventRecord>(), p, moves, w_);
  }
  if (s) s = addRows<GraphLaunchCounters>(detail::kGraphLaunchCounterTable, p.graph_launch_counters, p, moves, w_);
  return s;
}

// Ceilings are kept once where identical; where two inputs disagree, the first is kept and said.
void Merge::keepCeilings(const Profile& p, const std::string& input) {
  for (const CeilingRecord& c : p.ceilings) {
    auto same = std::find_if(ceilings_.begin(), ceilings_.end(), [&](const KeptCeiling& k) {
      return k.row.device_name == c.device_name && k.row.ceiling == c.ceiling && k.row.source == c.source;
    });
    if (same == ceilings_.end()) {
      ceilings_.push_back({c, input});
    } else if (same->row.value != c.value || same->row.unit != c.unit || same->row.method != c.method) {
      result_.notes.push_back("the " + c.source + " " + c.ceiling + " ceiling of " + c.device_name + " differs: kept " +
                              number(same->row.value) + " " + same->row.unit + " from " + same->input + ", left out " +
                              number(c.value) + " " + c.unit + " from " + input);
    }
  }
}

// The ceilings kept, every process's metadata under its new id, and what they all agree on.
Status Merge::finish() {
  for (const KeptCeiling& c : ceilings_) w_.add(c.row);
  std::vector<std::map<std::string, std::string>> all;
  for (const auto& [id, facts] : metadata_) {
    for (const auto& [key, value] : facts) {
      if (Status s = w_.setMetadata(processMetadataKey(id, key), value); !s) return s;
    }
    all.push_back(facts);
  }
  for (const auto& [key, value] : combineProcessMetadata(all)) {
    if (key == "schema_version" || key == "merged_from") continue;
    if (Status s = w_.setMetadata(key, value); !s) return s;
  }
  return w_.close();
}

// Joins the inputs into a new database at `path` (the output's temporary file).
Expected<MergeResult> writeMergedDatabase(const std::vector<std::string>& inputs, const std::string& path) {
  auto created = Writer::create(path, /*overwrite=*/true);
  if (!created) return Error{created.error()};
  Merge merge(**created);
  for (const std::string& input : inputs) {
    if (Status s = merge.addInput(input); !s) return Error{s.error()};
  }
  if (Status s = merge.finish(); !s) return Error{s.error()};
  return std::move(merge.result());
}

}  // namespace

Expected<MergeResult> mergeDatabases(const std::vector<std::string>& inputs, const std::string& output,
                                     const MergeOptions& options) {
  if (inputs.empty()) return makeError("merge: no databases given; name the per-rank .fprof files to join");
  if (output.empty()) return makeError("merge: no output given; name the merged database with -o");
  // Every input is checked before anything is written, so a bad last file costs nothing.
  for (const std::string& in : inputs) {
    if (Status s = checkDatabase(in); !s) return Error{s.error()};
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (size_t j = i + 1; j < inputs.size(); ++j) {
      if (samePath(inputs[i], inputs[j])) {
        return makeError(inputs[i] == inputs[j]
                             ? inputs[i] + " is given twice; name each database once"
                             : inputs[i] + " and " + inputs[j] + " are the same file; name each database once");
      }
    }
  }
  // The output follows output.h's rules: never an input, replaced only with --force, written
  // beside the target and moved into place once complete (two merges racing: one wins).
  OutputRules rules;
  rules.replace = options.overwrite;
  rules.inputs = inputs;
  rules.what = "the merged database";
  auto out = OutputFile::create(output, rules, OutputKind::kDatabase);
  if (!out) return Error{out.error()};
  auto merged = writeMergedDatabase(inputs, (*out)->temporaryPath());
  if (!merged) return makeError((*out)->inTermsOfTarget(merged.error()));
  if (Status s = (*out)->commit(); !s) return Error{s.error()};
  return merged;
}

std::vector<RankGroup> rankGroups(const Profile& p) {
  std::map<int, RankGroup> ranked;
  std::vector<RankGroup> unranked;
  for (const ProcessInfo& pr : p.processes) {
    if (pr.rank) {
      RankGroup& g = ranked[*pr.rank];
      g.rank = pr.rank;
      g.label = "rank " + std::to_string(*pr.rank);
      g.process_ids.push_back(pr.id);
    } else {
      unranked.push_back({std::nullopt, {pr.id}, "pid " + std::to_string(pr.pid) + " on " + (pr.host.empty() ? "?" : pr.host)});
    }
  }
  std::vector<RankGroup> out;
  for (auto& [rank, g] : ranked) {
    std::sort(g.process_ids.begin(), g.process_ids.end());
    out.push_back(std::move(g));
  }
  std::sort(unranked.begin(), unranked.end(),
            [](const RankGroup& a, const RankGroup& b) { return a.process_ids < b.process_ids; });
  out.insert(out.end(), unranked.begin(), unranked.end());
  return out;
}

std::string describeRanks(const std::vector<RankGroup>& groups) {
  std::vector<int> ranks;
  size_t unranked = 0;
  for (const RankGroup& g : groups) {
    if (g.rank) {
      ranks.push_back(*g.rank);
    } else {
      ++unranked;
    }
  }
  std::string s;
  if (ranks.size() == 1) {
    s = "rank " + std::to_string(ranks.front());
  } else if (!ranks.empty()) {
    const bool contiguous = ranks.back() - ranks.front() == static_cast<int>(ranks.size()) - 1;
    s = "ranks ";
    if (contiguous) {
      s += std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
    } else {
      for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
    }
  }
  if (unranked > 0) {
    if (!s.empty()) s += ", ";
    s += std::to_string(unranked) + (unranked == 1 ? " process" : " processes") + " without a rank";
  }
  return s.empty() ? "no processes" : s;
}

Profile selectProcesses(const Profile& p, const std::vector<uint32_t>& process_ids) {
  const std::unordered_set<uint32_t> keep(process_ids.begin(), process_ids.end());
  Profile out;
  out.path = p.path;
  out.schema_version = p.schema_version;
  out.strings = p.strings;
  out.ceilings = p.ceilings;
  std::vector<std::map<std::string, std::string>> facts;
  for (const ProcessInfo& pr : p.processes) {
    if (!keep.count(pr.id)) continue;
    out.processes.push_back(pr);
    facts.push_back(processMetadata(p, pr.id));
    const std::string prefix = processPrefix(pr.id);
    for (auto it = p.metadata.lower_bound(prefix); it != p.metadata.end() && it->first.starts_with(prefix); ++it) {
      out.metadata.insert(*it);
    }
  }
  for (auto& [key, value] : combineProcessMetadata(facts)) {
    if (key != "merged_from") out.metadata[key] = value;
  }
  if (auto it = p.metadata.find("schema_version"); it != p.metadata.end()) out.metadata.insert(*it);

  auto copyIf = [&](const auto& from, auto& to) {
    for (const auto& r : from) {
      if (keep.count(r.process_id)) to.push_back(r);
    }
  };
  copyIf(p.devices, out.devices);
  copyIf(p.kernels, out.kernels);
  copyIf(p.kernel_args, out.kernel_args);
  copyIf(p.nvtx_ranges, out.nvtx_ranges);
  copyIf(p.memcpys, out.memcpys);
  copyIf(p.memcpy_addresses, out.memcpy_addresses);
  copyIf(p.memsets, out.memsets);
  copyIf(p.memory_events, out.memory_events);
  copyIf(p.collector_events, out.collector_events);
  std::vector<int64_t> kernel_ids;
  kernel_ids.reserve(out.kernels.size());
  for (const KernelRow& k : out.kernels) kernel_ids.push_back(k.id);
  std::sort(kernel_ids.begin(), kernel_ids.end());
  auto kept = [&](int64_t id) { return std::binary_search(kernel_ids.begin(), kernel_ids.end(), id); };
  for (const KernelCounters& c : p.counters) {
    if (kept(c.kernel_id)) out.counters.push_back(c);
  }
  for (const KernelMetricRecord& m : p.metrics) {
    if (kept(m.kernel_id)) out.metrics.push_back(m);
  }
  for (const KernelCounterMissing& m : p.counters_missing) {
    if (kept(m.kernel_id)) out.counters_missing.push_back(m);
  }
  copyIf(p.functions, out.functions);
  copyIf(p.function_args, out.function_args);
  copyIf(p.function_sass_ops, out.function_sass_ops);
  copyIf(p.graph_launch_counters, out.graph_launch_counters);
  return out;
}

Expected<Profile> selectRank(const Profile& p, int rank) {
  const std::vector<RankGroup> groups = rankGroups(p);
  for (const RankGroup& g : groups) {
    if (g.rank && *g.rank == rank) return selectProcesses(p, g.process_ids);
  }
  return makeError(p.path + ": no process has rank " + std::to_string(rank) + "; the file holds " +
                   describeRanks(groups));
}

}  // namespace fprof::core
