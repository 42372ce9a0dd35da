// Per-rank breakdown (see ranks.h).
#include "fprof/analysis/ranks.h"

#include <algorithm>
#include <unordered_map>

#include "fprof/analysis/origin.h"

namespace fprof::analysis {
namespace {

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

// Appends `v` unless already there, keeping first-seen order.
void addUnique(std::vector<std::string>& v, std::string s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
}

}  // namespace

std::vector<RankRow> rankBreakdown(const core::Profile& p) {
  const std::vector<core::RankGroup> groups = core::rankGroups(p);
  std::vector<RankRow> rows(groups.size());
  std::unordered_map<uint32_t, size_t> row_of_process;
  for (size_t g = 0; g < groups.size(); ++g) {
    RankRow& r = rows[g];
    r.group = groups[g];
    std::vector<std::string> hosts, pids, devices, modes;
    for (uint32_t id : groups[g].process_ids) {
      row_of_process[id] = g;
      for (const core::ProcessInfo& pr : p.processes) {
        if (pr.id != id) continue;
        addUnique(hosts, pr.host.empty() ? "?" : pr.host);
        addUnique(pids, std::to_string(pr.pid));
      }
      for (const core::DeviceInfo& d : p.devices) {
        if (d.process_id == id) addUnique(devices, "[" + std::to_string(d.id) + "] " + d.name);
      }
      addUnique(modes, core::processMeta(p, id, "mode", "?"));
    }
    r.hosts = join(hosts);
    r.pids = join(pids);
    r.devices = join(devices);
    r.mode = modes.size() == 1 ? modes.front() : "mixed";
  }

  // Kernel time per rank and per (rank, name); NCCL classification once per name.
  std::vector<std::unordered_map<uint32_t, int64_t>> by_name(rows.size());
  std::unordered_map<uint32_t, bool> is_nccl;
  int64_t all_ns = 0;
  for (const core::KernelRow& k : p.kernels) {
    auto it = row_of_process.find(k.process_id);
    if (it == row_of_process.end()) continue;  // a kernel of no recorded process: in no rank
    RankRow& r = rows[it->second];
    const int64_t ns = k.durationNs();
    ++r.kernel_count;
    r.total_kernel_ns += ns;
    all_ns += ns;
    by_name[it->second][k.demangled_id] += ns;
    auto [nccl, inserted] = is_nccl.emplace(k.demangled_id, false);
    if (inserted) nccl->second = classifyOrigin(p.str(k.demangled_id)) == Origin::kNccl;
    if (nccl->second) r.nccl_ns += ns;
  }
  for (size_t g = 0; g < rows.size(); ++g) {
    RankRow& r = rows[g];
    if (all_ns > 0) r.share = static_cast<double>(r.total_kernel_ns) / static_cast<double>(all_ns);
    if (r.total_kernel_ns > 0) r.nccl_share = static_cast<double>(r.nccl_ns) / static_cast<double>(r.total_kernel_ns);
    // Most time first; ties go to the smaller string id (the name interned first), for stable output.
    std::optional<std::pair<uint32_t, int64_t>> top;
    for (const auto& [name, ns] : by_name[g]) {
      if (!top || ns > top->second || (ns == top->second && name < top->first)) top = std::make_pair(name, ns);
    }
    if (top) {
      r.top_kernel = p.str(top->first);
      r.top_kernel_ns = top->second;
    }
  }
  return rows;
}

std::optional<RankImbalance> rankImbalance(const std::vector<RankRow>& rows) {
  std::optional<RankImbalance> out;
  std::optional<size_t> most, least;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].computeNs() <= 0) continue;
    if (!most || rows[i].computeNs() > rows[*most].computeNs()) most = i;
    if (!least || rows[i].computeNs() < rows[*least].computeNs()) least = i;
  }
  if (!most || !least || *most == *least) return out;
  out = RankImbalance{*most, *least,
                      static_cast<double>(rows[*most].computeNs()) / static_cast<double>(rows[*least].computeNs())};
  return out;
}

}  // namespace fprof::analysis
