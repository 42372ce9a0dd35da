// Fusion, the chains step (docs/analysis.md, "Op pairs and fusion payoff"): which producer ->
// consumer links form a group worth fusing. The same rule serves kernels linked by data flow
// (dataflow.h) and framework ops linked by PyTorch's emit_nvtx input_op_ids (framework_ops.h):
//   - a link whose value reached no other node through a link of its own (`linked` == 1) joins
//     its producer and consumer in one group; a group is a connected set of such links, so a
//     consumer with two producers (GPT-2's gelu_new: 0.5 * x and 1 + tanh(...) meet in one
//     multiply) is one group, not two pairs;
//   - links join in passes that follow what fused kernels do: first those between memory-bound
//     ops (pointwise, copies, reductions), then attention's (a matrix multiply into a group with
//     a softmax, QK^T; a group with a softmax into a matrix multiply, PV), then layout copies into
//     attention's matrix multiplies (flash kernels read strided q, k, v), last a matrix multiply's
//     epilogue (its output into anything else). A matrix multiply takes no other prologue: any
//     other link into one is left out (a GEMM reads its operands from memory);
//   - a group holds at most one matrix multiply, or two with a softmax (attention), and never a
//     matrix multiply with a row normalization (LayerNorm, RMSNorm: a GEMM's output tile holds
//     part of a row); a link that would break this is left out;
//   - a link whose value other nodes were linked to as well is a pair of its own, marked: the
//     intermediate is read elsewhere, so the fused kernel would still write it. Not where the
//     rules above forbid the two in one group, nor where the consumer also needs the producer's
//     value through kernels launched between them (residual add -> the next residual add). Within a group, an
//     intermediate with readers that formed no link (another stream, or after an opaque kernel)
//     is still written too: `readers` counts every reader, `linked` only those linked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace fprof::analysis {

// All the edges between one producer and one consumer (several buffers, or several inputs fed by
// the same output), as one link.
struct ChainLink {
  size_t producer = 0;  // node indices: kernels, or framework ops
  size_t consumer = 0;
  int32_t readers = 0;  // the most readers of any value passed (any kernel that read it)
  int32_t linked = 0;   // the most nodes any value passed was linked to (readers on its stream, in order)
  size_t first = 0;     // the edges [first, first + count) of the caller's list
  size_t count = 0;
  bool writeRemoved() const { return readers == 1; }  // only the consumer reads it
};

// Edges sorted by consumer with a consumer's edges adjacent, as dataflow.h and framework_ops.h
// list them: consecutive edges with the same (producer, consumer) become one link.
// `producer(i)`, `consumer(i)`, `readers(i)`, `linked(i)` describe edge i of `edge_count`.
template <typename Producer, typename Consumer, typename Readers, typename Linked>
std::vector<ChainLink> groupLinks(size_t edge_count, Producer&& producer, Consumer&& consumer, Readers&& readers,
                                  Linked&& linked) {
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
      if (linked(i) > same->linked) same->linked = linked(i);
      continue;
    }
    links.push_back({p, c, readers(i), linked(i), i, 1});
  }
  return links;
}

// What a node is, for the grouping rules (from its kernel's or op's name).
enum class NodeKind : uint8_t { kOther, kMatmul, kSoftmax, kRowNorm, kCopy };

// One group: its nodes in ascending order (kernels: launch order) and its links, each link's
// producer and consumer among the nodes. `other_readers` marks a single link whose value other
// nodes were linked to as well. Only valid during the callback.
struct ChainGroup {
  std::vector<size_t> nodes;
  std::vector<const ChainLink*> links;
  bool other_readers = false;
};

// Calls fn for each group among `links` over `nodes` nodes (the rules at the top of this file).
// Links touching a node marked in `skip` are left out (nodes another source already pairs), and so
// are links that do not go forward (producer index >= consumer index: ops need not be listed in
// order, and a self-link is no pair). `kind(node)` classifies nodes; empty: all kOther.
void findChains(const std::vector<ChainLink>& links, size_t nodes, const std::vector<uint8_t>& skip,
                const std::function<NodeKind(size_t)>& kind, const std::function<void(const ChainGroup&)>& fn);

// A kernel's or op's kind from its name: cuBLAS/cuBLASLt/CUTLASS/cuDNN kernels, names with gemm or
// gemv, and aten's mm, bmm, addmm, baddbmm, matmul, linear, _addmm_activation are matrix
// multiplies; a name containing "softmax" is a softmax; layer_norm, LayerNorm, rms_norm, RMSNorm
// a row normalization; PyTorch's direct_copy_kernel and aten::contiguous, clone, copy_ a layout copy.
NodeKind nodeKindFromName(std::string_view name);

}  // namespace fprof::analysis
