// CPU double-precision references (see cpu_reference.hpp). Written for clarity, not speed:
// the shapes checked against them are small.
#include "cpu_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace fprof::ref {

double geluTanh(double v) {
  constexpr double kSqrt2OverPi = 0.7978845608028654;
  return 0.5 * v * (1.0 + std::tanh(kSqrt2OverPi * (v + 0.044715 * v * v * v)));
}

double silu(double v) { return v / (1.0 + std::exp(-v)); }

double applyActivation(Activation activation, double v) {
  switch (activation) {
    case Activation::None: return v;
    case Activation::Relu: return v > 0.0 ? v : 0.0;
    case Activation::GeluTanh: return geluTanh(v);
    case Activation::Silu: return silu(v);
  }
  return v;
}

std::vector<double> elementwiseChain(const std::vector<float>& a, const std::vector<float>& b,
                                     const std::vector<float>& c, Storage intermediate) {
  if (a.size() != b.size() || a.size() != c.size()) {
    throw std::invalid_argument("elementwiseChain: inputs differ in length");
  }
  std::vector<double> y(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double sum = roundTo(intermediate, double(a[i]) + double(b[i]));
    y[i] = geluTanh(roundTo(intermediate, sum * double(c[i])));
  }
  return y;
}

namespace {

NormResult residualNorm(const std::vector<float>& x, const std::vector<float>& residual,
                        const std::vector<float>& gamma, const std::vector<float>* beta,
                        std::size_t rows, std::size_t cols, double eps, bool rms) {
  if (x.size() != rows * cols || residual.size() != rows * cols || gamma.size() != cols ||
      (beta != nullptr && beta->size() != cols)) {
    throw std::invalid_argument("residualNorm: shape mismatch");
  }
  NormResult result{std::vector<double>(rows * cols), std::vector<double>(rows * cols)};
  for (std::size_t r = 0; r < rows; ++r) {
    double* h = result.sum.data() + r * cols;
    double mean = 0.0;
    double sum_squares = 0.0;
    for (std::size_t c = 0; c < cols; ++c) {
      h[c] = double(x[r * cols + c]) + double(residual[r * cols + c]);
      mean += h[c];
      sum_squares += h[c] * h[c];
    }
    mean /= double(cols);
    double denominator = 0.0;
    if (rms) {
      denominator = std::sqrt(sum_squares / double(cols) + eps);
    } else {
      double variance = 0.0;
      for (std::size_t c = 0; c < cols; ++c) variance += (h[c] - mean) * (h[c] - mean);
      denominator = std::sqrt(variance / double(cols) + eps);
    }
    for (std::size_t c = 0; c < cols; ++c) {
      const double centered = rms ? h[c] : h[c] - mean;
      result.out[r * cols + c] =
          centered / denominator * double(gamma[c]) + (beta ? double((*beta)[c]) : 0.0);
    }
  }
  return result;
}

}  // namespace

NormResult residualLayerNorm(const std::vector<float>& x, const std::vector<float>& residual,
                             const std::vector<float>& gamma, const std::vector<float>& beta,
                             std::size_t rows, std::size_t cols, double eps) {
  return residualNorm(x, residual, gamma, &beta, rows, cols, eps, false);
}

NormResult residualRmsNorm(const std::vector<float>& x, const std::vector<float>& residual,
                           const std::vector<float>& gamma, std::size_t rows, std::size_t cols,
                           double eps) {
  return residualNorm(x, residual, gamma, nullptr, rows, cols, eps, true);
}

double roundTo(Storage format, double v) {
  switch (format) {
    case Storage::Exact:
      return v;
    case Storage::Fp16:
      return double(static_cast<float>(static_cast<_Float16>(static_cast<float>(v))));
    case Storage::Bf16: {
      // Round the float's upper 16 bits to nearest, ties to even (NaN/inf pass through).
      const float f = static_cast<float>(v);
      std::uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      if ((bits & 0x7f800000u) != 0x7f800000u) bits += 0x7fffu + ((bits >> 16) & 1u);
      bits &= 0xffff0000u;
      float r;
      std::memcpy(&r, &bits, sizeof r);
      return double(r);
    }
  }
  return v;
}

std::vector<double> matmulBiasAct(const std::vector<float>& x, const std::vector<float>& w,
                                  const std::vector<float>& bias, std::size_t m, std::size_t n,
                                  std::size_t k, Activation activation, Storage product) {
  if (x.size() != m * k || w.size() != n * k || (!bias.empty() && bias.size() != n)) {
    throw std::invalid_argument("matmulBiasAct: shape mismatch");
  }
  std::vector<double> y(m * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (std::size_t p = 0; p < k; ++p) acc += double(x[i * k + p]) * double(w[j * k + p]);
      acc = roundTo(product, acc) + (bias.empty() ? 0.0 : double(bias[j]));
      y[i * n + j] = applyActivation(activation, acc);
    }
  }
  return y;
}

