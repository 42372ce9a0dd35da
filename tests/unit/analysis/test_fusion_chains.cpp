// Fusion, the chains step: single-reader links chain up; a consumer with several producers gives
// a pair per link; a value with other readers is a marked pair; links of the same producer and
// consumer are one; skipped nodes and cycles.
#include <gtest/gtest.h>

#include "fprof/analysis/fusion_chains.h"

namespace fprof::analysis {
namespace {

struct E {
  size_t producer, consumer;
  int32_t readers;
};

std::vector<ChainLink> linksOf(const std::vector<E>& edges) {
  return groupLinks(edges.size(), [&](size_t i) { return edges[i].producer; },
                    [&](size_t i) { return edges[i].consumer; }, [&](size_t i) { return edges[i].readers; });
}

// Each chain as its node sequence, and whether it is marked.
std::vector<std::pair<std::vector<size_t>, bool>> chainsOf(const std::vector<ChainLink>& links, size_t n,
                                                           const std::vector<uint8_t>& skip) {
  std::vector<std::pair<std::vector<size_t>, bool>> out;
  findChains(links, n, skip, [&](const std::vector<const ChainLink*>& chain, bool other_readers) {
    std::vector<size_t> nodes = {chain.front()->producer};
    for (const ChainLink* l : chain) nodes.push_back(l->consumer);
    out.emplace_back(nodes, other_readers);
  });
  return out;
}

using Expected = std::vector<std::pair<std::vector<size_t>, bool>>;

TEST(Chains, SingleReaderLinksChainUp) {
  const auto links = linksOf({{0, 1, 1}, {1, 2, 1}, {2, 3, 1}, {5, 6, 1}});
  EXPECT_EQ(chainsOf(links, 7, {}), (Expected{{{0, 1, 2, 3}, false}, {{5, 6}, false}}));
}

TEST(Chains, EdgesOfOneProducerAndConsumerAreOneLink) {
  // Node 0 wrote two buffers node 1 read (LayerNorm's output and statistics, say).
  const auto links = linksOf({{0, 1, 1}, {0, 1, 1}, {1, 2, 1}});
  ASSERT_EQ(links.size(), 2u);
  EXPECT_EQ(links[0].count, 2u);
  EXPECT_EQ(chainsOf(links, 3, {}), (Expected{{{0, 1, 2}, false}}));
}

TEST(Chains, AConsumerWithTwoProducersGivesAPairEach) {
  const auto links = linksOf({{0, 2, 1}, {1, 2, 1}});
  EXPECT_EQ(chainsOf(links, 3, {}), (Expected{{{0, 2}, false}, {{1, 2}, false}}));
}

TEST(Chains, AValueWithOtherReadersIsAMarkedPair) {
  // 0's output is read by 1 and 2 (a residual): each link is a pair that would still write it.
  const auto links = linksOf({{0, 1, 2}, {0, 2, 2}, {2, 3, 1}});
  EXPECT_EQ(chainsOf(links, 4, {}), (Expected{{{2, 3}, false}, {{0, 1}, true}, {{0, 2}, true}}));
}

TEST(Chains, SkippedNodesAndCyclesFormNoChain) {
  const auto links = linksOf({{0, 1, 1}, {1, 2, 1}});
  EXPECT_EQ(chainsOf(links, 3, {0, 1, 0}), Expected{});
  // Ops need not run in order: a ring of single-reader links has no start.
  const auto ring = linksOf({{1, 0, 1}, {0, 1, 1}});
  EXPECT_EQ(chainsOf(ring, 2, {}), Expected{});
}

}  // namespace
}  // namespace fprof::analysis
