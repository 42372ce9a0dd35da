// Fusion candidates named by ops and pattern, with a suggestion (fusion_patterns.h): the op a
// kernel computes from its name, and on every recording in tests/data the top candidates read as
// a finding a user acts on.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fprof/analysis/run_analysis.h"

namespace fprof::analysis {
namespace {

const std::string kData = std::string(FPROF_SOURCE_DIR) + "/tests/data/";

TEST(FusionPatterns, KernelOpNamesFromRealKernels) {
  struct Case {
    const char* kernel;
    const char* op;
  };
  const Case cases[] = {
      {"nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "matmul"},
      {"void at::native::vectorized_elementwise_kernel<8, at::native::AUnaryFunctor<c10::BFloat16, c10::BFloat16, "
       "c10::BFloat16, at::native::binary_internal::MulFunctor<float>>, std::array<char*, 2ul>>(int, "
       "at::native::AUnaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
       "at::native::binary_internal::MulFunctor<float>>, std::array<char*, 2ul>)",
       "mul"},
      {"void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::(anonymous "
       "namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() "
       "const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16, bool)#1}>(at::TensorIteratorBase&, "
       "at::native::(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::"
       "operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16, bool)#1} const&)::"
       "{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<...>)",
       "masked_fill"},
      {"void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 9, false, false>("
       "c10::BFloat16*, c10::BFloat16 const*, int, int, int, bool const*, int, bool)",
       "softmax"},
      {"void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::"
       "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::"
       "operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, ...)::{lambda(int)#1}>(int, ...)",
       "copy"},
      {"void at::native::vectorized_elementwise_kernel<8, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
       "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::"
       "BFloat16)#1}, std::array<char*, 2ul>>(int, ...)",
       "gelu"},
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, float, false>(int, float, "
       "c10::Half const*, c10::Half const*, c10::Half const*, float*, float*, c10::Half*)",
       "layer_norm"},
      {"void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, "
       "3ul>>(int, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, 3ul>)",
       "add"},
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
       "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
       "unsigned int, float, 4, 4>>(at::native::ReduceOp<...>)",
       "sum"},
      {"triton_poi_fused_add_gelu_0", "fused_add_gelu"},
      {"triton_per_fused_add_native_layer_norm_view_4", "fused_add_native_layer_norm_view"},
      {"void biasActKernel<__half, (fprof::refk::Epilogue)1>(__half const*, __half const*, __half*, int, int)",
       "biasActKernel<__half, (Epilogue)1>"},
  };
  for (const Case& c : cases) EXPECT_EQ(kernelOpName(c.kernel), c.op) << c.kernel;
}

struct Expected {
  const char* file;
  FusionPattern top;
  const char* top_name;    // the start of the top candidate's name
  const char* suggestion;  // the start of its suggestion
};

// The recordings of PyTorch programs (eager, naive attention; HF GPT-2; an MLP) and of the
// reference CUDA program: the best candidate, and every one of the top five named by a pattern,
// its ops and a suggestion in the program's own terms.
TEST(FusionPatterns, TopFindingsOfTheRecordingsAreNamedWithASuggestion) {
  const Expected cases[] = {
      {"torch_proof_gpt_bf16_eager_h100.fprof", FusionPattern::kAttention,
       "attention, 7 kernels (matmul -> mul -> masked_fill -> softmax -> copy -> matmul -> copy)",
       "use torch.nn.functional.scaled_dot_product_attention"},
      {"torch_proof_gpt_bf16_emitnvtx_h100.fprof", FusionPattern::kAttention,
       "attention, 9 kernels (aten::matmul -> mul -> masked_fill -> softmax -> matmul -> contiguous), shapes "
       "[4,12,512,512]",
       "use torch.nn.functional.scaled_dot_product_attention"},
      {"torch_proof_hfgpt2_forward_fp16_eager_h100.fprof", FusionPattern::kAttention, "attention, 9 kernels (",
       "use torch.nn.functional.scaled_dot_product_attention"},
      {"torch_proof_mlp_bf16_eager_h100.fprof", FusionPattern::kGemmEpilogue,
       "GEMM + epilogue, 3 kernels (matmul -> add -> gelu)", "torch.compile the module: it fuses the add and gelu"},
      {"torch_transformer_eager_h100.fprof", FusionPattern::kGemmEpilogue, "GEMM + epilogue, 2 kernels (matmul -> gelu)",
       "torch.compile the module"},
      {"model_trace_h200.fprof", FusionPattern::kAttention, "attention, 3 kernels (qk -> softmax -> pv)",
       "one attention kernel (flash-attention style)"},
  };
  for (const Expected& e : cases) {
    auto loaded = core::loadProfile(kData + e.file);
    ASSERT_TRUE(loaded.ok()) << e.file;
    const RunAnalysis a = RunAnalysis::of(*loaded);
    const FusionResult& f = a.fusion();
    ASSERT_FALSE(f.candidates.empty()) << e.file;
    const FusionCandidate& top = f.candidates.front();
    EXPECT_EQ(top.pattern, e.top) << e.file << ": " << top.name;
    EXPECT_EQ(top.name.rfind(e.top_name, 0), 0u) << e.file << ": " << top.name;
    EXPECT_EQ(top.suggestion.rfind(e.suggestion, 0), 0u) << e.file << ": " << top.suggestion;
    const bool pytorch = std::string(e.file).rfind("torch", 0) == 0;
    for (size_t i = 0; i < f.candidates.size() && i < 5; ++i) {
      const FusionCandidate& c = f.candidates[i];
      EXPECT_EQ(c.stage_ops.size(), c.stages.size()) << e.file << " #" << i + 1;
      EXPECT_EQ(c.name.rfind(std::string(fusionPatternName(c.pattern)), 0), 0u) << e.file << ": " << c.name;
      EXPECT_FALSE(c.suggestion.empty()) << e.file << ": " << c.name;
      EXPECT_EQ(c.suggestion.find("torch") != std::string::npos, pytorch) << e.file << ": " << c.suggestion;
      for (const std::string& op : c.stage_ops) {
        EXPECT_EQ(op.find("op_id"), std::string::npos) << op;
        EXPECT_LE(op.size(), 120u) << op;  // an op, not a kernel's full name
      }
    }
  }
}

// Every recording in tests/data, whatever made it: each of the top five candidates is named by its
// pattern and its ops (an op each stage, never an emit_nvtx range's ids or a kernel's full name)
// and carries a suggestion, in PyTorch's terms for a PyTorch program.
TEST(FusionPatterns, EveryRecordingsTopFiveAreNamedByOpsAndPatternWithASuggestion) {
  size_t recordings = 0, with_candidates = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kData)) {
    if (entry.path().extension() != ".fprof") continue;
    const std::string file = entry.path().filename().string();
    auto loaded = core::loadProfile(entry.path().string());
    ASSERT_TRUE(loaded.ok()) << file;
    ++recordings;
    const RunAnalysis a = RunAnalysis::of(*loaded);
    const FusionResult& f = a.fusion();
    with_candidates += !f.candidates.empty();
    const bool pytorch = file.rfind("torch", 0) == 0;
    for (size_t i = 0; i < f.candidates.size() && i < 5; ++i) {
      const FusionCandidate& c = f.candidates[i];
      const std::string where = file + " #" + std::to_string(i + 1) + ": " + c.name;
      EXPECT_EQ(c.name.rfind(std::string(fusionPatternName(c.pattern)), 0), 0u) << where;
      ASSERT_EQ(c.stage_ops.size(), c.stages.size()) << where;
      ASSERT_FALSE(c.stage_ops.empty()) << where;
      for (const std::string& op : c.stage_ops) {
        EXPECT_FALSE(op.empty()) << where;
        EXPECT_EQ(op.find("op_id"), std::string::npos) << where;
        EXPECT_EQ(op.find(", seq = "), std::string::npos) << where;
        EXPECT_LE(op.size(), 120u) << where;  // an op, not a kernel's full name
      }
      // The ops are the name's: the first stage's op is in it (cut at 40 characters; a long chain
      // elides its middle).
      EXPECT_NE(c.name.find(c.stage_ops.front().substr(0, 30)), std::string::npos) << where;
      EXPECT_LE(c.name.size(), 200u) << where;
      EXPECT_FALSE(c.suggestion.empty()) << where;
      EXPECT_EQ(c.suggestion.find("torch") != std::string::npos, pytorch) << where << "; " << c.suggestion;
    }
  }
  EXPECT_GE(recordings, 20u);
  EXPECT_GE(with_candidates, 15u);
}

