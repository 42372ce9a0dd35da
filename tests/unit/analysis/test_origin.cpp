// Kernel origin classifier: real kernel names from each layer of the stack.
#include <gtest/gtest.h>

#include "fixture.h"
#include "fprof/analysis/origin.h"

namespace fprof::analysis {
namespace {

struct Case {
  const char* name;
  Origin origin;
};

TEST(Origin, ClassifiesRealKernelNames) {
  const Case cases[] = {
      {"sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
       Origin::kCublas},
      {"ampere_sgemm_128x64_tn", Origin::kCublas},
      {"nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN", Origin::kCublas},
      {"void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, cublasGemvParamsEx<int, float const*, float const*, float>, float>(float, float)",
       Origin::kCublas},
      {"void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, true, false>(cublasLt::cublasSplitKParams<float>, float const*, float const*, float*, float const*, float const*, float const*, float const*, float*, void*, long, float*, int*)",
       Origin::kCublas},
      {"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x64x16_stage4_warpsize2x2x1_g1_tensor16x8x8_kernel",
       Origin::kCudnn},
      {"void cudnn::bn_fw_inf_1C11_kernel_NCHW<float, float, true, 1>(float, float, cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, float const*, float const*, float const*, float)",
       Origin::kCudnn},
      {"void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)",
       Origin::kCudnn},
      {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4::Params)",
       Origin::kCutlass},
      {"cutlass_tensorop_f16_s16816gemm_f16_128x128_32x4_tn_align8", Origin::kCutlass},
      {"triton_poi_fused_add_mul_relu_0", Origin::kTriton},
      {"triton_red_fused__softmax_1", Origin::kTriton},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
       Origin::kAten},
      {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
       Origin::kAten},
      {"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_",
       Origin::kAten},
      // torch.arange on an H100 (tests/data/torch_transformer_eager_h100.fprof).
      {"void (anonymous namespace)::elementwise_kernel_with_index<int, at::native::arange_cuda_out(c10::Scalar const&, c10::Scalar const&, c10::Scalar const&, at::Tensor&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(long)#1}>(int, at::native::arange_cuda_out(c10::Scalar const&, c10::Scalar const&, c10::Scalar const&, at::Tensor&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(long)#1}, function_traits<at::native::arange_cuda_out(c10::Scalar const&, c10::Scalar const&, c10::Scalar const&, at::Tensor&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(long)#1}>::result_type*)",
       Origin::kAten},
      {"void (anonymous namespace)::my_kernel<float>(float*)", Origin::kUser},
      {"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::half_t> >, false, true, false, false, true, true, false, false>(Flash_fwd_params)",
       Origin::kFlashAttention},
      {"void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t> >(pytorch_flash::Flash_fwd_params)",
       Origin::kFlashAttention},
      {"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> > > > > >(flash::FlashAttnFwdSm90::Params)",
       Origin::kFlashAttention},
      {"fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::half_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
       Origin::kFlashAttention},
      {"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", Origin::kNccl},
      {"ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", Origin::kNccl},
      {"void matmul_bias_relu_fused<float>(float const*, float const*, float const*, float*, int, int, int)",
       Origin::kUser},
      {"residual_layernorm_fused", Origin::kUser},
      // ATen kernels in an anonymous namespace on PyTorch's element types, and by their symbol.
      {"void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 9, false, false>("
       "c10::BFloat16*, c10::BFloat16 const*, int, int, int, bool const*, int, bool)",
       Origin::kAten},
      {"void softmax_warp_forward<float, float, float, 10, true, false>(float*, float const*, int, int, int, bool "
       "const*, int, bool)",
       Origin::kAten},
      {"void cunn_SoftMaxForward<4, float, float, float, Epilogue>(float*, float const*, int)", Origin::kAten},
      {"void (anonymous namespace)::my_kernel<float>(float*)", Origin::kUser},
      {"", Origin::kUser},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(originName(classifyOrigin(c.name)), originName(c.origin)) << c.name;
  }
}

TEST(Origin, SumsPerOrigin) {
  testing::DbBuilder db("origin_sum");
  db.add(db.kernel("ampere_sgemm_128x64_tn", 0, 10000));
  db.add(db.kernel("ampere_sgemm_128x64_tn", 20000, 12000));
  db.add(db.kernel("triton_poi_fused_add_0", 40000, 3000));
  db.add(db.kernel("my_kernel", 50000, 5000));
  const core::Profile p = db.load();
  const OriginTotals t = sumByOrigin(p);
  EXPECT_EQ(t.launches[static_cast<size_t>(Origin::kCublas)], 2);
  EXPECT_EQ(t.duration_ns[static_cast<size_t>(Origin::kCublas)], 22000);
  EXPECT_EQ(t.duration_ns[static_cast<size_t>(Origin::kTriton)], 3000);
  EXPECT_EQ(t.duration_ns[static_cast<size_t>(Origin::kUser)], 5000);
  EXPECT_EQ(t.launches[static_cast<size_t>(Origin::kNccl)], 0);
}

}  // namespace
}  // namespace fprof::analysis
