// Applied fusions: a baseline's candidates found fused in a later run (see fusion_outcomes.h).
// matchFusionOutcomes reads top-down: the regions where each candidate's instances ran, by op
// ranges or by anchors; the regions that lost launches; the outcomes they add up to.
#include "fprof/analysis/fusion_outcomes.h"

#include "fprof/analysis/nvtx_ranges.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

#include "fprof/analysis/nvtx_ops.h"

namespace fprof::analysis {
namespace {

// ---- Kernels in launch order, and their keys (name and launch shape) shared by both runs.

class KeyTable {
 public:
  uint32_t id(const core::Profile& p, const core::KernelRow& k) {
    std::string key = p.str(k.demangled_id);
    key += fmt::format("\x1f{},{},{};{},{},{}", k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z);
    return ids_.emplace(std::move(key), static_cast<uint32_t>(ids_.size())).first->second;
  }
  size_t size() const { return ids_.size(); }

 private:
  std::unordered_map<std::string, uint32_t> ids_;
};

void sortByLaunch(const core::Profile& p, std::vector<size_t>& kernels) {
  std::stable_sort(kernels.begin(), kernels.end(), [&](size_t a, size_t b) {
    return p.kernels[a].start_ns < p.kernels[b].start_ns;
  });
}

// ---- Scopes: the top NVTX ranges both runs hold the same number of times, paired in order.

using Scope = std::pair<std::vector<size_t>, std::vector<size_t>>;  // kernels of the baseline, of the later run

// Per kernel, its outermost NVTX range (an index into nvtx_ranges); -1 outside any range.
std::vector<int64_t> rootRangeOfKernels(const core::Profile& p) {
  const NvtxRangeLookup lookup(p);
  std::vector<int64_t> root(p.nvtx_ranges.size(), -1);
  auto rootOf = [&](size_t r) {
    size_t at = r, steps = 0;
    while (steps++ <= p.nvtx_ranges.size()) {
      const std::optional<size_t> parent = lookup.parent(at);
      if (!parent) break;
      at = *parent;
    }
    return at;
  };
  std::vector<int64_t> root_of_kernel(p.kernels.size(), -1);
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const std::optional<size_t> range = lookup.ofKernel(p.kernels[k]);
    if (!range) continue;
    if (root[*range] < 0) root[*range] = static_cast<int64_t>(rootOf(*range));
    root_of_kernel[k] = root[*range];
  }
  return root_of_kernel;
}

// Text (domain "::" message) -> the root ranges of that text holding kernels, in start order,
// each with its kernels.
std::map<std::string, std::vector<std::vector<size_t>>> rootRanges(const core::Profile& p) {
  const std::vector<int64_t> root_of_kernel = rootRangeOfKernels(p);
  std::map<int64_t, std::vector<size_t>> kernels_of_root;
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    if (root_of_kernel[k] >= 0) kernels_of_root[root_of_kernel[k]].push_back(k);
  }
  std::vector<std::pair<int64_t, int64_t>> roots;  // (start, root)
  for (const auto& [root, ks] : kernels_of_root) roots.emplace_back(p.nvtx_ranges[static_cast<size_t>(root)].start_ns, root);
  std::sort(roots.begin(), roots.end());
  std::map<std::string, std::vector<std::vector<size_t>>> out;
  for (const auto& [start, root] : roots) {
    const core::NvtxRangeRow& r = p.nvtx_ranges[static_cast<size_t>(root)];
    out[r.domain.str() + "::" + r.message.str()].push_back(std::move(kernels_of_root[root]));
  }
  return out;
}

