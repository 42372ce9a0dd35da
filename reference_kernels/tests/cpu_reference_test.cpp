// Unit tests of the CPU references: hand-computed values, so a wrong reference cannot pass.
#include "cpu_reference.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace fprof::ref {
namespace {

TEST(CpuReference, GeluTanhKnownValues) {
  EXPECT_DOUBLE_EQ(geluTanh(0.0), 0.0);
  // 0.5 * (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.8411919906082768
  EXPECT_NEAR(geluTanh(1.0), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(geluTanh(-1.0), -0.15880800939172324, 1e-15);
  EXPECT_NEAR(silu(1.0), 0.7310585786300049, 1e-15);
  EXPECT_EQ(applyActivation(Activation::Relu, -2.0), 0.0);
  EXPECT_EQ(applyActivation(Activation::Relu, 2.5), 2.5);
}

TEST(CpuReference, ElementwiseChain) {
  const auto y = elementwiseChain({1.0f, -1.0f}, {0.0f, 0.5f}, {1.0f, 2.0f});
  ASSERT_EQ(y.size(), 2u);
  EXPECT_NEAR(y[0], geluTanh(1.0), 1e-15);
  EXPECT_NEAR(y[1], geluTanh(-1.0), 1e-15);
}

TEST(CpuReference, ResidualLayerNormKnownRow) {
  // h = [1, 2, 3, 4]: mean 2.5, variance 1.25.
  const auto r = residualLayerNorm({0.5f, 1.0f, 1.5f, 2.0f}, {0.5f, 1.0f, 1.5f, 2.0f},
                                   {1.0f, 1.0f, 2.0f, 1.0f}, {0.0f, 0.0f, 0.0f, 1.0f}, 1, 4, 0.0);
  const double inv_std = 1.0 / std::sqrt(1.25);
  EXPECT_DOUBLE_EQ(r.sum[2], 3.0);
  EXPECT_NEAR(r.out[0], -1.5 * inv_std, 1e-15);
  EXPECT_NEAR(r.out[2], 2.0 * 0.5 * inv_std, 1e-15);
  EXPECT_NEAR(r.out[3], 1.5 * inv_std + 1.0, 1e-15);
}

TEST(CpuReference, ResidualRmsNormKnownRow) {
  // h = [3, 4]: mean square 12.5.
  const auto r = residualRmsNorm({1.0f, 4.0f}, {2.0f, 0.0f}, {1.0f, 2.0f}, 1, 2, 0.0);
  EXPECT_NEAR(r.out[0], 3.0 / std::sqrt(12.5), 1e-15);
  EXPECT_NEAR(r.out[1], 8.0 / std::sqrt(12.5), 1e-15);
}

TEST(CpuReference, MatmulBiasActivation) {
  // x [2,3], w [2,3] (rows are output features).
  const std::vector<float> x{1, 2, 3, -1, 0, 1};
  const std::vector<float> w{1, 0, 0, 1, 1, -1};
  const auto y = matmulBiasAct(x, w, {0.5f, -1.0f}, 2, 2, 3, Activation::Relu);
  // row 0: [1+0.5, 0-1] -> relu [1.5, 0]; row 1: [-1+0.5, -2-1] -> [0, 0]
  EXPECT_DOUBLE_EQ(y[0], 1.5);
  EXPECT_DOUBLE_EQ(y[1], 0.0);
  EXPECT_DOUBLE_EQ(y[2], 0.0);
  const auto plain = matmulBiasAct(x, w, {}, 2, 2, 3, Activation::None);
  EXPECT_DOUBLE_EQ(plain[1], 0.0);
  EXPECT_DOUBLE_EQ(plain[3], -2.0);
  EXPECT_THROW(matmulBiasAct(x, w, {1.0f}, 2, 2, 3, Activation::None), std::invalid_argument);
}

TEST(CpuReference, AttentionSingleKeyReturnsValue) {
  const auto o = attention({1, 2}, {3, 4}, {5, -6}, 1, 1, 1, 2, 0.7, false);
  EXPECT_NEAR(o[0], 5.0, 1e-15);
  EXPECT_NEAR(o[1], -6.0, 1e-15);
}

TEST(CpuReference, AttentionCausalAndScale) {
  // Two queries, two keys, d = 1. Query 0 sees key 0 only under the causal mask.
  const std::vector<float> q{1, 1}, k{0, 2}, v{10, 20};
  const auto causal = attention(q, k, v, 1, 2, 2, 1, 0.5, true);
  EXPECT_NEAR(causal[0], 10.0, 1e-12);
  // Query 1: scores 0 and 1 (scale 0.5 * 2): weights 1/(1+e) and e/(1+e).
  const double e = std::exp(1.0);
  EXPECT_NEAR(causal[1], (10.0 + 20.0 * e) / (1.0 + e), 1e-12);
  const auto full = attention(q, k, v, 1, 2, 2, 1, 0.5, false);
  EXPECT_NEAR(full[0], (10.0 + 20.0 * e) / (1.0 + e), 1e-12);
  // Decode: one query sees all cached keys even when causal.
  const auto decode = attention({1}, k, v, 1, 1, 2, 1, 0.5, true);
  EXPECT_NEAR(decode[0], (10.0 + 20.0 * e) / (1.0 + e), 1e-12);
}

TEST(CpuReference, SoftmaxTopKOrderAndTies) {
  const std::vector<float> logits{0.0f, 2.0f, 1.0f, 2.0f};
  const auto top = softmaxTopK(logits, 1, 4, 3);
  EXPECT_EQ(top.index[0], 1);  // tie between 1 and 3 goes to the lower index
  EXPECT_EQ(top.index[1], 3);
  EXPECT_EQ(top.index[2], 2);
  const double denominator = 1.0 + 2.0 * std::exp(2.0) + std::exp(1.0);
  EXPECT_NEAR(top.probability[0], std::exp(2.0) / denominator, 1e-15);
  EXPECT_NEAR(top.probability[2], std::exp(1.0) / denominator, 1e-15);
}

TEST(CpuReference, ConvCenterTapIsIdentityThenBnRelu) {
  // 1x1 image, one channel each: only the centre tap sees the pixel.
  const std::vector<float> w{9, 9, 9, 9, 2, 9, 9, 9, 9};
  const ConvShape shape{1, 1, 1, 1, 1};
  const auto y = conv2dBnRelu({3.0f}, w, {2.0f}, {1.0f}, {4.0f}, {4.0f}, shape, 0.0);
  EXPECT_NEAR(y[0], (6.0 - 4.0) / 2.0 * 2.0 + 1.0, 1e-15);
  const auto negative = conv2dBnRelu({-3.0f}, w, {2.0f}, {1.0f}, {4.0f}, {4.0f}, shape, 0.0);
  EXPECT_EQ(negative[0], 0.0);
}

TEST(CpuReference, ConvPaddingOnThreeByThree) {
  // All-ones input and kernel: corner sums 4 taps, edge 6, centre 9.
  const ConvShape shape{1, 1, 1, 3, 3};
  const auto y = conv2dBnRelu(std::vector<float>(9, 1.0f), std::vector<float>(9, 1.0f), {1.0f},
                              {0.0f}, {0.0f}, {1.0f}, shape, 0.0);
  EXPECT_DOUBLE_EQ(y[0], 4.0);
  EXPECT_DOUBLE_EQ(y[1], 6.0);
  EXPECT_DOUBLE_EQ(y[4], 9.0);
}

TEST(CpuReference, RelativeErrorAndNaN) {
  EXPECT_DOUBLE_EQ(relativeError({3.0, 4.0}, {3.0, 4.0}), 0.0);
  EXPECT_DOUBLE_EQ(relativeError({3.0, 4.0}, {0.0, 5.0}), std::sqrt(9.0 + 1.0) / 5.0);
  EXPECT_TRUE(std::isnan(relativeError({NAN, 1.0}, {1.0, 1.0})));
}

TEST(CpuReference, Median) {
  EXPECT_EQ(median({3.0, 1.0, 2.0}).value(), 2.0);
  EXPECT_EQ(median({4.0, 1.0, 2.0, 3.0}).value(), 2.5);
  EXPECT_FALSE(median({}).has_value());
}

}  // namespace
}  // namespace fprof::ref

