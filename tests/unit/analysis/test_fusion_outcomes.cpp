// Closing the loop (fusion_outcomes.h): a baseline's candidates found fused in a later run, by
// op ranges (a synthetic declared pair) and by their neighbours (the before/after pairs recorded
// in tests/data: on an H100, naive attention -> SDPA and two models eager -> torch.compile; on an
// H200, naive attention -> SDPA, an MLP's bias + GELU -> cuBLASLt's epilogue, Hugging Face GPT-2's
// gelu_new -> F.gelu(approximate="tanh")).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "fixture.h"
#include "fprof/analysis/run_analysis.h"

namespace fprof::analysis {
namespace {

using testing::DbBuilder;

const std::string kData = std::string(FPROF_SOURCE_DIR) + "/tests/data/";

core::Profile load(const std::string& name) {
  auto p = core::loadProfile(kData + name);
  EXPECT_TRUE(p.ok()) << name;
  return std::move(*p);
}

// One run of a declared pair: its unfused chain (two kernels) or its fused kernel, between two
// kernels that stay, `steps` times.
core::Profile declaredRun(const std::string& name, bool fused, int steps) {
  DbBuilder db(name);
  uint64_t key = 1;
  int64_t t = 0;
  for (int s = 0; s < steps; ++s) {
    db.add(db.kernel("load_kernel", t, 5000));
    t += 6000;
    const uint64_t op = key++;
    if (fused) {
      db.range(op, std::nullopt, "op=mm_relu variant=fused pair=p1 reads=x writes=y", t, t + 21000);
      auto k = db.kernel("mm_relu_fused", t, 20000);
      k.nvtx_range_key = op;
      db.add(k);
      t += 21000;
    } else {
      db.range(op, std::nullopt, "op=mm_relu variant=unfused pair=p1 reads=x writes=y", t, t + 32000);
      const uint64_t mm = key++, relu = key++;
      db.range(mm, op, "op=matmul variant=unfused pair=p1 reads=x writes=t", t, t + 20000);
      db.range(relu, op, "op=relu variant=unfused pair=p1 reads=t writes=y", t + 20000, t + 32000);
      auto k1 = db.kernel("matmul_kernel", t, 19000);
      k1.nvtx_range_key = mm;
      auto k2 = db.kernel("relu_kernel", t + 20000, 11000);
      k2.nvtx_range_key = relu;
      db.add(k1);
      db.add(k2);
      t += 32000;
    }
    db.add(db.kernel("store_kernel", t, 4000));
    t += 5000;
  }
  return db.load();
}

TEST(FusionOutcomes, ADeclaredPairIsFoundByItsOpRanges) {
  const core::Profile base = declaredRun("outcome_unfused", false, 3);
  const core::Profile cur = declaredRun("outcome_fused", true, 3);
  const RunAnalysis a = RunAnalysis::of(cur, &base);
  const FusionOutcomes& o = a.comparison()->fusions;
  ASSERT_EQ(o.applied.size(), 1u);
  const FusionOutcome& f = o.applied.front();
  EXPECT_EQ(f.matched_by, "the same NVTX op ranges");
  EXPECT_EQ(f.instances, 3);
  EXPECT_EQ(f.launches_before, 6);
  EXPECT_EQ(f.launches_after, 3);
  EXPECT_DOUBLE_EQ(f.before_ns, 3 * 30000.0);
  EXPECT_DOUBLE_EQ(f.after_ns, 3 * 20000.0);
  EXPECT_DOUBLE_EQ(f.measured_saving_ns, 3 * 10000.0);
  ASSERT_EQ(f.candidates.size(), 1u);
  EXPECT_EQ(a.baseline()->fusion().candidates[f.candidates.front()].id, "p1");
  // The prediction is the model's for those instances, whatever it is; the error follows from it.
  if (f.predicted_saving_ns) {
    ASSERT_TRUE(f.error);
    EXPECT_DOUBLE_EQ(*f.error, (*f.predicted_saving_ns - f.measured_saving_ns) / f.measured_saving_ns);
  }
}

TEST(FusionOutcomes, ARunComparedWithItselfHasNoAppliedFusion) {
  for (const char* file : {"torch_proof_gpt_bf16_eager_h100.fprof", "model_trace_h200.fprof",
                           "torch_transformer_eager_h100.fprof"}) {
    const core::Profile p = load(file);
    const FusionOutcomes o = matchFusionOutcomes(p, RunAnalysis::of(p).fusion(), p);
    EXPECT_TRUE(o.applied.empty()) << file;
    EXPECT_GT(o.candidates, 0) << file;
  }
}

TEST(FusionOutcomes, DifferentProgramsAreNotMatched) {
  const core::Profile gpt = load("torch_proof_gpt_bf16_eager_h100.fprof");
  const core::Profile hf = load("torch_proof_hfgpt2_forward_fp16_eager_h100.fprof");
  const core::Profile mlp = load("torch_proof_mlp_bf16_eager_h100.fprof");
  EXPECT_TRUE(matchFusionOutcomes(gpt, RunAnalysis::of(gpt).fusion(), hf).applied.empty());
  EXPECT_TRUE(matchFusionOutcomes(gpt, RunAnalysis::of(gpt).fusion(), mlp).applied.empty());
  EXPECT_TRUE(matchFusionOutcomes(hf, RunAnalysis::of(hf).fusion(), gpt).applied.empty());
}

// Naive attention -> torch.nn.functional.scaled_dot_product_attention (examples/pytorch/proof.py):
// the attention candidates are found fused between the same GEMMs, with the layout copy the GEMM
// beside them wrote (SDPA needs it no more); the model's prediction for those instances is within
// 15% of the saving measured.
TEST(FusionOutcomes, NaiveAttentionReplacedBySdpa) {
  const core::Profile eager = load("torch_proof_gpt_bf16_eager_h100.fprof");
  const core::Profile sdpa = load("torch_proof_gpt_bf16_sdpa_h100.fprof");
  const RunAnalysis a = RunAnalysis::of(sdpa, &eager);
  const FusionOutcomes& o = a.comparison()->fusions;
  ASSERT_EQ(o.applied.size(), 1u);
  const FusionOutcome& f = o.applied.front();
  const FusionResult& before = a.baseline()->fusion();
  EXPECT_EQ(before.candidates[f.candidates.front()].pattern, FusionPattern::kAttention);
  int64_t attention_instances = 0;
  for (size_t c : f.candidates) {
    if (before.candidates[c].pattern == FusionPattern::kAttention) attention_instances += before.candidates[c].instances;
  }
  EXPECT_GE(attention_instances, 27);  // of the 28 attention calls
  EXPECT_EQ(f.matched_by, "the same neighbouring kernels");
  EXPECT_LT(f.launches_after, f.launches_before);
  EXPECT_GT(f.measured_saving_ns, 2.5e6);
  ASSERT_TRUE(f.predicted_saving_ns);
  ASSERT_TRUE(f.error);
  EXPECT_LT(std::abs(*f.error), 0.15) << *f.predicted_saving_ns << " predicted, " << f.measured_saving_ns << " measured";
  EXPECT_EQ(o.changed_not_fused, 0);
  EXPECT_GT(o.unchanged, 0);  // bias + GELU, add + LayerNorm: as before
}

// An MLP eager -> torch.compile (examples/pytorch/run.py): the declared op `mlp` has no ranges in
// the compiled run, which keeps only the training steps' ranges; within them the chain's five
// launches became fewer and faster.
TEST(FusionOutcomes, AnMlpCompiledIsFoundWithinTheSteps) {
  const core::Profile eager = load("torch_mlp_eager_h100.fprof");
  const core::Profile compiled = load("torch_mlp_compile_h100.fprof");
  const RunAnalysis a = RunAnalysis::of(compiled, &eager);
  const FusionOutcomes& o = a.comparison()->fusions;
  EXPECT_NE(o.scope.find("\"op=step\""), std::string::npos) << o.scope;
  ASSERT_EQ(o.applied.size(), 1u);
  const FusionOutcome& f = o.applied.front();
  EXPECT_EQ(a.baseline()->fusion().candidates[f.candidates.front()].id, "mlp");
  EXPECT_EQ(f.instances, 5);  // the five timed steps; the two warm-up calls lie outside them
  EXPECT_LT(f.launches_after, f.launches_before);
  EXPECT_GT(f.measured_saving_ns, 0);
  EXPECT_FALSE(f.predicted_saving_ns);  // recorded without launch arguments: no prediction, none shown
}

// A transformer eager -> torch.compile: its two residual add + LayerNorm pairs are found fused;
// its GEMM + GELU pairs ran as two kernels still (cuBLAS and a Triton GELU), not fused.
TEST(FusionOutcomes, TransformerCompiledFusesTheResidualNorms) {
  const core::Profile eager = load("torch_transformer_eager_h100.fprof");
  const core::Profile compiled = load("torch_transformer_compile_h100.fprof");
  const RunAnalysis a = RunAnalysis::of(compiled, &eager);
  const FusionOutcomes& o = a.comparison()->fusions;
  ASSERT_EQ(o.applied.size(), 2u);
  for (const FusionOutcome& f : o.applied) {
    ASSERT_EQ(f.candidates.size(), 1u);
    const FusionCandidate& c = a.baseline()->fusion().candidates[f.candidates.front()];
    EXPECT_EQ(c.pattern, FusionPattern::kResidualNorm) << c.id;
    EXPECT_EQ(f.launches_before, 10);
    EXPECT_EQ(f.launches_after, 5);
    EXPECT_GT(f.measured_saving_ns, 0);
  }
  EXPECT_EQ(o.changed_not_fused, 2);
}

// The H200 pairs of examples/pytorch/proof.py --pairs (tests/data/README.md): three fusions of
// three patterns applied to programs not written for fprof, each found within the five timed
// steps ("step" ranges) by its neighbours. The launches are exact (the same program and input);
// the model's prediction for the instances found must be within 15% of the saving measured
// between the two recordings, the tolerance the H100 SDPA pair is held to.
struct AppliedPair {
  const char* before;
  const char* after;
  FusionPattern pattern;
  const char* name;     // the best ranked candidate found fused
  const char* variant;  // its pattern's variant ("" for none)
  size_t candidates;    // how many of the baseline's candidates the outcome holds
  int64_t instances;
  int64_t launches_before, launches_after;
  double min_measured_ns;  // a floor on the saving measured: the fusion saved that much at least
};

TEST(FusionOutcomes, H200PairsOfThreePatternsPredictedWithin15Percent) {
  const AppliedPair pairs[] = {
      {"torch_proof_gpt_bf16_eager_h200.fprof", "torch_proof_gpt_bf16_sdpa_h200.fprof", FusionPattern::kAttention,
       "attention, 7 kernels (matmul -> mul -> masked_fill -> softmax -> copy -> matmul -> copy)", "", 3, 40, 230, 70,
       1.8e6},
      {"torch_proof_mlp_bf16_eager_h200.fprof", "torch_proof_mlp_bf16_bias_gelu_h200.fprof",
       FusionPattern::kGemmEpilogue, "GEMM + epilogue, 3 kernels (matmul -> add -> gelu)", "", 1, 10, 30, 10, 4.5e5},
      {"torch_proof_hfgpt2_forward_fp16_eager_h200.fprof", "torch_proof_hfgpt2_forward_fp16_gelu_h200.fprof",
       FusionPattern::kElementwiseChain,
       "elementwise chain (tanh GELU), 8 kernels (mul -> pow -> mul -> add -> mul -> tanh -> add -> mul)", "tanh GELU", 1,
       20, 160, 20, 4.0e5},
  };
  for (const AppliedPair& pair : pairs) {
    SCOPED_TRACE(std::string(pair.before) + " -> " + pair.after);
    const core::Profile before = load(pair.before);
    const core::Profile after = load(pair.after);
    const RunAnalysis a = RunAnalysis::of(after, &before);
    const FusionOutcomes& o = a.comparison()->fusions;
    EXPECT_TRUE(o.notes.empty());  // one device, one mode
    EXPECT_NE(o.scope.find("\"step\""), std::string::npos) << o.scope;
    ASSERT_EQ(o.applied.size(), 1u);
    const FusionOutcome& f = o.applied.front();
    ASSERT_EQ(f.candidates.size(), pair.candidates);
    const FusionCandidate& c = a.baseline()->fusion().candidates[f.candidates.front()];
    EXPECT_EQ(c.pattern, pair.pattern) << c.name;
    EXPECT_EQ(c.name, pair.name);
    EXPECT_EQ(c.variant, pair.variant);
    EXPECT_EQ(f.matched_by, "the same neighbouring kernels");
    EXPECT_EQ(f.instances, pair.instances);
    EXPECT_EQ(f.launches_before, pair.launches_before);
    EXPECT_EQ(f.launches_after, pair.launches_after);
    EXPECT_DOUBLE_EQ(f.measured_saving_ns, f.before_ns - f.after_ns);
    EXPECT_GT(f.measured_saving_ns, pair.min_measured_ns);
    ASSERT_TRUE(f.predicted_saving_ns);
    ASSERT_TRUE(f.error);
    EXPECT_DOUBLE_EQ(*f.error, (*f.predicted_saving_ns - f.measured_saving_ns) / f.measured_saving_ns);
    EXPECT_LT(std::abs(*f.error), 0.15) << *f.predicted_saving_ns << " predicted, " << f.measured_saving_ns
                                        << " measured";
    EXPECT_EQ(fusionOutcomeName(f, a.baseline()->fusion()).rfind(pair.name, 0), 0u);
  }
}

// Different programs recorded on an H200, each marking its timed steps 'step': their steps share
// no kernel, so nothing is found applied; nor in a run against itself.
TEST(FusionOutcomes, H200ProgramsAreNotMatchedWithEachOther) {
  const core::Profile gpt = load("torch_proof_gpt_bf16_eager_h200.fprof");
  const core::Profile mlp = load("torch_proof_mlp_bf16_eager_h200.fprof");
  const core::Profile hf = load("torch_proof_hfgpt2_forward_fp16_eager_h200.fprof");
  EXPECT_TRUE(matchFusionOutcomes(gpt, RunAnalysis::of(gpt).fusion(), mlp).applied.empty());
  EXPECT_TRUE(matchFusionOutcomes(mlp, RunAnalysis::of(mlp).fusion(), hf).applied.empty());
  EXPECT_TRUE(matchFusionOutcomes(hf, RunAnalysis::of(hf).fusion(), gpt).applied.empty());
  EXPECT_TRUE(matchFusionOutcomes(hf, RunAnalysis::of(hf).fusion(), hf).applied.empty());
}

}  // namespace
}  // namespace fprof::analysis