TEST(FusionPatterns, HuggingFaceGeluNewIsTheTanhGelu) {
  auto loaded = core::loadProfile(kData + "torch_proof_hfgpt2_forward_fp16_eager_h100.fprof");
  ASSERT_TRUE(loaded.ok());
  const RunAnalysis a = RunAnalysis::of(*loaded);
  const FusionCandidate* gelu = nullptr;
  for (const FusionCandidate& c : a.fusion().candidates) {
    if (c.variant == "tanh GELU") gelu = gelu ? gelu : &c;
  }
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ(gelu->pattern, FusionPattern::kElementwiseChain);
  EXPECT_EQ(gelu->name, "elementwise chain (tanh GELU), 8 kernels (mul -> pow -> mul -> add -> mul -> tanh -> add -> mul)");
  EXPECT_EQ(gelu->suggestion.rfind("use torch.nn.functional.gelu(x, approximate=\"tanh\")", 0), 0u);
}

TEST(FusionPatterns, ResidualAddAndNormalization) {
  auto loaded = core::loadProfile(kData + "torch_proof_gpt_bf16_eager_h100.fprof");
  ASSERT_TRUE(loaded.ok());
  const RunAnalysis a = RunAnalysis::of(*loaded);
  bool found = false;
  for (const FusionCandidate& c : a.fusion().candidates) {
    if (c.name != "residual add + normalization, 2 kernels (add -> layer_norm)") continue;
    found = true;
    EXPECT_EQ(c.pattern, FusionPattern::kResidualNorm);
    EXPECT_EQ(c.suggestion.rfind("torch.compile the block, or a fused residual-add + normalization kernel", 0), 0u);
  }
  EXPECT_TRUE(found);
}

TEST(FusionPatterns, LongOpChainsAreShortened) {
  FusionCandidate c;
  for (int i = 0; i < 12; ++i) {
    c.stages.push_back("my_rather_long_operation_name_" + std::to_string(i));
    c.stage_kernels.push_back({"kernel_" + std::to_string(i)});
  }
  c.launches_per_instance = 12;
  nameCandidate(c, ProgramKind::kCuda);
  EXPECT_LE(c.name.size(), 200u) << c.name;
  EXPECT_NE(c.name.find("... 7 more ..."), std::string::npos) << c.name;
  EXPECT_EQ(c.pattern, FusionPattern::kOther);
  EXPECT_EQ(c.suggestion.rfind("fuse the stages into one kernel", 0), 0u);
}

}  // namespace
}  // namespace fprof::analysis