namespace fprof::ref {
namespace {

TEST(Storage, RoundsToNearestEven) {
  EXPECT_EQ(roundTo(Storage::Exact, 1.0 + 1e-9), 1.0 + 1e-9);
  // bf16 keeps 8 significant bits: 1 + 2^-7 is exact, 1 + 2^-8 is a tie that goes to even (1),
  // 1 + 3 * 2^-9 rounds up.
  EXPECT_EQ(roundTo(Storage::Bf16, 1.0 + 0.0078125), 1.0078125);
  EXPECT_EQ(roundTo(Storage::Bf16, 1.0 + 0.00390625), 1.0);
  EXPECT_EQ(roundTo(Storage::Bf16, 1.0 + 0.005859375), 1.0078125);
  // fp16 keeps 11: 1 + 2^-11 is a tie that goes to even (1); 1 + 3 * 2^-12 rounds up.
  EXPECT_EQ(roundTo(Storage::Fp16, 1.0 + 0.00048828125), 1.0);
  EXPECT_EQ(roundTo(Storage::Fp16, 1.0 + 0.000732421875), 1.0009765625);
  EXPECT_EQ(roundTo(Storage::Bf16, -3.0), -3.0);
}

TEST(ElementwiseChain, UnfusedReferenceRoundsTheIntermediatesLikeTheGpuStores) {
  // a + b = 2^-7 is a bf16 value; times 1.0029296875 (10 mantissa bits) it is not, so the stored
  // product, and the result, differ from the exact chain's.
  const std::vector<float> a = {1.00390625f}, b = {-0.99609375f}, c = {1.0029296875f};
  const auto exact = elementwiseChain(a, b, c);
  const auto stored = elementwiseChain(a, b, c, Storage::Bf16);
  const double sum = 1.00390625 - 0.99609375;
  EXPECT_DOUBLE_EQ(exact[0], geluTanh(sum * 1.0029296875));
  EXPECT_DOUBLE_EQ(stored[0], geluTanh(roundTo(Storage::Bf16, roundTo(Storage::Bf16, sum) * 1.0029296875)));
  EXPECT_NE(stored[0], exact[0]);
  EXPECT_EQ(elementwiseChain(a, b, c, Storage::Exact), exact) << "Exact rounds nothing";
}

TEST(MatmulBiasAct, UnfusedReferenceRoundsTheProductLikeTheGpuStore) {
  // 1x1x1 near cancellation: x*w = 1.00390625 * 1.0029296875 (exact in float), bias = -1.
  const std::vector<float> x = {1.00390625f}, w = {1.0029296875f}, b = {-1.0f};
  const double product = 1.00390625 * 1.0029296875;
  const auto exact = matmulBiasAct(x, w, b, 1, 1, 1, Activation::None);
  const auto stored = matmulBiasAct(x, w, b, 1, 1, 1, Activation::None, Storage::Bf16);
  EXPECT_DOUBLE_EQ(exact[0], product - 1.0);
  EXPECT_DOUBLE_EQ(stored[0], roundTo(Storage::Bf16, product) - 1.0);
  // The two differ by far more than the bf16 tolerance relative to the result: why the unfused
  // variant needs its own reference.
  EXPECT_GT(std::abs(stored[0] - exact[0]) / std::abs(exact[0]), 2e-2);
}

}  // namespace
}  // namespace fprof::ref
