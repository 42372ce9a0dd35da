// Short kernel names: real names from the databases under tests/data (PyTorch, cuBLAS/nvjet,
// cuDNN, Triton, NCCL, the reference kernels, the collector's test program) and the cases the
// brief names, each with the short name a person should see; and KernelNames keeping apart what
// would look the same.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "fprof/analysis/kernel_names.h"
#include "fprof/core/store.h"

namespace fprof::analysis {
namespace {

struct NameCase {
  const char* full;
  const char* short_name;
};

// Taken verbatim from `select distinct demangled_name from kernel_summary` on tests/data/*.fprof.
const NameCase kRecorded[] = {
    {R"(cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0)",
     R"(cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0)"},
    {R"(ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>))",
     R"(ncclDevKernel_AllReduce_Sum_f32_RING_LL)"},
    {R"(nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_TNT)",
     R"(nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_TNT)"},
    {R"(regs22_kernel(float4 const*, float*, int))",
     R"(regs22_kernel)"},
    {R"(sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize256x64x32_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn)",
     R"(sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize256x64x32_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn)"},
    {R"(std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, __half, __half, __half, float, false, true, true, false, 6, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half>, float> >(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half>, float>))",
     R"(gemvx::kernel<int, int, __half, __half, __half, float, false, true, true, false, 6, false, cublasGemvParamsEx<...>>)"},
    {R"(triton_per_fused_add_native_layer_norm_1)",
     R"(triton_per_fused_add_native_layer_norm_1)"},
    {R"(triton_poi_fused_gelu_0)",
     R"(triton_poi_fused_gelu_0)"},
    {R"(void (anonymous namespace)::elementwise_kernel_with_index<int, at::native::arange_cuda_out(c10::Scalar const&, c10::Scalar const&, c10::Scalar const&, at::Tensor&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(long)#1}>(int, at::native::arange_cuda_out(c10::Scalar const&, c10::Scalar const&, c10::Scalar const&, at::Tensor&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(long)#1}, function_traits<at::native::arange_cuda_out(c10::Scalar const&, c10::Scalar const&, c10::Scalar const&, at::Tensor&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(long)#1}>::result_type*))",
     R"(elementwise_kernel_with_index<int, arange_cuda_out>)"},
    {R"(void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4, at::native::templates::cuda::normal_and_transform<c10::Half, float, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1})::{lambda(curandStatePhilox4_32_10*)#2}, at::native::(anonymous namespace)::distribution_nullary_kernel<c10::Half, float, float4, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_and_transform<c10::Half, float, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1})::{lambda(curandStatePhilox4_32_10*)#2}, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_and_transform<c10::Half, float, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1})::{lambda(curandStatePhilox4_32_10*)#2} const&, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1})::{lambda(int, float)#1}>(long, at::PhiloxCudaState, at::native::templates::cuda::normal_and_transform<c10::Half, float, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1})::{lambda(curandStatePhilox4_32_10*)#2}, at::native::(anonymous namespace)::distribution_nullary_kernel<c10::Half, float, float4, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_and_transform<c10::Half, float, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1})::{lambda(curandStatePhilox4_32_10*)#2}, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_and_transform<c10::Half, float, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::CUDAGeneratorImpl*, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1})::{lambda(curandStatePhilox4_32_10*)#2} const&, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1})::{lambda(int, float)#1}))",
     R"(distribution_elementwise_grid_stride_kernel<float, 4, normal_and_transform<...>, distribution_nullary_kernel<...>>)"},
    {R"(void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, float, false>(int, float, c10::Half const*, c10::Half const*, c10::Half const*, float*, float*, c10::Half*))",
     R"(vectorized_layer_norm_kernel<Half, float, false>)"},
    {R"(void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<c10::Half> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<c10::Half> const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<c10::Half> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<c10::Half> const&)::{lambda(int)#1}))",
     R"(elementwise_kernel<128, 4, gpu_kernel_impl_nocast<CUDAFunctor_add<Half>>>)"},
    {R"(void at::native::reduce_kernel<512, 1, at::native::ReduceOp<bool, at::native::func_wrapper_t<bool, at::native::and_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#12}::operator()() const::{lambda(bool, bool)#1}>, unsigned int, bool, 4, 4> >(at::native::ReduceOp<bool, at::native::func_wrapper_t<bool, at::native::and_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#12}::operator()() const::{lambda(bool, bool)#1}>, unsigned int, bool, 4, 4>))",
     R"(reduce_kernel<512, 1, ReduceOp<bool, func_wrapper_t<bool, and_kernel_cuda>, unsigned int, bool, 4, 4>>)"},
    {R"(void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::MaxNanFunctor<float> >, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::MaxNanFunctor<float> >, unsigned int, float, 4, 4>))",
     R"(reduce_kernel<512, 1, ReduceOp<float, func_wrapper_t<float, MaxNanFunctor<float>>, unsigned int, float, 4, 4>>)"},
    {R"(void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4>))",
     R"(reduce_kernel<512, 1, ReduceOp<float, func_wrapper_t<float, sum_functor<...>>, unsigned int, float, 4, 4>>)"},
    {R"(void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>))",
     R"(unrolled_elementwise_kernel<direct_copy_kernel_cuda, array<...>, 4, TrivialOffsetCalculator<...>, ...>)"},
    {R"(void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>))",
     R"(vectorized_elementwise_kernel<4, launch_clamp_scalar, array<char*, 2ul>>)"},
    {R"(void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>))",
     R"(vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, array<char*, 3ul>>)"},
    {R"(void at::native::vectorized_elementwise_kernel<8, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#3}::operator()() const::{lambda(c10::Half)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#3}::operator()() const::{lambda(c10::Half)#1}, std::array<char*, 2ul>))",
     R"(vectorized_elementwise_kernel<8, GeluCUDAKernelImpl, array<char*, 2ul>>)"},
    {R"(void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, long, long, bool))",
     R"(vectorized_gather_kernel<16, long>)"},
    {R"(void cudnn::engines_precompiled::nchwToNhwcKernel<__half, __half, float, false, true, (cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, __half const*, __half*))",
     R"(nchwToNhwcKernel<__half, __half, float, false, true, (cudnnKernelDataType_t)0>)"},
    {R"(void fprof::refk::(anonymous namespace)::attentionSoftmaxKernel<__half>(__half const*, __half*, int, int, bool))",
     R"(attentionSoftmaxKernel<__half>)"},
    {R"(void fprof::refk::(anonymous namespace)::biasActKernel<__half, (fprof::refk::Epilogue)1>(__half const*, __half const*, __half*, unsigned long, unsigned long))",
     R"(biasActKernel<__half, (Epilogue)1>)"},
    {R"(void fprof::refk::(anonymous namespace)::binaryKernel<__half, (fprof::refk::(anonymous namespace)::Binary)0>(__half const*, __half const*, __half*, unsigned long))",
     R"(binaryKernel<__half, (Binary)0>)"},
    {R"(void fprof::refk::(anonymous namespace)::flashMmaKernel<__half, 1>(__half const*, __half const*, __half const*, __half*, fprof::refk::AttentionShape, float))",
     R"(flashMmaKernel<__half, 1>)"},
    {R"(void fprof::refk::(anonymous namespace)::normKernel<__half, true, false, true>(__half const*, __half const*, __half const*, __half const*, float, __half*, __half*, unsigned long))",
     R"(normKernel<__half, true, false, true>)"},
    {R"(void fprof::refk::(anonymous namespace)::rowSliceKernel<float, (fprof::refk::(anonymous namespace)::Stage)1>(float const*, fprof::refk::(anonymous namespace)::Partial*, unsigned int*, float2*, float*, int*, unsigned long, unsigned long, int))",
     R"(rowSliceKernel<float, (Stage)1>)"},
    {R"(void gemvNSP_kernel<__half, __half, __half, float, 1, 32, 4, 1024, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half>, float> >(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half>, float>))",
     R"(gemvNSP_kernel<__half, __half, __half, float, 1, 32, 4, 1024, false, cublasGemvParamsEx<...>>)"},
    {R"(void tagged<1>(float*, float const*, int))",
     R"(tagged<1>)"},
};

TEST(ShortKernelName, RecordedNames) {
  for (const NameCase& c : kRecorded) EXPECT_EQ(shortKernelName(c.full), c.short_name) << c.full;
}

TEST(ShortKernelName, NamesOfTheBrief) {
  const NameCase cases[] = {
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, "
       "c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
       "vectorized_layer_norm_kernel<BFloat16, float>"},
      {"void fprof::refk::(anonymous namespace)::attention_kernel<__half>(const __half*, const __half*, __half*, int, "
       "int, int)",
       "attention_kernel<__half>"},
      // The generic `Kernel2` keeps its scope; the template argument is the distinguishing part.
      {"void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_relu_f16_128x128_32x3_nn_align8>(cutlass_80_tensorop_"
       "s16816gemm_relu_f16_128x128_32x3_nn_align8::Params)",
       "cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_relu_f16_128x128_32x3_nn_align8>"},
      {"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, "
       "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecialized<4, "
       "cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::gemm::KernelTmaWarpSpecialized>, "
       "cute::tuple<cute::C<128>, cute::C<128>, cute::C<64> >, cutlass::half_t, cute::tuple<long, cute::C<1>, long>, "
       "cutlass::half_t, cute::tuple<long, cute::C<1>, long>, cute::TiledMMA<cute::MMA_Atom<cute::SM90_64x128x16_"
       "F32F16F16_SS<(cute::GMMA::Major)0, (cute::GMMA::Major)0, (cute::GMMA::ScaleIn)1, (cute::GMMA::ScaleIn)1> >, "
       "cute::Layout<cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<0>, "
       "cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::SM90_TMA_LOAD, "
       "void, void, cute::identity>, cutlass::epilogue::collective::DefaultEpilogue<cutlass::half_t, "
       "cute::tuple<long, cute::C<1>, long>, cute::tuple<long, cute::C<1>, long>, "
       "cutlass::epilogue::thread::LinearCombination<cutlass::half_t, 1, float, float>, "
       "cutlass::gemm::EpilogueDefault>, void, void> >(cutlass::gemm::kernel::GemmUniversal<...>::Params)",
       "cutlass::device_kernel<GemmUniversal<tuple<...>, CollectiveMma<...>, DefaultEpilogue<...>, void, void>>"},
      {"nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNN", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNN"},
      {"triton_poi_fused_add_0", "triton_poi_fused_add_0"},
      {"gemm_fusion_dot_general_3", "gemm_fusion_dot_general_3"},
      {"loop_add_fusion", "loop_add_fusion"},
      // Not a C++ name: kept as it is.
      {"fusion.12", "fusion.12"},
      {"_Z6kernelPfi", "_Z6kernelPfi"},
      {"", ""},
      {"  padded_kernel  ", "padded_kernel"},
      {"a name with spaces", "a name with spaces"},
      {"void (anonymous namespace)::kernel(float*)", "kernel"},
      {"void bar::kernel<float>(float*)", "bar::kernel<float>"},
      {"void k<at::native::(anonymous namespace)::CompareEqFunctor<float> >(int)", "k<CompareEqFunctor<float>>"},
  };
  for (const NameCase& c : cases) EXPECT_EQ(shortKernelName(c.full), c.short_name) << c.full;
}

TEST(ShortKernelName, LongNamesAreCutAtTheEndOnly) {
  // A plain name within the generous width stays whole; beyond it, it is cut at the end.
  const std::string plain(150, 'x');
  EXPECT_EQ(shortKernelName(plain), plain);
  const std::string longer = std::string(300, 'y') + "_tail";
  const std::string cut = shortKernelName(longer);
  EXPECT_EQ(cut, std::string(157, 'y') + "...");
  // The width is an option: deeper template arguments go first, then trailing ones.
  const std::string name = "void k<a::A<int, float>, b::B<c::C<int> >, long>(int)";
  EXPECT_EQ(shortKernelName(name), "k<A<int, float>, B<C<int>>, long>");
  EXPECT_EQ(shortKernelName(name, {24, 160}), "k<A<...>, B<...>, long>");
  EXPECT_EQ(shortKernelName(name, {20, 160}), "k<A<...>, ...>");
  EXPECT_EQ(shortKernelName(name, {10, 160}), "k<...>");
  // Never inside a UTF-8 character: "é" is two bytes.
  std::string accented;
  for (int i = 0; i < 100; ++i) accented += "\xc3\xa9";
  const std::string a = shortKernelName(accented, {120, 160});
  EXPECT_EQ(a.size(), 159u);  // 78 whole characters and "..."
  EXPECT_EQ(a.substr(a.size() - 3), "...");
}

TEST(ShortKernelName, HostileNamesTerminateQuickly) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string deep = "void f<";
  for (int i = 0; i < 200000; ++i) deep += "a<";
  deep += "b";
  deep += std::string(200001, '>');
  deep += "(int)";
  const std::string s = shortKernelName(deep);
  EXPECT_LE(s.size(), 120u);
  EXPECT_EQ(s.rfind("f<a<", 0), 0u) << s;
  std::string scopes = "void ";
  for (int i = 0; i < 100000; ++i) scopes += "n::";
  EXPECT_EQ(shortKernelName(scopes + "k<int>(int)"), "k<int>");
  EXPECT_LE(shortKernelName(std::string(1 << 20, '<')).size(), 160u);
  EXPECT_EQ(shortKernelName(std::string(1 << 20, ')')).size(), 160u);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 5.0);
}

