// Fusion, the chains step (docs/analysis.md, "Op pairs and fusion payoff"): which producer ->
// consumer links form a chain worth fusing. The same rule serves kernels linked by data flow
// (dataflow.h) and framework ops linked by PyTorch's emit_nvtx input_op_ids (framework_ops.h):
//   - a chain A -> B -> C follows links whose value has exactly one reader and whose consumer has
//     exactly one such producer;
//   - a consumer fed by several single-reader producers gives one pair per link;
//   - a link whose value other nodes read too is a pair of its own, marked: the intermediate would
//     still be written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace fprof::analysis {

// All the edges between one producer and one consumer (several buffers, or several inputs fed by
// the same output), as one link.
struct ChainLink {
  size_t producer = 0;  // node indices: kernels, or framework ops
  size_t consumer = 0;
  int32_t readers = 0;  // the most readers of any value passed
  size_t first = 0;     // the edges [first, first + count) of the caller's list
  size_t count = 0;
};

// Edges sorted by consumer with a consumer's edges adjacent, as dataflow.h and framework_ops.h
// list them: consecutive edges with the same (producer, consumer) become one link.
// `producer(i)`, `consumer(i)`, `readers(i)` describe edge i of `edge_count`.
template <typename Producer, typename Consumer, typename Readers>
std::vector<ChainLink> groupLinks(size_t edge_count, Producer&& producer, Consumer&& consumer, Readers&& readers) {
  std::vector<ChainLink> links;
  for (size_t i = 0; i < edge_count; ++i) {
    const size_t p = producer(i), c = consumer(i);
    // A consumer's edges are adjacent, but one producer may appear twice among them.
    ChainLink* same = nullptr;
    for (size_t j = links.size(); j-- > 0 && links[j].consumer == c;) {
      if (links[j].producer == p) same = &links[j];
    }
    if (same && same->first + same->count == i) {
      ++same->count;
      if (readers(i) > same->readers) same->readers = readers(i);
      continue;
    }
    links.push_back({p, c, readers(i), i, 1});
  }
  return links;
}

// Calls fn(chain, other_readers) for each chain among `links` over `nodes` nodes: its links in
// order (the first link's producer, then each link's consumer, are its stages); other_readers
// marks a single link whose value others read too. Links touching a node marked in `skip` are
// left out (nodes another source already pairs). `chain` is only valid during the call.
void findChains(const std::vector<ChainLink>& links, size_t nodes, const std::vector<uint8_t>& skip,
                const std::function<void(const std::vector<const ChainLink*>& chain, bool other_readers)>& fn);

}  // namespace fprof::analysis
