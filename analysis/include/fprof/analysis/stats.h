// Statistics for repeated measurements: median, and the Mann-Whitney U test the gate uses to
// decide whether a kernel really got slower (docs/gate.md).
#pragma once

#include <optional>
#include <vector>

namespace fprof::analysis {

std::optional<double> median(std::vector<double> values);  // none for an empty set

// At most `count` of `values`, standing for all of them: every value when there are no more than
// `count`, else the order statistics at the evenly spaced quantiles (i + 1/2) / count, ascending.
std::vector<double> orderStatistics(std::vector<double> values, size_t count);

struct MannWhitney {
  double u = 0;            // U of the second sample (how often cur > base; ties count 1/2)
  double p_greater = 1;    // one-sided p-value for "second sample tends to be larger"
  bool exact = false;      // exact null distribution (small samples, no ties) or normal approximation
};

// None if either sample is empty. Exact p for n1 * n2 <= 400 without ties; otherwise the normal
// approximation with tie correction and a 0.5 continuity correction.
std::optional<MannWhitney> mannWhitneyGreater(const std::vector<double>& base, const std::vector<double>& cur);

}  // namespace fprof::analysis
