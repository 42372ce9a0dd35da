// Data flow step 1: argument roles from measurement, from the C++ signature, from position; and
// which launches are opaque (may write memory fprof cannot see).
#include <gtest/gtest.h>

#include "fprof/analysis/arg_roles.h"

namespace fprof::analysis {
namespace {

using K = ParamKind;

TEST(Signature, ClassifiesEachParameter) {
  const Signature s = parseSignature(
      "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, float, false>(int, float, "
      "c10::Half const*, c10::Half const*, c10::Half const*, float*, float*, c10::Half*)");
  ASSERT_TRUE(s.parsed);
  EXPECT_EQ(s.params, (std::vector<K>{K::kScalar, K::kScalar, K::kConstPointer, K::kConstPointer, K::kConstPointer,
                                      K::kMutablePointer, K::kMutablePointer, K::kMutablePointer}));
  EXPECT_TRUE(s.anyConstPointer());
  EXPECT_FALSE(s.anyAggregate());
  EXPECT_EQ(parseSignature("void k(float* __restrict__, const float* __restrict__, float* const, float4, unsigned long)")
                .params,
            (std::vector<K>{K::kMutablePointer, K::kConstPointer, K::kMutablePointer, K::kScalar, K::kScalar}));
}

TEST(Signature, ByValueStructsLambdasAndArraysAreAggregates) {
  // PyTorch's TensorIterator kernels pass their data pointers inside a std::array by value.
  const Signature s = parseSignature(
      "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, "
      "3ul> >(int, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, 3ul>)");
  EXPECT_EQ(s.params, (std::vector<K>{K::kScalar, K::kAggregate, K::kAggregate}));
  EXPECT_TRUE(s.anyAggregate());
  EXPECT_EQ(parseSignature("void k(int, foo(int)::{lambda(long, int)#1})").params,
            (std::vector<K>{K::kScalar, K::kAggregate}));
  EXPECT_FALSE(parseSignature("nvjet_sm90_hsh_24x64_64x16_4x2_h_bz_bias_TNN").parsed);
  EXPECT_TRUE(parseSignature("void k()").parsed);
  EXPECT_TRUE(parseSignature("void k()").params.empty());
}

std::vector<std::optional<ArgRoleResult>> rolesOf(const MeasuredRoles& m, const std::string& name,
                                                  const std::vector<int32_t>& indices) {
  std::vector<ArgSlot> slots;
  for (int32_t i : indices) slots.push_back({i, std::nullopt});
  return argumentRoles(m, parseSignature(name), 1, 7, slots);
}

void expectRole(const std::optional<ArgRoleResult>& r, ArgRole role, RoleSource source) {
  ASSERT_TRUE(r);
  EXPECT_EQ(r->role, role) << argRoleName(r->role);
  EXPECT_EQ(r->source, source) << roleSourceName(r->source);
}

TEST(ArgRoles, ConstCorrectSignatureDeclaresInputsAndOutputs) {
  const auto r = rolesOf({}, "void scale(float*, float const*, int)", {0, 1, 2});
  expectRole(r[0], ArgRole::kWrite, RoleSource::kSignature);
  expectRole(r[1], ArgRole::kRead, RoleSource::kSignature);
  EXPECT_FALSE(r[2]) << "an int whose 8-byte slot looks like an address is no pointer";
}

TEST(ArgRoles, MutablePointersOfAKernelWithoutConstAreUnknown) {
  // vectorized_gather_kernel(char* out, char* in, long* index, ...): nothing says which is written.
  const auto r = rolesOf({}, "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long)",
                         {0, 1, 2});
  for (const auto& x : r) expectRole(x, ArgRole::kUnknown, RoleSource::kSignature);
}

TEST(ArgRoles, AnOnlyPointerIsWritten) {
  // torch.arange's kernel: (int, lambda, long*): its one pointer is its output.
  const auto r = rolesOf({}, "void arange(int, foo()::{lambda(long)#1}, long*)", {2});
  expectRole(r[0], ArgRole::kWrite, RoleSource::kSignature);
}

TEST(ArgRoles, WithoutParameterListTheLastPointerIsWritten) {
  const auto r = rolesOf({}, "triton_poi_fused_add_0", {0, 1, 3});
  expectRole(r[0], ArgRole::kRead, RoleSource::kPosition);
  expectRole(r[1], ArgRole::kRead, RoleSource::kPosition);
  expectRole(r[2], ArgRole::kWrite, RoleSource::kPosition);
  // A parameter list that does not cover the launch's arguments is not this launch's.
  const auto s = rolesOf({}, "void k(int)", {0, 1});
  expectRole(s[1], ArgRole::kWrite, RoleSource::kPosition);
}

TEST(ArgRoles, MeasuredRolesWinArgumentByArgument) {
  MeasuredRoles m;
  m.add(1, 7, 0, "read");         // output-first by position would say written
  m.add(1, 7, 2, "write");
  m.add(1, 7, 3, "not_pointer");  // a size that happened to look like an address
  m.add(1, 8, 0, "write");        // another function: no effect
  m.add(1, 7, 5, "bogus");        // not a role: ignored
  const auto r = rolesOf(m, "triton_poi_fused_add_0", {0, 1, 2, 3});
  expectRole(r[0], ArgRole::kRead, RoleSource::kMeasured);
  expectRole(r[1], ArgRole::kRead, RoleSource::kPosition);  // not measured: the fallback, and it says so
  expectRole(r[2], ArgRole::kWrite, RoleSource::kMeasured);
  EXPECT_FALSE(r[3]);
  EXPECT_FALSE(m.find(1, 7, {5, std::nullopt}));
  EXPECT_FALSE(m.empty());
}

core::KernelArgRecord arg(int32_t index, int32_t offset) { return {1, 1, index, offset, 8, 0x1000}; }

TEST(ArgRoles, OpaqueLaunches) {
  const Signature ln = parseSignature("void ln(int, float, float const*, float*)");
  const Signature iter = parseSignature("void k(int, std::array<char*, 3ul>)");
  const Signature none = parseSignature("cudnn_generated_fort_native_sdpa_sm90_kernel0_0");
  std::vector<core::KernelArgRecord> args = {arg(2, 8), arg(3, 16)};
  EXPECT_FALSE(launchIsOpaque(ln, args.data(), args.size(), 2));
  EXPECT_TRUE(launchIsOpaque(ln, args.data(), args.size(), 0)) << "no pointer seen: it writes where we cannot see";
  EXPECT_TRUE(launchIsOpaque(iter, args.data(), args.size(), 1)) << "pointers in a by-value array";
  // No parameter list: cuDNN's attention kernel records one 8-byte argument, index 4 at offset
  // 72: its four parameters before take 72 bytes, more than 8 each, so some hold a struct.
  const std::vector<core::KernelArgRecord> sdpa = {arg(4, 72)};
  EXPECT_TRUE(launchIsOpaque(none, sdpa.data(), sdpa.size(), 1));
  // Triton: pointers with a 4-byte scalar between (index 1, offset 8-16): nothing hidden.
  const std::vector<core::KernelArgRecord> triton = {arg(0, 0), arg(2, 16), arg(3, 24)};
  EXPECT_FALSE(launchIsOpaque(none, triton.data(), triton.size(), 3));
}

TEST(ArgRoles, WordsOfALargerParameter) {
  // std::array<char*, 3> at parameter 1, recorded word by word (size 24, offsets 8, 16, 24).
  const Signature iter = parseSignature("void k(int, std::array<char*, 3ul>)");
  const std::vector<core::KernelArgRecord> words = {{1, 1, 1, 8, 24, 0x1000}, {1, 1, 1, 16, 24, 0x2000},
                                                    {1, 1, 1, 24, 24, 0x3000}};
  EXPECT_FALSE(launchIsOpaque(iter, words.data(), words.size(), 3, true));
  // A parameter with no row, where words are recorded, is smaller than 8 bytes: no pointer in it.
  const Signature functor = parseSignature("void k(int, Functor, std::array<char*, 3ul>)");
  std::vector<core::KernelArgRecord> shifted = words;
  for (auto& w : shifted) w.index = 2;
  EXPECT_FALSE(launchIsOpaque(functor, shifted.data(), shifted.size(), 3, true));
  EXPECT_TRUE(launchIsOpaque(functor, shifted.data(), shifted.size(), 3, false));
  // Without a parameter list, consecutive words of one parameter leave no gap.
  EXPECT_FALSE(launchIsOpaque(parseSignature("k_extern_c"), words.data(), words.size(), 3, true));

  MeasuredRoles m;
  m.add(1, 7, 1, "write", 8);
  m.add(1, 7, 1, "read");
  const auto r = argumentRoles(m, iter, 1, 7, {{1, 8}, {1, 16}});
  expectRole(r[0], ArgRole::kWrite, RoleSource::kMeasured);
  expectRole(r[1], ArgRole::kUnknown, RoleSource::kSignature);  // the parameter's role is not this word's
  EXPECT_EQ(m.writes(1, 7)->size(), 1u);
  EXPECT_FALSE(m.writes(1, 8)) << "not measured: nothing said";
}

TEST(ArgRoles, AnEightByteParameterTakesAnyRoleOfItsIndex) {
  // The database stores each 8-byte parameter's role at its offset (index 2 at 8); files from
  // before the offset column say 0 for every row. Either way the parameter's role is its index's.
  MeasuredRoles m;
  m.add(1, 7, 2, "write", 8);
  m.add(1, 7, 3, "read", 0);
  const auto r = argumentRoles(m, parseSignature("k_extern_c"), 1, 7, {{2, std::nullopt}, {3, std::nullopt}});
  expectRole(r[0], ArgRole::kWrite, RoleSource::kMeasured);
  expectRole(r[1], ArgRole::kRead, RoleSource::kMeasured);
  EXPECT_TRUE(MeasuredRoles::covers({2, 8}, {2, std::nullopt}));
  EXPECT_FALSE(MeasuredRoles::covers({2, 8}, {2, 16})) << "a word takes only its own offset's role";
  EXPECT_FALSE(MeasuredRoles::covers({2, 8}, {3, std::nullopt}));
}

}  // namespace
}  // namespace fprof::analysis