std::vector<Scope> scopes(const core::Profile& base, const core::Profile& cur, std::string& described) {
  const auto b = rootRanges(base), c = rootRanges(cur);
  std::vector<Scope> out;
  std::vector<std::string> texts;
  size_t pairs = 0;
  for (const auto& [text, ranges] : b) {
    auto it = c.find(text);
    if (it == c.end() || it->second.size() != ranges.size()) continue;
    for (size_t i = 0; i < ranges.size(); ++i) out.emplace_back(ranges[i], it->second[i]);
    texts.push_back(text.substr(text.find("::") + 2));
    pairs += ranges.size();
  }
  if (out.empty()) {
    Scope whole;
    whole.first.resize(base.kernels.size());
    whole.second.resize(cur.kernels.size());
    std::iota(whole.first.begin(), whole.first.end(), size_t{0});
    std::iota(whole.second.begin(), whole.second.end(), size_t{0});
    out.push_back(std::move(whole));
    described = "the whole runs (no top NVTX range both hold as often)";
  } else {
    std::string names;
    constexpr size_t kNamed = 3;
    for (size_t i = 0; i < texts.size() && i < kNamed; ++i) names += (i ? ", \"" : "\"") + texts[i].substr(0, 60) + "\"";
    if (texts.size() > kNamed) names += fmt::format(" and {} more", texts.size() - kNamed);
    described = fmt::format("{} top NVTX range{} both runs hold as often ({})", pairs, pairs == 1 ? "" : "s", names);
  }
  for (Scope& s : out) {
    sortByLaunch(base, s.first);
    sortByLaunch(cur, s.second);
  }
  return out;
}

// ---- Anchors: keys that ran as often in both sequences, paired in order, kept where the pairs
// keep one order in both (the longest such sequence).

struct Alignment {
  std::vector<size_t> base_pos, cur_pos;  // anchor positions, increasing in both
};

std::vector<size_t> longestIncreasing(const std::vector<size_t>& v) {
  std::vector<size_t> tails, tail_index, prev(v.size(), SIZE_MAX);
  for (size_t i = 0; i < v.size(); ++i) {
    const size_t at = static_cast<size_t>(std::lower_bound(tails.begin(), tails.end(), v[i]) - tails.begin());
    if (at == tails.size()) {
      tails.push_back(v[i]);
      tail_index.push_back(i);
    } else {
      tails[at] = v[i];
      tail_index[at] = i;
    }
    if (at > 0) prev[i] = tail_index[at - 1];
  }
  std::vector<size_t> out;
  for (size_t i = tail_index.empty() ? SIZE_MAX : tail_index.back(); i != SIZE_MAX; i = prev[i]) out.push_back(i);
  std::reverse(out.begin(), out.end());
  return out;
}

Alignment align(const std::vector<uint32_t>& base_keys, const std::vector<uint32_t>& cur_keys, size_t key_count) {
  std::vector<std::vector<size_t>> base_at(key_count), cur_at(key_count);
  for (size_t i = 0; i < base_keys.size(); ++i) base_at[base_keys[i]].push_back(i);
  for (size_t i = 0; i < cur_keys.size(); ++i) cur_at[cur_keys[i]].push_back(i);
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t key = 0; key < key_count; ++key) {
    if (base_at[key].empty() || base_at[key].size() != cur_at[key].size()) continue;
    for (size_t j = 0; j < base_at[key].size(); ++j) pairs.emplace_back(base_at[key][j], cur_at[key][j]);
  }
  std::sort(pairs.begin(), pairs.end());
  std::vector<size_t> cur_order;
  for (const auto& pr : pairs) cur_order.push_back(pr.second);
  Alignment a;
  for (size_t i : longestIncreasing(cur_order)) {
    a.base_pos.push_back(pairs[i].first);
    a.cur_pos.push_back(pairs[i].second);
  }
  return a;
}

// ---- Regions and what ran there.

struct Region {
  size_t scope = 0;
  // Segments between anchors [first, last]: segment s lies between anchor s - 1 and anchor s.
  size_t first = 0, last = 0;
  std::string matched_by;
  std::vector<size_t> base_kernels, cur_kernels;
  std::map<size_t, int64_t> instances;  // candidate -> instances here
  std::vector<std::optional<double>> savings;
};

double kernelNs(const core::Profile& p, const std::vector<size_t>& ks) {
  double t = 0;
  for (size_t k : ks) t += static_cast<double>(p.kernels[k].durationNs());
  return t;
}

