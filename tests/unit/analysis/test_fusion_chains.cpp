// Fusion, the chains step: links whose value no other node was linked to form groups (a chain, a
// consumer with several producers); a group holds at most one matrix multiply, or two around a
// softmax; a value linked to several nodes gives a marked pair per link; links of the same
// producer and consumer are one; skipped nodes, backward links and self-links form nothing.
#include <gtest/gtest.h>

#include "fprof/analysis/fusion_chains.h"

namespace fprof::analysis {
namespace {

struct E {
  size_t producer, consumer;
  int32_t readers;
  int32_t linked = -1;  // -1: as many as readers
};

std::vector<ChainLink> linksOf(const std::vector<E>& edges) {
  return groupLinks(
      edges.size(), [&](size_t i) { return edges[i].producer; }, [&](size_t i) { return edges[i].consumer; },
      [&](size_t i) { return edges[i].readers; },
      [&](size_t i) { return edges[i].linked < 0 ? edges[i].readers : edges[i].linked; });
}

struct Group {
  std::vector<size_t> nodes;
  std::vector<std::pair<size_t, size_t>> links;
  bool marked = false;
  bool operator==(const Group&) const = default;
};

std::vector<Group> groupsOf(const std::vector<ChainLink>& links, size_t n, const std::vector<uint8_t>& skip,
                            const std::function<NodeKind(size_t)>& kind = {}) {
  std::vector<Group> out;
  findChains(links, n, skip, kind, [&](const ChainGroup& g) {
    Group x{g.nodes, {}, g.other_readers};
    for (const ChainLink* l : g.links) x.links.emplace_back(l->producer, l->consumer);
    out.push_back(x);
  });
  return out;
}

TEST(Chains, SingleReaderLinksChainUp) {
  const auto links = linksOf({{0, 1, 1}, {1, 2, 1}, {2, 3, 1}, {5, 6, 1}});
  EXPECT_EQ(groupsOf(links, 7, {}),
            (std::vector<Group>{{{0, 1, 2, 3}, {{0, 1}, {1, 2}, {2, 3}}, false}, {{5, 6}, {{5, 6}}, false}}));
}

TEST(Chains, EdgesOfOneProducerAndConsumerAreOneLink) {
  // Node 0 wrote two buffers node 1 read (LayerNorm's output and statistics, say).
  const auto links = linksOf({{0, 1, 1}, {0, 1, 1}, {1, 2, 1}});
  ASSERT_EQ(links.size(), 2u);
  EXPECT_EQ(links[0].count, 2u);
  EXPECT_EQ(groupsOf(links, 3, {}), (std::vector<Group>{{{0, 1, 2}, {{0, 1}, {1, 2}}, false}}));
}

TEST(Chains, AConsumerWithTwoProducersIsOneGroup) {
  // GPT-2's gelu_new: h = 0.5 * x (node 0) and t = 1 + tanh(...) (nodes 1 -> 2) meet in h * t (3).
  const auto links = linksOf({{1, 2, 1}, {0, 3, 1}, {2, 3, 1}});
  EXPECT_EQ(groupsOf(links, 4, {}), (std::vector<Group>{{{0, 1, 2, 3}, {{1, 2}, {0, 3}, {2, 3}}, false}}));
}

TEST(Chains, AValueLinkedToSeveralNodesIsAMarkedPairPerLink) {
  // 0's output is read by 1 and 2 (a residual): each link is a pair that would still write it.
  const auto links = linksOf({{0, 1, 2}, {0, 2, 2}, {2, 3, 1}});
  EXPECT_EQ(groupsOf(links, 4, {}),
            (std::vector<Group>{{{2, 3}, {{2, 3}}, false}, {{0, 1}, {{0, 1}}, true}, {{0, 2}, {{0, 2}}, true}}));
  EXPECT_FALSE(links[0].writeRemoved());
}

TEST(Chains, AReaderWithoutALinkKeepsTheGroupButNotTheWrite) {
  // 0's value is linked to 1 only; a kernel on another stream (or after an opaque kernel) read
  // it too: 0 and 1 fuse, and the value is still written.
  const auto links = linksOf({{0, 1, 2, 1}, {1, 2, 1}});
  EXPECT_EQ(groupsOf(links, 3, {}), (std::vector<Group>{{{0, 1, 2}, {{0, 1}, {1, 2}}, false}}));
  EXPECT_FALSE(links[0].writeRemoved());
  EXPECT_TRUE(links[1].writeRemoved());
}

TEST(Chains, AGroupHoldsOneMatmulOrTwoAroundASoftmax) {
  // MLP: gemm(0) -> bias add(1) -> gelu(2) -> gemm(3) -> residual add(4): the second GEMM starts
  // a group of its own. Attention: gemm(5) -> scale(6) -> softmax(7) -> gemm(8) -> copy(9) ->
  // gemm(10): the two GEMMs around the softmax fuse (flash attention), a third does not.
  auto kind = [](size_t n) {
    if (n == 0 || n == 3 || n == 5 || n == 8 || n == 10) return NodeKind::kMatmul;
    return n == 7 ? NodeKind::kSoftmax : NodeKind::kOther;
  };
  const auto mlp = linksOf({{0, 1, 1}, {1, 2, 1}, {2, 3, 1}, {3, 4, 1}});
  EXPECT_EQ(groupsOf(mlp, 5, {}, kind),
            (std::vector<Group>{{{0, 1, 2}, {{0, 1}, {1, 2}}, false}, {{3, 4}, {{3, 4}}, false}}));
  const auto attention = linksOf({{5, 6, 1}, {6, 7, 1}, {7, 8, 1}, {8, 9, 1}, {9, 10, 1}});
  EXPECT_EQ(groupsOf(attention, 11, {}, kind),
            (std::vector<Group>{{{5, 6, 7, 8, 9}, {{5, 6}, {6, 7}, {7, 8}, {8, 9}}, false}}));
  // Two matmuls linked directly are no pair, marked or not.
  EXPECT_TRUE(groupsOf(linksOf({{0, 3, 2}}), 4, {}, kind).empty());
}

TEST(Chains, SkippedNodesBackwardLinksAndSelfLinksFormNothing) {
  const auto links = linksOf({{0, 1, 1}, {1, 2, 1}});
  EXPECT_EQ(groupsOf(links, 3, {0, 1, 0}), std::vector<Group>{});
  // Ops need not be listed in order: a ring of links has a backward one, left out.
  const auto ring = linksOf({{1, 0, 1}, {0, 1, 1}});
  EXPECT_EQ(groupsOf(ring, 2, {}), (std::vector<Group>{{{0, 1}, {{0, 1}}, false}}));
  EXPECT_EQ(groupsOf(linksOf({{1, 1, 1}}), 2, {}), std::vector<Group>{});
}

TEST(Chains, NodeKindsFromNames) {
  EXPECT_EQ(nodeKindFromName("nvjet_sm90_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN"), NodeKind::kMatmul);
  EXPECT_EQ(nodeKindFromName("void cutlass::Kernel2<cutlass_75_tensorop_f16_s1688gemm_f16_128x128_tn>(Params)"),
            NodeKind::kMatmul);
  EXPECT_EQ(nodeKindFromName("aten::bmm"), NodeKind::kMatmul);
  EXPECT_EQ(nodeKindFromName("aten::softmax"), NodeKind::kSoftmax);
  EXPECT_EQ(nodeKindFromName("void (anonymous namespace)::softmax_warp_forward<c10::Half, c10::Half, float, 8, "
                             "false, false>(c10::Half*, c10::Half const*, int, int, int, bool const*, int, bool)"),
            NodeKind::kSoftmax);
  EXPECT_EQ(nodeKindFromName("aten::add"), NodeKind::kOther);
  EXPECT_EQ(nodeKindFromName("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::"
                             "Half>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::Half>, "
                             "std::array<char*, 3ul>)"),
            NodeKind::kOther);
}

}  // namespace
}  // namespace fprof::analysis
