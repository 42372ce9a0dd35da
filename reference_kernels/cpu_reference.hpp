// CPU double-precision references for every reference op, plus the small statistics the
// benchmark needs. Plain C++ so it is built and unit-tested on machines without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace fprof::ref {

enum class Activation { None, Relu, GeluTanh, Silu };

double applyActivation(Activation activation, double v);
double geluTanh(double v);
double silu(double v);

// Storage formats an intermediate tensor can be rounded to.
enum class Storage { Exact, Fp16, Bf16 };
// v rounded to the nearest value of the format (ties to even), as a GPU store of it would.
double roundTo(Storage format, double v);

// y = gelu_tanh((a + b) * c), elementwise. `intermediate` is how a + b and (a + b) * c are stored:
// the unfused chain writes both to memory in the op's dtype, and on one element near cancellation
// that rounding alone exceeded the bf16 tolerance against an exact reference (H100: 2.11e-2).
std::vector<double> elementwiseChain(const std::vector<float>& a, const std::vector<float>& b,
                                     const std::vector<float>& c, Storage intermediate = Storage::Exact);

struct NormResult {
  std::vector<double> sum;  // h = x + residual (the residual stream the next layer reads)
  std::vector<double> out;  // normalized h
};

// Row-major [rows, cols]; gamma/beta have cols elements.
NormResult residualLayerNorm(const std::vector<float>& x, const std::vector<float>& residual,
                             const std::vector<float>& gamma, const std::vector<float>& beta,
                             std::size_t rows, std::size_t cols, double eps);
NormResult residualRmsNorm(const std::vector<float>& x, const std::vector<float>& residual,
                           const std::vector<float>& gamma, std::size_t rows, std::size_t cols,
                           double eps);


// y[M,N] = act(x[M,K] * w[N,K]^T + bias[N]); bias may be empty (no bias). `product` is how the
// product x w^T is stored before bias and activation: an unfused chain writes it to memory in the
// op's dtype, and on a single element near cancellation that rounding alone can exceed the bf16
// tolerance against an exact reference (seen on an H200: 4.4e-2 for 1x1x1 bias+SiLU).
std::vector<double> matmulBiasAct(const std::vector<float>& x, const std::vector<float>& w,
                                  const std::vector<float>& bias, std::size_t m, std::size_t n,
                                  std::size_t k, Activation activation, Storage product = Storage::Exact);

// q [batch, sq, d], k/v [batch, skv, d] -> o [batch, sq, d]. Query i sits at absolute position
// i + (skv - sq), so a decode step (sq = 1) sees every cached key; causal hides later keys.
std::vector<double> attention(const std::vector<float>& q, const std::vector<float>& k,
                              const std::vector<float>& v, std::size_t batch, std::size_t sq,
                              std::size_t skv, std::size_t d, double scale, bool causal);

struct TopK {
  std::vector<double> probability;  // [rows, k], descending
  std::vector<std::int32_t> index;  // [rows, k]; ties go to the lower index
};
// softmax over each row of logits [rows, vocab], then the k largest probabilities.
TopK softmaxTopK(const std::vector<float>& logits, std::size_t rows, std::size_t vocab,
                 std::size_t k);
// Full softmax, for checking the probability of any index.
std::vector<double> softmaxRows(const std::vector<float>& logits, std::size_t rows,
                                std::size_t cols);

struct ConvShape {
  std::size_t batch, in_channels, out_channels, height, width;  // 3x3, stride 1, padding 1
};
// relu(batchnorm_inference(conv2d(x, w))), NCHW, w [out, in, 3, 3].
std::vector<double> conv2dBnRelu(const std::vector<float>& x, const std::vector<float>& w,
                                 const std::vector<float>& bn_gamma,
                                 const std::vector<float>& bn_beta,
                                 const std::vector<float>& bn_mean,
                                 const std::vector<float>& bn_var, const ConvShape& shape,
                                 double eps);

// ||out - ref|| / ||ref||; NaN in out gives NaN (which then fails every tolerance).
// ref all zero: returns ||out||.
double relativeError(const std::vector<double>& out, const std::vector<double>& ref);

// No values, no median.
std::optional<double> median(std::vector<double> values);

}  // namespace fprof::ref