// Declared pairs found again as the later run's ranges of the same pair, instance by instance.
void regionsByOpRanges(const core::Profile& cur, const FusionResult& fusion, std::vector<uint8_t>& used,
                       std::vector<Region>& regions, std::set<size_t>& unchanged) {
  // The later run's ranges of each pair: its unfused variant where it still runs it (it may hold
  // a fused variant beside, as the baseline may: nothing was applied), else its fused or vendor
  // variant.
  const OpIndex ops = indexOps(cur);
  std::map<std::string, std::vector<const OpInstance*>> by_pair, unfused_by_pair;
  for (const OpInstance& op : ops.ops) {
    if (op.tags->pair.empty() || op.allKernels().empty()) continue;
    if (op.parent && ops.ops[*op.parent].tags->pair == op.tags->pair) continue;  // a stage of it
    (op.tags->variant == "unfused" ? unfused_by_pair : by_pair)[op.tags->pair].push_back(&op);
  }
  for (auto& [pair, instances] : unfused_by_pair) by_pair[pair] = std::move(instances);
  for (size_t c = 0; c < fusion.candidates.size(); ++c) {
    const FusionCandidate& cand = fusion.candidates[c];
    if (cand.source != PairSource::kNvtx) continue;
    auto it = by_pair.find(cand.id);
    if (it == by_pair.end()) continue;
    const size_t n = std::min(it->second.size(), cand.instance_kernels.size());
    for (size_t i = 0; i < n; ++i) {
      for (size_t k : cand.instance_kernels[i]) used[k] = 1;
      if (it->second[i]->allKernels().size() == cand.instance_kernels[i].size()) {
        unchanged.insert(c);  // as many launches as before: it ran as it did
        continue;
      }
      Region r;
      r.matched_by = "the same NVTX op ranges";
      r.base_kernels = cand.instance_kernels[i];
      r.cur_kernels = it->second[i]->allKernels().vector();
      r.instances[c] = 1;
      r.savings.push_back(cand.instance_saving_ns[i]);
      regions.push_back(std::move(r));
    }
  }
}

// Where in the scopes each baseline kernel is: (scope, position), or (-1, -1).
struct Position {
  int32_t scope = -1;
  int32_t pos = -1;
};

struct Aligned {
  std::vector<Scope> scopes;
  bool whole_runs = false;  // no NVTX range bounds the scope: a region needs an anchor on each side
  std::vector<Alignment> alignments;
  std::vector<std::vector<uint8_t>> anchor;  // per scope, per baseline position
  std::vector<Position> where;             // per baseline kernel
};

Aligned alignScopes(const core::Profile& base, const core::Profile& cur, std::string& described) {
  Aligned al;
  al.scopes = scopes(base, cur, described);
  al.whole_runs = al.scopes.size() == 1 && al.scopes.front().first.size() == base.kernels.size() &&
                  al.scopes.front().second.size() == cur.kernels.size() && described.rfind("the whole", 0) == 0;
  al.where.assign(base.kernels.size(), {});
  KeyTable keys;
  for (size_t s = 0; s < al.scopes.size(); ++s) {
    std::vector<uint32_t> bk, ck;
    for (size_t k : al.scopes[s].first) bk.push_back(keys.id(base, base.kernels[k]));
    for (size_t k : al.scopes[s].second) ck.push_back(keys.id(cur, cur.kernels[k]));
    al.alignments.push_back(align(bk, ck, keys.size()));
    std::vector<uint8_t> is_anchor(bk.size(), 0);
    for (size_t p : al.alignments.back().base_pos) is_anchor[p] = 1;
    al.anchor.push_back(std::move(is_anchor));
    for (size_t p = 0; p < al.scopes[s].first.size(); ++p) {
      al.where[al.scopes[s].first[p]] = {static_cast<int32_t>(s), static_cast<int32_t>(p)};
    }
  }
  return al;
}

