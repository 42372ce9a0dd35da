// Groups of producer -> consumer links (see fusion_chains.h).
#include "fprof/analysis/fusion_chains.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <unordered_map>

#include "fprof/analysis/origin.h"

namespace fprof::analysis {

namespace {

// Union-find over nodes, each root keeping what the rules on matrix multiplies need.
class Groups {
 public:
  Groups(size_t nodes, const std::function<NodeKind(size_t)>& kind) : parent_(nodes), kind_(kind) {
    for (size_t i = 0; i < nodes; ++i) parent_[i] = i;
  }

  size_t root(size_t n) {
    while (parent_[n] != n) n = parent_[n] = parent_[parent_[n]];
    return n;
  }

  bool hasSoftmax(size_t n) { return facts(root(n)).softmax; }
  bool onlyCopies(size_t n) { return facts(root(n)).only_copies; }

  // Joins the groups of a and b unless the result would hold more than two matrix multiplies, two
  // without a softmax (attention's pattern), or a matrix multiply and a row normalization; false
  // if refused.
  bool join(size_t a, size_t b) {
    size_t ra = root(a), rb = root(b);
    if (ra == rb) return true;
    const Facts fa = facts(ra), fb = facts(rb);
    const Facts f{fa.matmuls + fb.matmuls, fa.softmax || fb.softmax, fa.norm || fb.norm,
                  fa.only_copies && fb.only_copies};
    if (f.matmuls > 2 || (f.matmuls == 2 && !f.softmax) || (f.norm && f.matmuls > 0)) return false;
    if (ra > rb) std::swap(ra, rb);
    parent_[rb] = ra;
    facts_[ra] = f;
    return true;
  }

 private:
  struct Facts {
    int matmuls = 0;
    bool softmax = false;
    bool norm = false;
    bool only_copies = false;
  };
  Facts facts(size_t r) {
    const auto f = facts_.find(r);
    if (f != facts_.end()) return f->second;
    const NodeKind k = kind_ ? kind_(r) : NodeKind::kOther;
    return {k == NodeKind::kMatmul ? 1 : 0, k == NodeKind::kSoftmax, k == NodeKind::kRowNorm, k == NodeKind::kCopy};
  }
  std::vector<size_t> parent_;
  const std::function<NodeKind(size_t)>& kind_;
  std::unordered_map<size_t, Facts> facts_;  // roots of groups of two or more nodes
};

// The passes in which group links join, in this order (fusion_chains.h): what fused kernels do.
enum class Pass : uint8_t {
  kMemoryBound,  // neither end a matrix multiply: pointwise ops, copies, reductions
  kAttention,    // into a group with a softmax from a matrix multiply (QK^T), or from one into a matrix multiply (PV)
  kLayoutCopy,   // a layout copy into attention's matrix multiply (flash kernels read strided operands)
  kEpilogue,     // from a matrix multiply into anything else
};

// Whether the link from p to c joins in this pass.
bool joinsIn(Pass pass, size_t p, size_t c, Groups& groups, const std::function<bool(size_t)>& matmul) {
  const bool into = matmul(c), from = matmul(p);
  switch (pass) {
    case Pass::kMemoryBound: return !into && !from;
    case Pass::kAttention: return (into && !from && groups.hasSoftmax(p)) || (from && !into && groups.hasSoftmax(c));
    case Pass::kLayoutCopy: return into && !from && groups.onlyCopies(p) && groups.hasSoftmax(c);
    case Pass::kEpilogue: return from && !into;
  }
  return false;
}

// Whether c depends on p through another of c's producers as well (p -> q -> ... -> c, all
// launched between them): fusing p and c alone cannot be done, the kernels between need p's
// output and c needs theirs (a residual add and the next residual add, a block apart).
class Reach {
 public:
  Reach(const std::vector<ChainLink>& links, size_t nodes) : out_(nodes), seen_(nodes, 0) {
    for (const ChainLink& l : links) {
      if (l.producer < l.consumer && l.consumer < nodes) out_[l.producer].push_back(l.consumer);
    }
  }

  bool indirect(size_t p, size_t c) {
    ++stamp_;
    stack_.clear();
    for (size_t n : out_[p]) {
      if (n < c && seen_[n] != stamp_) {
        seen_[n] = stamp_;
        stack_.push_back(n);
      }
    }
    while (!stack_.empty()) {
      const size_t n = stack_.back();
      stack_.pop_back();
      for (size_t m : out_[n]) {
        if (m == c) return true;
        if (m < c && seen_[m] != stamp_) {
          seen_[m] = stamp_;
          stack_.push_back(m);
        }
      }
    }
    return false;
  }

 private:
  std::vector<std::vector<size_t>> out_;
  std::vector<uint32_t> seen_;
  uint32_t stamp_ = 0;
  std::vector<size_t> stack_;
};

}  // namespace

void findChains(const std::vector<ChainLink>& links, size_t nodes, const std::vector<uint8_t>& skip,
                const std::function<NodeKind(size_t)>& kind, const std::function<void(const ChainGroup&)>& fn) {
  auto usable = [&](const ChainLink& l) {
    return l.producer < l.consumer && l.consumer < nodes && (skip.empty() || (!skip[l.producer] && !skip[l.consumer]));
  };
  auto is = [&](size_t n, NodeKind k) { return kind && kind(n) == k; };
  const std::function<bool(size_t)> matmul = [&](size_t n) { return is(n, NodeKind::kMatmul); };
  // Links whose value no other node was linked to join groups, pass by pass, each pass in the
  // order given (by consumer).
  Groups groups(nodes, kind);
  std::vector<size_t> grouped;  // link indices
  std::vector<uint8_t> done(links.size(), 0);
  for (Pass pass : {Pass::kMemoryBound, Pass::kAttention, Pass::kLayoutCopy, Pass::kEpilogue}) {
    for (size_t i = 0; i < links.size(); ++i) {
      const ChainLink& l = links[i];
      if (done[i] || !usable(l) || l.linked != 1 || !joinsIn(pass, l.producer, l.consumer, groups, matmul)) continue;
      done[i] = 1;
      if (groups.join(l.producer, l.consumer)) grouped.push_back(i);
    }
  }
  std::sort(grouped.begin(), grouped.end());  // each group's links in the order given
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
  // A value other nodes were linked to as well: each of its links is a pair that still writes it,
  // where the two could be one kernel: not into a matrix multiply (except from a softmax), not a
  // matrix multiply and a row normalization, and not a consumer that also needs the producer's
  // value through the kernels between.
  Reach reach(links, nodes);
  for (const ChainLink& l : links) {
    if (!usable(l) || l.linked == 1) continue;
    const size_t p = l.producer, c = l.consumer;
    if (matmul(c) && !is(p, NodeKind::kSoftmax)) continue;
    if ((matmul(p) && is(c, NodeKind::kRowNorm)) || (is(p, NodeKind::kRowNorm) && matmul(c))) continue;
    if (reach.indirect(p, c)) continue;
    g.links.assign(1, &l);
    g.nodes = {p, c};
    g.other_readers = true;
    fn(g);
  }
}

NodeKind nodeKindFromName(std::string_view name) {
  auto has = [&](std::string_view s) { return name.find(s) != std::string_view::npos; };
  if (has("softmax") || has("Softmax")) return NodeKind::kSoftmax;
  if (has("layer_norm") || has("LayerNorm") || has("rms_norm") || has("RMSNorm")) return NodeKind::kRowNorm;
  if (has("direct_copy_kernel") || name == "aten::contiguous" || name == "aten::clone" || name == "aten::copy_") {
    return NodeKind::kCopy;
  }
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
