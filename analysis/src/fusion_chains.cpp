// Groups of producer -> consumer links (see fusion_chains.h).
#include "fprof/analysis/fusion_chains.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <unordered_map>

#include "fprof/analysis/origin.h"

namespace fprof::analysis {

namespace {

// Union-find over nodes, each root keeping what the matmul rule needs.
class Groups {
 public:
  Groups(size_t nodes, const std::function<NodeKind(size_t)>& kind) : parent_(nodes), kind_(kind) {
    for (size_t i = 0; i < nodes; ++i) parent_[i] = i;
  }

  size_t root(size_t n) {
    while (parent_[n] != n) n = parent_[n] = parent_[parent_[n]];
    return n;
  }

  // Joins the groups of a and b unless the result would hold more than one matrix multiply, or
  // two without a softmax (attention's pattern); false if refused.
  bool join(size_t a, size_t b) {
    size_t ra = root(a), rb = root(b);
    if (ra == rb) return true;
    Facts fa = facts(ra), fb = facts(rb);
    const int matmuls = fa.matmuls + fb.matmuls;
    const bool softmax = fa.softmax || fb.softmax;
    if (matmuls > 2 || (matmuls == 2 && !softmax)) return false;
    if (ra > rb) std::swap(ra, rb);
    parent_[rb] = ra;
    facts_[ra] = {matmuls, softmax};
    return true;
  }

 private:
  struct Facts {
    int matmuls = 0;
    bool softmax = false;
  };
  Facts facts(size_t r) {
    const auto f = facts_.find(r);
    if (f != facts_.end()) return f->second;
    const NodeKind k = kind_ ? kind_(r) : NodeKind::kOther;
    return {k == NodeKind::kMatmul ? 1 : 0, k == NodeKind::kSoftmax};
  }
  std::vector<size_t> parent_;
  const std::function<NodeKind(size_t)>& kind_;
  std::unordered_map<size_t, Facts> facts_;  // roots of groups of two or more nodes
};

}  // namespace

void findChains(const std::vector<ChainLink>& links, size_t nodes, const std::vector<uint8_t>& skip,
                const std::function<NodeKind(size_t)>& kind, const std::function<void(const ChainGroup&)>& fn) {
  auto usable = [&](const ChainLink& l) {
    return l.producer < l.consumer && l.consumer < nodes && (skip.empty() || (!skip[l.producer] && !skip[l.consumer]));
  };
  auto matmul = [&](size_t n) { return kind && kind(n) == NodeKind::kMatmul; };
  // Links whose value no other node was linked to join groups, in the order given (by consumer).
  Groups groups(nodes, kind);
  std::vector<size_t> grouped;  // link indices
  for (size_t i = 0; i < links.size(); ++i) {
    const ChainLink& l = links[i];
    if (!usable(l) || l.linked != 1) continue;
    if (groups.join(l.producer, l.consumer)) grouped.push_back(i);
  }
  // Each group's links, then its nodes, in ascending order of the group's first node.
  std::vector<std::pair<size_t, size_t>> by_root;  // (root, link index)
  by_root.reserve(grouped.size());
  for (size_t i : grouped) by_root.emplace_back(groups.root(links[i].producer), i);
  std::stable_sort(by_root.begin(), by_root.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  ChainGroup g;
  for (size_t at = 0; at < by_root.size();) {
    size_t end = at;
    g.links.clear();
    g.nodes.clear();
    for (; end < by_root.size() && by_root[end].first == by_root[at].first; ++end) {
      const ChainLink& l = links[by_root[end].second];
      g.links.push_back(&l);
      g.nodes.push_back(l.producer);
      g.nodes.push_back(l.consumer);
    }
    std::sort(g.nodes.begin(), g.nodes.end());
    g.nodes.erase(std::unique(g.nodes.begin(), g.nodes.end()), g.nodes.end());
    g.other_readers = false;
    fn(g);
    at = end;
  }
  // A value other nodes were linked to as well: each of its links is a pair that still writes it.
  for (const ChainLink& l : links) {
    if (!usable(l) || l.linked == 1 || (matmul(l.producer) && matmul(l.consumer))) continue;
    g.links.assign(1, &l);
    g.nodes = {l.producer, l.consumer};
    g.other_readers = true;
    fn(g);
  }
}

NodeKind nodeKindFromName(std::string_view name) {
  auto has = [&](std::string_view s) { return name.find(s) != std::string_view::npos; };
  if (has("softmax") || has("Softmax")) return NodeKind::kSoftmax;
  static constexpr std::array<std::string_view, 7> kOps = {"aten::mm",     "aten::bmm",    "aten::addmm",
                                                           "aten::baddbmm", "aten::matmul", "aten::linear",
                                                           "aten::_addmm_activation"};
  for (std::string_view op : kOps) {
    if (name == op) return NodeKind::kMatmul;
  }
  if (has("gemm") || has("gemv") || has("Gemm") || has("Gemv")) return NodeKind::kMatmul;
  const Origin o = classifyOrigin(name);
  if (o == Origin::kCublas || o == Origin::kCutlass || o == Origin::kCudnn) return NodeKind::kMatmul;
  return NodeKind::kOther;
}

}  // namespace fprof::analysis
