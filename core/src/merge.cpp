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

// Every process id the rows of `p` name must have a process row: otherwise the rows cannot be
// given a new process id, and the file is damaged.
Status checkProcessIds(const Profile& p) {
  std::unordered_set<uint32_t> known;
  for (const ProcessInfo& pr : p.processes) known.insert(pr.id);
  auto check = [&](uint32_t id, const char* table) -> Status {
    if (known.count(id)) return {};
    return makeError(p.path + ": damaged database (" + table + " rows name process " + std::to_string(id) +
                     ", which is not in the process table); it cannot be merged");
  };
  for (const DeviceInfo& d : p.devices) {
    if (Status s = check(d.process_id, "device"); !s) return s;
  }
  for (const KernelRow& k : p.kernels) {
    if (Status s = check(k.process_id, "kernel"); !s) return s;
  }
  for (const KernelArgRecord& a : p.kernel_args) {
    if (Status s = check(a.process_id, "kernel_arg"); !s) return s;
  }
  for (const NvtxRangeRecord& r : p.nvtx_ranges) {
    if (Status s = check(r.process_id, "nvtx_range"); !s) return s;
  }
  for (const MemcpyRecord& m : p.memcpys) {
    if (Status s = check(m.process_id, "memcpy"); !s) return s;
  }
  for (const MemcpyAddressRecord& m : p.memcpy_addresses) {
    if (Status s = check(m.process_id, "memcpy_address"); !s) return s;
  }
  for (const MemsetRecord& m : p.memsets) {
    if (Status s = check(m.process_id, "memset"); !s) return s;
  }
  for (const MemoryEventRecord& m : p.memory_events) {
    if (Status s = check(m.process_id, "memory_event"); !s) return s;
  }
  for (const CollectorEventRecord& e : p.collector_events) {
    if (Status s = check(e.process_id, "collector_event"); !s) return s;
  }
  for (const GraphLaunchCounters& g : p.graph_launch_counters) {
    if (Status s = check(g.process_id, "graph_launch_counter"); !s) return s;
  }
  return {};
}

KernelRecord toRecord(const Profile& p, const KernelRow& k) {
  KernelRecord r;
  static_cast<KernelLaunch&>(r) = k;
  r.name = p.str(k.name_id);
  r.demangled_name = p.str(k.demangled_id);
  r.occupancy_limiter = p.str(k.occupancy_limiter_id);
  r.launch_api = p.str(k.launch_api_id);
  if (k.nvtx_path_id) r.nvtx_path = p.str(*k.nvtx_path_id);
  return r;
}

// NVTX range ids are unique per database, not across databases: each input's ids (and every
// reference to them) move by one offset, to above the ids already written.
struct NvtxShift {
  uint64_t offset = 0;  // added modulo 2^64, so it may move ids down as well
  uint64_t next_free = 1;
};

NvtxShift nvtxShift(const Profile& p, uint64_t next_free) {
  bool any = false;
  uint64_t lo = 0, hi = 0;
  auto see = [&](uint64_t key) {
    lo = any ? std::min(lo, key) : key;
    hi = any ? std::max(hi, key) : key;
    any = true;
  };
  for (const NvtxRangeRecord& r : p.nvtx_ranges) {
    see(r.key);
    if (r.parent_key) see(*r.parent_key);
  }
  for (const KernelRow& k : p.kernels) {
    if (k.nvtx_range_key) see(*k.nvtx_range_key);
  }
  if (!any) return {0, next_free};
  const uint64_t offset = next_free - lo;
  return {offset, hi + offset + 1};
}

