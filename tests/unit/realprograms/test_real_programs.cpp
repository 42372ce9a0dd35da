// What fprof recorded from real programs on lent GPUs (tests/data/README.md says how each file
// was made): kernels of every layer of the PyTorch stack are there and attributed to their
// origin, Python NVTX op ranges are read as ops, metrics mode profiled only the steady state,
// and each torchrun rank wrote its own file with its rank and NCCL kernels in trace mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include "fprof/analysis/coverage.h"
#include "fprof/analysis/dataflow.h"
#include "fprof/analysis/fusion.h"
#include "fprof/analysis/nvtx_ops.h"
#include "fprof/analysis/origin.h"
#include "fprof/core/store.h"

namespace fprof::analysis {
namespace {

core::Profile load(const std::string& name) {
  auto p = core::loadProfile(std::string(FPROF_SOURCE_DIR) + "/tests/data/" + name);
  EXPECT_TRUE(p) << (p ? "" : p.error());
  return p ? std::move(*p) : core::Profile{};
}

// Launches per origin, and every kernel name with its origin, for messages.
std::map<Origin, int> launchesByOrigin(const core::Profile& p) {
  std::map<Origin, int> n;
  for (const core::KernelRow& k : p.kernels) ++n[classifyOrigin(p.str(k.demangled_id))];
  return n;
}

int countNamed(const core::Profile& p, std::string_view prefix) {
  int n = 0;
  for (const core::KernelRow& k : p.kernels) n += p.str(k.demangled_id).starts_with(prefix) ? 1 : 0;
  return n;
}

TEST(RealPrograms, EagerTransformerKernelsComeFromCublasAtenAndCudnn) {
  const core::Profile p = load("torch_transformer_eager_h100.fprof");
  ASSERT_FALSE(p.kernels.empty());
  auto n = launchesByOrigin(p);
  EXPECT_GT(n[Origin::kCublas], 0) << "nvjet_* GEMMs of the Linear layers";
  EXPECT_GT(n[Origin::kAten], 0) << "layer norm, GELU, adds";
  // SDPA on sm_90 runs cuDNN's or FlashAttention's fused kernel; either is a library kernel.
  EXPECT_GT(n[Origin::kCudnn] + n[Origin::kFlashAttention], 0);
  EXPECT_EQ(n[Origin::kTriton], 0) << "eager mode runs no Triton kernel";
  for (const core::KernelRow& k : p.kernels) {
    const std::string& name = p.str(k.demangled_id);
    if (name.starts_with("nvjet_")) {
      EXPECT_EQ(classifyOrigin(name), Origin::kCublas) << name;
    }
    if (name.find("at::native::") != std::string::npos) {
      EXPECT_EQ(classifyOrigin(name), Origin::kAten) << name;
    }
  }
  EXPECT_EQ(p.meta("cupti_global_binding"), p.meta("cupti_library")) << "one CUPTI in use";
}

TEST(RealPrograms, CompiledTransformerRunsTritonKernelsFromInductor) {
  const core::Profile p = load("torch_transformer_compile_h100.fprof");
  const int triton = countNamed(p, "triton_");
  EXPECT_GT(triton, 0);
  EXPECT_EQ(launchesByOrigin(p)[Origin::kTriton], triton) << "every triton_* kernel is attributed to Triton";
  EXPECT_GT(launchesByOrigin(p)[Origin::kCublas], 0) << "Inductor keeps the GEMMs in cuBLAS";
}

TEST(RealPrograms, CompiledModelRunsFewerKernelsPerStepThanEager) {
  // Five timed steps inside op=step ranges in both files: fusion shows up as fewer launches.
  auto perStep = [](const core::Profile& p) {
    std::set<uint64_t> steps;
    for (const core::NvtxRangeRow& r : p.nvtx_ranges) {
      if (r.message == "op=step") steps.insert(r.key);
    }
    int inside = 0;
    for (const core::KernelRow& k : p.kernels) {
      if (k.nvtx_path_id && p.str(*k.nvtx_path_id).find("op=step") != std::string::npos) ++inside;
    }
    return steps.empty() ? 0.0 : double(inside) / double(steps.size());
  };
  const double eager = perStep(load("torch_mlp_eager_h100.fprof"));
  const double compiled = perStep(load("torch_mlp_compile_h100.fprof"));
  EXPECT_GT(eager, 0);
  EXPECT_GT(compiled, 0);
  EXPECT_LT(compiled, eager) << "eager " << eager << " launches per step, compiled " << compiled;
}

TEST(RealPrograms, PythonNvtxOpRangesAreOpsAndPairs) {
  // examples/pytorch/models.py marks ops with torch.cuda.nvtx (default domain, "op=..." messages).
  const core::Profile p = load("torch_transformer_eager_h100.fprof");
  const OpIndex ops = indexOps(p);
  std::set<std::string> names;
  for (const OpInstance& o : ops.ops) names.insert(o.tags->op);
  for (const char* op : {"step", "layer", "matmul_bias", "matmul_bias_gelu", "attention_causal", "residual_layernorm"}) {
    EXPECT_TRUE(names.count(op)) << "op=" << op;
  }
  int in_op = 0;
  for (int32_t o : ops.kernel_op) in_op += o >= 0 ? 1 : 0;
  EXPECT_GT(in_op, 0);
  const FusionResult f = analyzeFusion(p, ops, analyzeDataFlow(p));
  EXPECT_TRUE(f.nvtx_convention);
  bool fc1 = false;
  for (const FusionCandidate& c : f.candidates) fc1 = fc1 || (c.source == PairSource::kNvtx && c.id == "l0.fc1");
  EXPECT_TRUE(fc1) << "the unfused matmul_bias_gelu of layer 0 is a declared pair";
}

// The launch's recorded 8-byte argument values (pointers and scalars alike).
std::set<uint64_t> argValues(const core::Profile& p, const core::KernelRow& k) {
  std::set<uint64_t> v;
  for (const core::KernelArgRecord& a : p.kernel_args) {
    if (a.process_id == k.process_id && a.correlation_id == k.correlation_id && a.value != 0) v.insert(a.value);
  }
  return v;
}

// On eager PyTorch, every data-flow edge must be data that really flowed: the consumer passed the
// very pointer the producer passed (a caching allocator's 2 MiB segment holds weights,
// statistics and activations side by side: sharing a segment is not sharing data), and no kernel
// whose pointers are hidden (cuBLAS, TensorIterator) ran between them on the device (it may have
// been handed the block and written it). Before the data flow was rebuilt, the top pair of the
// eager transformer was vectorized_gather_kernel -> vectorized_layer_norm_kernel (14 instances):
// the gather wrote the block next to the one the residual add (unseen) wrote for the LayerNorm.
TEST(RealPrograms, EagerPytorchDataFlowPairsAreRealDataFlow) {
  for (const char* file : {"torch_transformer_eager_h100.fprof", "torch_mlp_eager_h100.fprof",
                           "torch_transformer_compile_h100.fprof"}) {
    const core::Profile p = load(file);
    const DataFlow df = analyzeDataFlow(p);
    for (const DataEdge& e : df.edges) {
      const core::KernelRow &a = p.kernels[e.producer], &b = p.kernels[e.consumer];
      const std::set<uint64_t> pa = argValues(p, a), pb = argValues(p, b);
      std::vector<uint64_t> shared;
      std::set_intersection(pa.begin(), pa.end(), pb.begin(), pb.end(), std::back_inserter(shared));
      EXPECT_FALSE(shared.empty()) << file << ": " << p.str(a.demangled_id) << " -> " << p.str(b.demangled_id)
                                   << " share no pointer";
      for (size_t k = e.producer + 1; k < e.consumer; ++k) {
        if (p.kernels[k].device_id != a.device_id) continue;
        EXPECT_FALSE(argValues(p, p.kernels[k]).empty())
            << file << ": " << p.str(a.demangled_id) << " -> " << p.str(b.demangled_id) << " across "
            << p.str(p.kernels[k].demangled_id) << ", whose pointers are not seen";
      }
    }
    // And no pair of the same kernel with itself among the candidates.
    const FusionResult f = analyzeFusion(p, indexOps(p), df);
    for (const FusionCandidate& c : f.candidates) {
      if (c.source != PairSource::kDataFlow) continue;
      bool all_same = true;
      for (const auto& st : c.stages) all_same = all_same && st == c.stages.front();
      EXPECT_FALSE(all_same) << file << ": self-pair " << c.id;
    }
  }
}

TEST(RealPrograms, HandWrittenTritonKernelIsRecordedButNamedAsUserCode) {
  // A @triton.jit kernel keeps its Python name; without the module that loaded it (not recorded
  // yet) nothing says it is Triton: it counts as user code, as docs/python.md says.
  const core::Profile p = load("torch_triton_h100.fprof");
  EXPECT_EQ(countNamed(p, "add_relu_kernel"), 10);
  EXPECT_EQ(classifyOrigin("add_relu_kernel"), Origin::kUser);
}

TEST(RealPrograms, MetricsModeProfiledOnlyTheSteadyStateSteps) {
  // --metrics roofline --nvtx-include op=step: warm-up kernels ran unprofiled.
  const core::Profile p = load("torch_transformer_metrics_h100.fprof");
  std::set<int64_t> with_counters;
  for (const core::KernelCounters& c : p.counters) with_counters.insert(c.kernel_id);
  ASSERT_FALSE(with_counters.empty());
  int tensor_kernels = 0;
  for (const core::KernelCounters& c : p.counters) tensor_kernels += c.flops_tensor_fp16.value_or(0) > 0 ? 1 : 0;
  EXPECT_GT(tensor_kernels, 0) << "the fp16 GEMMs ran on tensor cores";
  for (const core::KernelRow& k : p.kernels) {
    const bool in_step = k.nvtx_path_id && p.str(*k.nvtx_path_id).find("op=step") != std::string::npos;
    if (!in_step) {
      EXPECT_FALSE(with_counters.count(k.id)) << p.str(k.demangled_id);
    }
  }
  EXPECT_LT(with_counters.size(), p.kernels.size());
}

TEST(RealPrograms, GraphKernelsOfACompiledModelCopyTheirEagerTwinsOrSayWhy) {
  // torch.compile(mode="reduce-overhead") replays CUDA graphs; their kernels are not replayed for
  // counters but take those of the identical launches made while compiling and warming up.
  const core::Profile p = load("torch_compile_graphs_metrics_h100.fprof");
  std::map<int64_t, const core::KernelRow*> kernel_of;
  for (const core::KernelRow& k : p.kernels) kernel_of[k.id] = &k;
  std::map<int64_t, const core::KernelCounters*> counters_of;
  for (const core::KernelCounters& c : p.counters) counters_of[c.kernel_id] = &c;
  std::map<int64_t, std::string> reason_of;
  for (const core::KernelCounterMissing& m : p.counters_missing) reason_of[m.kernel_id] = m.reason;
  int graph_kernels = 0, copied = 0, with_reason = 0;
  for (const core::KernelRow& k : p.kernels) {
    if (k.graph_id == 0) continue;
    ++graph_kernels;
    auto c = counters_of.find(k.id);
    if (c == counters_of.end()) {
      ASSERT_TRUE(reason_of.count(k.id)) << p.str(k.demangled_id) << " has neither counters nor a reason";
      EXPECT_NE(reason_of[k.id].find("CUDA graph kernel"), std::string::npos) << reason_of[k.id];
      ++with_reason;
      continue;
    }
    ++copied;
    const core::KernelCounters& copy = *c->second;
    EXPECT_EQ(copy.source, core::kCounterSourceSameSignature);
    ASSERT_TRUE(copy.source_kernel_id);
    const core::KernelRow& source = *kernel_of.at(*copy.source_kernel_id);
    EXPECT_EQ(source.graph_id, 0u) << "copied from an eager launch";
    EXPECT_EQ(source.demangled_id, k.demangled_id);
    EXPECT_EQ(source.grid_x, k.grid_x);
    const core::KernelCounters& original = *counters_of.at(source.id);
    EXPECT_EQ(copy.flops_tensor_fp16, original.flops_tensor_fp16);
    EXPECT_EQ(copy.instructions, original.instructions);
  }
  EXPECT_EQ(graph_kernels, 35);
  EXPECT_EQ(copied, 28) << "both Triton kernels and both cuBLASLt GEMMs, 7 replays each";
  EXPECT_EQ(with_reason, 7) << "cuBLASLt's split-K reduce matched no eager launch";
  const std::string coverage = describeCoverage(counterCoverage(p));
  EXPECT_NE(coverage.find("28 same signature (CUDA graph)"), std::string::npos) << coverage;
}

TEST(RealPrograms, EachTorchrunRankWroteItsOwnFileWithNcclInTraceMode) {
  for (int rank : {0, 1}) {
    const core::Profile p = load("torchrun_allreduce_h200x2.rank" + std::to_string(rank) + ".fprof");
    ASSERT_EQ(p.processes.size(), 1u);
    EXPECT_EQ(p.processes[0].rank, rank);
    EXPECT_EQ(p.processes[0].local_rank, rank);
    const int nccl = launchesByOrigin(p)[Origin::kNccl];
    EXPECT_EQ(nccl, 10) << "one all-reduce per iteration";
    ASSERT_EQ(p.devices.size(), 1u);
    EXPECT_EQ(p.devices[0].id, static_cast<uint32_t>(rank)) << "one GPU per rank";
  }
}

}  // namespace
}  // namespace fprof::analysis
