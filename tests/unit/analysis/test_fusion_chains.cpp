// Fusion, the chains step: links whose value no other node was linked to form groups (a chain, a
// consumer with several producers); a group holds at most one matrix multiply, or two around a
// softmax; a value linked to several nodes gives a marked pair per link; links of the same
// producer and consumer are one; skipped nodes, backward links and self-links form nothing.
#include <gtest/gtest.h>

#include "fprof/analysis/fusion_chains.h"

#include <string_view>

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

void PrintTo(const Group& g, std::ostream* os) {
  *os << "{nodes";
  for (size_t n : g.nodes) *os << ' ' << n;
  *os << ", links";
  for (const auto& [p, c] : g.links) *os << ' ' << p << "->" << c;
  *os << (g.marked ? ", marked}" : "}");
}

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

// Kinds of a transformer layer, for the tests below (G matmul, S softmax, L LayerNorm, C copy).
std::function<NodeKind(size_t)> kindsOf(std::string_view letters) {
  return [letters](size_t n) {
    switch (letters[n]) {
      case 'G': return NodeKind::kMatmul;
      case 'S': return NodeKind::kSoftmax;
      case 'L': return NodeKind::kRowNorm;
      case 'C': return NodeKind::kCopy;
      default: return NodeKind::kOther;
    }
  };
}

TEST(Chains, AMatmulTakesNoPrologue) {
  // LayerNorm(0) -> GEMM(1) -> bias add(2) -> GELU(3): the GEMM starts the group, the LayerNorm
  // stays out (a GEMM reads its operands from memory; a norm is no GEMM epilogue either).
  const auto links = linksOf({{0, 1, 1}, {1, 2, 1}, {2, 3, 1}});
  EXPECT_EQ(groupsOf(links, 4, {}, kindsOf("LGAU")), (std::vector<Group>{{{1, 2, 3}, {{1, 2}, {2, 3}}, false}}));
  // Without kinds (all pointwise) the same links are one chain: the rule is the GEMM's.
  EXPECT_EQ(groupsOf(links, 4, {}).size(), 1u);
  EXPECT_EQ(groupsOf(links, 4, {})[0].nodes.size(), 4u);
  // A copy into a GEMM outside attention stays out too.
  EXPECT_TRUE(groupsOf(linksOf({{0, 1, 1}}), 2, {}, kindsOf("CG")).empty());
}

TEST(Chains, ARowNormalizationJoinsTheMemoryBoundChainNotTheGemm) {
  // GEMM(0) -> residual add(1) -> LayerNorm(2): add + LayerNorm fuse (one pass over the row); the
  // GEMM's epilogue would put a row reduction after a tile of part of the row, so it is left out.
  const auto links = linksOf({{0, 1, 1}, {1, 2, 1}});
  EXPECT_EQ(groupsOf(links, 3, {}, kindsOf("GAL")), (std::vector<Group>{{{1, 2}, {{1, 2}}, false}}));
  // The same GEMM -> add with the sum read by two (a residual stream): the add is the GEMM's
  // epilogue, and add -> LayerNorm a marked pair.
  const auto residual = linksOf({{0, 1, 1}, {1, 2, 2}, {1, 3, 2}});
  EXPECT_EQ(groupsOf(residual, 4, {}, kindsOf("GALA")),
            (std::vector<Group>{{{0, 1}, {{0, 1}}, false}, {{1, 2}, {{1, 2}}, true}, {{1, 3}, {{1, 3}}, true}}));
  // A marked pair of a GEMM and a LayerNorm is no pair either.
  EXPECT_TRUE(groupsOf(linksOf({{0, 1, 2}, {0, 2, 2}}), 3, {}, kindsOf("LGG")).empty());
}

TEST(Chains, AttentionTakesItsLayoutCopiesAndNotTheNextGemm) {
  // qkv GEMM(0) -> q copy(1); k copy(2); QK^T(3) <- 1, 2; scale(4); mask add(5); softmax(6);
  // v copy(7); PV(8) <- 6, 7; output copy(9); projection GEMM(10) <- 9. Flash attention reads
  // q, k, v strided and writes its output's layout: copies 1, 2, 7, 9 belong to it; the qkv and
  // projection GEMMs do not (three matrix multiplies), so 0 -> 1 and 9 -> 10 are left out.
  const auto links = linksOf({{0, 1, 1}, {1, 3, 1}, {2, 3, 1}, {3, 4, 1}, {4, 5, 1}, {5, 6, 1}, {6, 8, 1},
                              {7, 8, 1}, {8, 9, 1}, {9, 10, 1}});
  const auto groups = groupsOf(links, 11, {}, kindsOf("GCCGMASCGCG"));
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].nodes, (std::vector<size_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  // Two GEMMs with a softmax are attention only together: a softmax group feeding the projection
  // after PV joined it would be three.
  EXPECT_EQ(groups[0].links.size(), 8u);
}

TEST(Chains, APairWhoseConsumerAlsoNeedsItThroughTheKernelsBetweenIsNone) {
  // Residual add(0) read by LayerNorm(1) and by the next residual add(4), which also reads the
  // block's output 1 -> GEMM(2) -> GELU(3) -> 4: 0 and 4 cannot be one kernel without 1..3.
  const auto links = linksOf({{0, 1, 2}, {1, 2, 1}, {2, 3, 1}, {0, 4, 2}, {3, 4, 1}});
  const auto groups = groupsOf(links, 5, {}, kindsOf("ALGUA"));
  EXPECT_EQ(groups, (std::vector<Group>{{{2, 3, 4}, {{2, 3}, {3, 4}}, false}, {{0, 1}, {{0, 1}}, true}}));
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
  EXPECT_EQ(nodeKindFromName("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, "
                             "float, false>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 "
                             "const*, float*, float*, c10::BFloat16*)"),
            NodeKind::kRowNorm);
  EXPECT_EQ(nodeKindFromName("aten::layer_norm"), NodeKind::kRowNorm);
  EXPECT_EQ(nodeKindFromName("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::"
                             "native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
                             "const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16)#1}>(at::"
                             "TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::"
                             "{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::"
                             "BFloat16)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<...>)"),
            NodeKind::kCopy);
  EXPECT_EQ(nodeKindFromName("aten::contiguous"), NodeKind::kCopy);
  // A concatenation (a KV cache growing) is no layout copy: SDPA keeps it.
  EXPECT_EQ(nodeKindFromName("void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous "
                             "namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>(...)"),
            NodeKind::kOther);
  EXPECT_EQ(nodeKindFromName("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::"
                             "Half>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::Half>, "
                             "std::array<char*, 3ul>)"),
            NodeKind::kOther);
}

}  // namespace
}  // namespace fprof::analysis