TEST(KernelNames, TellsApartWhatWouldLookTheSame) {
  const std::vector<std::string> full = {
      // Overloads: the parameter list tells them apart.
      "void foo::scale<float>(float*, int)",
      "void foo::scale<float>(double*, int)",
      // The same function in two namespaces: the scopes do.
      "void ns1::mykernel<int>(int*)",
      "void ns2::mykernel<int>(int*)",
      // Lambdas of one function for two types: the lambda's parameters do.
      "void at::native::vectorized_elementwise_kernel<4, at::native::foo(at::TensorIteratorBase&)::{lambda()#1}::"
      "operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::foo(at::TensorIteratorBase&)"
      "::{lambda()#1}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>)",
      "void at::native::vectorized_elementwise_kernel<4, at::native::foo(at::TensorIteratorBase&)::{lambda()#1}::"
      "operator()() const::{lambda(c10::Half)#1}, std::array<char*, 2ul> >(int, at::native::foo(at::TensorIteratorBase&)"
      "::{lambda()#1}::operator()() const::{lambda(c10::Half)#1}, std::array<char*, 2ul>)",
      // Only the return type differs: nothing short tells them apart but a number.
      "int twin(int)",
      "void twin(int)",
      // Template arguments cut to fit: more of them.
      "void k<a::A<int, float>, b::B<c::C<int> >, long>(int)",
      "void k<a::A<int, float>, b::B<c::C<long> >, long>(int)",
      // A kernel whose short name is already what a lambda tier would produce stays as it is.
      "ordinary_kernel",
  };
  const KernelNames names(full, {24, 160});
  EXPECT_EQ(names.shortName(full[0]), "scale<float>(float*, int)");
  EXPECT_EQ(names.shortName(full[1]), "scale<float>(double*, int)");
  EXPECT_EQ(names.shortName(full[2]), "ns1::mykernel<int>(int*)");
  EXPECT_EQ(names.shortName(full[3]), "ns2::mykernel<int>(int*)");
  EXPECT_EQ(names.shortName(full[4]), "vectorized_elementwise_kernel<4, foo::lambda(float), array<char*, 2ul>>");
  EXPECT_EQ(names.shortName(full[5]), "vectorized_elementwise_kernel<4, foo::lambda(Half), array<char*, 2ul>>");
  EXPECT_EQ(names.shortName(full[6]), "twin #1");
  EXPECT_EQ(names.shortName(full[7]), "twin #2");
  EXPECT_EQ(names.shortName(full[8]), "k<A<int, float>, B<C<int>>, long>");
  EXPECT_EQ(names.shortName(full[9]), "k<A<int, float>, B<C<long>>, long>");
  EXPECT_EQ(names.shortName(full[10]), "ordinary_kernel");
  std::set<std::string> distinct;
  for (const std::string& f : full) distinct.insert(names.shortName(f));
  EXPECT_EQ(distinct.size(), full.size());
  // Text that is no kernel of the set: label() keeps it, shortName() shortens it alone.
  EXPECT_EQ(names.label("aten::softmax"), "aten::softmax");
  EXPECT_EQ(names.label(full[0]), "scale<float>(float*, int)");
  EXPECT_EQ(names.shortName("void x::other<int>(int)"), "other<int>");
}