// The stretch between the anchors around an instance's changed kernels; none when every kernel
// of it is an anchor (it ran as before) or it spans scopes.
std::optional<Region> regionOf(const Aligned& al, const std::vector<size_t>& kernels, bool& unchanged) {
  int32_t scope = -1;
  int64_t lo = -1, hi = -1;
  for (size_t k : kernels) {
    const Position w = al.where[k];
    if (w.scope < 0 || (scope >= 0 && w.scope != scope)) return std::nullopt;
    scope = w.scope;
    if (al.anchor[static_cast<size_t>(scope)][static_cast<size_t>(w.pos)]) continue;
    lo = lo < 0 ? w.pos : std::min<int64_t>(lo, w.pos);
    hi = std::max<int64_t>(hi, w.pos);
  }
  if (scope < 0) return std::nullopt;
  if (lo < 0) {
    unchanged = true;
    return std::nullopt;
  }
  const auto& anchors = al.alignments[static_cast<size_t>(scope)].base_pos;
  Region r;
  r.scope = static_cast<size_t>(scope);
  r.first = static_cast<size_t>(std::lower_bound(anchors.begin(), anchors.end(), static_cast<size_t>(lo)) - anchors.begin());
  r.last = static_cast<size_t>(std::upper_bound(anchors.begin(), anchors.end(), static_cast<size_t>(hi)) - anchors.begin());
  // Without a range around it, the start or end of a run is no neighbour: two different programs
  // would otherwise match as one region. Within a range (a step) its start or end may bound one
  // side, but a kernel both runs share must bound the other: two different programs whose steps
  // share no kernel would otherwise match as one step run fused.
  if (al.whole_runs && (r.first == 0 || r.last == anchors.size())) return std::nullopt;
  if (r.first == 0 && r.last == anchors.size()) return std::nullopt;
  r.matched_by = "the same neighbouring kernels";
  return r;
}

// Overlapping stretches of one scope become one; each then takes the kernels between its anchors.
std::vector<Region> mergeStretches(const Aligned& al, std::vector<Region> stretches) {
  std::sort(stretches.begin(), stretches.end(), [](const Region& a, const Region& b) {
    return std::tie(a.scope, a.first, a.last) < std::tie(b.scope, b.first, b.last);
  });
  std::vector<Region> merged;
  for (Region& r : stretches) {
    if (!merged.empty() && merged.back().scope == r.scope && r.first <= merged.back().last) {
      Region& m = merged.back();
      m.last = std::max(m.last, r.last);
      for (const auto& [c, n] : r.instances) m.instances[c] += n;
      m.savings.insert(m.savings.end(), r.savings.begin(), r.savings.end());
      continue;
    }
    merged.push_back(std::move(r));
  }
  for (Region& m : merged) {
    const Alignment& a = al.alignments[m.scope];
    const Scope& sc = al.scopes[m.scope];
    const size_t b_begin = m.first == 0 ? 0 : a.base_pos[m.first - 1] + 1;
    const size_t b_end = m.last < a.base_pos.size() ? a.base_pos[m.last] : sc.first.size();
    const size_t c_begin = m.first == 0 ? 0 : a.cur_pos[m.first - 1] + 1;
    const size_t c_end = m.last < a.cur_pos.size() ? a.cur_pos[m.last] : sc.second.size();
    m.base_kernels.assign(sc.first.begin() + static_cast<std::ptrdiff_t>(b_begin),
                          sc.first.begin() + static_cast<std::ptrdiff_t>(std::max(b_begin, b_end)));
    m.cur_kernels.assign(sc.second.begin() + static_cast<std::ptrdiff_t>(c_begin),
                         sc.second.begin() + static_cast<std::ptrdiff_t>(std::max(c_begin, c_end)));
  }
  return merged;
}

