// Chains of single-reader links (see fusion_chains.h).
#include "fprof/analysis/fusion_chains.h"

namespace fprof::analysis {

void findChains(const std::vector<ChainLink>& links, size_t nodes, const std::vector<uint8_t>& skip,
                const std::function<void(const std::vector<const ChainLink*>& chain, bool other_readers)>& fn) {
  // Single-reader links per node: how many go out and come in, and the link when there is one
  // (flat arrays: a million kernels must not mean a million small vectors).
  constexpr int64_t kNone = -1;
  std::vector<int64_t> out_link(nodes, kNone), in_link(nodes, kNone);
  std::vector<uint8_t> out_count(nodes, 0), in_count(nodes, 0);
  auto skipped = [&](const ChainLink& l) {
    return (!skip.empty() && (skip[l.producer] || skip[l.consumer])) || l.producer == l.consumer;
  };
  for (size_t i = 0; i < links.size(); ++i) {
    const ChainLink& l = links[i];
    if (skipped(l) || l.readers != 1) continue;
    out_link[l.producer] = static_cast<int64_t>(i);
    in_link[l.consumer] = static_cast<int64_t>(i);
    if (out_count[l.producer] < 2) ++out_count[l.producer];
    if (in_count[l.consumer] < 2) ++in_count[l.consumer];
  }
  // The link out of `n` that continues a chain: n's only single-reader link, into a node with no
  // other single-reader producer.
  auto next = [&](size_t n) -> const ChainLink* {
    if (out_count[n] != 1) return nullptr;
    const ChainLink* l = &links[static_cast<size_t>(out_link[n])];
    return in_count[l->consumer] == 1 ? l : nullptr;
  };
  std::vector<const ChainLink*> chain;
  for (size_t n = 0; n < nodes; ++n) {
    const ChainLink* l = next(n);
    if (!l) continue;
    // Start only where no chain comes in.
    if (in_count[n] == 1) {
      const ChainLink* in = &links[static_cast<size_t>(in_link[n])];
      if (next(in->producer) == in) continue;
    }
    chain.clear();
    for (; l; l = next(l->consumer)) {
      chain.push_back(l);
      if (chain.size() > nodes) break;  // a cycle: kernels run in time order, ops may not
    }
    fn(chain, false);
  }
  // A consumer with several single-reader producers: each link is its own pair.
  for (const ChainLink& l : links) {
    if (skipped(l) || l.readers != 1 || in_count[l.consumer] <= 1) continue;
    chain.assign(1, &l);
    fn(chain, false);
  }
  // A value other nodes read too: still written when fused.
  for (const ChainLink& l : links) {
    if (skipped(l) || l.readers == 1) continue;
    chain.assign(1, &l);
    fn(chain, true);
  }
}

}  // namespace fprof::analysis