TEST(KernelNames, NumbersNeverTakeAnotherKernelsName) {
  // "twin #1" is itself a kernel name here; the two twins must take other numbers.
  const std::vector<std::string> full = {"int twin(int)", "void twin(int)", "twin #1"};
  const KernelNames names(full);
  std::set<std::string> distinct;
  for (const std::string& f : full) distinct.insert(names.shortName(f));
  EXPECT_EQ(distinct.size(), 3u);
  EXPECT_EQ(names.shortName("twin #1"), "twin #1");
  EXPECT_EQ(names.shortName("int twin(int)"), "twin #2");
  EXPECT_EQ(names.shortName("void twin(int)"), "twin #3");
}

// Every recorded database: each distinct kernel gets its own short name, without scopes of
// anonymous namespaces, lambdas or parameter lists, and of a readable length.
TEST(KernelNames, EveryRecordedDatabaseKeepsKernelsApart) {
  int databases = 0;
  for (const auto& entry : std::filesystem::directory_iterator(FPROF_SOURCE_DIR "/tests/data")) {
    if (entry.path().extension() != ".fprof") continue;
    auto p = core::loadProfile(entry.path().string());
    ASSERT_TRUE(p) << p.error();
    ++databases;
    const KernelNames names = KernelNames::of({&*p});
    std::set<std::string> full, shown;
    for (const core::KernelRow& k : p->kernels) {
      const std::string& name = p->str(k.demangled_id);
      if (!full.insert(name).second) continue;
      const std::string s = names.shortName(name);
      shown.insert(s);
      EXPECT_EQ(s.find("(anonymous"), std::string::npos) << s;
      EXPECT_EQ(s.find("{lambda"), std::string::npos) << s;
      EXPECT_EQ(s.find("> >"), std::string::npos) << s;
      EXPECT_LE(s.size(), 320u) << s;
      EXPECT_FALSE(s.empty()) << name;
    }
    EXPECT_EQ(shown.size(), full.size()) << entry.path();
    EXPECT_EQ(names.size(), full.size());
  }
  EXPECT_GE(databases, 10);
}

}  // namespace
}  // namespace fprof::analysis