// Every instance not matched by op ranges, placed between anchors; a kernel already counted by a
// better ranked candidate's instance is not counted again.
std::vector<Region> regionsByNeighbours(const core::Profile& base, const core::Profile& cur,
                                        const FusionResult& fusion, std::vector<uint8_t>& used,
                                        std::set<size_t>& unchanged, FusionOutcomes& out) {
  const Aligned al = alignScopes(base, cur, out.scope);
  std::vector<Region> stretches;
  std::set<size_t> placed;
  for (size_t c = 0; c < fusion.candidates.size(); ++c) {
    const FusionCandidate& cand = fusion.candidates[c];
    for (size_t i = 0; i < cand.instance_kernels.size(); ++i) {
      const std::vector<size_t>& ks = cand.instance_kernels[i];
      if (std::any_of(ks.begin(), ks.end(), [&](size_t k) { return used[k] != 0; })) continue;
      bool same = false;
      std::optional<Region> r = regionOf(al, ks, same);
      if (same) unchanged.insert(c);
      if (!r) continue;
      for (size_t k : ks) used[k] = 1;
      r->instances[c] = 1;
      r->savings.push_back(i < cand.instance_saving_ns.size() ? cand.instance_saving_ns[i] : std::nullopt);
      placed.insert(c);
      stretches.push_back(std::move(*r));
    }
  }
  for (size_t c : placed) unchanged.erase(c);
  return mergeStretches(al, std::move(stretches));
}

// ---- Outcomes: the regions that lost launches, by the candidates they hold.

// Outcomes that share a candidate are one: its instances were measured in both, so neither saving
// can be told apart from the other.
std::vector<FusionOutcome> mergeSharing(std::map<std::pair<std::vector<size_t>, std::string>, FusionOutcome>& by_set) {
  std::vector<FusionOutcome> merged;
  for (auto& [key, o] : by_set) {
    FusionOutcome* into = nullptr;
    for (FusionOutcome& m : merged) {
      const bool shares = m.matched_by == o.matched_by &&
                          std::any_of(o.candidates.begin(), o.candidates.end(), [&](size_t c) {
                            return std::find(m.candidates.begin(), m.candidates.end(), c) != m.candidates.end();
                          });
      if (shares) into = &m;
    }
    if (!into) {
      merged.push_back(std::move(o));
      continue;
    }
    for (size_t c : o.candidates) {
      if (std::find(into->candidates.begin(), into->candidates.end(), c) == into->candidates.end()) into->candidates.push_back(c);
    }
    std::sort(into->candidates.begin(), into->candidates.end());
    into->instances += o.instances;
    into->regions += o.regions;
    into->launches_before += o.launches_before;
    into->launches_after += o.launches_after;
    into->before_ns += o.before_ns;
    into->after_ns += o.after_ns;
    into->predicted_saving_ns = into->predicted_saving_ns && o.predicted_saving_ns
                                    ? std::optional<double>(*into->predicted_saving_ns + *o.predicted_saving_ns)
                                    : std::nullopt;
  }
  return merged;
}

void addOutcomes(const core::Profile& base, const core::Profile& cur, const std::vector<Region>& regions,
                 FusionOutcomes& out) {
  std::map<std::pair<std::vector<size_t>, std::string>, FusionOutcome> by_set;
  std::set<size_t> not_fused;
  for (const Region& r : regions) {
    std::vector<size_t> set;
    for (const auto& [c, n] : r.instances) set.push_back(c);
    if (r.cur_kernels.size() >= r.base_kernels.size()) {
      not_fused.insert(set.begin(), set.end());
      continue;
    }
    FusionOutcome& o = by_set[{set, r.matched_by}];
    if (o.regions == 0) {
      o.candidates = set;
      o.matched_by = r.matched_by;
      o.predicted_saving_ns = 0.0;
    }
    ++o.regions;
    for (const auto& [c, n] : r.instances) o.instances += n;
    o.launches_before += static_cast<int64_t>(r.base_kernels.size());
    o.launches_after += static_cast<int64_t>(r.cur_kernels.size());
    o.before_ns += kernelNs(base, r.base_kernels);
    o.after_ns += kernelNs(cur, r.cur_kernels);
    for (const std::optional<double>& s : r.savings) {
      o.predicted_saving_ns = s && o.predicted_saving_ns ? std::optional<double>(*o.predicted_saving_ns + *s) : std::nullopt;
    }
  }
  for (FusionOutcome& o : mergeSharing(by_set)) {
    o.measured_saving_ns = o.before_ns - o.after_ns;
    if (o.predicted_saving_ns && o.measured_saving_ns > 0) {
      o.error = (*o.predicted_saving_ns - o.measured_saving_ns) / o.measured_saving_ns;
    }
    for (size_t c : o.candidates) not_fused.erase(c);
    out.applied.push_back(std::move(o));
  }
  out.changed_not_fused = static_cast<int64_t>(not_fused.size());
  std::stable_sort(out.applied.begin(), out.applied.end(), [](const FusionOutcome& a, const FusionOutcome& b) {
    return a.measured_saving_ns > b.measured_saving_ns;
  });
}