std::vector<double> attention(const std::vector<float>& q, const std::vector<float>& k,
                              const std::vector<float>& v, std::size_t batch, std::size_t sq,
                              std::size_t skv, std::size_t d, double scale, bool causal) {
  if (q.size() != batch * sq * d || k.size() != batch * skv * d || v.size() != batch * skv * d ||
      sq > skv) {
    throw std::invalid_argument("attention: shape mismatch");
  }
  std::vector<double> o(batch * sq * d, 0.0);
  std::vector<double> scores(skv);
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t i = 0; i < sq; ++i) {
      const std::size_t visible = causal ? i + (skv - sq) + 1 : skv;
      double max_score = -std::numeric_limits<double>::infinity();
      for (std::size_t j = 0; j < visible; ++j) {
        double s = 0.0;
        for (std::size_t c = 0; c < d; ++c) {
          s += double(q[(b * sq + i) * d + c]) * double(k[(b * skv + j) * d + c]);
        }
        scores[j] = s * scale;
        max_score = std::max(max_score, scores[j]);
      }
      double denominator = 0.0;
      for (std::size_t j = 0; j < visible; ++j) {
        scores[j] = std::exp(scores[j] - max_score);
        denominator += scores[j];
      }
      for (std::size_t j = 0; j < visible; ++j) {
        const double p = scores[j] / denominator;
        for (std::size_t c = 0; c < d; ++c) {
          o[(b * sq + i) * d + c] += p * double(v[(b * skv + j) * d + c]);
        }
      }
    }
  }
  return o;
}

std::vector<double> softmaxRows(const std::vector<float>& logits, std::size_t rows,
                                std::size_t cols) {
  if (logits.size() != rows * cols) throw std::invalid_argument("softmaxRows: shape mismatch");
  std::vector<double> p(rows * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    double max_logit = -std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < cols; ++c) max_logit = std::max(max_logit, double(logits[r * cols + c]));
    double denominator = 0.0;
    for (std::size_t c = 0; c < cols; ++c) {
      p[r * cols + c] = std::exp(double(logits[r * cols + c]) - max_logit);
      denominator += p[r * cols + c];
    }
    for (std::size_t c = 0; c < cols; ++c) p[r * cols + c] /= denominator;
  }
  return p;
}

TopK softmaxTopK(const std::vector<float>& logits, std::size_t rows, std::size_t vocab,
                 std::size_t k) {
  if (k > vocab) throw std::invalid_argument("softmaxTopK: k > vocab");
  const std::vector<double> p = softmaxRows(logits, rows, vocab);
  TopK top{std::vector<double>(rows * k), std::vector<std::int32_t>(rows * k)};
  std::vector<std::int32_t> order(vocab);
  for (std::size_t r = 0; r < rows; ++r) {
    std::iota(order.begin(), order.end(), 0);
    const double* row = p.data() + r * vocab;
    std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(k), order.end(),
                      [row](std::int32_t a, std::int32_t b) {
                        return row[a] > row[b] || (row[a] == row[b] && a < b);
                      });
    for (std::size_t j = 0; j < k; ++j) {
      top.index[r * k + j] = order[j];
      top.probability[r * k + j] = row[order[j]];
    }
  }
  return top;
}

std::vector<double> conv2dBnRelu(const std::vector<float>& x, const std::vector<float>& w,
                                 const std::vector<float>& bn_gamma,
                                 const std::vector<float>& bn_beta,
                                 const std::vector<float>& bn_mean,
                                 const std::vector<float>& bn_var, const ConvShape& s,
                                 double eps) {
  const std::size_t hw = s.height * s.width;
  if (x.size() != s.batch * s.in_channels * hw || w.size() != s.out_channels * s.in_channels * 9 ||
      bn_gamma.size() != s.out_channels || bn_beta.size() != s.out_channels ||
      bn_mean.size() != s.out_channels || bn_var.size() != s.out_channels) {
    throw std::invalid_argument("conv2dBnRelu: shape mismatch");
  }
  std::vector<double> y(s.batch * s.out_channels * hw);
  for (std::size_t n = 0; n < s.batch; ++n) {
    for (std::size_t co = 0; co < s.out_channels; ++co) {
      const double inv_std = 1.0 / std::sqrt(double(bn_var[co]) + eps);
      for (std::size_t h = 0; h < s.height; ++h) {
        for (std::size_t wi = 0; wi < s.width; ++wi) {
          double acc = 0.0;
          for (std::size_t ci = 0; ci < s.in_channels; ++ci) {
            for (std::size_t kh = 0; kh < 3; ++kh) {
              for (std::size_t kw = 0; kw < 3; ++kw) {
                // Padding 1: input row h + kh - 1, skipped outside the image.
                if (h + kh < 1 || h + kh - 1 >= s.height || wi + kw < 1 ||
                    wi + kw - 1 >= s.width) {
                  continue;
                }
                acc += double(x[((n * s.in_channels + ci) * s.height + h + kh - 1) * s.width +
                                wi + kw - 1]) *
                       double(w[((co * s.in_channels + ci) * 3 + kh) * 3 + kw]);
              }
            }
          }
          const double bn = (acc - double(bn_mean[co])) * inv_std * double(bn_gamma[co]) +
                            double(bn_beta[co]);
          y[((n * s.out_channels + co) * s.height + h) * s.width + wi] = bn > 0.0 ? bn : 0.0;
        }
      }
    }
  }
  return y;
}

double relativeError(const std::vector<double>& out, const std::vector<double>& ref) {
  if (out.size() != ref.size()) throw std::invalid_argument("relativeError: length mismatch");
  double diff = 0.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    diff += (out[i] - ref[i]) * (out[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  if (norm == 0.0) return std::sqrt(diff);
  return std::sqrt(diff / norm);
}

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

}  // namespace fprof::ref