// The per-function tables of one input, with process ids renumbered and names as text.
void addFunctionTables(const Profile& p, const std::unordered_map<uint32_t, uint32_t>& pid_map, Writer& w) {
  for (const FunctionRow& f : p.functions) {
    w.add(FunctionRecord{pid_map.at(f.process_id), p.str(f.name_id), f.registers_per_thread, f.local_bytes_per_thread,
                         f.static_shared_bytes, f.const_bytes, f.max_threads_per_block, f.binary_version,
                         f.ptx_version});
  }
  for (const FunctionArgRow& a : p.function_args) {
    w.add(FunctionArgRecord{pid_map.at(a.process_id), p.str(a.name_id), a.arg_index, a.role, a.method,
                            a.sampled_bytes, a.correlation_id, a.offset_bytes});
  }
  for (const FunctionSassOpRow& o : p.function_sass_ops) {
    w.add(FunctionSassOpRecord{pid_map.at(o.process_id), p.str(o.name_id), o.opcode, o.static_count});
  }
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

// Joins the inputs into a new database at `path` (the output's temporary file).
Expected<MergeResult> writeMergedDatabase(const std::vector<std::string>& inputs, const std::string& path) {
  MergeResult result;
  {
    auto created = Writer::create(path, /*overwrite=*/true);
    if (!created) return Error{created.error()};
    Writer& w = **created;

    struct Seen {
      std::string input;
      ProcessInfo process;
    };
    std::vector<Seen> seen;
    std::vector<std::pair<uint32_t, std::map<std::string, std::string>>> metadata;  // new process id -> facts
    struct KeptCeiling {
      CeilingRecord row;
      std::string input;
    };
    std::vector<KeptCeiling> ceilings;
    uint64_t next_nvtx = 1;

    for (const std::string& input : inputs) {
      auto loaded = loadProfile(input);
      if (!loaded) return Error{loaded.error()};
      const Profile& p = *loaded;
      if (Status s = checkProcessIds(p); !s) return Error{s.error()};
      // What the reader repaired in an input is written repaired; the user hears of it once.
      result.notes.insert(result.notes.end(), p.warnings.begin(), p.warnings.end());

      std::unordered_map<uint32_t, uint32_t> pid_map;
      for (const ProcessInfo& pr : p.processes) {
        for (const Seen& s : seen) {
          // Two ranks may share a host name and pid (containers); a copy shares its rank too.
          if (s.process.host == pr.host && s.process.pid == pr.pid && s.process.start_unix_ns == pr.start_unix_ns &&
              s.process.rank == pr.rank && s.process.local_rank == pr.local_rank) {
            return makeError(s.input + " and " + input + " both hold " + describeProcess(pr) +
                             ", started at the same time: the same process twice (a copy, or a file already merged "
                             "into the other); leave one out");
          }
          if (s.process.rank && pr.rank && *s.process.rank == *pr.rank) {
            result.notes.push_back("rank " + std::to_string(*pr.rank) + " appears twice (" + describeProcess(s.process) +
                                   " in " + s.input + ", " + describeProcess(pr) + " in " + input +
                                   "): a restarted rank? Both are kept; per-rank views show them together");
          }
        }
        seen.push_back({input, pr});
        auto id = w.addProcess(pr);
        if (!id) return Error{id.error()};
        pid_map[pr.id] = *id;
        std::map<std::string, std::string> facts = processMetadata(p, pr.id);
        facts.emplace("merged_from", fs::path(input).filename().string());  // a merged input keeps the first
        metadata.emplace_back(*id, std::move(facts));
        ++result.processes;
      }
      for (DeviceInfo d : p.devices) {
        d.process_id = pid_map.at(d.process_id);
        if (Status s = w.addDevice(d); !s) return Error{s.error()};
      }

      const NvtxShift shift = nvtxShift(p, next_nvtx);
      next_nvtx = shift.next_free;
      // Kernels in their original id order; counters and metrics (both ordered by kernel id) follow
      // their kernel's new id. Flushing every so many kernels bounds the writer's buffers.
      std::vector<size_t> order(p.kernels.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p.kernels[a].id < p.kernels[b].id; });
      // Ids are handed out in this order, so every old id's new id is known before the first add
      // (a copied counter may name a profiled kernel that comes later).
      std::unordered_map<int64_t, int64_t> new_kernel_id;
      for (size_t n = 0; n < order.size(); ++n) {
        new_kernel_id[p.kernels[order[n]].id] = w.nextKernelId() + static_cast<int64_t>(n);
      }
      size_t next_counter = 0, next_metric = 0;
      auto dangling = [&](const char* table, int64_t kernel_id) {
        return makeError(input + ": damaged database (" + table + " row for kernel " + std::to_string(kernel_id) +
                         ", which is not in the kernel table); it cannot be merged");
      };
      for (size_t n = 0; n < order.size(); ++n) {
        const KernelRow& k = p.kernels[order[n]];
        KernelRecord r = toRecord(p, k);
        r.process_id = pid_map.at(r.process_id);
        if (r.nvtx_range_key) *r.nvtx_range_key += shift.offset;
        const int64_t id = w.nextKernelId();
        w.add(r);
        for (; next_counter < p.counters.size() && p.counters[next_counter].kernel_id <= k.id; ++next_counter) {
          KernelCounters c = p.counters[next_counter];
          if (c.kernel_id != k.id) return dangling("kernel_counter", c.kernel_id);
          c.kernel_id = id;
          if (c.source_kernel_id) {
            auto source = new_kernel_id.find(*c.source_kernel_id);
            if (source == new_kernel_id.end()) return dangling("kernel_counter.source_kernel_id", *c.source_kernel_id);
            c.source_kernel_id = source->second;
          }
          w.add(c);
        }
        for (; next_metric < p.metrics.size() && p.metrics[next_metric].kernel_id <= k.id; ++next_metric) {
          KernelMetricRecord m = p.metrics[next_metric];
          if (m.kernel_id != k.id) return dangling("kernel_metric", m.kernel_id);
          m.kernel_id = id;
          w.add(m);
        }
        if ((n + 1) % kKernelsPerFlush == 0) {
          if (Status st = w.flush(); !st) return Error{st.error()};
        }
      }
      if (next_counter < p.counters.size()) return dangling("kernel_counter", p.counters[next_counter].kernel_id);
      if (next_metric < p.metrics.size()) return dangling("kernel_metric", p.metrics[next_metric].kernel_id);
      for (const KernelCounterMissing& m : p.counters_missing) {
        auto kernel = new_kernel_id.find(m.kernel_id);
        if (kernel == new_kernel_id.end()) return dangling("kernel_counter_missing", m.kernel_id);
        w.add(KernelCounterMissing{kernel->second, m.reason});
      }
      addFunctionTables(p, pid_map, w);
      for (KernelArgRecord a : p.kernel_args) {
        a.process_id = pid_map.at(a.process_id);
        w.add(a);
      }
      for (NvtxRangeRecord r : p.nvtx_ranges) {
        r.process_id = pid_map.at(r.process_id);
        r.key += shift.offset;
        if (r.parent_key) *r.parent_key += shift.offset;
        w.add(r);
      }
      for (MemcpyRecord m : p.memcpys) {
        m.process_id = pid_map.at(m.process_id);
        w.add(m);
      }
      for (MemcpyAddressRecord m : p.memcpy_addresses) {
        m.process_id = pid_map.at(m.process_id);
        w.add(m);
      }
      for (MemsetRecord m : p.memsets) {
        m.process_id = pid_map.at(m.process_id);
        w.add(m);
      }
      for (MemoryEventRecord m : p.memory_events) {
        m.process_id = pid_map.at(m.process_id);
        w.add(m);
      }
      for (CollectorEventRecord e : p.collector_events) {
        e.process_id = pid_map.at(e.process_id);
        w.add(e);
      }
      for (GraphLaunchCounters g : p.graph_launch_counters) {
        g.process_id = pid_map.at(g.process_id);
        w.add(std::move(g));
      }
      result.kernels += static_cast<int64_t>(p.kernels.size());
      for (const CeilingRecord& c : p.ceilings) {
        auto same = std::find_if(ceilings.begin(), ceilings.end(), [&](const KeptCeiling& k) {
          return k.row.device_name == c.device_name && k.row.ceiling == c.ceiling && k.row.source == c.source;
        });
        if (same == ceilings.end()) {
          ceilings.push_back({c, input});
        } else if (same->row.value != c.value || same->row.unit != c.unit || same->row.method != c.method) {
          result.notes.push_back("the " + c.source + " " + c.ceiling + " ceiling of " + c.device_name + " differs: kept " +
                                 number(same->row.value) + " " + same->row.unit + " from " + same->input +
                                 ", left out " + number(c.value) + " " + c.unit + " from " + input);
        }
      }
      if (Status s = w.flush(); !s) return Error{s.error()};
    }

    for (const KeptCeiling& c : ceilings) w.add(c.row);
    std::vector<std::map<std::string, std::string>> all;
    for (const auto& [id, facts] : metadata) {
      for (const auto& [key, value] : facts) {
        if (Status s = w.setMetadata(processMetadataKey(id, key), value); !s) return Error{s.error()};
      }
      all.push_back(facts);
    }
    for (const auto& [key, value] : combineProcessMetadata(all)) {
      if (key == "schema_version" || key == "merged_from") continue;
      if (Status s = w.setMetadata(key, value); !s) return Error{s.error()};
    }
    if (Status s = w.close(); !s) return Error{s.error()};
  }
  return result;
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