// A candidate as an applied fusion names it: a declared pair's id first ("l0.res1: residual add +
// normalization, 2 kernels (add -> layer_norm)").
std::string candidateName(const FusionCandidate& c) {
  const bool declared = c.source == PairSource::kNvtx && c.id != fusionPatternName(c.pattern);
  return declared ? c.id + ": " + c.name : c.name;
}


}  // namespace

FusionOutcomes matchFusionOutcomes(const core::Profile& base, const FusionResult& base_fusion,
                                   const core::Profile& cur) {
  FusionOutcomes out;
  out.candidates = static_cast<int64_t>(base_fusion.candidates.size());
  if (base.meta("mode") != cur.meta("mode")) {
    out.notes.push_back(fmt::format("the runs differ in mode ({} and {}): kernel times under counter replay are not "
                                    "those of a trace, so measured savings compare unlike times",
                                    base.meta("mode", "unknown"), cur.meta("mode", "unknown")));
  }
  if (!base.devices.empty() && !cur.devices.empty() && base.devices.front().name != cur.devices.front().name) {
    out.notes.push_back(fmt::format("the runs ran on different devices ({} and {}): a measured saving includes the "
                                    "devices' difference",
                                    base.devices.front().name, cur.devices.front().name));
  }
  if (base_fusion.candidates.empty()) {
    out.scope = "nothing: the baseline has no fusion candidate";
    return out;
  }
  std::vector<uint8_t> used(base.kernels.size(), 0);
  // 1. Declared pairs by their op ranges; 2. every other instance by its neighbours.
  std::vector<Region> regions;
  std::set<size_t> unchanged;
  regionsByOpRanges(cur, base_fusion, used, regions, unchanged);
  std::vector<Region> stretches = regionsByNeighbours(base, cur, base_fusion, used, unchanged, out);
  out.unchanged = static_cast<int64_t>(unchanged.size());
  regions.insert(regions.end(), std::make_move_iterator(stretches.begin()), std::make_move_iterator(stretches.end()));
  addOutcomes(base, cur, regions, out);
  return out;
}

// The first (best ranked) candidate by name, the others by pattern and size: "attention, 7 kernels
// (...), with attention (8 kernels) and GEMM + epilogue (2 kernels)".
std::string fusionOutcomeName(const FusionOutcome& o, const FusionResult& fusion) {
  std::vector<const FusionCandidate*> cands;
  for (size_t c : o.candidates) {
    if (c < fusion.candidates.size()) cands.push_back(&fusion.candidates[c]);
  }
  if (cands.empty()) return "";
  std::string name = candidateName(*cands.front());
  constexpr size_t kNamedOthers = 3;
  for (size_t i = 1; i < cands.size() && i <= kNamedOthers; ++i) {
    name += i == 1 ? ", with " : (i + 1 == cands.size() || i == kNamedOthers ? " and " : ", ");
    name += fmt::format("{} ({} kernel{})", fusionPatternName(cands[i]->pattern),
                        cands[i]->launches_per_instance, cands[i]->launches_per_instance == 1 ? "" : "s");
  }
  if (cands.size() > kNamedOthers + 1) name += fmt::format(" and {} more", cands.size() - kNamedOthers - 1);
  return name;
}

}  // namespace fprof::analysis
