// Median and the one-sided Mann-Whitney U test (see stats.h).
#include "fprof/analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace fprof::analysis {

std::optional<double> median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  const size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2), v.end());
  const double hi = v[n / 2];
  if (n % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2));
  return (lo + hi) / 2;
}

std::vector<double> orderStatistics(std::vector<double> v, size_t count) {
  if (v.size() <= count) return v;
  std::sort(v.begin(), v.end());
  std::vector<double> out(count);
  const double n = static_cast<double>(v.size());
  for (size_t i = 0; i < count; ++i) {
    const auto at = static_cast<size_t>((static_cast<double>(i) + 0.5) * n / static_cast<double>(count));
    out[i] = v[std::min(at, v.size() - 1)];
  }
  return out;
}

std::optional<MannWhitney> mannWhitneyGreater(const std::vector<double>& base, const std::vector<double>& cur) {
  const size_t n1 = base.size(), n2 = cur.size();
  if (n1 == 0 || n2 == 0) return std::nullopt;
  std::vector<std::pair<double, int>> all;
  all.reserve(n1 + n2);
  for (double x : base) all.emplace_back(x, 0);
  for (double x : cur) all.emplace_back(x, 1);
  std::sort(all.begin(), all.end());
  // Mid-ranks; tie groups also feed the variance correction.
  double rank_sum_cur = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double mid = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k) {
      if (all[k].second == 1) rank_sum_cur += mid;
    }
    const double t = static_cast<double>(j - i);
    if (j - i > 1) ties = true;
    tie_term += t * t * t - t;
    i = j;
  }
  MannWhitney r;
  const double dn1 = static_cast<double>(n1), dn2 = static_cast<double>(n2);
  r.u = rank_sum_cur - dn2 * (dn2 + 1) / 2;
  if (!ties && n1 * n2 <= 400) {
    // Exact: f(i, j, u) = arrangements of i base and j cur values with U = u. The largest value
    // is either a base value (beaten by no cur value: f(i-1, j, u)) or a cur value (beats all i
    // base values: f(i, j-1, u-i)).
    const size_t umax = n1 * n2;
    std::vector<std::vector<double>> prev(n2 + 1, std::vector<double>(umax + 1, 0.0)), next = prev;
    for (size_t j = 0; j <= n2; ++j) prev[j][0] = 1;  // i = 0: no base values, U = 0
    for (size_t i = 1; i <= n1; ++i) {
      for (size_t j = 0; j <= n2; ++j) {
        std::fill(next[j].begin(), next[j].end(), 0.0);
        for (size_t u = 0; u <= umax; ++u) {
          double ways = prev[j][u];
          if (j > 0 && u >= i) ways += next[j - 1][u - i];
          next[j][u] = ways;
        }
      }
      std::swap(prev, next);
    }
    double total = 0, tail = 0;
    const auto uobs = static_cast<size_t>(std::llround(r.u));
    for (size_t u = 0; u <= umax; ++u) {
      total += prev[n2][u];
      if (u >= uobs) tail += prev[n2][u];
    }
    r.p_greater = tail / total;
    r.exact = true;
    return r;
  }
  const double n = dn1 + dn2;
  const double mean = dn1 * dn2 / 2;
  const double var = dn1 * dn2 / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (var <= 0) {
    r.p_greater = 1;  // every value equal: no evidence either way
    return r;
  }
  const double z = (r.u - mean - 0.5) / std::sqrt(var);
  r.p_greater = 0.5 * std::erfc(z / std::sqrt(2.0));
  return r;
}

}  // namespace fprof::analysis
